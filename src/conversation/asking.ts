/**
 * A tool call that runs while its server asks the person something (MCP elicitation). Unlike
 * a call held for a yes, which has not run, this one is open: the question ends the turn, the
 * next utterance answers it (form.ts fits it), and the turn that answered waits for the
 * call's result or its next question. Each question waits at most `[assistant]
 * confirm_timeout_s` and is then declined; after that, and past a few questions, the call's
 * further questions are declined unasked. The call follows the signal of the turn that waits
 * on it, and nothing between turns.
 */
import type { Logger } from '../log.js';
import type { AskPerson, HostResult, ToolAnswer, ToolQuestion } from '../toolhost/api.js';
import { FormInterview } from './form.js';
import { timerMs } from '../timer.js';

/** Questions one call may ask the person; more are declined unasked (a server that keeps asking). */
const MAX_QUESTIONS = 5;

export interface AskingOptions {
  /** How long a question waits for the answer (ms); read at each question. */
  timeoutMs: () => number;
  log: Logger;
}

export type AskingStep = { result: HostResult } | { question: string };

interface Open {
  interview: FormInterview;
  /** The question as it is to be said; undefined once said. */
  unsaid: string | undefined;
  server: string;
  expiresAt: number;
  timer: NodeJS.Timeout;
  resolve: (answer: ToolAnswer) => void;
}

export class AskingCall {
  readonly result: Promise<HostResult>;
  readonly #controller = new AbortController();
  readonly #o: AskingOptions;
  #open: Open | undefined;
  #asked = 0;
  /** A question went unanswered: the call's later questions are declined unasked. */
  #lapsed = false;
  #arrived: (() => void) | undefined;
  #say: (sentence: string) => void = () => undefined;

  /** Start the call: `run` gets the call's own signal and the way it asks the person. */
  constructor(run: (options: { signal: AbortSignal; ask: AskPerson }) => Promise<HostResult>, options: AskingOptions) {
    this.#o = options;
    this.result = run({ signal: this.#controller.signal, ask: (question, signal) => this.#ask(question, signal) });
  }

  /** A question is waiting for the person's answer. */
  get waiting(): boolean {
    return this.#open !== undefined;
  }

  /** Who asks and until when, while a question waits. */
  get question(): { server: string; expiresAt: number } | undefined {
    return this.#open === undefined ? undefined : { server: this.#open.server, expiresAt: this.#open.expiresAt };
  }

  /**
   * The call's result, or the next question to say — whichever comes first. The call is
   * cancelled if `signal` (the waiting turn's) aborts; `say` speaks what needs no answer
   * (a link that was declined).
   */
  async next(signal: AbortSignal, say: (sentence: string) => void): Promise<AskingStep> {
    const abandon = (): void => this.abandon(signal.reason);
    if (signal.aborted) abandon();
    signal.addEventListener('abort', abandon, { once: true });
    this.#say = say;
    try {
      const ready = this.#takeQuestion();
      if (ready !== undefined) return { question: ready };
      const asked = new Promise<AskingStep>((resolve) => {
        this.#arrived = () => {
          const question = this.#takeQuestion();
          if (question !== undefined) resolve({ question });
        };
      });
      return await Promise.race([this.result.then((result) => ({ result })), asked]);
    } finally {
      this.#arrived = undefined;
      this.#say = () => undefined;
      signal.removeEventListener('abort', abandon);
    }
  }

  /** The person's reply to the waiting question: asked again, or answered (with what to say, if anything). */
  async answer(text: string, spoken: boolean): Promise<{ again: string } | { answered: true; say?: string }> {
    const open = this.#open;
    if (open === undefined) return { answered: true };
    const step = await open.interview.reply(text, spoken);
    if (step.answer === undefined) {
      this.#extend(open);
      return { again: step.say };
    }
    this.#close(step.answer);
    return step.say === undefined ? { answered: true } : { answered: true, say: step.say };
  }

  /** Drop it: a waiting question is cancelled and the call aborted. */
  abandon(reason?: unknown): void {
    this.#close({ action: 'cancel' });
    this.#lapsed = true;
    this.#controller.abort(reason ?? new DOMException('the question was dropped', 'AbortError'));
  }

  async #ask(question: ToolQuestion, signal: AbortSignal): Promise<ToolAnswer> {
    if (this.#lapsed || this.#open !== undefined || ++this.#asked > MAX_QUESTIONS) {
      this.#o.log.info(`${question.server}: declined a question without asking (${this.#lapsed ? 'an earlier one went unanswered' : 'too many questions'})`);
      return { action: 'decline' };
    }
    const opened = FormInterview.open(question);
    if ('answer' in opened) {
      this.#o.log.info(`${question.server}: ${question.mode === 'url' ? 'a link request' : opened.reason ?? 'a form IRIS cannot ask for'}; declined`);
      this.#say(opened.say);
      return opened.answer;
    }
    return new Promise<ToolAnswer>((resolve) => {
      const open: Open = { interview: opened.interview, unsaid: opened.say, server: question.server, expiresAt: 0, timer: setTimeout(() => undefined, 0), resolve };
      this.#open = open;
      this.#extend(open);
      // The server withdrew it (cancelled the request, or the connection closed).
      signal.addEventListener('abort', () => this.#close({ action: 'cancel' }, open), { once: true });
      this.#arrived?.();
    });
  }

  /** The question says something aloud: it waits the full time from now. */
  #extend(open: Open): void {
    clearTimeout(open.timer);
    const timeoutMs = this.#o.timeoutMs();
    open.expiresAt = Date.now() + timeoutMs;
    open.timer = setTimeout(() => {
      this.#lapsed = true;
      this.#o.log.info(`${open.server}: no answer to its question within ${timeoutMs / 1000} s; declined`);
      this.#close({ action: 'decline' }, open);
    }, timerMs(timeoutMs));
    open.timer.unref();
  }

  #takeQuestion(): string | undefined {
    const open = this.#open;
    const question = open?.unsaid;
    if (open !== undefined) open.unsaid = undefined;
    return question;
  }

  #close(answer: ToolAnswer, which: Open | undefined = this.#open): void {
    if (which === undefined || which !== this.#open) return;
    clearTimeout(which.timer);
    this.#open = undefined;
    which.resolve(answer);
  }
}
