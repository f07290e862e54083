/**
 * `iris chat`: a text conversation in the terminal on the same engine the voice path uses.
 * Sentences print as they stream; Ctrl-C cancels the answer in progress, Ctrl-D or /quit ends.
 * A tool's question is answered by the next line, as any other turn. Also the typed lines
 * that answer a tool's question in the one-shot commands (`iris tools call`, `iris ask`).
 */
import { createInterface, type Interface } from 'node:readline';
import { FormInterview } from '../conversation/form.js';
import type { Conversation } from '../conversation/engine.js';
import type { AskPerson } from '../toolhost/api.js';
import { timerMs } from '../timer.js';
import { printable } from '../log.js';

/** The lines typed on stdin, read one at a time when asked for; `undefined` at the end of input. */
export class TypedLines {
  #rl: Interface | undefined;
  #lines: AsyncIterator<string> | undefined;

  async next(): Promise<string | undefined> {
    this.#rl ??= createInterface({ input: process.stdin, terminal: false });
    this.#lines ??= this.#rl[Symbol.asyncIterator]();
    const line = await this.#lines.next();
    return line.done === true ? undefined : line.value;
  }

  close(): void {
    this.#rl?.close();
  }
}

/**
 * A tool's questions asked on the terminal (stderr) and answered by typed lines; no answer
 * within `timeoutMs` declines, the end of input cancels.
 */
export function typedAsker(lines: TypedLines, timeoutMs: number): AskPerson {
  return async (question) => {
    const opened = FormInterview.open(question);
    process.stderr.write(`${opened.say}\n`);
    if ('answer' in opened) return opened.answer;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timerMs(timeoutMs))));
    try {
      for (;;) {
        const line = await Promise.race([lines.next(), late]);
        if (line === 'late') {
          process.stderr.write(`No answer within ${timeoutMs / 1000} s; declined.\n`);
          return { action: 'decline' };
        }
        if (line === undefined) return { action: 'cancel' };
        const step = await opened.interview.reply(line, false);
        if (step.say !== undefined) process.stderr.write(`${step.say}\n`);
        if (step.answer !== undefined) return step.answer;
      }
    } finally {
      clearTimeout(timer);
    }
  };
}

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
        for await (const sentence of turn.sentences) process.stdout.write(`iris> ${printable(sentence, { lines: true })}\n`);
        const result = await turn.result;
        if (result.error !== undefined) process.stderr.write(`(${printable(result.error.message, { lines: true })})\n`);
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
