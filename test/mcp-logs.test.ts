// What the MCP client logs about HTTP sessions: why it fell back to SSE (the Streamable HTTP
// error, in one line), and nothing above debug when a session is closed normally. Real
// server-everything over HTTP.
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { resultText } from '../src/toolhost/api.js';
import type { McpConnection } from '../src/toolhost/mcp/client.js';
import { McpServers } from '../src/toolhost/mcp/servers.js';
import { createJsonStore } from '../src/toolhost/store.js';
import { everythingOverHttp, withServers, type McpSetup, type ServerSpec } from './helpers/mcp.js';
import { tempDir } from './helpers/tmp.js';

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

async function setup(web: ServerSpec): Promise<McpSetup> {
  const s = withServers({ web });
  stops.push(() => s.iris.stop());
  await s.iris.init();
  return s;
}

const execute = (s: McpSetup, tool_path: string, args: unknown) => s.iris.host.call('execute_tool', { tool_path, arguments: args });
const aboveDebug = (s: McpSetup) => s.logs.filter((line) => !line.startsWith('debug '));

describe('MCP session logs', () => {
  it('the SSE fallback says why: the Streamable HTTP error, in one line', async () => {
    const http = await everythingOverHttp('sse');
    stops.push(http.stop);
    const s = await setup({ url: http.url }); // transport left at streamable-http
    expect(resultText(await execute(s, 'web.echo', { message: 'legacy' }))).toBe('Echo: legacy');
    const why = s.logs.find((line) => line.includes('no Streamable HTTP'));
    expect(why).toBe(`info test:mcp: web: no Streamable HTTP at ${http.url} (HTTP 404: Streamable HTTP error: Error POSTing to endpoint: Error Cannot POST /sse); trying SSE`);
    expect(s.logs.every((line) => !line.includes('\n'))).toBe(true);
  });

  it.each([['streamableHttp'], ['sse']] as const)('closing a %s session normally logs nothing above debug', async (mode) => {
    const http = await everythingOverHttp(mode);
    stops.push(http.stop);
    const s = await setup({ url: http.url, ...(mode === 'sse' ? { transport: 'sse' as const } : {}) });
    expect(resultText(await execute(s, 'web.echo', { message: 'hi' }))).toBe('Echo: hi');
    const before = aboveDebug(s);
    await s.iris.stop();
    if (mode === 'streamableHttp') {
      // The aborted standalone GET stream reports an error: seen, and kept at debug.
      await expect.poll(() => s.logs.some((line) => /^debug test:mcp: web: SSE stream disconnected: AbortError.*\(closing\)$/.test(line))).toBe(true);
    }
    expect(aboveDebug(s)).toEqual(before);
  });

  // A fresh-clone run (session 21): server-everything announced a changed tool list just as its SSE
  // session was closed, and the re-list, cut off, was logged as a warning.
  it('a tool list that changes as the session is closed is not re-listed with a warning', async () => {
    const logs: string[] = [];
    const log = createLogger('mcp', { level: 'debug', write: (line) => logs.push(line) });
    let changed: (() => void) | undefined;
    let cutOff: ((error: Error) => void) | undefined;
    let lists = 0;
    const connection: McpConnection = {
      pid: undefined, transport: 'sse',
      listTools: () => (++lists === 1 ? Promise.resolve([]) : new Promise((_resolve, reject) => { cutOff = reject; })),
      callTool: () => Promise.reject(new Error('not called')),
      ping: () => Promise.resolve(),
      close: () => Promise.resolve(),
    };
    const servers = new McpServers({ log, cache: createJsonStore(tempDir(), 'mcp-tools', log, 1), connectTimeoutMs: 1000, connect: (options) => { changed = options.onToolsChanged; return Promise.resolve(connection); } });
    const config = parseConfig('[mcp.servers.web]\nurl = "http://127.0.0.1:9/sse"\ntransport = "sse"\n', 'test');
    await servers.configure(config.mcp.servers);
    await servers.startAll();
    changed?.();
    await expect.poll(() => cutOff).toBeDefined();
    await servers.stop();
    cutOff?.(new Error('MCP error -32000: Connection closed'));
    await expect.poll(() => logs.some((line) => line.includes('could not re-list tools'))).toBe(true);
    expect(logs.filter((line) => line.includes('could not re-list tools'))).toEqual(['debug mcp: web: could not re-list tools (the session closed meanwhile): MCP error -32000: Connection closed']);
    expect(logs.filter((line) => /^(warn|error) /.test(line))).toEqual([]);
  });
});
