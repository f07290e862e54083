/** `iris reload`: make the running daemon re-read its config (what `systemctl reload iris` runs). */
import type { Command } from 'commander';
import { messageOf } from '../../errors.js';
import { ControlUnavailable, request, socketPath } from '../../daemon/control.js';
import { EXIT, Exit } from '../output.js';
import { checkNamedConfig, globals, sayWhichConfig } from '../session.js';

export function register(program: Command): void {
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
        // No daemon to ask is a failed request; a daemon that refused the file, a config error.
        throw new Exit(error instanceof ControlUnavailable ? EXIT.failed : EXIT.config, messageOf(error));
      }
      await sayWhichConfig(g, reloaded.reloaded);
    });
}
