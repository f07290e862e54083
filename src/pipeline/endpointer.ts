/**
 * End of speech as a pure state machine, fed `(seconds, isSpeech)` per audio chunk by the VAD
 * (Silero, in the voice pipeline to come). No clocks: table tests drive it. Hysteresis both
 * ways: speech must last `speechS` to count as the command starting, and silence must last
 * `silenceS` to end it, so a cough does not start a command and a pause does not end one.
 */

export interface EndpointerOptions {
  /** Speech this long starts the command (seconds); default 0.3. */
  speechS?: number;
  /** Silence this long after speech ends it (seconds); default 0.7. */
  silenceS?: number;
  /** Longest command (seconds); default 15. */
  maxS?: number;
  /** Give up when no command starts within this long (seconds); default 5. */
  noSpeechS?: number;
  /** A gap this short does not break the speech that starts a command (seconds); default 0.1:
   * the VAD drops out for a frame or two between words. */
  gapS?: number;
}

/** `complete`: ended at a pause because the words were a whole command (`complete()`). */
export type EndpointState = 'waiting' | 'speaking' | 'done' | 'complete' | 'too_long' | 'no_speech';

/** Time is counted in whole microseconds: sums of 0.1 s chunks must not drift. */
const us = (seconds: number): number => Math.round(seconds * 1e6);

export class Endpointer {
  // All in microseconds.
  readonly #speechS: number;
  readonly #silenceS: number;
  /** The silence that ends the current pause: `#silenceS`, or longer while the words so far are half a command. */
  #pauseS: number;
  readonly #maxS: number;
  readonly #noSpeechS: number;
  readonly #gapS: number;
  #state: EndpointState = 'waiting';
  #elapsedS = 0;
  #speechRunS = 0;
  /** Where the current run of speech began, gaps included. */
  #runStartS = 0;
  #silenceRunS = 0;
  /** When the command started, counted from the first chunk (seconds). */
  startedAtS: number | undefined;
  /** When it ended: the start of the silence that ended it (seconds). */
  endedAtS: number | undefined;

  constructor(options: EndpointerOptions = {}) {
    this.#speechS = us(options.speechS ?? 0.3);
    this.#silenceS = us(options.silenceS ?? 0.7);
    this.#pauseS = this.#silenceS;
    this.#maxS = us(options.maxS ?? 15);
    this.#noSpeechS = us(options.noSpeechS ?? 5);
    this.#gapS = us(options.gapS ?? 0.1);
  }

  get state(): EndpointState {
    return this.#state;
  }

  /** How long the current silence has lasted (seconds; 0 while speech goes on). */
  get silenceS(): number {
    return this.#silenceRunS / 1e6;
  }

  /** End the command now, during a pause (the words are a whole command): state `complete`. */
  complete(): void {
    if (this.#state !== 'speaking') return;
    this.#state = 'complete';
    this.endedAtS = (this.#elapsedS - this.#silenceRunS) / 1e6;
  }

  /**
   * The silence that ends the command from now on: `seconds` (never less than `silenceS`) while
   * the words so far are half a command ("set a timer for ten" …), or `silenceS` again.
   */
  waitFor(seconds: number | undefined): void {
    this.#pauseS = seconds === undefined ? this.#silenceS : Math.max(this.#silenceS, us(seconds));
  }

  /** Feed one chunk; returns the state after it. Final states stay final. */
  process(seconds: number, isSpeech: boolean): EndpointState {
    if (this.#state !== 'waiting' && this.#state !== 'speaking') return this.#state;
    const chunk = us(seconds);
    this.#elapsedS += chunk;
    if (isSpeech) {
      if (this.#speechRunS === 0) this.#runStartS = this.#elapsedS - chunk;
      this.#speechRunS += chunk;
      this.#silenceRunS = 0;
    } else {
      this.#silenceRunS += chunk;
      if (this.#state === 'waiting' && this.#silenceRunS >= this.#gapS) this.#speechRunS = 0;
    }
    if (this.#state === 'waiting') {
      if (this.#speechRunS >= this.#speechS) {
        this.#state = 'speaking';
        this.startedAtS = this.#runStartS / 1e6;
      } else if (this.#elapsedS >= this.#noSpeechS) this.#state = 'no_speech';
      return this.#state;
    }
    if (this.#silenceRunS >= this.#pauseS) {
      this.#state = 'done';
      this.endedAtS = (this.#elapsedS - this.#silenceRunS) / 1e6;
    } else if (this.#elapsedS - us(this.startedAtS ?? 0) >= this.#maxS) {
      this.#state = 'too_long';
      this.endedAtS = this.#elapsedS / 1e6;
    }
    return this.#state;
  }
}
