/**
 * Soak: 1,000 turns against a running daemon (the bundle, with the unit's Node flags), over its
 * control socket, with the Ollama test double and one real MCP server: local-path turns, model
 * turns, model turns with a native tool call and with an MCP call. After a warm-up and at the
 * end it samples, after a full GC (scripts/lib/heap-probe.cjs), the daemon's live heap, its
 * memory outside the heap (WebAssembly, buffers) and RSS, and its open file descriptors and
 * child processes. Targets: growth of the live heap and of the memory outside it ≤ 10 MB, no
 * leaked fds or children. RSS is reported, not judged: freed pages go back to the system
 * when the allocator decides, and over 6,000 turns RSS after a full GC moved between 235 and
 * 300 MB with no trend while the live heap stayed at 46–49 MB.
 * Writes scripts/results/soak.json; exits 1 when a target is missed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from '../src/daemon/control.js';
import { OllamaDouble } from '../test/helpers/ollama-double.js';
import { heapProbe, ROOT, unitNodeFlags, writeResults } from './lib/bench.js';

const TURNS = Number(process.env.SOAK_TURNS ?? 1000);
const WARMUP = 100;
const dir = mkdtempSync(join(tmpdir(), 'iris-soak-'));
const socket = join(dir, 'control.sock');
const double = await new OllamaDouble().start();
const everything = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
writeFileSync(join(dir, 'config'), [
  '[assistant]', 'timezone = "UTC"',
  '[ollama]', `url = "${double.url}"`,
  '[mcp.servers.everything]', `command = ${JSON.stringify(process.execPath)}`, `args = [${JSON.stringify(everything)}, "stdio"]`, 'confirm = "never"',
].join('\n'));

const nodeFlags = unitNodeFlags();
const probe = ['--expose-gc', '--require', join(ROOT, 'scripts/lib/heap-probe.cjs')];
const daemon = spawn(process.execPath, [...nodeFlags, ...probe, join(ROOT, 'dist/iris.mjs'), 'daemon'], {
  env: { ...process.env, IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: socket },
  stdio: ['ignore', 'ignore', 'pipe'],
});
await new Promise<void>((resolve, reject) => {
  let seen = '';
  daemon.stderr.on('data', (chunk: Buffer) => {
    seen += chunk.toString();
    if (/everything: up over stdio/.test(seen) && /ready:/.test(seen)) resolve();
  });
  daemon.once('exit', (code) => reject(new Error(`daemon exited ${code}: ${seen}`)));
});
const pid = daemon.pid ?? 0;

/** The daemon after a full GC: live heap and RSS (MB), open fds, child processes. */
async function sample(): Promise<{ heap_mb: number; external_mb: number; rss_mb: number; fds: number; children: number }> {
  const memory = await heapProbe(daemon);
  const mb = (bytes: number) => Math.round(bytes / 1024 / 102.4) / 10;
  const fds = readdirSync(`/proc/${pid}/fd`).length;
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).length;
  return { heap_mb: mb(memory.heapUsed), external_mb: mb(memory.external), rss_mb: mb(memory.rss), fds, children };
}

/** One of four kinds of turn, round robin. */
async function turn(i: number): Promise<void> {
  switch (i % 4) {
    case 0:
      await request(socket, { cmd: 'ask', text: `what is ${i} times 3` });
      return;
    case 1:
      double.script({ content: [`Turn ${i}. `, 'All fine.'] });
      break;
    case 2:
      double.script({ tool_calls: [{ name: 'get_current_time', arguments: { timezone: 'Asia/Tokyo' } }] }, { content: ['It is late in Tokyo.'] });
      break;
    default:
      double.script(
        { tool_calls: [{ name: 'execute_tool', arguments: { tool_path: 'everything.get-sum', arguments: { a: i, b: 1 } } }] },
        { content: [`That makes ${i + 1}.`] },
      );
  }
  const result = await request(socket, { cmd: 'ask', text: `tell me about turn ${i}` });
  if (result.route !== 'llm') throw new Error(`turn ${i}: ${JSON.stringify(result)}`);
}

const started = performance.now();
for (let i = 0; i < WARMUP; i++) await turn(i);
const warm = await sample();
for (let i = WARMUP; i < TURNS; i++) await turn(i);
const end = await sample();
const seconds = (performance.now() - started) / 1000;

daemon.kill('SIGTERM');
await new Promise((resolve) => daemon.once('exit', resolve));
await double.close();
rmSync(dir, { recursive: true, force: true });

const growth = (key: 'heap_mb' | 'external_mb' | 'rss_mb') => Math.round((end[key] - warm[key]) * 10) / 10;
const figures = {
  turns: TURNS, seconds: Math.round(seconds), node_flags: nodeFlags, after_warmup: warm, at_end: end,
  heap_growth_mb: growth('heap_mb'), external_growth_mb: growth('external_mb'), rss_growth_mb: growth('rss_mb'), leaked_fds: end.fds - warm.fds, leaked_children: end.children - warm.children,
};
writeResults('soak', figures);
console.log(`${TURNS} turns in ${figures.seconds} s, after a full GC: live heap ${warm.heap_mb} → ${end.heap_mb} MB, outside the heap ${warm.external_mb} → ${end.external_mb} MB, RSS ${warm.rss_mb} → ${end.rss_mb} MB, fds ${warm.fds} → ${end.fds}, children ${warm.children} → ${end.children}`);
if (figures.heap_growth_mb > 10 || figures.external_growth_mb > 10 || figures.leaked_fds > 0 || figures.leaked_children > 0) process.exitCode = 1;
