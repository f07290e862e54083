/**
 * `iris mcp list|health|login|logout`: the MCP servers in the config, their health, and
 * signing in to those that ask for OAuth (the flow is ../login.ts).
 */
import type { Command } from 'commander';
import { messageOf } from '../../errors.js';
import { ControlUnavailable, request, socketPath } from '../../daemon/control.js';
import type { ServerStatus } from '../../toolhost/mcp/servers.js';
import { signInSentence } from '../../toolhost/mcp/auth/errors.js';
import { authStore } from '../../toolhost/mcp/auth/store.js';
import { stateDir } from '../../toolhost/store.js';
import { login, logout } from '../login.js';
import { EXIT, Exit, jsonOption, output, print } from '../output.js';
import { configOf, daemon, globals, logOf, readConfig, type Globals, type Session } from '../session.js';

/** A server's state for people: "needs sign-in", not the JSON's "needs-sign-in". */
export const stateWords = (state: ServerStatus['state']): string => (state === 'needs-sign-in' ? 'needs sign-in' : state);

/** One server as `iris status` and `iris mcp list` print it. */
export function serverLine(s: ServerStatus): string {
  return `${s.name}: ${stateWords(s.state)}${s.transport ? ` over ${s.transport}` : ''}, ${s.tools} tools, ${s.health.state}${s.reason ? ` (${s.reason})` : ''}`;
}

/**
 * Without a daemon `mcp list` connects to nothing, so a lapsed sign-in is read from the token
 * store: a stopped server whose stored sign-in has no tokens (revoked, or a refresh refused)
 * needs sign-in, as a connection would have found.
 */
async function withStoredSignIns(servers: ServerStatus[], g: Globals): Promise<ServerStatus[]> {
  const log = logOf(g);
  return Promise.all(servers.map(async (s) => {
    if (s.state !== 'stopped') return s;
    const doc = await authStore(stateDir(), s.name, log).read().catch(() => undefined);
    return doc !== undefined && doc.tokens === undefined ? { ...s, state: 'needs-sign-in' as const, reason: signInSentence(s.name) } : s;
  }));
}

/** One server's health as `iris mcp health` prints it. */
function healthLine(s: ServerStatus): string {
  const h = s.health;
  if (s.state === 'needs-sign-in') return `${s.name}: needs sign-in (${s.reason ?? ''})`;
  return `${s.name}: ${h.state}; response ${h.response_ms ?? '–'} ms, success ${h.success_rate === null ? '–' : `${Math.round(h.success_rate * 100)} %`}, ${h.errors} errors, last success ${h.last_success ?? 'never'}, up ${h.uptime_s} s${h.last_error ? ` (last error: ${h.last_error})` : ''}`;
}

/** After a sign-in changed: the running daemon connects the server again (none running: nothing to do). */
async function reconnect(name: string): Promise<void> {
  try {
    const status = await request(socketPath(), { cmd: 'mcp.reconnect', name }, 60_000);
    print(`the running IRIS reconnected it: ${serverLine(status)}`);
  } catch (error) {
    if (!(error instanceof ControlUnavailable && error.reason === 'not_running')) process.stderr.write(`the running IRIS was not told (${messageOf(error)}); run: iris reload\n`);
  }
}

export function register(program: Command, session: Session): void {
  const mcp = program.command('mcp').description('the MCP servers in the config, and their health');

  mcp
    .command('list')
    .description('each configured server: state, transport, tools, health (without a running daemon: from the config and the cached tool lists, starting none; iris mcp health connects them)')
    .addOption(jsonOption())
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      // Quick with 50 servers: the daemon's view, else the config and cache; nothing is started.
      const servers = (await daemon(g, { cmd: 'status' }))?.mcp ?? await withStoredSignIns((await session.open(g)).iris.mcp.servers.status(), g);
      output(g.json, servers.map(({ health: _health, ...rest }) => rest), () =>
        servers.length === 0 ? ['no MCP servers configured ([mcp.servers.NAME] or [mcp] servers_file)'] : servers.map(serverLine));
    });

  mcp
    .command('health')
    .description('each server\'s health: state, response time, success rate, errors, last success, uptime')
    .addOption(jsonOption())
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      // The servers as the running daemon sees them, else connected and pinged once here.
      let servers = (await daemon(g, { cmd: 'status' }))?.mcp;
      if (servers === undefined) {
        const { iris } = await session.open(g);
        await iris.mcp.servers.startAll(); // connected, not just listed from the cache
        await iris.mcp.servers.checkHealth();
        servers = iris.mcp.servers.status();
      }
      output(g.json, servers.map((s) => ({ name: s.name, server_state: s.state, ...s.health })), () => servers.map(healthLine));
      if (servers.some((s) => s.health.state === 'unhealthy' || s.state === 'needs-sign-in')) process.exitCode = EXIT.failed;
    });

  mcp
    .command('login')
    .description('sign in to a server that asks for OAuth: prints the address to open, completes on the loopback redirect or the redirected address pasted here')
    .argument('<name>', 'the server ([mcp.servers.NAME])')
    .option('--no-browser', 'the browser is on another machine: paste the address it ends on (IRIS never opens a browser itself)')
    .action(async (name: string, opts: { browser: boolean }, cmd: Command) => {
      const g = globals(cmd);
      const config = await readConfig(g);
      const server = config.mcp.servers[name];
      if (server === undefined) throw new Exit(EXIT.failed, `no MCP server named "${name}" in ${configOf(g).path}`);
      let done: string;
      try {
        done = await login({
          name, server, stateDir: stateDir(), log: logOf(g), timeoutMs: config.mcp.connect_timeout_s * 1000,
          noBrowser: !opts.browser, say: print, input: process.stdin,
        });
      } catch (error) {
        // One line, naming the server: the reason may carry an authorization server's own words.
        throw new Exit(EXIT.failed, `${name}: sign-in failed: ${messageOf(error).replace(/\s+/g, ' ').trim()}`);
      } finally {
        process.stdin.pause();
      }
      print(done);
      await reconnect(name);
    });

  mcp
    .command('logout')
    .description("forget a server's sign-in (its tokens and registration)")
    .argument('<name>', 'the server ([mcp.servers.NAME])')
    .action(async (name: string, _opts, cmd: Command) => {
      const g = globals(cmd);
      const config = await readConfig(g);
      if (config.mcp.servers[name] === undefined) throw new Exit(EXIT.failed, `no MCP server named "${name}" in ${configOf(g).path}`);
      const removed = await logout(name, stateDir(), logOf(g));
      print(removed ? `${name}: signed out; its tokens and registration are deleted` : `${name}: was not signed in`);
      await reconnect(name);
    });
}
