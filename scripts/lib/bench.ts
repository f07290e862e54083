/** What the benchmark scripts share: timing a repeated call, the daemon's Node flags, and writing results. */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A small seeded PRNG (mulberry32): the same data every run. */
export function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** p50 and p90 of `fn` in milliseconds over `n` sequential runs, after `warmup` runs. */
export async function timeMs(n: number, fn: () => Promise<unknown>, warmup = 100): Promise<{ p50: number; p90: number }> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] ?? NaN;
  return { p50: round(at(0.5), 4), p90: round(at(0.9), 4) };
}

/** Write scripts/results/NAME.json with the Node version and date. */
export function writeResults(name: string, figures: object): void {
  mkdirSync(join(ROOT, 'scripts/results'), { recursive: true });
  const results = { node: process.version, date: new Date().toISOString(), ...figures };
  writeFileSync(join(ROOT, `scripts/results/${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
  console.log(`written: scripts/results/${name}.json`);
}

/** The Node flags the systemd unit starts the daemon with, so measurements match what runs. */
export function unitNodeFlags(unitFile = join(ROOT, 'systemd/iris.service')): string[] {
  const unit = readFileSync(unitFile, 'utf8');
  return /^ExecStart=\S+ (.*?) ?\S+iris\.mjs daemon$/m.exec(unit)?.[1]?.split(' ').filter(Boolean) ?? [];
}

/** The environment the systemd unit sets (its `Environment=` lines), for the same reason. */
export function unitEnvironment(unitFile = join(ROOT, 'systemd/iris.service')): Record<string, string> {
  const unit = readFileSync(unitFile, 'utf8');
  return Object.fromEntries([...unit.matchAll(/^Environment=(\w+)=(.*)$/gm)].map(([, name, value]) => [name ?? '', value ?? '']));
}

/**
 * Ask a daemon started with scripts/lib/heap-probe.cjs for its memory after a full GC (SIGUSR2):
 * the `process.memoryUsage()` its probe prints on stderr.
 */
export async function heapProbe(daemon: ChildProcess): Promise<NodeJS.MemoryUsage> {
  const line = new Promise<string>((resolve) => {
    const onData = (chunk: Buffer) => {
      const found = /heap-probe (\{.*\})/.exec(chunk.toString())?.[1];
      if (found === undefined) return;
      daemon.stderr?.off('data', onData);
      resolve(found);
    };
    daemon.stderr?.on('data', onData);
  });
  daemon.kill('SIGUSR2');
  return JSON.parse(await line) as NodeJS.MemoryUsage;
}
