/**
 * sd_notify for `Type=notify` units without a native addon (which would break across Node
 * ABIs on Debian's nodejs): READY, STOPPING and WATCHDOG are sent by a spawned
 * `systemd-notify`, allowed by `NotifyAccess=all` (notes/debian.md §5). Does nothing outside
 * systemd (no NOTIFY_SOCKET).
 */
import { spawn } from 'node:child_process';
import type { Logger } from '../log.js';

export interface Notifier {
  ready(status: string): void;
  stopping(): void;
  /** Stop the watchdog pings. */
  close(): void;
}

/** The fastest watchdog ping IRIS sends (ms). */
const MIN_PING_MS = 1_000;

export function createNotifier(env: NodeJS.ProcessEnv, log: Logger): Notifier {
  if (env.NOTIFY_SOCKET === undefined || env.NOTIFY_SOCKET === '') {
    return { ready: () => undefined, stopping: () => undefined, close: () => undefined };
  }
  const send = (...assignments: string[]): void => {
    const child = spawn('systemd-notify', assignments, { stdio: 'ignore' });
    child.on('error', (error) => log.warn(`systemd-notify: ${error.message}`));
  };
  const watchdogUs = Number(env.WATCHDOG_USEC ?? 0);
  let timer: NodeJS.Timeout | undefined;
  return {
    ready(status) {
      send('READY=1', `STATUS=${status}`);
      if (watchdogUs > 0) {
        // Half the period systemd allows, as sd_watchdog_enabled(3) advises.
        timer = setInterval(() => send('WATCHDOG=1'), Math.max(MIN_PING_MS, watchdogUs / 2000));
        timer.unref();
      }
    },
    stopping() {
      send('STOPPING=1');
    },
    close() {
      clearInterval(timer);
    },
  };
}
