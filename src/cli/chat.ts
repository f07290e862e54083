/**
 * `iris chat`: a text conversation in the terminal on the same engine the voice path uses.
 * Sentences print as they stream; Ctrl-C cancels the answer in progress, Ctrl-D or /quit ends.
 */
import { createInterface } from 'node:readline';
import type { Conversation } from '../conversation/engine.js';

export async function chat(conversation: Conversation): Promise<void> {
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
  const ask = (): void => {
    if (process.stdin.isTTY) rl.prompt();
  };
  rl.setPrompt('you> ');
  let current: AbortController | undefined;
  rl.on('SIGINT', () => {
    if (current !== undefined) current.abort(new Error('interrupted'));
    else rl.close();
  });
  if (process.stdin.isTTY) process.stdout.write('IRIS chat: /reset forgets the conversation, /quit or Ctrl-D ends.\n');
  ask();
  for await (const line of rl) {
    const text = line.trim();
    if (text === '/quit' || text === '/exit') break;
    if (text === '/reset') {
      conversation.reset();
      process.stdout.write('(forgotten)\n');
    } else if (text !== '') {
      current = new AbortController();
      const turn = conversation.turn(text, current.signal);
      try {
        for await (const sentence of turn.sentences) process.stdout.write(`iris> ${sentence}\n`);
        const result = await turn.result;
        if (result.error !== undefined) process.stderr.write(`(${result.error.message})\n`);
      } catch {
        process.stdout.write('(cancelled)\n');
      } finally {
        current = undefined;
      }
    }
    ask();
  }
  rl.close();
}
