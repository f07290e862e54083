/** `iris timers list|cancel`: the persisted timers and reminders, through the timer tools. */
import type { Command } from 'commander';
import { jsonOption, outputToolResult, printJson } from '../output.js';
import { globals, type Session } from '../session.js';

export function register(program: Command, session: Session): void {
  const timers = program.command('timers').description('the persisted timers and reminders');

  timers
    .command('list')
    .description('pending timers and reminders')
    .addOption(jsonOption())
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const result = await session.callTool(g, 'list_timers', {});
      if (g.json !== true) return outputToolResult(result, false);
      // The timers themselves, not the tool's result around them.
      printJson(result.structuredContent?.timers ?? []);
    });

  timers
    .command('cancel')
    .description('cancel a timer or reminder by id (or label, or "all")')
    .argument('<id>', 'timer id, label or "all"')
    .action(async (id: string, _opts, cmd: Command) => {
      outputToolResult(await session.callTool(globals(cmd), 'cancel_timer', { id }), false);
    });
}
