/**
 * The stop word's spotters only while IRIS plays. They are two pocketsphinx decoders (~20 MB)
 * that a daemon waiting for its wake word does not use: the front end arms the stop word only
 * while something sounds (frontend.ts). So they are made, without waiting, on the first chunk
 * the front end hands them — the chunk whose own-voice reference already holds IRIS's first
 * words, so nothing is missed — and freed once nothing has played for `idleMs`.
 */
import type { StopWord } from './stopword.js';

export interface StopWordWhilePlayingOptions {
  /**
   * How long the spotters are kept after the last playback (ms); default 10,000: a follow-up
   * reply or an announcement's next sentence reuses them, and making them again costs ~30 ms
   * of the audio loop.
   */
  idleMs?: number;
  /** Making them failed; the stop word is off from then on. */
  onError?: (error: unknown) => void;
}

export class StopWordWhilePlaying implements Pick<StopWord, 'push' | 'reset' | 'free' | 'holding'> {
  #live: StopWord | undefined;
  #idle: NodeJS.Timeout | undefined;
  /** Making them failed: the stop word stays off (the voice goes on without it). */
  #failed = false;
  /** How many times the spotters were made (a test and the log read it). */
  made = 0;

  readonly #idleMs: number;
  readonly #onError: (error: unknown) => void;

  /** `make`: the spotters, now (`StopWord.prepare`'s result). */
  constructor(readonly make: () => StopWord, options: StopWordWhilePlayingOptions = {}) {
    this.#idleMs = options.idleMs ?? 10_000;
    this.#onError = options.onError ?? (() => undefined);
  }

  get holding(): boolean {
    return this.#live?.holding ?? false;
  }

  /** Whether the spotters exist now. */
  get loaded(): boolean {
    return this.#live !== undefined;
  }

  push(mic: Int16Array, own: Int16Array, endS: number, raw?: Int16Array, wakeScore?: number): number | undefined {
    this.#keep();
    if (this.#live === undefined && !this.#failed) {
      try {
        this.#live = this.make();
        this.made += 1;
      } catch (error) {
        this.#failed = true;
        this.#onError(error);
      }
    }
    return this.#live?.push(mic, own, endS, raw, wakeScore);
  }

  /** Playback ended: partial words are forgotten, and the spotters go after `idleMs` unless something plays again. */
  reset(): void {
    this.#live?.reset();
    this.#keep();
    this.#idle = setTimeout(() => this.free(), this.#idleMs);
    this.#idle.unref();
  }

  free(): void {
    this.#keep();
    this.#live?.free();
    this.#live = undefined;
  }

  #keep(): void {
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    this.#idle = undefined;
  }
}
