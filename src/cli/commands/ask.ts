/** `iris ask TEXT [--json] [--conversation ID]`: one text turn, in the running daemon or in-process. */
import type { Command } from 'commander';
import type { TurnResult } from '../../conversation/engine.js';
import { TypedLines } from '../chat.js';
import { EXIT, Exit, jsonOption, output, print, printJson } from '../output.js';
import { daemon, globals, type Session } from '../session.js';

export function register(program: Command, session: Session): void {
  program
    .command('ask')
    .description('one text turn through the conversation engine (tools included)')
    .argument('<text...>', 'what to ask')
    .addOption(jsonOption())
    .option('--conversation <id>', "continue this conversation in the running daemon (its history and pending question); without it, a new one")
    .action(async (words: string[], opts: { conversation?: string }, cmd: Command) => {
      const g = globals(cmd);
      const text = words.join(' ');
      if (text.trim() === '') throw new Exit(EXIT.usage, 'TEXT is empty: say what to ask, e.g. iris ask "what time is it"');
      const viaDaemon = await daemon(g, { cmd: 'ask', text, ...(opts.conversation === undefined ? {} : { conversation: opts.conversation }) });
      if (viaDaemon !== undefined) {
        output(g.json, viaDaemon, () => [viaDaemon.reply]);
        if (opts.conversation === undefined && g.json !== true) {
          if (viaDaemon.confirm !== undefined) process.stderr.write(`To answer: iris ask --conversation ${viaDaemon.conversation ?? ''} yes\n`);
          if (viaDaemon.question !== undefined) process.stderr.write(`To answer: iris ask --conversation ${viaDaemon.conversation ?? ''} YOUR ANSWER\n`);
        }
        if (viaDaemon.error !== undefined) throw new Exit(EXIT.failed, viaDaemon.error.message);
        return;
      }
      const { iris } = await session.open(g);
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
          // Without --json the sentences print as they stream.
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
}
