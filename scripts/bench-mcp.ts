/**
 * Benchmark of the lazy MCP proxy against real MCP servers from npm: the tokens the model is
 * sent for every remote tool directly vs through the two meta-tools, the per-call overhead of
 * the proxy vs a bare SDK client on the same stdio server, and the first call after start
 * with and without pre-warm. Prints figures and writes scripts/results/mcp.json.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { loadTokenizer, toolTokens } from '../src/budget/tokenizer.js';
import { parseConfig } from '../src/config/load.js';
import { assemble } from '../src/daemon/assemble.js';
import { silentLogger } from '../src/log.js';
import { ROOT, round, timeMs, writeResults } from './lib/bench.js';

const bin = (path: string) => join(ROOT, 'node_modules', path);
const work = mkdtempSync(join(tmpdir(), 'iris-bench-mcp-'));
const SERVERS: Record<string, { args: string[]; env?: Record<string, string> }> = {
  everything: { args: [bin('@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'] },
  files: { args: [bin('@modelcontextprotocol/server-filesystem/dist/index.js'), work] },
  memory: { args: [bin('@modelcontextprotocol/server-memory/dist/index.js')], env: { MEMORY_FILE_PATH: join(work, 'memory.jsonl') } },
  thinking: { args: [bin('@modelcontextprotocol/server-sequential-thinking/dist/index.js')] },
  time: { args: [bin('time-mcp/dist/index.js')] },
  calc: { args: [bin('@coo-quack/calc-mcp/dist/index.js')] },
  fetch: { args: [bin('mcp-fetch-server/dist/index.js')] },
};
const toml = Object.entries(SERVERS).map(([name, s]) => [
  `[mcp.servers.${name}]`, `command = ${JSON.stringify(process.execPath)}`, `args = ${JSON.stringify(s.args)}`,
  ...(s.env ? [`env = { ${Object.entries(s.env).map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join(', ')} }`] : []),
  'confirm = "never"',
].join('\n')).join('\n\n');
const open = (stateDir: string, everythingOnly = false) => assemble(
  parseConfig(`[mcp]\nconnect_timeout_s = 20\n${everythingOnly ? toml.split('\n\n')[0] ?? '' : toml}`, 'bench'),
  { stateDir, log: silentLogger },
);


// 1. Tokens: every remote tool's definition sent directly vs the two meta-tools.
const iris = open(join(work, 'state-all'));
await iris.init();
await iris.mcp.servers.startAll();
const tokenizer = await loadTokenizer();
const all = iris.mcp.servers.listing();
const direct = all.reduce((sum, r) => sum + toolTokens(tokenizer, r.tool), 0);
const meta = iris.host.definitions().filter((d) => d.name === 'get_tools_in_category' || d.name === 'execute_tool');
const metaTokens = meta.reduce((sum, d) => sum + toolTokens(tokenizer, d), 0);
const rootText = (await iris.host.call('get_tools_in_category', { path: '' })).content;
const tokens = {
  servers: Object.keys(SERVERS).length,
  remote_tools: all.length,
  direct_tokens: direct,
  meta_tools_tokens: metaTokens,
  reduction_pct: round(100 * (1 - metaTokens / direct), 2),
  root_listing_tokens: tokenizer.count(JSON.stringify(rootText)),
  per_server: iris.mcp.servers.status().map((s) => ({ name: s.name, state: s.state, tools: s.tools })),
};
await iris.stop();

// 2. Per-call overhead: execute_tool through the proxy vs a bare SDK client, same stdio server.
const args = { message: 'hello' };
const bare = new Client({ name: 'bench', version: '1' });
await bare.connect(new StdioClientTransport({ command: process.execPath, args: SERVERS.everything?.args ?? [] }));
const bareCall = await timeMs(2000, () => bare.callTool({ name: 'echo', arguments: args }));
await bare.close();
const proxied = open(join(work, 'state-one'), true);
await proxied.init();
await proxied.mcp.servers.startAll();
const proxyCall = await timeMs(2000, () => proxied.host.call('execute_tool', { tool_path: 'everything.echo', arguments: args }));
await proxied.stop();
const overhead = { bare_sdk_p50_ms: bareCall.p50, proxy_p50_ms: proxyCall.p50, ratio: round(proxyCall.p50 / bareCall.p50, 2) };

// 3. First call after start: lazy (spawn on the first call) vs pre-warmed.
const firstCall = async (prewarm: boolean): Promise<number> => {
  const one = open(mkdtempSync(join(work, 'state-')), true);
  await one.init();
  if (prewarm) await one.mcp.servers.startAll();
  const start = performance.now();
  await one.host.call('execute_tool', { tool_path: 'everything.echo', arguments: args });
  const ms = performance.now() - start;
  await one.stop();
  return round(ms, 1);
};
const first = { lazy_ms: await firstCall(false), prewarmed_ms: await firstCall(true) };

rmSync(work, { recursive: true, force: true });
console.log(`tokens for ${tokens.remote_tools} tools of ${tokens.servers} real servers: ${tokens.direct_tokens} sent directly, ${tokens.meta_tools_tokens} through the proxy's two meta-tools (${tokens.reduction_pct}% less); the root listing costs ${tokens.root_listing_tokens} when asked for`);
console.log(`per call (echo, stdio): bare SDK ${overhead.bare_sdk_p50_ms} ms p50, through the proxy ${overhead.proxy_p50_ms} ms p50 → ${overhead.ratio}×`);
console.log(`first call after start: ${first.lazy_ms} ms without pre-warm, ${first.prewarmed_ms} ms pre-warmed`);
writeResults('mcp', { tokens, call_overhead: overhead, first_call: first });
