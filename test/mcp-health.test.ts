// MCP server health (seed 001): the verdict from recent answers and failures, and
// `iris mcp list` / `iris mcp health` against a real server (server-everything).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Health } from '../src/toolhost/mcp/health.js';
import { iris } from './helpers/cli.js';
import { EVERYTHING, serversToml, stdio } from './helpers/mcp.js';
import { tempDir } from './helpers/tmp.js';

describe('health', () => {
  it('healthy, degraded (slow or failing sometimes), unhealthy (failing), unknown (never asked)', () => {
    const now = Date.now();
    expect(new Health().report(false, 0).state).toBe('unknown');
    const good = new Health();
    for (let i = 0; i < 10; i++) good.record(true, 20);
    expect(good.report(true, now - 65_000, now)).toMatchObject({ state: 'healthy', response_ms: 20, success_rate: 1, errors: 0, uptime_s: 65 });
    const slow = new Health();
    for (let i = 0; i < 5; i++) slow.record(true, 3_000);
    expect(slow.report(true, now).state).toBe('degraded');
    const flaky = new Health();
    for (let i = 0; i < 8; i++) flaky.record(true, 20);
    flaky.record(false, 5_000, 'timed out');
    flaky.record(true, 20);
    expect(flaky.report(true, now)).toMatchObject({ state: 'degraded', success_rate: 0.9, errors: 1, last_error: 'timed out' });
    const failing = new Health();
    failing.record(true, 20);
    for (let i = 0; i < 3; i++) failing.record(false, 5_000, 'Connection closed');
    expect(failing.report(true, now).state).toBe('unhealthy');
    expect(good.report(false, 0).state).toBe('unhealthy'); // answered before, not connected now
  });
});

describe('iris mcp list / health', () => {
  it('health connects, pings and reports each server; list starts none (without a daemon)', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'config'), `[assistant]\ntimezone = "UTC"\n${serversToml({ everything: stdio(EVERYTHING, 'stdio') })}`);
    const vars = { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') };
    expect(await iris(['mcp', 'list'], vars)).toMatchObject({ code: 0, stdout: 'everything: stopped, 0 tools, unknown\n' });
    const health = await iris(['mcp', 'health', '--json'], vars);
    expect(health.code).toBe(0);
    expect(JSON.parse(health.stdout)).toEqual([{
      name: 'everything', server_state: 'up', state: 'healthy', response_ms: expect.any(Number), success_rate: 1, errors: 0,
      last_success: expect.stringMatching(/^\d{4}-/), uptime_s: expect.any(Number),
    }]);
    // The tool list health learnt is cached: list shows it, still without starting the server.
    expect(await iris(['mcp', 'list'], vars)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^everything: stopped, 1\d tools, unknown\n$/) });
  }, 60_000);
});
