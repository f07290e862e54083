/**
 * The `iris` command (CONTRACT.md). Exit codes: 0 success, 1 the request failed, 2 usage,
 * 78 configuration error. `--json` prints exactly one JSON document on stdout; logs and
 * reasons go to stderr.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { configFile, loadConfig, DEFAULT_CONFIG_PATH, type ConfigFile } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { ConfigError, messageOf } from '../errors.js';
import { createLogger, printable, type LogLevel } from '../log.js';
import { loadTokenizer, toolTokens } from '../budget/tokenizer.js';
import { assemble, type Iris } from '../daemon/assemble.js';
import { runDaemon } from '../daemon/daemon.js';
import { errorResult, resultText, type CallToolResult, type ToolDefinition } from '../toolhost/api.js';
import { stateDir } from '../toolhost/store.js';
import type { TimerRecord } from '../../tools/timers.js';
import { chat, typedAsker, TypedLines } from './chat.js';
import type { TurnResult } from '../conversation/engine.js';
import { shownInFull } from '../conversation/model-turn.js';
import { fullDefinition } from '../toolhost/mcp/proxy.js';
import { renderDefaultConfig } from '../config/defaults.js';
import { access, open as openFile, realpath, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { KNOWN_MODELS, STALL_TIMEOUT_MS, type FetchedModel } from '../pipeline/models.js';
import { PIPER_VOICES } from '../pipeline/voices.js';
import { modelsFetch, StoppedError, untilStopped, UsageError, type ModelsFetchOptions } from './models.js';
import { Engines } from '../pipeline/engines.js';
import { runPipeline, STAGES } from '../pipeline/pipeline.js';
import { CollectingSink, Speaker, aplaySink } from '../pipeline/playback.js';
import { speakable } from '../conversation/speech.js';
import { ControlUnavailable, request, socketPath } from '../daemon/control.js';
import type { Command as ControlCommand, ControlResults, DaemonStatus, RequestOf } from '../daemon/protocol.js';
import type { ServerStatus } from '../toolhost/mcp/servers.js';
import { signInSentence } from '../toolhost/mcp/auth/errors.js';
import { authStore } from '../toolhost/mcp/auth/store.js';
import type { RoomStatus } from '../daemon/rooms.js';
import { doctor } from './doctor.js';
import { login, logout } from './login.js';
import { describe, listen, type ListenReport, type ListenStages } from './listen.js';

export const EXIT = { ok: 0, failed: 1, usage: 2, config: 78 } as const;

/** A number of seconds from the command line: positive, at most a day (past that a timer would overflow to 1 ms). */
function seconds(text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0 || value > 86_400) throw new InvalidArgumentError('expected seconds, more than 0 and at most 86400');
  return value;
}

/** A failure with the exit code it maps to and a one-line reason. */
class Exit extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

interface Globals {
  config?: string;
  json?: boolean;
  logLevel: LogLevel;
}

const exists = (path: string): Promise<boolean> => access(path).then(() => true, () => false);
/** Prints a line of output: a server's, a peer's or a model's words in it are made printable. */
const print = (text: string): void => void process.stdout.write(`${printable(text, { lines: true })}\n`);
const printJson = (value: unknown): void => print(JSON.stringify(value, null, 2));

/** The config file a command reads: `--config`, else `$IRIS_CONFIG`, else the default. */
function configOf(globals: Globals): ConfigFile {
  return configFile(globals.config, process.env);
}

/** The one config check every command runs (`iris config check` too); a problem is exit 78. */
async function readConfig(globals: Globals): Promise<Config> {
  try {
    return await loadConfig(configOf(globals));
  } catch (error) {
    if (error instanceof ConfigError) throw new Exit(EXIT.config, error.message);
    throw error;
  }
}

/**
 * Before a command the daemon answers: it answers with its own config, but a config named
 * with --config or $IRIS_CONFIG is still checked, so a broken or missing one fails the command
 * (exit 78) instead of being silently ignored. The default path is the daemon's business.
 */
async function checkNamedConfig(globals: Globals): Promise<void> {
  if (configOf(globals).namedBy !== undefined) await readConfig(globals);
}

/** After the daemon answered: say so on stderr when the config named here is not the one it runs. */
async function sayWhichConfig(globals: Globals, daemonConfig: string): Promise<void> {
  const file = configOf(globals);
  if (file.namedBy === undefined) return;
  const real = (path: string): Promise<string> => realpath(path).catch(() => resolve(path));
  if ((await real(file.path)) === (await real(daemonConfig))) return;
  const named = file.namedBy === '--config' ? `--config ${file.path}` : `IRIS_CONFIG=${file.path}`;
  process.stderr.write(`answered by the running daemon with its config ${daemonConfig}; ${named} is not used\n`);
}

