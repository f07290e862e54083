import { silentLogger, type Logger } from '../../src/log.js';
import type { Announcement, CallToolResult, Notice } from '../../src/toolhost/api.js';
import { resultText } from '../../src/toolhost/api.js';
import { ToolHost } from '../../src/toolhost/host.js';
import { registerNativeTools } from '../../src/toolhost/native.js';

/** A tool host with the native tools, announcements and notices collected, clock injectable. */
export function nativeHost(stateDir: string, options: { homeZone?: string; now?: () => number; log?: Logger; timeoutMs?: number } = {}) {
  const announced: Announcement[] = [];
  const noticed: Notice[] = [];
  const host = new ToolHost(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
  const sets = registerNativeTools(host, {
    homeZone: () => options.homeZone ?? 'Europe/Berlin',
    stateDir,
    log: options.log ?? silentLogger,
    announce: (a) => announced.push(a),
    notify: (n) => noticed.push(n),
    ...(options.now ? { now: options.now } : {}),
  });
  const timers = sets.find((s) => s.tools.some((t) => t.name === 'set_timer'));
  if (timers === undefined) throw new Error('no timers module');
  return { host, announced, noticed, timers };
}

export const text = (result: CallToolResult): string => resultText(result);
