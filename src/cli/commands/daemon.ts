/** `iris daemon`: the long-running service the systemd unit starts (../../daemon/daemon.ts). */
import type { Command } from 'commander';
import { runDaemon } from '../../daemon/daemon.js';
import { stateDir } from '../../toolhost/store.js';
import { configOf, globals } from '../session.js';

export function register(program: Command): void {
  program
    .command('daemon')
    .description('the long-running service: listens, talks, runs timers')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      // A config problem (78) is already in the daemon's log, once; nothing to add.
      process.exitCode = await runDaemon({ config: configOf(g), stateDir: stateDir(), logLevel: g.logLevel === 'warn' ? 'info' : g.logLevel });
    });
}