/**
 * Ask the running daemon; `undefined` when none is running (the caller then works in-process
 * with its own config). A named config is checked first and, when it is not the daemon's,
 * named as unused (checkNamedConfig, sayWhichConfig).
 */
async function daemon<C extends ControlCommand>(globals: Globals, body: RequestOf<C>): Promise<ControlResults[C] | undefined> {
  await checkNamedConfig(globals);
  try {
    if (configOf(globals).namedBy !== undefined) {
      await sayWhichConfig(globals, (await request(socketPath(), { cmd: 'config' }, 10_000)).path);
    }
    return await request(socketPath(), body);
  } catch (error) {
    if (error instanceof ControlUnavailable && error.reason === 'not_running') return undefined;
    throw new Exit(EXIT.failed, messageOf(error));
  }
}

/**
 * A tool call through the running daemon, else in-process: while a daemon runs, every change
 * goes through it (it holds the timers armed). A person typing the command is the
 * confirmation a tool may ask for.
 */
async function callTool(g: Globals, name: string, args: unknown): Promise<CallToolResult> {
  const viaDaemon = await daemon(g, { cmd: 'tools.call', name, arguments: args });
  if (viaDaemon !== undefined) return viaDaemon;
  const { iris } = await open(g);
  // A server's question during the call is asked here and answered by the next typed line.
  const lines = new TypedLines();
  try {
    return await iris.host.call(name, args, { origin: 'typed', ask: typedAsker(lines, iris.config.assistant.confirm_timeout_s * 1000) });
  } finally {
    lines.close();
  }
}

/**
 * Without a daemon `mcp list` connects to nothing, so a lapsed sign-in is read from the token
 * store: a stopped server whose stored sign-in has no tokens (revoked, or a refresh refused)
 * needs sign-in, as a connection would have found.
 */
async function withStoredSignIns(servers: ServerStatus[], g: Globals): Promise<ServerStatus[]> {
  const log = createLogger('iris', { level: g.logLevel });
  return Promise.all(servers.map(async (s) => {
    if (s.state !== 'stopped') return s;
    const doc = await authStore(stateDir(), s.name, log).read().catch(() => undefined);
    return doc !== undefined && doc.tokens === undefined ? { ...s, state: 'needs-sign-in' as const, reason: signInSentence(s.name) } : s;
  }));
}

/** A server's state for people: "needs sign-in", not the JSON's "needs-sign-in". */
const stateWords = (state: ServerStatus['state']): string => (state === 'needs-sign-in' ? 'needs sign-in' : state);
/** One room as `iris status` prints it: "kitchen (kitchen): connected, idle, last heard 12:03:04, \"what time is it\"". */
function roomLine(room: RoomStatus): string {
  const parts = [room.state === 'connected' ? `connected, ${room.doing}` : room.state];
  if (room.mode !== undefined) parts.push(room.mode === 'wake' ? 'IRIS hears the wake word' : 'the satellite hears the wake word');
  if (room.behind_s !== undefined) parts.push(`heard ${room.behind_s} s late (too many rooms for this machine)`);
  if (room.last_heard !== undefined) parts.push(`last heard ${new Date(room.last_heard).toLocaleTimeString()}`);
  if (room.last_transcript !== undefined) parts.push(JSON.stringify(room.last_transcript));
  if (room.state !== 'connected' && room.detail !== undefined) parts.push(room.detail);
  return `${room.name} (${room.area}, ${room.uri}): ${parts.join(', ')}`;
}

/** One server as `iris status` and `iris mcp list` print it. */
function serverLine(s: ServerStatus): string {
  return `${s.name}: ${stateWords(s.state)}${s.transport ? ` over ${s.transport}` : ''}, ${s.tools} tools, ${s.health.state}${s.reason ? ` (${s.reason})` : ''}`;
}

/** Every IRIS a command opened, stopped after the command (MCP servers are child processes). */
const opened: Iris[] = [];

/** The parts a one-shot command needs, without arming timers (the daemon does that). */
async function open(globals: Globals) {
  const config = await readConfig(globals);
  const log = createLogger('iris', { level: globals.logLevel });
  const iris = assemble(config, { stateDir: stateDir(), log });
  opened.push(iris);
  await iris.init();
  return { config, iris, log };
}

