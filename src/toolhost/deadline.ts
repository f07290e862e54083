/**
 * A call's time limit that stops while the person is being asked something. A tool that asks
 * (an MCP server's elicitation) waits for a person, and that wait is bounded on its own
 * (`[assistant] confirm_timeout_s`), so it must not count against the tool's timeout.
 */
import type { AskPerson } from './api.js';
import { timerMs } from '../timer.js';

export class Deadline {
  #remainingMs: number;
  #startedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Questions open now (a call may ask more than one at once). */
  #asking = 0;
  #over = false;

  /** `onExpire` runs once, `ms` after now plus the time spent asking. */
  constructor(ms: number, private readonly onExpire: () => void) {
    this.#remainingMs = ms;
    this.#run();
  }

  /** Stop it for good (the call ended). */
  clear(): void {
    this.#over = true;
    clearTimeout(this.#timer);
  }

  /** `ask`, with this deadline stopped while its question is open. */
  around(ask: AskPerson): AskPerson {
    return async (question, signal) => {
      this.#pause();
      try {
        return await ask(question, signal);
      } finally {
        this.#resume();
      }
    };
  }

  #run(): void {
    this.#startedAt = performance.now();
    this.#timer = setTimeout(() => {
      this.#over = true;
      this.onExpire();
    }, timerMs(this.#remainingMs));
  }

  #pause(): void {
    if (this.#asking++ > 0 || this.#over) return;
    clearTimeout(this.#timer);
    this.#remainingMs -= performance.now() - this.#startedAt;
  }

  #resume(): void {
    if (--this.#asking > 0 || this.#over) return;
    this.#run();
  }
}
