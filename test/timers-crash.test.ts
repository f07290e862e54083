import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import type { TimerState } from '../tools/timers.js';
import { nativeHost } from './helpers/tools.js';
import { tempDir } from './helpers/tmp.js';

const WRITER = fileURLToPath(new URL('fixtures/timer-writer.ts', import.meta.url));

/** Run the writer until it has confirmed `acks` timers, then SIGKILL it; the confirmed labels. */
function writeThenKill(stateDir: string, prefix: string, acks: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WRITER, stateDir, prefix], { stdio: ['ignore', 'pipe', 'pipe'] });
    const confirmed: string[] = [];
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    createInterface({ input: child.stdout }).on('line', (line) => {
      confirmed.push(line);
      if (confirmed.length === acks) child.kill('SIGKILL');
    });
    child.on('exit', (_code, signal) => (signal === 'SIGKILL' ? resolve(confirmed) : reject(new Error(`writer exited: ${stderr}`))));
  });
}

/** Run the writer to completion: `count` timers, each confirmed. */
function write(stateDir: string, prefix: string, count: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WRITER, stateDir, prefix, String(count)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer exited ${code}: ${stderr}`))));
  });
}

describe('timers from many processes at once', () => {
  it('ten processes setting 100 timers each store all 1,000 (the state file is locked across processes)', async () => {
    const dir = tempDir();
    await Promise.all(Array.from({ length: 10 }, (_, i) => write(dir, `p${i}`, 100)));
    const state = JSON.parse(readFileSync(join(dir, 'timers.json'), 'utf8')) as TimerState;
    expect(new Set(state.timers.map((t) => t.label)).size).toBe(1000);
    expect(new Set(state.timers.map((t) => t.id)).size).toBe(1000);
    expect(state.next_id).toBe(1001);
  }, 120_000);
});

describe('timers survive kill -9', () => {
  it('loses and duplicates nothing across many crashes mid-write', async () => {
    const dir = tempDir();
    const confirmed: string[] = [];
    let seed = 7;
    for (let round = 0; round < 6; round++) {
      seed = (seed * 48271) % 2147483647;
      confirmed.push(...(await writeThenKill(dir, `r${round}`, 5 + (seed % 40))));
      const state = JSON.parse(readFileSync(join(dir, 'timers.json'), 'utf8')) as TimerState;
      const labels = state.timers.map((t) => t.label);
      const ids = state.timers.map((t) => t.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(new Set(labels).size).toBe(labels.length);
      for (const label of confirmed) expect(labels).toContain(label);
      expect(state.next_id).toBeGreaterThan(Math.max(...ids.map(Number)));
    }
    // A restarted IRIS arms every one of them and reports none as missed (all due in an hour).
    const { host, announced, timers } = nativeHost(dir);
    await timers.start?.();
    const listed = (await host.call('list_timers', {})).structuredContent?.timers as unknown[];
    expect(listed.length).toBeGreaterThanOrEqual(confirmed.length);
    expect(announced).toEqual([]);
    await timers.stop?.();
  }, 120_000);
});
