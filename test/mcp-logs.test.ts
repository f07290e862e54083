// What the MCP client logs about HTTP sessions: why it fell back to SSE (the Streamable HTTP
// error, in one line), and nothing above debug when a session is closed normally. Real
// server-everything over HTTP.
import { afterEach, describe, expect, it } from 'vitest';
import { resultText } from '../src/toolhost/api.js';
import { everythingOverHttp, withServers, type McpSetup, type ServerSpec } from './helpers/mcp.js';

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
});
