/**
 * What the rooms benchmarks share (bench-rooms.ts, bench-rooms-ramp.ts): the bundled daemon as
 * the brain of loopback satellites, optionally pinned to some cores, and what it costs while it
 * runs (its CPU and peak RSS, and how busy its cores were in all, other processes included).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StreamingSatellite } from '../../test/helpers/satellite.js';
import { ROOT, round, unitNodeFlags } from './bench.js';

export interface RoomsDaemon {
  child: ChildProcess;
  /** Everything the daemon logged so far (its stderr, `--log-level info`). */
  log: () => string;
  /** Milliseconds from spawn until every room listened for the wake word. */
  readyMs: number;
}

/**
 * Start dist/iris.mjs with one room per satellite, under `work`; resolves once every room
 * listens for the wake word (or the daemon is ready, with none). `cpus` (taskset's list, e.g.
 * "1") pins the daemon and every thread it starts; `readyTimeoutMs` bounds the wait.
 */
export async function startDaemon(
  satellites: StreamingSatellite[],
  work: string,
  options: { cpus?: string; readyTimeoutMs?: number; started?: (child: ChildProcess) => void } = {},
): Promise<RoomsDaemon> {
  const dir = mkdtempSync(join(work, 'd-'));
  const rooms = satellites.map((s) => `[satellites.${s.name}]\nuri = "tcp://127.0.0.1:${s.port}"\n`).join('');
  writeFileSync(join(dir, 'config'), `[ollama]\nurl = "http://127.0.0.1:9"\n[assistant]\nfollow_up_s = 0\n[audio]\ninput = ""\n[stt]\nengine = "pocketsphinx"\n${rooms}`);
  const node = [...unitNodeFlags(), join(ROOT, 'dist/iris.mjs'), 'daemon', '--log-level', 'info'];
  // taskset execs node: the pid is the daemon's.
  const [command, args] = options.cpus === undefined ? [process.execPath, node] : ['taskset', ['-c', options.cpus, process.execPath, ...node]];
  const startMs = performance.now();
  const child = spawn(command, args, {
    env: { ...process.env, IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  options.started?.(child);
  let seen = '';
  child.stderr?.on('data', (chunk: Buffer) => (seen += chunk.toString()));
  const wanted = satellites.length === 0 ? 1 : satellites.length;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the daemon was not ready in ${options.readyTimeoutMs} ms: ${seen.slice(-2000)}`)), options.readyTimeoutMs ?? 120_000);
    const check = () => {
      const ready = satellites.length === 0 ? /ready:/.test(seen) : (seen.match(/listening for "/g) ?? []).length >= wanted;
      if (!ready) return;
      clearTimeout(timer);
      child.stderr?.off('data', check);
      resolve();
    };
    child.stderr?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the daemon exited (${code}): ${seen.slice(-2000)}`));
    });
  });
  return { child, log: () => seen, readyMs: performance.now() - startMs };
}

export interface Usage {
  /** The daemon's CPU: milliseconds per second of wall time (1,000 is one core). */
  cpuMsPerS: number;
  /** Its peak resident memory (MiB), sampled every 250 ms: one reading swings with V8's collections. */
  rssMiB: number;
}

/** The daemon's CPU and peak RSS, plus how busy `cpus` were in all (every process on them). */
export interface Metered extends Usage {
  /** Busy time of the measured cores, all processes: ms per second of wall time. */
  coresBusyMsPerS?: number;
  /** 1-minute load average at the start and end of the window. */
  load: [number, number];
}

const ticks = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100 per second)
};
const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
const load1 = (): number => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

/** Busy ticks (everything but idle and iowait) of each listed core, from /proc/stat. */
function busyTicks(cpus: number[]): number {
  let busy = 0;
  for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
    const m = /^cpu(\d+) (.*)$/.exec(line);
    if (m === null || !cpus.includes(Number(m[1]))) continue;
    const f = (m[2] ?? '').trim().split(/\s+/).map(Number);
    busy += (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0); // user nice system irq softirq steal
  }
  return busy;
}

/** How busy `cpus` are, all processes together, over the next `seconds` (ms per second of wall time, summed over the cores). */
export async function coresBusy(cpus: number[], seconds: number): Promise<number> {
  const [b0, w0] = [busyTicks(cpus), performance.now()];
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  return ((busyTicks(cpus) - b0) * 10) / ((performance.now() - w0) / 1000);
}

/** A taskset list ("1", "0,1", "0-1") as core numbers. */
export function parseCpus(list: string): number[] {
  return list.split(',').flatMap((part) => {
    const [a, b] = part.split('-').map(Number);
    return b === undefined ? [a ?? NaN] : Array.from({ length: b - (a ?? 0) + 1 }, (_, i) => (a ?? 0) + i);
  });
}

/** Start measuring `pid` (and, given, the cores it is pinned to); `stop()` ends the window. */
export function meter(pid: number, cpus?: number[]): { stop: () => Metered } {
  const [t0, w0, b0, l0] = [ticks(pid), performance.now(), cpus ? busyTicks(cpus) : 0, load1()];
  let peak = rssMiB(pid);
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, rssMiB(pid));
    } catch {
      // the daemon has gone; stop() says what it used until then
    }
  }, 250);
  return {
    stop: () => {
      clearInterval(sampler);
      const seconds = (performance.now() - w0) / 1000;
      let used = NaN;
      try {
        used = ticks(pid) - t0;
      } catch {
        // gone
      }
      return {
        cpuMsPerS: round((used * 10) / seconds, 1),
        rssMiB: round(peak, 1),
        ...(cpus ? { coresBusyMsPerS: round(((busyTicks(cpus) - b0) * 10) / seconds, 1) } : {}),
        load: [l0, load1()],
      };
    },
  };
}

/** The daemon's CPU and peak RSS over `seconds`, after 3 s to settle once started. */
export async function usage(pid: number, seconds: number): Promise<Usage> {
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const m = meter(pid);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const { cpuMsPerS, rssMiB } = m.stop();
  return { cpuMsPerS, rssMiB };
}
