/**
 * Benchmark of the foundation: native tool call overhead through the tool host, tokens per
 * native tool definition, and daemon cold start to ready. Prints figures and writes
 * scripts/results/tools.json. Run: `npm run bench` (pin one core with `taskset -c 0` for
 * steadier numbers).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadTokenizer, toolTokens } from '../src/budget/tokenizer.js';
import { silentLogger } from '../src/log.js';
import { textResult } from '../src/toolhost/api.js';
import { ToolHost } from '../src/toolhost/host.js';
import { registerNativeTools } from '../src/toolhost/native.js';
import { ROOT, round, timeMs, writeResults } from './lib/bench.js';

const state = mkdtempSync(join(tmpdir(), 'iris-bench-'));

/** Microseconds per call: p50 and p90 over `n` sequential calls after a warm-up. */
async function perCall(n: number, call: () => Promise<unknown>): Promise<{ p50_us: number; p90_us: number }> {
  const { p50, p90 } = await timeMs(n, call, 200);
  return { p50_us: round(p50 * 1000, 1), p90_us: round(p90 * 1000, 1) };
}

/** Milliseconds from spawning `iris daemon` to its "ready" log line. */
function coldStartMs(entry: string[]): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'iris-bench-daemon-'));
  writeFileSync(join(dir, 'config'), '');
  const started = performance.now();
  const child = spawn(process.execPath, [...entry, 'daemon'], {
    env: { ...process.env, IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let seen = '';
    const early = (code: number | null) => reject(new Error(`daemon exited ${code}: ${seen}`));
    child.once('exit', early);
    child.stderr.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (/ready:/.test(seen)) {
        const ms = performance.now() - started;
        child.off('exit', early);
        child.kill('SIGTERM');
        child.once('exit', () => {
          rmSync(dir, { recursive: true, force: true });
          resolve(Math.round(ms));
        });
      }
    });
  });
}

const host = new ToolHost();
host.register({ name: 'noop', description: 'noop', inputSchema: { type: 'object', properties: { x: { type: 'number' } } }, run: () => textResult('ok') });
const sets = registerNativeTools(host, { homeZone: () => 'Europe/Berlin', stateDir: state, log: silentLogger, announce: () => undefined });
for (const set of sets) if (set.tools.some((t) => t.name === 'calculator')) await set.start?.();

const overhead = {
  host_only_noop: await perCall(20_000, () => host.call('noop', { x: 1 })),
  get_current_time: await perCall(5_000, () => host.call('get_current_time', {})),
  get_current_time_city: await perCall(5_000, () => host.call('get_current_time', { timezone: 'Tokyo' })),
  calculator: await perCall(5_000, () => host.call('calculator', { expression: '17% of 2340' })),
  list_timers: await perCall(500, () => host.call('list_timers', {})),
};

const tokenizer = await loadTokenizer();
const perTool = Object.fromEntries(host.definitions().filter((d) => d.name !== 'noop').map((d) => [d.name, toolTokens(tokenizer, d)]));
const tokens = { tokenizer: tokenizer.name, per_tool: perTool, total: Object.values(perTool).reduce((a, b) => a + b, 0) };

execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/build.ts')], { cwd: ROOT });
async function median3(entry: string[]): Promise<{ runs_ms: number[]; median_ms: number }> {
  const runs: number[] = [];
  for (let i = 0; i < 3; i++) runs.push(await coldStartMs(entry));
  runs.sort((a, b) => a - b);
  return { runs_ms: runs, median_ms: runs[1] ?? NaN };
}
const coldStart = {
  bundle: await median3([join(ROOT, 'dist/iris.mjs')]),
  tsx_checkout: await median3(['--import', 'tsx', join(ROOT, 'src/cli/iris.ts')]),
};

rmSync(state, { recursive: true, force: true });

console.log('native tool call through the tool host (µs per call, p50 / p90):');
for (const [name, r] of Object.entries(overhead)) console.log(`  ${name.padEnd(22)} ${String(r.p50_us).padStart(8)} / ${r.p90_us}`);
console.log(`tool-definition tokens (${tokens.tokenizer}):`);
for (const [name, n] of Object.entries(perTool)) console.log(`  ${name.padEnd(22)} ${n}`);
console.log(`  ${'all native tools'.padEnd(22)} ${tokens.total}`);
for (const [how, r] of Object.entries(coldStart)) {
  console.log(`daemon cold start to ready (${how}): median ${r.median_ms} ms (runs: ${r.runs_ms.join(', ')} ms)`);
}
writeResults('tools', { call_overhead: overhead, definition_tokens: tokens, daemon_cold_start: coldStart });
