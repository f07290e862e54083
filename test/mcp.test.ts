import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { resultText } from '../src/toolhost/api.js';
import { EVERYTHING, FILESYSTEM, MEMORY, everythingOverHttp, fake, stdio, withServers, type McpSetup } from './helpers/mcp.js';
import { tempDir } from './helpers/tmp.js';
import { stallProbe } from './helpers/conversation.js';

const open: McpSetup[] = [];
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.iris.stop()));
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

async function setup(...args: Parameters<typeof withServers>): Promise<McpSetup> {
  const s = withServers(...args);
  open.push(s);
  await s.iris.init();
  return s;
}

/** The fake server starts through tsx: on a loaded 2-core machine that can take seconds. */
const SLOW_START = '[mcp]\nconnect_timeout_s = 30\n';

const browse = async (s: McpSetup, path: string) => JSON.parse(resultText(await s.iris.host.call('get_tools_in_category', { path }))) as Record<string, unknown>;
const execute = (s: McpSetup, tool_path: string, args: unknown) => s.iris.host.call('execute_tool', { tool_path, arguments: args });

describe('the lazy MCP proxy over real servers', () => {
  it('browses categories → tools → one schema, and runs a call (stdio, server-everything)', async () => {
    const s = await setup({ everything: stdio(EVERYTHING, 'stdio') });
    expect(s.iris.host.definitions().map((d) => d.name)).toContain('execute_tool');
    const root = await browse(s, '');
    expect(root).toEqual({ categories: { everything: { overview: expect.stringContaining('echo'), tools: expect.any(Number) } } });
    const category = await browse(s, 'everything');
    expect(category.tools).toMatchObject({ 'get-sum': { description: 'Returns the sum of two numbers', tool_path: 'everything.get-sum' } });
    // The schema on demand: what lazy-mcp never shows.
    const schema = await browse(s, 'everything.get-sum');
    expect(schema).toMatchObject({ tool_path: 'everything.get-sum', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } } });
    expect(resultText(await execute(s, 'everything.get-sum', { a: 2, b: 3 }))).toBe('The sum of 2 and 3 is 5.');
  });

  it('validates arguments first and answers with a repair hint that carries the schema', async () => {
    const s = await setup({ everything: stdio(EVERYTHING, 'stdio') });
    const bad = await execute(s, 'everything.get-sum', { a: 2, c: 3 });
    expect(bad.isError).toBe(true);
    expect(resultText(bad)).toMatch(/^Invalid arguments for everything\.get-sum: "b" is required\. Its inputSchema: \{"type":"object","properties":\{"a":/);
  });

  it('accepts a bare unique name, folded spellings and stringified arguments; passes structuredContent through', async () => {
    const s = await setup({ everything: stdio(EVERYTHING, 'stdio') });
    expect(resultText(await execute(s, 'echo', { message: 'hi' }))).toBe('Echo: hi');
    expect(resultText(await execute(s, 'Everything.Get_Sum', '{"a": 1, "b": 1}'))).toBe('The sum of 1 and 1 is 2.');
    const structured = await execute(s, 'everything.get-structured-content', { location: 'New York' });
    expect(structured.structuredContent).toMatchObject({ temperature: expect.any(Number) });
    const unknown = await execute(s, 'everything.fly', {});
    expect(resultText(unknown)).toMatch(/^The server "everything" has no tool "fly"\. Its tools: echo, .*get-sum/);
  });

  it.each([['streamableHttp'], ['sse']] as const)('works over %s too', async (mode) => {
    const http = await everythingOverHttp(mode);
    stops.push(http.stop);
    const s = await setup({ web: { url: http.url, ...(mode === 'sse' ? { transport: 'sse' as const } : {}) } });
    expect(resultText(await execute(s, 'web.get-sum', { a: 20, b: 22 }))).toBe('The sum of 20 and 22 is 42.');
    expect(s.iris.mcp.servers.status()).toEqual([expect.objectContaining({ name: 'web', state: 'up', transport: mode === 'sse' ? 'sse' : 'streamable-http' })]);
  });

  it('falls back to SSE when a server only speaks SSE', async () => {
    const http = await everythingOverHttp('sse');
    stops.push(http.stop);
    const s = await setup({ old: { url: http.url } }); // transport left at streamable-http
    expect(resultText(await execute(s, 'old.echo', { message: 'legacy' }))).toBe('Echo: legacy');
    expect(s.iris.mcp.servers.status()[0]?.transport).toBe('sse');
  });

  it('asks before a tool that may change things; runs it once confirmed (filesystem)', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'notes.txt'), 'milk, eggs');
    const s = await setup({ files: stdio(FILESYSTEM, dir) });
    // read-only: runs at once
    expect(resultText(await execute(s, 'files.read_text_file', { path: join(dir, 'notes.txt') }))).toBe('milk, eggs');
    // not read-only: waits for a yes
    const write = await execute(s, 'files.write_file', { path: join(dir, 'new.txt'), content: 'hello' });
    expect(write.isError).toBe(true);
    expect(write.pending).toMatchObject({
      tool: 'execute_tool',
      label: 'files.write_file',
      arguments: { tool_path: 'files.write_file', arguments: { path: join(dir, 'new.txt'), content: 'hello' } },
      question: `Should I run write file from files with path ${join(dir, 'new.txt')}, content hello? Say yes to go ahead.`,
    });
    expect(existsSync(join(dir, 'new.txt'))).toBe(false);
    // Only the host's own held call runs, once: a look-alike does not.
    const forged = { ...write.pending!, expiresAt: Date.now() + 60_000 };
    expect(resultText(await s.iris.host.runConfirmed(forged))).toBe('files.write_file was not waiting for a yes; it was not run.');
    expect(existsSync(join(dir, 'new.txt'))).toBe(false);
    expect((await s.iris.host.runConfirmed(write.pending!)).isError).toBeFalsy();
    expect(readFileSync(join(dir, 'new.txt'), 'utf8')).toBe('hello');
    expect(resultText(await s.iris.host.runConfirmed(write.pending!))).toBe('files.write_file was not waiting for a yes; it was not run.');
  });

  it('honours confirm = "never" and "always" per server (memory)', async () => {
    const dir = tempDir();
    const memory = { ...stdio(MEMORY), env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } };
    const s = await setup({ memory: { ...memory, confirm: 'never' }, strict: { ...memory, confirm: 'always' } });
    const created = await execute(s, 'memory.create_entities', { entities: [{ name: 'Ada', entityType: 'person', observations: ['likes tea'] }] });
    expect(created.isError).toBeFalsy();
    expect(resultText(await execute(s, 'memory.search_nodes', { query: 'Ada' }))).toContain('likes tea');
    // A read-only tool of a server under confirm = "always" still waits for a yes.
    expect((await execute(s, 'strict.read_graph', {})).pending).toMatchObject({ label: 'strict.read_graph' });
  });
});

