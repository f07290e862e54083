/**
 * The `iris` command (CONTRACT.md): the global options, one line per command group (each in
 * commands/), and the one place a failure becomes an exit code and a line on stderr. Exit
 * codes: 0 success, 1 the request failed, 2 usage, 78 configuration error. `--json` prints
 * exactly one JSON document on stdout; logs and reasons go to stderr.
 */
import { Command, CommanderError, Option } from 'commander';
import { DEFAULT_CONFIG_PATH } from '../config/load.js';
import { ConfigError, messageOf } from '../errors.js';
import { printable } from '../log.js';
import * as ask from './commands/ask.js';
import * as chat from './commands/chat.js';
import * as config from './commands/config.js';
import * as daemon from './commands/daemon.js';
import * as doctor from './commands/doctor.js';
import * as listen from './commands/listen.js';
import * as mcp from './commands/mcp.js';
import * as models from './commands/models.js';
import * as reload from './commands/reload.js';
import * as say from './commands/say.js';
import * as status from './commands/status.js';
import * as timers from './commands/timers.js';
import * as tools from './commands/tools.js';
import { EXIT, Exit } from './output.js';
import { Session } from './session.js';

/** The whole command tree; `session` holds what its commands open, for main() to stop. */
export function buildProgram(session = new Session()): Command {
  const program = new Command('iris')
    .description('IRIS: a local, private voice assistant for Linux home servers')
    .option('--config <path>', `config file (default: $IRIS_CONFIG, else ${DEFAULT_CONFIG_PATH})`)
    .addOption(new Option('--log-level <level>', 'log level on stderr').choices(['debug', 'info', 'warn', 'error']).default('warn'))
    .showHelpAfterError()
    .exitOverride();
  // In the order `iris --help` lists them.
  ask.register(program, session);
  chat.register(program, session);
  mcp.register(program, session);
  tools.register(program, session);
  timers.register(program, session);
  reload.register(program);
  status.register(program);
  config.register(program);
  say.register(program);
  listen.register(program, session);
  models.register(program);
  doctor.register(program, session);
  daemon.register(program);
  return program;
}

export async function main(argv: readonly string[]): Promise<number> {
  const session = new Session();
  try {
    return await run(buildProgram(session), argv);
  } finally {
    await session.close();
  }
}

/** The exit code of a failure: commander's usage errors (it printed them), an Exit's own, a config problem's 78, else 1. */
function exitCodeOf(error: unknown): number {
  if (error instanceof CommanderError) {
    return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof Exit) return error.code;
  if (error instanceof ConfigError) return EXIT.config;
  return EXIT.failed;
}

/** Run the command; every failure ends here, as one printable line (or a config's problems, one a line) on stderr. */
async function run(program: Command, argv: readonly string[]): Promise<number> {
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (error) {
    if (!(error instanceof CommanderError)) process.stderr.write(`${printable(messageOf(error), { lines: true })}\n`);
    return exitCodeOf(error);
  }
}