function parseJsonArgument(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Exit(EXIT.usage, `ARGS_JSON is not valid JSON: ${messageOf(error)}`);
  }
}

/**
 * Fail now, as a usage error, when `path` cannot be written (its directory missing, not
 * writable, or `path` a directory) — not after a whole run. Tried by creating the file: that
 * also catches a read-only file system and holds for root, whom permission bits do not stop.
 */
async function checkWritable(path: string): Promise<void> {
  try {
    const file = await openFile(path, 'wx');
    await file.close();
    await rm(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      try {
        await (await openFile(path, 'r+')).close();
        return;
      } catch (again) {
        error = again;
      }
    }
    const why: Record<string, string> = {
      ENOENT: `its directory ${dirname(resolve(path))} does not exist`,
      ENOTDIR: `${dirname(resolve(path))} is not a directory`,
      EISDIR: 'it is a directory',
      EACCES: 'no permission to write it',
      EPERM: 'no permission to write it',
      EROFS: 'the file system is read-only',
    };
    const reason = why[(error as NodeJS.ErrnoException).code ?? ''] ?? messageOf(error);
    throw new Exit(EXIT.usage, `cannot write --out ${path}: ${reason}`);
  }
}

/** Why `SERVER.TOOL` cannot be called because of its server (none by that name, or switched
 * off), or undefined: the proxy then says whether that server has the tool. */
function missingServer(config: Config, toolPath: string): string | undefined {
  const wanted = (toolPath.split('.')[0] ?? '').toLowerCase();
  const servers = Object.entries(config.mcp.servers);
  const server = servers.find(([name]) => name.toLowerCase() === wanted);
  if (server === undefined) {
    const known = servers.map(([name]) => name);
    return `There is no MCP server "${wanted}" in the config (${known.length === 0 ? 'none is configured' : `servers: ${known.join(', ')}`}). A remote tool is called as SERVER.TOOL.`;
  }
  if (server[1].enabled === false) return `The MCP server "${server[0]}" is switched off (enabled = false in its [mcp.servers.${server[0]}] table).`;
  return undefined;
}

function printResult(result: CallToolResult, json: boolean | undefined): void {
  if (json === true) printJson(result);
  else print(resultText(result));
  if (result.isError === true) process.exitCode = EXIT.failed;
}

