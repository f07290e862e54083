/**
 * A young canceller hears IRIS's first seconds again. A linear filter learns the room from IRIS's
 * voice, and in the daemon's first reply it has heard little: speexdsp's 384 ms filter took ~22 dB
 * of the echo 0–2 s into IRIS's second reply, ~30 dB after a minute (docs/room.md, "The canceller
 * after a minute"). A fresh filter that hears what the live one was fed K times over (the same
 * microphone and reference frames, in order) is where the live one would be after K times as much
 * of IRIS: 29–30 dB there at K = 3 (`scripts/study-rehearse.ts`); `REHEARSAL` hears it four times.
 *
 * The live filter cannot be rewound (speexdsp's state cannot be copied), so a second one is
 * trained beside it, a few frames per live frame, and takes over when it has caught up with the
 * live stream and leaves no more of it than the live one did over the last second. Rounds start
 * again with more heard, until `youngS` of IRIS has been heard.
 */
import { meanPower, SPEECH_FORMAT } from './audio.js';

/** What the rehearsal trains: echo.ts's `EchoEngine` (named here without importing it: echo.ts imports this file). */
export interface Filter {
  process(mic: Int16Array, ref: Int16Array): Int16Array;
  destroy(): void;
}

export interface RehearsalOptions {
  /** Times the new filter hears what was recorded (the last time runs on to the live frame). */
  passes: number;
  /** Frames of rehearsal per live frame (its CPU cost while it runs: this many times the filter's). */
  perFrame: number;
  /** Seconds of frames heard before the first round; each later round starts when the one before is done. */
  firstS: number;
  /** After this many seconds of frames heard, no more rounds (the recording is let go). */
  youngS: number;
  /**
   * Whether it goes on after a start from a remembered room that fit (echo.ts `Primed`: kept).
   * Off by default: the remembered room's response takes ~30 dB from its placing, and while it is
   * taken off, a rehearsed filter (which learns the whole echo) could not take over anyway.
   */
  afterKept: boolean;
}

/**
 * Ten frames per live frame: about 0.04 s of CPU per second of audio over the first ~30 s of IRIS
 * after a start in a room it does not remember, 0.057 over the first 15 (the canceller alone 0.015),
 * over the 0.03. Seven
 * (session 19, `scripts/study-rehearse.ts`): 0.045, still over, and "stop" with IRIS 12 dB louder
 * fell from 100 to 75 % dev and 83 to 50 % on held-out 9 (docs/room.md): not chosen.
 */
export const REHEARSAL: RehearsalOptions = { passes: 4, perFrame: 10, firstS: 1, youngS: 20, afterKept: false };

/** Zero frames between passes: longer than the filter, so no pass's end is in the next one's history. */
const GAP_FRAMES = 32;

interface Heard {
  mic: Int16Array;
  ref: Int16Array;
  /** What the live filter left of it (mean power); undefined: not compared (the frames that bring it up to date after a pause). */
  left: number | undefined;
}

/** A filter in training: its pass (1-based), its next frame, zero frames still to hear, and the recording's length when its round began. */
interface Trainee<E extends Filter> {
  engine: E;
  pass: number;
  next: number;
  gap: number;
  recorded: number;
  /** What it and the live filter left of the frames compared (the last second before it caught up; mean powers summed). */
  left: number;
  liveLeft: number;
}

export class Rehearsal<E extends Filter> {
  readonly #fresh: () => E;
  readonly #options: RehearsalOptions;
  readonly #frameSamples: number;
  readonly #heard: Heard[] = [];
  /** Silence: what a trainee hears between passes. */
  readonly #zero: Int16Array;
  #trainee: Trainee<E> | undefined;
  #done = false;
  /** Rounds that took over, and that were turned down. */
  tookOver = 0;
  turnedDown = 0;

  constructor(fresh: () => E, frameSamples: number, options: RehearsalOptions = REHEARSAL) {
    this.#fresh = fresh;
    this.#options = options;
    this.#frameSamples = frameSamples;
    this.#zero = new Int16Array(frameSamples);
  }

  /** Frames per second. */
  get #rate(): number {
    return SPEECH_FORMAT.rate / this.#frameSamples;
  }

  /**
   * The live filter was fed `mic` and `ref` and gave `out` (undefined where its output is not
   * compared, the frames that bring it up to date after a pause). Returns a filter to use from
   * the next frame on, or undefined. Once the rehearsal is done, nothing is kept or measured.
   */
  heard(mic: Int16Array, ref: Int16Array, out: Int16Array | undefined, budget = this.#options.perFrame): E | undefined {
    if (this.#done) return undefined;
    this.#heard.push({ mic: mic.slice(), ref: ref.slice(), left: out && meanPower(out) });
    if (!this.#trainee && this.#heard.length >= this.#options.firstS * this.#rate) this.#begin();
    return this.#train(budget);
  }

  /** Rehearse while the live filter is idle (IRIS silent): the recording does not grow. */
  idle(budget = this.#options.perFrame): E | undefined {
    return this.#done ? undefined : this.#train(budget);
  }

  /** The canceller started from a remembered room that fit (echo.ts `Primed`: kept): no more rounds unless `afterKept`. */
  roomKept(): void {
    if (!this.#options.afterKept) this.destroy();
  }

  destroy(): void {
    this.#trainee?.engine.destroy();
    this.#trainee = undefined;
    this.#heard.length = 0;
    this.#done = true;
  }

  #begin(): void {
    this.#trainee = { engine: this.#fresh(), pass: 1, next: 0, gap: 0, recorded: this.#heard.length, left: 0, liveLeft: 0 };
  }

  #train(budget: number): E | undefined {
    const t = this.#trainee;
    if (!t) return undefined;
    const compareFrom = () => this.#heard.length - this.#rate; // the last second
    for (let n = 0; n < budget; n++) {
      if (t.gap > 0) {
        t.engine.process(this.#zero, this.#zero);
        t.gap--;
        continue;
      }
      const last = t.pass === this.#options.passes;
      const end = last ? this.#heard.length : t.recorded;
      if (t.next >= end) {
        if (!last) [t.pass, t.next, t.gap] = [t.pass + 1, 0, GAP_FRAMES];
        else return this.#finish();
        continue;
      }
      const frame = this.#heard[t.next];
      if (!frame) break;
      const out = t.engine.process(frame.mic, frame.ref);
      if (last && t.next >= compareFrom() && frame.left !== undefined) {
        t.left += meanPower(out);
        t.liveLeft += frame.left;
      }
      t.next++;
    }
    return undefined;
  }

  /** The trainee has heard every frame: it takes over if it left no more than the live filter over the last second. */
  #finish(): E | undefined {
    const t = this.#trainee;
    this.#trainee = undefined;
    if (!t) return undefined;
    const young = this.#heard.length < this.#options.youngS * this.#rate;
    if (!young) {
      this.#heard.length = 0;
      this.#done = true;
    } else this.#begin();
    if (t.left <= t.liveLeft) {
      this.tookOver++;
      return t.engine;
    }
    t.engine.destroy();
    this.turnedDown++;
    return undefined;
  }
}