describe('pagination, list_changed and hidden tools (fake server)', () => {
  it('reads every page, hides task-only tools, and re-lists on list_changed', async () => {
    const s = await setup({ fake: fake('paged') }, SLOW_START);
    const tools = (await browse(s, 'fake')).tools as Record<string, unknown>;
    expect(Object.keys(tools)).toEqual(['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'hang', 'crash', 'grow']);
    const changed = new Promise<void>((resolve) => {
      const previous = s.iris.mcp.servers.onChange;
      s.iris.mcp.servers.onChange = () => {
        previous();
        resolve();
      };
    });
    await execute(s, 'fake.grow', { n: 1 });
    await changed;
    expect(Object.keys((await browse(s, 'fake')).tools as object)).toContain('zeta_9');
  });

  it('a hung tool times out at the server timeout_s', async () => {
    const s = await setup({ fake: { ...fake('paged'), timeout_s: 0.5 } }, SLOW_START);
    await s.iris.mcp.servers.startAll();
    const started = performance.now();
    const result = await execute(s, 'fake.hang', { n: 1 });
    expect(resultText(result)).toBe('fake.hang timed out after 0.5 s.');
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('a tool whose input schema is huge (30,000 choices) runs without holding the daemon\'s thread: the server checks its arguments', async () => {
    const s = await setup({ fake: fake('huge-schema') });
    await s.iris.mcp.servers.startAll();
    const probe = stallProbe();
    let stalledMs: number;
    try {
      const result = await execute(s, 'fake.pick', { choice: 'option 29999' });
      expect(resultText(result)).toBe('pick({"choice":"option 29999"})');
    } finally {
      stalledMs = probe.stop();
    }
    expect(stalledMs).toBeLessThan(500); // ajv's compile of the schema: about 4 s
  });

  it('a call is cancelled through the turn signal at once', async () => {
    const s = await setup({ fake: fake('paged') }, SLOW_START);
    await s.iris.mcp.servers.startAll();
    const turn = new AbortController();
    const pending = s.iris.host.call('execute_tool', { tool_path: 'fake.hang', arguments: { n: 1 } }, { signal: turn.signal });
    const aborted = performance.now();
    turn.abort(new Error('barge-in'));
    expect(resultText(await pending)).toBe('execute_tool was cancelled.');
    expect(performance.now() - aborted).toBeLessThan(200);
    expect(resultText(await execute(s, 'fake.alpha', { n: 3 }))).toBe('alpha({"n":3})'); // the session survives
  });

  it('a server that dies mid-call fails the call at once; started on demand, the next call starts it again', async () => {
    const s = await setup({ fake: fake('paged') }, SLOW_START);
    expect(resultText(await execute(s, 'fake.alpha', { n: 1 }))).toBe('alpha({"n":1})');
    const firstPid = s.iris.mcp.servers.pid('fake');
    const started = performance.now();
    const crashed = await execute(s, 'fake.crash', { n: 1 });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(resultText(crashed)).toMatch(/^The fake tools went offline during the call/);
    await expect.poll(() => s.iris.mcp.servers.status()[0]?.state).toBe('stopped');
    expect(resultText(await execute(s, 'fake.beta', { n: 2 }))).toBe('beta({"n":2})');
    expect(s.iris.mcp.servers.pid('fake')).not.toBe(firstPid);
  });
});

describe('health and pre-warm', () => {
  it('kill -9 of a stdio server is seen at once; it is restarted', async () => {
    const s = await setup({ everything: stdio(EVERYTHING, 'stdio') });
    await s.iris.mcp.servers.startAll();
    const pending = execute(s, 'everything.trigger-long-running-operation', { duration: 5, steps: 5 });
    await new Promise((resolve) => setTimeout(resolve, 300)); // let the call reach the server
    const pid = s.iris.mcp.servers.pid('everything');
    expect(pid).toBeGreaterThan(0);
    const killed = performance.now();
    process.kill(pid ?? 0, 'SIGKILL');
    const result = await pending;
    expect(performance.now() - killed).toBeLessThan(1_000);
    expect(resultText(result)).toMatch(/went offline during the call/);
    // Pre-warmed servers are restarted by themselves (with backoff), not on the next call.
    const restarted = () => s.iris.mcp.servers.status()[0]?.state === 'up' && s.iris.mcp.servers.pid('everything') !== pid;
    await expect.poll(restarted, { timeout: 15_000 }).toBe(true);
  });

  it('a dead HTTP server does not hang a call', async () => {
    const http = await everythingOverHttp('streamableHttp');
    const s = await setup({ web: { url: http.url } });
    expect(resultText(await execute(s, 'web.echo', { message: 'up' }))).toBe('Echo: up');
    await http.stop();
    const started = performance.now();
    const result = await execute(s, 'web.echo', { message: 'down?' });
    expect(result.isError).toBe(true);
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('a server that keeps dying is marked down; calls say it is offline; others are unaffected', async () => {
    const s = await setup({ broken: fake('exit-at-start'), everything: stdio(EVERYTHING, 'stdio') }, '', tempDir(), 20);
    await s.iris.mcp.servers.startAll();
    await expect.poll(() => s.iris.mcp.servers.status().find((x) => x.name === 'broken')?.state, { timeout: 30_000 }).toBe('down');
    expect(resultText(await execute(s, 'everything.echo', { message: 'fine' }))).toBe('Echo: fine');
    const offline = await s.iris.mcp.servers.call('broken', 'alpha', { n: 1 });
    expect(resultText(offline)).toMatch(/^The broken tools are offline right now \(/);
  });

  it('caches tool lists with a fingerprint, so the hierarchy is there before servers start', async () => {
    const stateDir = tempDir();
    const first = await setup({ everything: stdio(EVERYTHING, 'stdio') }, '', stateDir);
    await first.iris.mcp.servers.startAll();
    await first.iris.stop();
    const second = await setup({ everything: stdio(EVERYTHING, 'stdio') }, '', stateDir);
    expect(second.iris.mcp.servers.status()[0]).toMatchObject({ state: 'stopped', tools: expect.any(Number) });
    expect(Object.keys((await browse(second, 'everything')).tools as object)).toContain('get-sum');
    // A changed command is a different server: its old list is not trusted.
    const third = await setup({ everything: stdio(EVERYTHING, 'stdio', '--changed') }, '', stateDir);
    expect(third.iris.mcp.servers.status()[0]?.tools).toBe(0);
  });
});

describe('toggles, applied without a restart', () => {
  it('enabled = false and allow/deny lists take effect on reconfigure', async () => {
    const s = await setup({ everything: stdio(EVERYTHING, 'stdio') });
    await s.iris.mcp.servers.startAll();
    const reconfigure = (text: string) => s.iris.reconfigure(parseConfig(`[assistant]\ntimezone = "UTC"\n${text}`, 'test-config'));
    const server = `[mcp.servers.everything]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(EVERYTHING)}, "stdio"]\n`;

    await reconfigure(`${server}allow = ["echo", "get-sum"]\n`);
    expect(Object.keys((await browse(s, 'everything')).tools as object)).toEqual(['echo', 'get-sum']);
    expect(resultText(await execute(s, 'everything.get-env', {}))).toBe('The server "everything" has no tool "get-env". Its tools: echo, get-sum.');

    await reconfigure(`${server}deny = ["echo"]\n`);
    expect(Object.keys((await browse(s, 'everything')).tools as object)).not.toContain('echo');

    await reconfigure(`${server}enabled = false\n`);
    expect(s.iris.host.definitions().map((d) => d.name)).not.toContain('execute_tool');
    expect(s.iris.mcp.servers.status()[0]?.state).toBe('disabled');
  });
});
