/** `iris doctor [--json]`: the checks of the machine (../doctor.ts), one line each; exit 1 when one fails. */
import type { Command } from 'commander';
import { stateDir } from '../../toolhost/store.js';
import { doctor } from '../doctor.js';
import { EXIT, jsonOption, output } from '../output.js';
import { configOf, globals, type Session } from '../session.js';

export function register(program: Command, session: Session): void {
  program
    .command('doctor')
    .description('check the machine: config, microphone, speaker, wake word, speech to text and out, Ollama and the model, MCP servers, the state dir')
    .addOption(jsonOption())
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const { config, iris, log } = await session.open(g);
      const checks = await doctor(config, configOf(g).path, stateDir(), iris, log);
      output(g.json, checks, () => checks.map((c) => `${c.ok ? '✓' : '✗'} ${c.what}: ${c.detail}`));
      if (checks.some((c) => !c.ok)) process.exitCode = EXIT.failed;
    });
}
