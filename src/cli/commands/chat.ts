/** `iris chat`: an interactive text conversation in the terminal (the loop is ../chat.ts). */
import type { Command } from 'commander';
import { chat } from '../chat.js';
import { globals, type Session } from '../session.js';

export function register(program: Command, session: Session): void {
  program
    .command('chat')
    .description('interactive text conversation in a terminal (/reset forgets, /quit or Ctrl-D ends)')
    .action(async (_opts, cmd: Command) => {
      const { iris } = await session.open(globals(cmd));
      await chat(iris.conversation());
    });
}
