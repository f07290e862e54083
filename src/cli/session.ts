/**
 * What every command stands on: the global options, the config it reads, the running daemon it
 * asks first, and the in-process IRIS it opens when none runs (stopped once the command ends).
 */
import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { configFile, loadConfig, type ConfigFile } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { createLogger, type Logger, type LogLevel } from '../log.js';
import { assemble, type Iris } from '../daemon/assemble.js';
import { ControlUnavailable, request, socketPath } from '../daemon/control.js';
import type { Command as ControlCommand, ControlResults, RequestOf } from '../daemon/protocol.js';
import type { CallToolResult } from '../toolhost/api.js';
import { stateDir } from '../toolhost/store.js';
import { typedAsker, TypedLines } from './chat.js';

/** The options every command takes (`--json` where it has one). */
export interface Globals {
  config?: string;
  json?: boolean;
  logLevel: LogLevel;
}

export const globals = (cmd: Command): Globals => cmd.optsWithGlobals<Globals>();

/** The log on stderr, at `--log-level`. */
export const logOf = (globals: Globals): Logger => createLogger('iris', { level: globals.logLevel });

/** The config file a command reads: `--config`, else `$IRIS_CONFIG`, else the default. */
export function configOf(globals: Globals): ConfigFile {
  return configFile(globals.config, process.env);
}

/** The one config check every command runs (`iris config check` too); a problem is exit 78 (a ConfigError). */
export function readConfig(globals: Globals): Promise<Config> {
  return loadConfig(configOf(globals));
}

/**
 * Before a command the daemon answers: it answers with its own config, but a config named
 * with --config or $IRIS_CONFIG is still checked, so a broken or missing one fails the command
 * (exit 78) instead of being silently ignored. The default path is the daemon's business.
 */
export async function checkNamedConfig(globals: Globals): Promise<void> {
  if (configOf(globals).namedBy !== undefined) await readConfig(globals);
}

/** After the daemon answered: say so on stderr when the config named here is not the one it runs. */
export async function sayWhichConfig(globals: Globals, daemonConfig: string): Promise<void> {
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
export async function daemon<C extends ControlCommand>(globals: Globals, body: RequestOf<C>): Promise<ControlResults[C] | undefined> {
  await checkNamedConfig(globals);
  try {
    if (configOf(globals).namedBy !== undefined) {
      await sayWhichConfig(globals, (await request(socketPath(), { cmd: 'config' }, 10_000)).path);
    }
    return await request(socketPath(), body);
  } catch (error) {
    if (error instanceof ControlUnavailable && error.reason === 'not_running') return undefined;
    throw error;
  }
}

/** The in-process IRIS of one run of the CLI: every one opened is stopped at its end (MCP servers are child processes). */
export class Session {
  readonly #opened: Iris[] = [];

  /** The parts a one-shot command needs, without arming timers (the daemon does that). */
  async open(globals: Globals) {
    const config = await readConfig(globals);
    const log = logOf(globals);
    const iris = assemble(config, { stateDir: stateDir(), log });
    this.#opened.push(iris);
    await iris.init();
    return { config, iris, log };
  }

  /**
   * A tool call through the running daemon, else in-process: while a daemon runs, every change
   * goes through it (it holds the timers armed). A person typing the command is the
   * confirmation a tool may ask for.
   */
  async callTool(g: Globals, name: string, args: unknown): Promise<CallToolResult> {
    const viaDaemon = await daemon(g, { cmd: 'tools.call', name, arguments: args });
    if (viaDaemon !== undefined) return viaDaemon;
    const { iris } = await this.open(g);
    // A server's question during the call is asked here and answered by the next typed line.
    const lines = new TypedLines();
    try {
      return await iris.host.call(name, args, { origin: 'typed', ask: typedAsker(lines, iris.config.assistant.confirm_timeout_s * 1000) });
    } finally {
      lines.close();
    }
  }

  /** Stop every IRIS this run opened. */
  async close(): Promise<void> {
    await Promise.all(this.#opened.splice(0).map((iris) => iris.stop().catch(() => undefined)));
  }
}