export function buildProgram(): Command {
  const program = new Command('iris')
    .description('IRIS: a local, private voice assistant for Linux home servers')
    .option('--config <path>', `config file (default: $IRIS_CONFIG, else ${DEFAULT_CONFIG_PATH})`)
    .addOption(new Option('--log-level <level>', 'log level on stderr').choices(['debug', 'info', 'warn', 'error']).default('warn'))
    .showHelpAfterError()
    .exitOverride();
  const globals = (cmd: Command): Globals => cmd.optsWithGlobals<Globals>();

  program
    .command('ask')
    .description('one text turn through the conversation engine (tools included)')
    .argument('<text...>', 'what to ask')
    .option('--json', 'print one JSON document')
    .option('--conversation <id>', "continue this conversation in the running daemon (its history and pending question); without it, a new one")
    .action(async (words: string[], opts: { conversation?: string }, cmd: Command) => {
      const g = globals(cmd);
      const text = words.join(' ');
      if (text.trim() === '') throw new Exit(EXIT.usage, 'TEXT is empty: say what to ask, e.g. iris ask "what time is it"');
      const viaDaemon = await daemon(g, { cmd: 'ask', text, ...(opts.conversation === undefined ? {} : { conversation: opts.conversation }) });
      if (viaDaemon !== undefined) {
        if (g.json === true) printJson(viaDaemon);
        else print(viaDaemon.reply);
        if (viaDaemon.confirm !== undefined && opts.conversation === undefined && g.json !== true) {
          process.stderr.write(`To answer: iris ask --conversation ${viaDaemon.conversation ?? ''} yes\n`);
        }
        if (viaDaemon.question !== undefined && opts.conversation === undefined && g.json !== true) {
          process.stderr.write(`To answer: iris ask --conversation ${viaDaemon.conversation ?? ''} YOUR ANSWER\n`);
        }
        if (viaDaemon.error !== undefined) throw new Exit(EXIT.failed, viaDaemon.error.message);
        return;
      }
      const { iris } = await open(g);
      const controller = new AbortController();
      const interrupt = (): void => controller.abort(new Error('interrupted'));
      process.once('SIGINT', interrupt);
      const conversation = iris.conversation();
      const lines = new TypedLines();
      try {
        let said: string | undefined = text;
        let result: TurnResult | undefined;
        // A tool's question (elicitation) is answered by the next line typed on stdin.
        while (said !== undefined) {
          const turn = conversation.turn(said, controller.signal);
          if (g.json !== true) for await (const sentence of turn.sentences) print(sentence);
          result = await turn.result;
          said = result.question === undefined ? undefined : await lines.next();
        }
        if (g.json === true) printJson(result);
        if (result?.error !== undefined) throw new Exit(EXIT.failed, result.error.message);
      } finally {
        lines.close();
        process.off('SIGINT', interrupt);
      }
    });

  program
    .command('chat')
    .description('interactive text conversation in a terminal (/reset forgets, /quit or Ctrl-D ends)')
    .action(async (_opts, cmd: Command) => {
      const { iris } = await open(globals(cmd));
      await chat(iris.conversation());
    });

  const mcp = program.command('mcp').description('the MCP servers in the config, and their health');
  /** The servers as the running daemon sees them, else connected and pinged once here. */
  const mcpStatus = async (g: Globals): Promise<ServerStatus[]> => {
    const status = await daemon(g, { cmd: 'status' });
    if (status !== undefined) return status.mcp;
    const { iris } = await open(g);
    await iris.mcp.servers.startAll(); // connected, not just listed from the cache
    await iris.mcp.servers.checkHealth();
    return iris.mcp.servers.status();
  };
  mcp
    .command('list')
    .description('each configured server: state, transport, tools, health (without a running daemon: from the config and the cached tool lists, starting none; iris mcp health connects them)')
    .option('--json', 'print one JSON document')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      // Quick with 50 servers: the daemon's view, else the config and cache; nothing is started.
      const servers = (await daemon(g, { cmd: 'status' }))?.mcp ?? await withStoredSignIns((await open(g)).iris.mcp.servers.status(), g);
      if (g.json === true) return printJson(servers.map(({ health: _health, ...rest }) => rest));
      if (servers.length === 0) print('no MCP servers configured ([mcp.servers.NAME] or [mcp] servers_file)');
      for (const s of servers) print(serverLine(s));
    });
  mcp
    .command('health')
    .description('each server\'s health: state, response time, success rate, errors, last success, uptime')
    .option('--json', 'print one JSON document')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const servers = await mcpStatus(g);
      if (g.json === true) return printJson(servers.map((s) => ({ name: s.name, server_state: s.state, ...s.health })));
      for (const s of servers) {
        const h = s.health;
        if (s.state === 'needs-sign-in') {
          print(`${s.name}: needs sign-in (${s.reason ?? ''})`);
          continue;
        }
        print(`${s.name}: ${h.state}; response ${h.response_ms ?? '–'} ms, success ${h.success_rate === null ? '–' : `${Math.round(h.success_rate * 100)} %`}, ${h.errors} errors, last success ${h.last_success ?? 'never'}, up ${h.uptime_s} s${h.last_error ? ` (last error: ${h.last_error})` : ''}`);
      }
      if (servers.some((s) => s.health.state === 'unhealthy' || s.state === 'needs-sign-in')) process.exitCode = EXIT.failed;
    });
  /** After a sign-in changed: the running daemon connects the server again (none running: nothing to do). */
  const reconnect = async (name: string): Promise<void> => {
    try {
      const status = await request(socketPath(), { cmd: 'mcp.reconnect', name }, 60_000);
      print(`the running IRIS reconnected it: ${serverLine(status)}`);
    } catch (error) {
      if (!(error instanceof ControlUnavailable && error.reason === 'not_running')) process.stderr.write(`the running IRIS was not told (${messageOf(error)}); run: iris reload\n`);
    }
  };
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
          name, server, stateDir: stateDir(), log: createLogger('iris', { level: g.logLevel }), timeoutMs: config.mcp.connect_timeout_s * 1000,
          noBrowser: !opts.browser, say: print, input: process.stdin,
        });
      } catch (error) {
        // One line: the reason may carry an authorization server's own words.
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
      const removed = await logout(name, stateDir(), createLogger('iris', { level: g.logLevel }));
      print(removed ? `${name}: signed out; its tokens and registration are deleted` : `${name}: was not signed in`);
      await reconnect(name);
    });

  const tools = program.command('tools').description('the tools the model can reach');
  tools
    .command('list')
    .description('every tool, native and remote, with on/off state and token cost')
    .option('--json', 'print one JSON document')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const { iris } = await open(g);
      await iris.mcp.servers.ensureAllTools();
      const tokenizer = await loadTokenizer();
      const native = iris.host.list().filter((t) => t.source === 'native').map((t) => ({
        name: t.name, source: t.source, enabled: t.enabled, description: t.description, tokens: toolTokens(tokenizer, t),
      }));
      const remote = iris.mcp.servers.listing().map(({ server, tool, enabled }) => ({
        name: `${server}.${tool.name}`, source: 'mcp' as const, server, enabled, description: tool.description ?? '', tokens: toolTokens(tokenizer, tool),
      }));
      const rows = [...native, ...remote];
      if (g.json === true) return printJson(rows);
      const width = Math.max(0, ...rows.map((r) => r.name.length));
      for (const r of rows) {
        const summary = r.description.split('\n')[0] ?? '';
        print(`${r.name.padEnd(width)}  ${r.source.padEnd(6)}  ${r.enabled ? 'on ' : 'off'}  ${String(r.tokens).padStart(4)} tok  ${summary}`);
      }
      for (const s of iris.mcp.servers.status().filter((x) => x.state !== 'up' && x.state !== 'disabled')) {
        print(`(${s.name}: ${stateWords(s.state)}${s.reason ? `: ${s.reason}` : ''})`);
      }
    });
  tools
    .command('call')
    .description('call one tool directly (NAME, or SERVER.TOOL for a remote one) and print its result')
    .argument('<name>', 'tool name')
    .argument('[args_json]', 'arguments as a JSON object', '{}')
    .option('--json', 'print the MCP CallToolResult')
    .action(async (name: string, argsJson: string, _opts, cmd: Command) => {
      const g = globals(cmd);
      const args = parseJsonArgument(argsJson);
      // SERVER.TOOL is a remote tool, reached through the proxy like the model reaches it.
      const remote = name.includes('.') && !name.startsWith('functions.');
      const noServer = remote ? missingServer(await readConfig(g), name) : undefined;
      const result = noServer !== undefined
        ? errorResult(noServer)
        : remote
          ? await callTool(g, 'execute_tool', { tool_path: name, arguments: args })
          : await callTool(g, name, args);
      printResult(result, g.json);
    });
  tools
    .command('search')
    .description('which remote tools the first model request would show in full for these words, with their scores')
    .argument('<query...>', 'the words, as the person would say them')
    .option('--json', 'print one JSON document')
    .action(async (words: string[], _opts, cmd: Command) => {
      const g = globals(cmd);
      const query = words.join(' ');
      const { config, iris } = await open(g);
      await iris.mcp.servers.ensureAllTools(); // lists not cached yet (the daemon learns them in the background)
      const tokenizer = await loadTokenizer();
      const count = (text: string) => tokenizer.count(text);
      const ranked = iris.mcp.proxy.rank(query, config.tools.expose_max);
      const offered = iris.host.definitions();
      const shown = new Set(shownInFull(offered, ranked.map(fullDefinition), config.budget.tool_tokens, count).map((d) => d.name));
      const row = (r: (typeof ranked)[number]) => ({ name: r.path, score: r.score });
      const exposed = ranked.filter((r) => shown.has(r.path));
      const report = {
        query,
        exposed: exposed.map(row),
        tokens: exposed.reduce((sum, r) => sum + toolTokens(tokenizer, fullDefinition(r)) + 1, 0),
        budget: config.budget.tool_tokens,
        /** Ranked among the best expose_max but over [budget] tool_tokens beside the other tools. */
        left_out: ranked.filter((r) => !shown.has(r.path)).map(row),
        remote_tools: iris.mcp.proxy.remoteTools().length,
      };
      if (g.json === true) return printJson(report);
      if (report.remote_tools === 0) return print('no remote tools known: configure [mcp.servers.NAME] (iris mcp list)');
      if (config.tools.expose_max === 0) return print('[tools] expose_max = 0: the model is shown only the meta-tools');
      if (exposed.length === 0) return print(`no remote tool matches "${query}": the model gets only the meta-tools (of ${report.remote_tools} remote tools)`);
      print(`for "${query}" the first request shows ${exposed.length} of ${report.remote_tools} remote tools in full (${report.tokens} tokens):`);
      const width = Math.max(...ranked.map((r) => r.path.length));
      for (const r of exposed) print(`  ${r.score.toFixed(2).padStart(7)}  ${r.path.padEnd(width)}  ${(r.tool.description ?? '').split('\n')[0] ?? ''}`);
      for (const r of report.left_out) print(`  ${r.score.toFixed(2).padStart(7)}  ${r.name.padEnd(width)}  (left out: over [budget] tool_tokens ${report.budget})`);
    });
  tools
    .command('budget')
    .description('token accounting of tool definitions')
    .option('--json', 'print one JSON document')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const { config, iris } = await open(g);
      await iris.mcp.servers.ensureAllTools();
      const tokenizer = await loadTokenizer();
      const offered = iris.host.definitions();
      const sum = (defs: readonly ToolDefinition[]) => defs.reduce((total, t) => total + toolTokens(tokenizer, t), 0);
      const nativeTokens = sum(offered.filter((d) => iris.host.list().find((t) => t.name === d.name)?.source === 'native'));
      const metaTokens = sum(offered.filter((d) => d.name === 'get_tools_in_category' || d.name === 'execute_tool'));
      const remote = iris.mcp.proxy.remoteTools();
      const directTokens = sum(remote.map((r) => r.tool));
      const report = {
        budget: config.budget.tool_tokens,
        exposed_tokens: nativeTokens + metaTokens,
        native_tokens: nativeTokens,
        meta_tools_tokens: metaTokens,
        remote_tools: remote.length,
        direct_mcp_tokens: directTokens,
        reduction: directTokens === 0 ? 0 : Math.round((1 - metaTokens / directTokens) * 1000) / 1000,
        /** [tools] expose_max: remote tools shown in full per request, in what the budget leaves. */
        expose_max: config.tools.expose_max,
        tokenizer: tokenizer.name,
      };
      if (g.json === true) return printJson(report);
      print(`tool definitions sent to the model: ${report.exposed_tokens} of ${report.budget} tokens (native ${report.native_tokens}, MCP meta-tools ${report.meta_tools_tokens})`);
      print(`remote tools: ${report.remote_tools}, ${report.direct_mcp_tokens} tokens if sent directly; the proxy saves ${Math.round(report.reduction * 1000) / 10}%`);
      if (report.remote_tools > 0 && report.expose_max > 0) {
        print(`plus, per request, up to ${report.expose_max} remote tools most likely meant, in full, within the ${report.budget} tokens (iris tools search WORDS)`);
      }
      print(`tokenizer: ${report.tokenizer}`);
    });

  const timers = program.command('timers').description('the persisted timers and reminders');
  timers
    .command('list')
    .description('pending timers and reminders')
    .option('--json', 'print one JSON document')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const result = await callTool(g, 'list_timers', {});
      if (g.json === true) {
        const rows = (result.structuredContent?.timers ?? []) as (TimerRecord & { remaining_s: number })[];
        return printJson(rows);
      }
      printResult(result, false);
    });
  timers
    .command('cancel')
    .description('cancel a timer or reminder by id (or label, or "all")')
    .argument('<id>', 'timer id, label or "all"')
    .action(async (id: string, _opts, cmd: Command) => {
      printResult(await callTool(globals(cmd), 'cancel_timer', { id }), false);
    });

  program
    .command('reload')
    .description('make the running daemon re-read its config (what `systemctl reload iris` runs)')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      await checkNamedConfig(g);
      let reloaded: { reloaded: string };
      try {
        reloaded = await request(socketPath(), { cmd: 'reload' }, 30_000);
      } catch (error) {
        throw new Exit(error instanceof ControlUnavailable ? EXIT.failed : EXIT.config, messageOf(error));
      }
      await sayWhichConfig(g, reloaded.reloaded);
    });

  program
    .command('status')
    .description('ask the running daemon how it is')
    .option('--json', 'print one JSON document')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      await checkNamedConfig(g);
      let status: DaemonStatus;
      try {
        status = await request(socketPath(), { cmd: 'status' }, 10_000);
      } catch (error) {
        throw new Exit(EXIT.failed, messageOf(error));
      }
      await sayWhichConfig(g, status.config);
      if (g.json === true) return printJson(status);
      print(`IRIS is running (pid ${status.pid}, up ${status.uptime_s} s), home zone ${status.home_zone}`);
      const loaded = status.ollama.loaded === null ? 'Ollama not answering' : status.ollama.loaded ? 'loaded' : 'not loaded';
      print(`model: ${status.ollama.model} at ${status.ollama.url} (${loaded})`);
      print(`timers and reminders: ${status.timers}`);
      for (const s of status.mcp) print(`MCP ${serverLine(s)}`);
      print(`voice: ${status.voice.state.replace(/_/g, ' ')} (${status.voice.detail})`);
      const echo = status.voice.echo;
      if (echo) print(`echo canceller: ${echo.canceller}${echo.delay_ms === undefined ? ' (delay not measured yet: IRIS has not talked)' : `, speaker-to-microphone delay ${echo.delay_ms} ms`}`);
      for (const room of status.rooms ?? []) print(`room ${roomLine(room)}`);
    });

  const configCommand = program.command('config').description('the config file');
  configCommand
    .command('defaults')
    .description('print a config file with every key commented out at its default')
    .action(() => print(renderDefaultConfig().trimEnd()));
  configCommand
    .command('check')
    .description('validate the config; print every problem as FILE:LINE: message')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const config = await readConfig(g);
      const { path } = configOf(g);
      if (!(await exists(path))) return print(`${path}: not found, using defaults`);
      print(`${path}: OK${config.mcp.servers_file === '' ? '' : ` (MCP servers also from ${config.mcp.servers_file})`}`);
    });

  program
    .command('say')
    .description('text to speech only: say TEXT on the speaker ([audio] output), or write it as a WAV file with --out')
    .argument('<text...>', 'what to say')
    .option('--out <wav>', 'write a WAV file instead of playing it')
    .action(async (words: string[], opts: { out?: string }, cmd: Command) => {
      const g = globals(cmd);
      const config = await readConfig(g);
      const tts = new Engines(() => config, createLogger('iris', { level: g.logLevel })).tts();
      const file = new CollectingSink();
      // The daemon's one way out to the speaker, or a file.
      const sink = opts.out === undefined ? new Speaker(aplaySink({ device: config.audio.output })) : file;
      const controller = new AbortController();
      const interrupt = (): void => controller.abort(new DOMException('interrupted', 'AbortError'));
      process.once('SIGINT', interrupt);
      let spoken = 0;
      try {
        // A run of the pipeline from speech to speech.
        await runPipeline({ text: speakable(words.join(' ')) }, {
          start: 'tts', end: 'tts', tts, signal: controller.signal,
          sink: { play: (wav, signal) => (spoken++, sink.play(wav, signal)) },
        });
        if (spoken === 0) throw new Error('nothing to say: the text has no words to speak');
        if (opts.out !== undefined) await writeFile(opts.out, file.wav());
      } catch (error) {
        throw new Exit(EXIT.failed, messageOf(error));
      } finally {
        process.off('SIGINT', interrupt);
      }
      print(`${opts.out ?? `speaker ${config.audio.output}`}: ${(await tts.describe?.()) ?? config.tts.voice}`);
    });

  program
    .command('listen')
    .description('the voice pipeline over a recording: wake word, end of speech, speech to text, conversation, reply to --out (or part of it: --start, --end). It carries out what it hears, as the daemon would: timers and reminders are set and tools called (with this config and state dir); --dry-run does not')
    .requiredOption('--file <wav>', 'the recording: a WAV of 8- to 32-bit integer or 32/64-bit float samples (or A-law, µ-law), any rate and channels; converted to 16 kHz mono')
    .option('--out <wav>', 'write the spoken reply here (checked before the run)')
    .option('--playback <wav>', 'what IRIS\'s speaker played while the recording was made (from its first sample): echo cancellation and the stop word run as in the daemon')
    .option('--dry-run', 'call only tools that change nothing (the time, a sum, a listing); say what would have been done instead of setting timers or calling other tools')
    .option('--json', 'print one JSON document')
    .addOption(new Option('--start <stage>', 'where the run starts: at the wake word, or at stt (the recording is the command)').choices(['wake', 'stt']).default('wake'))
    .addOption(new Option('--end <stage>', 'where it ends: wake (the detection), stt (the words), conversation (the answer, unspoken) or tts').choices([...STAGES]).default('tts'))
    .action(async (opts: { file: string; out?: string; playback?: string; dryRun?: boolean } & ListenStages, cmd: Command) => {
      const g = globals(cmd);
      if (opts.start === 'stt' && opts.end === 'wake') throw new Exit(EXIT.usage, 'a run that starts at stt cannot end at the wake word');
      if (opts.out !== undefined) await checkWritable(opts.out);
      const { config, iris, log } = await open(g);
      if (opts.dryRun === true) iris.host.dryRun();
      let report: ListenReport;
      try {
        report = await listen(config, iris.conversation(), log, opts.file, opts.out, { start: opts.start, end: opts.end }, opts.playback);
      } catch (error) {
        throw new Exit(EXIT.failed, messageOf(error));
      }
      if (g.json === true) printJson(report);
      else for (const line of describe(report)) print(line);
      if (report.outcome === 'failed' || report.error !== undefined) process.exitCode = EXIT.failed;
    });

  const models = program.command('models').description('speech models');
  models
    .command('fetch')
    .summary('download a speech model (or install one --from a file), checked against its pinned size and SHA-256')
    .description(
      `install a speech model, checked against its pinned size and SHA-256: whisper.cpp (${Object.keys(KNOWN_MODELS).join(', ')}, or any URL with --sha256) ` +
      `or a Piper voice (${Object.keys(PIPER_VOICES).map((v) => `piper:${v}`).join(', ')}; its licence is shown first). ` +
      'Downloaded, or --from a copy fetched some other way. A download is stopped the moment it passes the pinned size or stalls; ' +
      'a failed or stopped one (Ctrl-C) leaves nothing behind. Files go into the models dir: the directory of [stt] model, ' +
      'by default $IRIS_STATE_DIR/models (/var/lib/iris/models); $IRIS_PIPER_MIRROR replaces the Piper voices\' base URL',
    )
    .argument('<name-or-url>', 'a known model name, piper:VOICE, or an http(s) URL')
    .option('--sha256 <hex>', 'the published SHA-256 (required for a URL, refused for a name: those are pinned)')
    .option('--from <file>', 'install this copy instead of downloading (for piper:VOICE the .onnx, its .onnx.json beside it)')
    .option('--out <path>', 'where to put it (default: the models dir; for a Piper voice, the directory its piper/ folder goes in)')
    .addOption(new Option('--stall-s <seconds>', 'give up on a download after this many seconds without a byte').default(STALL_TIMEOUT_MS / 1000).argParser(seconds))
    .action(async (what: string, opts: ModelsFetchOptions, cmd: Command) => {
      const config = await readConfig(globals(cmd));
      let fetched: FetchedModel[];
      try {
        fetched = await untilStopped((signal) => modelsFetch(what, opts, dirname(config.stt.model), print, signal));
      } catch (error) {
        if (error instanceof UsageError) throw new Exit(EXIT.usage, error.message);
        if (error instanceof StoppedError) throw new Exit(error.exitCode, error.message);
        throw new Exit(EXIT.failed, messageOf(error));
      }
      for (const f of fetched) print(`${f.path}: ${f.bytes} bytes, SHA-256 ${f.sha256} verified`);
      const voice = what.startsWith('piper:') ? what.slice('piper:'.length) : undefined;
      if (voice !== undefined) print(`to use it, set in the config: [tts] engine = "piper" and voice = "${voice}", then: iris reload`);
      else if (fetched[0] && fetched[0].path !== config.stt.model) print(`to use it, set in the config: [stt] model = "${fetched[0].path}", then: iris reload`);
    });

  program
    .command('doctor')
    .description('check the machine: config, microphone, speaker, wake word, speech to text and out, Ollama and the model, MCP servers, the state dir')
    .option('--json', 'print one JSON document')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const { config, iris, log } = await open(g);
      const checks = await doctor(config, configOf(g).path, stateDir(), iris, log);
      if (g.json === true) printJson(checks);
      else for (const c of checks) print(`${c.ok ? '✓' : '✗'} ${c.what}: ${c.detail}`);
      if (checks.some((c) => !c.ok)) process.exitCode = EXIT.failed;
    });

  program
    .command('daemon')
    .description('the long-running service: listens, talks, runs timers')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      // A config problem (78) is already in the daemon's log, once; nothing to add.
      process.exitCode = await runDaemon({ config: configOf(g), stateDir: stateDir(), logLevel: g.logLevel === 'warn' ? 'info' : g.logLevel });
    });

  return program;
}

export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    return await run(program, argv);
  } finally {
    await Promise.all(opened.splice(0).map((iris) => iris.stop().catch(() => undefined)));
  }
}

async function run(program: Command, argv: readonly string[]): Promise<number> {
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.exitCode === 0
        ? EXIT.ok
        : EXIT.usage;
    }
    if (error instanceof Exit) {
      process.stderr.write(`${printable(error.message, { lines: true })}\n`);
      return error.code;
    }
    process.stderr.write(`iris: ${printable(messageOf(error), { lines: true })}\n`);
    return EXIT.failed;
  }
}
