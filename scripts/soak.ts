/**
 * Soak: 1,000 turns against a running daemon (the bundle), over its control socket, with the
 * Ollama test double and one real MCP server: local-path turns, model turns, model turns with
 * a native tool call and with an MCP call. Samples the daemon's RSS, open file descriptors and
 * child processes after a warm-up and at the end. Targets: RSS growth ≤ 10 MB, no leaked fds
 * or children. Writes scripts/results/soak.json; exits 1 when a target is missed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from '../src/daemon/control.js';
import { OllamaDouble } from '../test/helpers/ollama-double.js';
import { ROOT, writeResults } from './lib/bench.js';

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

const daemon = spawn(process.execPath, [join(ROOT, 'dist/iris.mjs'), 'daemon'], {
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

function sample(): { rss_kb: number; fds: number; children: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  const fds = readdirSync(`/proc/${pid}/fd`).length;
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).length;
  return { rss_kb: rss, fds, children };
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
  const result = await request<{ route: string }>(socket, { cmd: 'ask', text: `tell me about turn ${i}` });
  if (result.route !== 'llm') throw new Error(`turn ${i}: ${JSON.stringify(result)}`);
}

const started = performance.now();
for (let i = 0; i < WARMUP; i++) await turn(i);
(globalThis as { gc?: () => void }).gc?.();
const warm = sample();
for (let i = WARMUP; i < TURNS; i++) await turn(i);
const end = sample();
const seconds = (performance.now() - started) / 1000;

daemon.kill('SIGTERM');
await new Promise((resolve) => daemon.once('exit', resolve));
await double.close();
rmSync(dir, { recursive: true, force: true });

const growthMb = (end.rss_kb - warm.rss_kb) / 1024;
const figures = {
  turns: TURNS, seconds: Math.round(seconds), after_warmup: warm, at_end: end,
  rss_growth_mb: Math.round(growthMb * 10) / 10, leaked_fds: end.fds - warm.fds, leaked_children: end.children - warm.children,
};
writeResults('soak', figures);
console.log(`${TURNS} turns in ${figures.seconds} s: RSS ${Math.round(warm.rss_kb / 1024)} → ${Math.round(end.rss_kb / 1024)} MB (${figures.rss_growth_mb} MB), fds ${warm.fds} → ${end.fds}, children ${warm.children} → ${end.children}`);
if (growthMb > 10 || end.fds > warm.fds || end.children > warm.children) process.exitCode = 1;
