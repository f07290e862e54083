/** `iris config defaults|check`: the config file with every key at its default, and its validation. */
import { access } from 'node:fs/promises';
import type { Command } from 'commander';
import { renderDefaultConfig } from '../../config/defaults.js';
import { print } from '../output.js';
import { configOf, globals, readConfig } from '../session.js';

const exists = (path: string): Promise<boolean> => access(path).then(() => true, () => false);

export function register(program: Command): void {
  const config = program.command('config').description('the config file');

  config
    .command('defaults')
    .description('print a config file with every key commented out at its default')
    .action(() => print(renderDefaultConfig().trimEnd()));

  config
    .command('check')
    .description('validate the config; print every problem as FILE:LINE: message')
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const checked = await readConfig(g); // every problem is a ConfigError: exit 78
      const { path } = configOf(g);
      if (!(await exists(path))) return print(`${path}: not found, using defaults`);
      print(`${path}: OK${checked.mcp.servers_file === '' ? '' : ` (MCP servers also from ${checked.mcp.servers_file})`}`);
    });
}
