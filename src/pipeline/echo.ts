/**
 * Echo cancellation on the microphone stream, before the wake word, the VAD and the recogniser.
 *
 * What IRIS played is kept, sample-timed, in an `EchoReference` (the speaker path writes it;
 * `iris listen --playback` fills it from a file). Both it and the microphone are placed on
 * one sample clock: the live daemon stamps played audio with the time it was handed to the
 * player and microphone audio with the time it arrived, a recording simply counts samples. The
 * delay between the two (player and capture buffers, the air: 0–250 ms, and it moves) is found
 * by cross-correlating them (`estimateDelay`) and tracked while IRIS talks; the reference is
 * shifted by it and an adaptive filter removes the echo that remains: speexdsp's (speexdsp.ts)
 * or webrtc-audio-processing's (webrtc-aec.ts), `ECHO_ENGINES`.
 * The filter is kept from one reply to the next: in one room the echo path hardly changes,
 * and a linear canceller takes seconds of IRIS's voice to converge; while it is young, a fresh one
 * hears what it was fed again and takes over (rehearsal.ts). The room's response is solved from
 * what IRIS played and the microphone heard (room-response.ts) and kept across restarts
 * (echo-memory.ts): after a start it is taken off the microphone first, once placed by the first
 * delay estimate, and the filter learns what it leaves. A speaker driven into clipping
 * is modelled in front of the filter (`clipModel`, `clipLevel`): a linear filter cannot remove
 * the distortion.
 */
import { messageOf } from '../errors.js';
import { SPEECH_FORMAT, type AudioChunk } from './audio.js';
import { DelayDrift, readDrifting } from './drift.js';
import { throughRoom, type RoomEcho } from './echo-memory.js';
import { RESPONSE_LOAD, ResponseEstimate, RoomFilter } from './room-response.js';
import { REHEARSAL, Rehearsal, type RehearsalOptions } from './rehearsal.js';
import { SpeexEcho, type SpeexEchoOptions } from './speexdsp.js';
import { WebrtcEcho, type WebrtcEchoOptions } from './webrtc-aec.js';

const RATE = SPEECH_FORMAT.rate;

/** How far behind the live microphone its reader may fall (seconds): room-ear.ts `stampArrivals` reads no further ahead. */
export const MAX_MIC_LAG_S = 30;

/**
 * A canceller that has heard less of IRIS than this since it was made is young: it takes ~2 dB in
 * its first 2 s, ~11 in the next (a remembered room's response, once placed, ~30 dB: its seconds
 * count, `EchoStats.ageS`), and the residual it
 * leaves is neither low nor well predicted. The stop word judges words there without trusting it
 * (stopword.ts `StopCheck.young`), and a command heard over its echo is asked about, never acted
 * on at once (voice.ts `echoYoung`). Seconds.
 */
export const YOUNG_CANCELLER_S = 6;

/**
 * What a reference holds by default (seconds): as far back as the reader may lag, plus a long
 * clip, which is written whole when it is handed to the player. With 8 s, a loaded machine's
 * loop 4–6 s behind read silence where IRIS's echo was, and the echo went through uncancelled
 * (the live barge-in test's misses).
 */
const REFERENCE_S = MAX_MIC_LAG_S + 30;

/**
 * A ring of what the speaker played, indexed by a sample clock (16 kHz). Samples never
 * written read as silence. Holds the last `capacityS` seconds.
 */
export class EchoReference {
  readonly #ring: Int16Array;
  readonly #mask: number;
  /** One past the last sample written (clock samples). */
  #end = 0;
  /** The oldest sample still held. */
  #start = 0;
  /** Where sound was written, [from, to) in clock samples, oldest first (the last few). */
  #spans: [number, number][] = [];

  constructor(capacityS = REFERENCE_S) {
    let size = 1;
    while (size < capacityS * RATE) size <<= 1; // a power of two: the index is a mask
    this.#ring = new Int16Array(size);
    this.#mask = size - 1;
  }

  /** The live clock: samples since the process started (performance.now()). */
  static nowSamples(): number {
    return Math.round((performance.now() * RATE) / 1000);
  }

  /** Samples `samples` played from clock sample `at` on (later writes overwrite earlier ones). */
  write(samples: Int16Array, at: number): void {
    const from = Math.max(at, this.#end - this.#ring.length);
    // Silence since the last write: at most a ring's worth to clear (the first reply after a day idle
    // would otherwise loop over a day of samples).
    if (from > this.#end) this.#zero(Math.max(this.#end, from - this.#ring.length), from);
    for (let i = Math.max(0, from - at); i < samples.length; i++) this.#ring[(at + i) & this.#mask] = samples[i] ?? 0;
    this.#end = Math.max(this.#end, at + samples.length);
    this.#start = Math.max(this.#start, this.#end - this.#ring.length);
    this.#spans.push([at, at + samples.length]);
    if (this.#spans.length > 64) this.#spans.shift();
  }

  /** Playback stopped at clock sample `at`: what was queued after it was never heard. */
  truncate(at: number): void {
    if (at >= this.#end) return;
    this.#zero(Math.max(at, this.#start), this.#end);
    this.#spans = this.#spans.filter(([start]) => start < at).map(([start, end]) => [start, Math.min(end, at)]);
  }

  /** Whether anything was played between clock samples `from` and `to`. */
  sounding(from: number, to: number): boolean {
    return this.#spans.some(([start, end]) => start < to && end > from);
  }

  /** `length` samples from clock sample `from` (silence outside what is held). */
  read(from: number, length: number, into = new Int16Array(length)): Int16Array {
    for (let i = 0; i < length; i++) {
      const at = from + i;
      into[i] = at >= this.#start && at < this.#end ? (this.#ring[at & this.#mask] ?? 0) : 0;
    }
    return into;
  }

  #zero(from: number, to: number): void {
    for (let at = from; at < to; at++) this.#ring[at & this.#mask] = 0;
  }
}

/** Sum of squares. */
function energy(samples: ArrayLike<number>, from = 0, to = samples.length): number {
  let sum = 0;
  for (let i = from; i < to; i++) {
    const v = samples[i] ?? 0;
    sum += v * v;
  }
  return sum;
}

/** `samples` clipped to ±`level`, in place. */
function clipInPlace(samples: Int16Array, level: number): void {
  for (let i = 0; i < samples.length; i++) samples[i] = Math.max(-level, Math.min(level, samples[i] ?? 0));
}

/**
 * The level a speaker clips IRIS's audio at, in the reference's units, or undefined (it does not):
 * `mic[maxLag..]` against `ref` `lag` samples earlier (delaySteps' windows), the reference clipped
 * at each level tried; the best normalised correlation wins if it beats the unclipped one by
 * `CLIP_GAIN`. Memoryless: what comes after the clip (the speaker's and the room's response) is
 * linear, the adaptive filter's part.
 */
export function clipLevel(mic: Int16Array, ref: Int16Array, lag: number, maxLag: number): number | undefined {
  const steps = clipSteps(mic, ref, lag, maxLag);
  let step = steps.next();
  while (!step.done) step = steps.next();
  return step.value;
}

/** Levels scored per step of `clipSteps`: ~1 ms of work on a loaded core (all 33 at once took 8–12 ms). */
const CLIP_LEVELS_PER_STEP = 4;

/** `clipLevel` in steps, as `delaySteps`: the canceller takes one per chunk. */
export function* clipSteps(mic: Int16Array, ref: Int16Array, lag: number, maxLag: number): Generator<void, number | undefined> {
  const n = mic.length - maxLag;
  const offset = maxLag - lag;
  let peak = 0;
  for (let i = 0; i < n; i++) peak = Math.max(peak, Math.abs(ref[offset + i] ?? 0));
  if (peak === 0) return undefined;
  const score = (level: number): number => {
    let dot = 0;
    let power = 0;
    for (let i = 0; i < n; i++) {
      const r = Math.max(-level, Math.min(level, ref[offset + i] ?? 0));
      dot += (mic[maxLag + i] ?? 0) * r;
      power += r * r;
    }
    return power > 0 ? Math.abs(dot) / Math.sqrt(power) : 0;
  };
  const unclipped = score(peak);
  let best: { level: number; score: number } | undefined;
  for (let k = 1; k <= CLIP_STEPS; k++) {
    if (k % CLIP_LEVELS_PER_STEP === 0) yield;
    const level = Math.max(1, Math.round(peak * 2 ** (-k / 8)));
    const s = score(level);
    if (!best || s > best.score) best = { level, score: s };
  }
  return best && best.score > unclipped * CLIP_GAIN ? best.level : undefined;
}

/** `samples` low-passed (box average) and decimated by `factor`. */
function decimate(samples: Int16Array, factor: number): Float32Array {
  const out = new Float32Array(Math.floor(samples.length / factor));
  for (let i = 0; i < out.length; i++) {
    let sum = 0;
    for (let k = 0; k < factor; k++) sum += samples[i * factor + k] ?? 0;
    out[i] = sum / factor;
  }
  return out;
}

/** Running sums of squares: `sums[k]` is the energy of `x[0..k)`, so any stretch's energy is one subtraction. */
function squareSums(x: Float32Array): Float64Array {
  const sums = new Float64Array(x.length + 1);
  for (let i = 0; i < x.length; i++) sums[i + 1] = (sums[i] ?? 0) + (x[i] ?? 0) * (x[i] ?? 0);
  return sums;
}

/**
 * Normalised cross-correlation of `mic[maxLag..+n]` with `ref` shifted by `lag` samples back;
 * `refSums` is `squareSums(ref)` (the reference's energy per lag without summing it again).
 */
function correlation(mic: Float32Array, ref: Float32Array, refSums: Float64Array, lag: number, n: number, maxLag: number): number {
  let dot = 0;
  const offset = maxLag - lag;
  for (let i = 0; i < n; i++) dot += (mic[maxLag + i] ?? 0) * (ref[offset + i] ?? 0);
  const refEnergy = (refSums[offset + n] ?? 0) - (refSums[offset] ?? 0);
  return refEnergy > 0 ? dot / Math.sqrt(refEnergy) : 0;
}

export interface DelayEstimate {
  /** Samples the echo arrives after the reference. */
  delaySamples: number;
  /** Normalised correlation at that delay, 0–1: how sure. */
  strength: number;
}

/**
 * The delay of `ref`'s echo in `mic`: `mic` and `ref` span the same clock samples, `ref`
 * starting `maxLagSamples` earlier. Cross-correlation at 2 kHz first (every lag, cheap), then
 * at 16 kHz around the best coarse lag. Undefined when the reference is silent.
 */
export function estimateDelay(mic: Int16Array, ref: Int16Array, maxLagSamples: number): DelayEstimate | undefined {
  const steps = delaySteps(mic, ref, maxLagSamples);
  let step = steps.next();
  while (!step.done) step = steps.next();
  return step.value;
}

/** Coarse lags correlated per step of `delaySteps`: ~1 ms of work, so a step fits beside a frame on the audio path. */
const LAGS_PER_STEP = 128;

/**
 * `estimateDelay` in steps: each `next()` does a slice of the work (the decimation, `LAGS_PER_STEP`
 * coarse lags, the fine search), so the canceller spreads an estimate over the next frames
 * instead of holding one chunk up for all of it (8 ms on an idle core, 100+ ms on a busy one).
 */
export function* delaySteps(mic: Int16Array, ref: Int16Array, maxLagSamples: number): Generator<void, DelayEstimate | undefined> {
  const n = mic.length - maxLagSamples;
  if (n <= 0 || ref.length < mic.length) return undefined;
  const factor = 8; // 2 kHz: speech's energy is below 1 kHz, and lags cost 64× less
  const micLow = decimate(mic, factor);
  const refLow = decimate(ref, factor);
  const lowLag = Math.floor(maxLagSamples / factor);
  const lowN = Math.floor(n / factor);
  const refLowSums = squareSums(refLow);
  let best = 0;
  let bestScore = -Infinity;
  for (let lag = 0; lag <= lowLag; lag++) {
    if (lag % LAGS_PER_STEP === 0) yield;
    const score = Math.abs(correlation(micLow, refLow, refLowSums, lag, lowN, lowLag));
    if (score > bestScore) {
      bestScore = score;
      best = lag;
    }
  }
  if (!(bestScore > 0)) return undefined;
  yield;
  const micFull = Float32Array.from(mic);
  const refFull = Float32Array.from(ref);
  const refSums = squareSums(refFull);
  let fine = best * factor;
  let fineScore = -Infinity;
  for (let lag = Math.max(0, best * factor - factor); lag <= Math.min(maxLagSamples, best * factor + factor); lag++) {
    if (lag % 4 === 0) yield;
    const score = Math.abs(correlation(micFull, refFull, refSums, lag, n, maxLagSamples));
    if (score > fineScore) {
      fineScore = score;
      fine = lag;
    }
  }
  const micEnergy = energy(mic, maxLagSamples);
  return { delaySamples: fine, strength: micEnergy > 0 ? fineScore / Math.sqrt(micEnergy) : 0 };
}

/** The adaptive filters IRIS can cancel with (`[audio] echo_canceller`). */
export const ECHO_ENGINES = ['speexdsp', 'webrtc'] as const;
export type EchoEngineName = (typeof ECHO_ENGINES)[number];
/** The canceller used when none is named: the one that won on bench-room (docs/room.md). */
export const DEFAULT_ECHO_ENGINE: EchoEngineName = 'speexdsp';

/** One adaptive echo filter: a frame of microphone and the reference aligned to it in, the microphone without the echo out. */
export interface EchoEngine {
  readonly name: EchoEngineName;
  /** Samples per call. */
  readonly frameSamples: number;
  /** Where the engine takes the delay itself (webrtc's `set_stream_delay_ms`): how late the echo comes after the reference handed in with a frame (ms). */
  delayMs?: number;
  process(mic: Int16Array, ref: Int16Array): Int16Array;
  /** A new engine with the same settings, its filter fresh (what `Rehearsal` trains). */
  fresh?(): EchoEngine;
  /** The filter's impulse response (what `RoomEcho` keeps); engines without it are not remembered. */
  impulseResponse?(): Float32Array;
  destroy(): void;
}

export interface EchoCancellerOptions {
  /** Which adaptive filter; default `DEFAULT_ECHO_ENGINE`. webrtc that cannot load falls back to speexdsp (`onFallback` says why). */
  engine?: EchoEngineName;
  /** Called when the engine asked for could not be loaded and speexdsp is used instead. */
  onFallback?: (reason: string) => void;
  /** Called when a delay estimate is taken (the first, and each change), in ms. */
  onDelay?: (delayMs: number) => void;
  /** webrtc's settings instead of the chosen ones (bench-room's variants). `reportDelay`: hand it the reference unshifted and the measured delay as `set_stream_delay_ms`, instead of aligning the reference here. */
  webrtc?: Partial<Omit<WebrtcEchoOptions, 'rate'>> & { reportDelay?: boolean };
  /** The longest delay searched, in ms; default 500 (ALSA buffers plus air, 0–250 ms, plus the live clock's stamps). */
  maxDelayMs?: number;
  /** The adaptive filter's length in ms: the room's echo tail it models; default `FILTER_MS`. */
  filterMs?: number;
  /** Audio correlated for each delay estimate, in seconds; default 1.5. */
  windowS?: number;
  /** How often the delay is re-estimated while the reference sounds, once known, in seconds; default 2 (0.5 until the first estimate). */
  everyS?: number;
  /** A delay estimate counts when its normalised correlation is at least this; default 0.2. */
  minStrength?: number;
  /** speexdsp's residual-echo suppression in dB (negative; 0 = off, the default: on, it cut the person's wake word more than the echo, docs/room.md). */
  echoSuppressDb?: number;
  /** Residual-echo suppression while the person talks too, in dB; default -15. */
  echoSuppressActiveDb?: number;
  /** Noise suppression in dB (negative; 0 = off, the default: openWakeWord was trained with noise). */
  noiseSuppressDb?: number;
  /**
   * Model a clipping speaker: the level it clips at is estimated from the microphone against the
   * reference (after each delay estimate) and the reference clipped there before the filter.
   * Default true: on bench-room's clipping rooms the wake word went from 42 to 100 % (dev) and 0
   * to 50 % (held-out). The words over such an echo are not forgiven what it costs them
   * (`stats.clipLevel` → the loop's `echoDistorted`): a held-out command the model let through was
   * heard wrong and acted on with the allowance ("list my timers" at 0.949; docs/room.md).
   */
  clipModel?: boolean;
  /** A fresh filter hears IRIS's first seconds again and takes over (`Rehearsal`); default `REHEARSAL`, false: off. Engines without `fresh()` never do. */
  rehearsal?: RehearsalOptions | false;
  /**
   * Seconds of IRIS after which a room it does not remember is learned and taken off in the run
   * (`#learnRoom`; `LEARN_AFTER_S`, 3, measured); default Infinity: never, the rehearsal instead.
   * Not on by default (session 22): the second reply's canceller is as good as the rehearsal's for
   * half the CPU and "stop" was heard as often or more, but commands were understood a room or two
   * less often, three rooms of 72 decoded nothing after the wake word, and a person's "stop" after
   * a clip placed two samples off was split by a residual burst and missed (docs/room.md).
   */
  learnAfterS?: number;
  /** What a canceller learned of this room before a restart (`learned()`): the filter starts from it. speexdsp only. */
  remembered?: RoomEcho;
  /** Called when a room's response (remembered, or learned in this run) has been judged over IRIS's first second with it: kept or dropped, and the echo taken there (dB). */
  onJudged?: (verdict: 'kept' | 'dropped', tookDb: number, room: 'remembered' | 'learned') => void;
  /** How long the long filter must have left 1 dB less than the warm one before it takes over, in seconds of IRIS sounding; default `WARM_AHEAD_S` (bench-room's variants). */
  warmAheadS?: number;
}

/** speexdsp's frame: 16 ms, a power of two (its FFT is fastest there); 1280-sample chunks are 5 of them. */
const SPEEX_FRAME = 256;
/**
 * The adaptive filter's length (ms): the part of the room's echo after its delay that it models.
 * Chosen on bench-room's dev echo rooms (docs/room.md, "The wake word over IRIS"): 128 ms left the
 * reverberant tail in, and the person's wake word under it; 384 heard it in more rooms than 256
 * at +12 dB and with a clipping speaker, as many elsewhere.
 */
export const FILTER_MS = 384;
/**
 * A fresh long filter converges slowly: a 128 ms filter runs beside it on the same input and gives
 * the output until the long one leaves no more than it (their outputs' energy over the last
 * `WARM_AVERAGE_S`), then is dropped. The live barge-in test (the person 5 s into a fresh
 * canceller's first reply) passed 2 of 6 runs with 384 ms alone, 5 of 6 with 128 ms.
 */
const WARM_FILTER_MS = 128;
/** Time constant of the energies compared (seconds): a few words, so one loud frame does not decide. */
const WARM_AVERAGE_S = 0.5;
/**
 * The long filter takes over once it has left at least 1 dB less than the warm one for this long
 * (seconds of IRIS sounding): handed over at the first moment it was ahead, a long filter that
 * had only caught up in a pause missed the person's wake word 5 s into the daemon's first reply
 * in about one try in three (test/room.test.ts's live barge-in, 3 of 4 tries in one run).
 */
const WARM_AHEAD_S = 2;
const WARM_MARGIN = 10 ** (1 / 10);

/**
 * Which of the two filters gives the output, fed each frame's output energies (no clock: the
 * frames are the time): the warm one until the long one has left `WARM_MARGIN` less over
 * `WARM_AVERAGE_S` for `WARM_AHEAD_S` in a row, then the long one for good.
 */
class WarmHandOver {
  /** Smoothed output energy of the long filter and of the warm one. */
  #long = 0;
  #warm = 0;
  /** Samples for which the long filter has been ahead. */
  #ahead = 0;

  /** How long it must be ahead (seconds). */
  readonly #aheadS: number;

  constructor(aheadS = WARM_AHEAD_S) {
    this.#aheadS = aheadS;
  }

  /** A frame of `samples` whose outputs had these energies; true once the long filter gives the output. */
  frame(longEnergy: number, warmEnergy: number, samples: number): boolean {
    const keep = 1 - samples / (WARM_AVERAGE_S * RATE);
    this.#long = keep * this.#long + longEnergy;
    this.#warm = keep * this.#warm + warmEnergy;
    this.#ahead = this.#long * WARM_MARGIN < this.#warm ? this.#ahead + samples : 0;
    return this.#ahead >= this.#aheadS * RATE;
  }
}

/**
 * webrtc's settings, measured on the full bench (docs/room.md): the AEC with the extended filter,
 * low suppression (moderate and high cut the person harder), told the measured delay rather than
 * handed a reference aligned here. Of nine settings tried on the dev echo rooms none came near
 * speexdsp (wake word at 0 dB: 0–33 % vs 100 %); without the extended filter did best at 0 dB.
 */
const WEBRTC = { mode: 'aec', suppression: 0, extendedFilter: true, delayAgnostic: false, highPass: true, reportDelay: true } as const;
/** Clip levels tried (`clipModel`): the reference's peak over the estimate's window times 2^(−k/8), k = 1…`CLIP_STEPS` (down to 1/16 of it). */
const CLIP_STEPS = 32;
/** A clip level is taken only when the reference clipped there correlates with the microphone this much better than unclipped (a clean speaker's noise picks none). */
const CLIP_GAIN = 1.005;
/** Frames of the microphone the engine hears again when it starts after a pause (`#resume`): its preprocessor's frame and one more. */
const RESUME_FRAMES = 2;
/** The reference is shifted this much less than the delay: the filter is causal, so an estimate a little long must still leave the echo inside it. */
const MARGIN_SAMPLES = 160;

export interface EchoStats {
  /** The delay in use (ms), or undefined before the first estimate. */
  delayMs: number | undefined;
  /** Echo return loss enhancement over the audio with the reference sounding (dB): microphone energy over output energy. */
  erleDb: number | undefined;
  /** Seconds of audio processed, and of it with the reference sounding. */
  processedS: number;
  soundingS: number;
  /**
   * Seconds of IRIS the filter has learned from: `soundingS`, and a remembered room's once it is
   * kept (`primed`).
   */
  heardS: number;
  /**
   * Seconds of IRIS the canceller's echo estimate rests on, what a young canceller is judged by
   * (`YOUNG_CANCELLER_S`: the stop word's `StopCheck.young`, the voice loop's `echoYoung`): this
   * run's, and a remembered room's from its placing on (not once dropped). Counted so (session 22),
   * IRIS alone with a speaker clipping at +18 dB stopped itself twice in its first reply after a
   * restart: the first clip estimate there had found none and thrown away the clip level the
   * response was learned through (~10 dB taken for 5 s instead of ~30). With the clip level kept
   * (session 23), 0 self-stops there and in 8 min of IRIS alone on a new held-out set.
   */
  ageS: number;
  /** When the long filter took over from the warm one (clock seconds: a recording's own); undefined while the warm one answers (or there is none). */
  handedOverS?: number;
  /** The level the speaker was found to clip IRIS's audio at (`clipModel`; the reference's units, 32767 = full scale); undefined: none found. */
  clipLevel?: number;
  /** Rehearsed filters that took over from the live one, and that left more and were dropped (`Rehearsal`). */
  rehearsals?: { tookOver: number; turnedDown: number };
  /**
   * A filter started from a remembered room (`remembered`): 'judging' over IRIS's first second,
   * then 'kept', or 'dropped' where it took less than `PRIMED_DROP_DB` of the echo there (the room
   * changed: a fresh filter learns it).
   */
  primed?: 'judging' | 'kept' | 'dropped';
  /** The room's response learned in this run (`learnAfterS`): judged over IRIS's next second against the filter before it, then kept or dropped. */
  learned?: 'judging' | 'kept' | 'dropped';
}

/**
 * Seconds of IRIS a remembered room is judged over from its placing, and the echo it must take
 * there (dB) to be kept (the room changed: a speaker moved, another card). Its response took
 * 29–31 dB of the next reply in the room it was learned in, a fresh filter 2–7
 * (`study-room-response.ts`); with the room's echo turned over it adds to the echo.
 */
const PRIMED_JUDGE_S = 1;
const PRIMED_DROP_DB = 3;
/**
 * How often a remembered room's placing is tried (samples of IRIS sounding): until it is placed
 * the echo is left as a fresh filter leaves it, and a person's "stop" comes 0.8 s into the reply.
 * Correlated through the remembered room, a quarter second of IRIS places it.
 */
const PLACING_EVERY = RATE / 4;
/** How far (samples) the delay may move before a response taken off is moved with it (1 sample off it still takes most: 62 µs). */
const ROOM_WITHIN = 1;
/**
 * With `learnAfterS` (off by default), a start in a room IRIS does not remember: once it has heard this much of IRIS, the room's
 * response is solved (a slice per frame, `SOLVE_ROWS` rows: ~100 frames) and taken off the
 * microphone from the next frame, with a fresh filter after it: judged over IRIS's next second against what the filter
 * before took over its last (within `LEARNED_MARGIN_DB`), else that filter goes on and the solve is
 * tried again after twice as much. Its least squares over the first reply took 29–31 dB of the next
 * one where the rehearsal had brought speexdsp to ~27 (docs/room.md, session 22).
 */
export const LEARN_AFTER_S = 3;
const SOLVE_ROWS = 64;
const LEARNED_MARGIN_DB = 1;
/** The recent echo taken, `#recent`: its time constant (seconds of IRIS sounding). */
const RECENT_S = 1;
/** A room is remembered once this much of IRIS has been heard to solve its response from (docs/room.md: 7 s already took 29–31 dB). */
const LEARNED_S = 20;

/**
 * A room's response taken off the microphone first: remembered from before the start, or learned
 * in this run (`#learnRoom`); judged, then kept or dropped.
 */
interface Primed {
  verdict: NonNullable<EchoStats['primed']>;
  /** The remembered room's seconds of IRIS: the canceller's age (`heardS`) once kept; 0 for one learned in this run. */
  heardS: number;
  /** Learned in this run, not remembered. */
  learned: boolean;
  /** Learned in this run: the filter that answered before, to go back to if it took less (dB) than that filter did over its last second, `against`. */
  before?: { engine: EchoEngine; against: number } | undefined;
  /** The remembered response, until this run's first delay estimate has placed it (`throughRoom`). */
  placing: Float32Array | undefined;
  /** The microphone's and the output's energy from the placing over `PRIMED_JUDGE_S`, until the verdict. */
  judged: { mic: number; out: number; samples: number } | undefined;
}

/**
 * The microphone with the echo of what IRIS played removed. Fed 16 kHz frames with the clock
 * sample each starts at; returns the cleaned frames. Only while the reference sounds (and the
 * filter's tail after it) does the filter run: otherwise the microphone passes through untouched.
 */
export class EchoCanceller {
  readonly #reference: EchoReference;
  #engine: EchoEngine;
  /** A fresh filter hearing what the live one heard again, to take over from it (`Rehearsal`). */
  readonly #rehearsal: Rehearsal<EchoEngine> | undefined;
  /** The short filter that answers while the long one is fresh (`WARM_FILTER_MS`); dropped once the long one does as well. */
  #warm: EchoEngine | undefined;
  readonly #handOver: WarmHandOver;
  #handedOverS: number | undefined;
  readonly #frameSamples: number;
  readonly #maxLag: number;
  readonly #window: number;
  readonly #every: number;
  readonly #minStrength: number;
  readonly #tail: number;
  /** The microphone's recent samples and the clock sample after the last. */
  readonly #micRing: Int16Array;
  #micEnd = 0;
  /** The delay taken (samples), at microphone clock sample `#delayAt`; it moves by `#rate` per sample since (two clocks' drift: drift.ts). */
  #delay: number | undefined;
  #delayAt = 0;
  #rate = 0;
  readonly #drift = new DelayDrift();
  /** Where the window of the estimate under way is centred (microphone clock sample). */
  #jobAt = 0;
  #sinceEstimate = 0;
  #pending: { delay: number } | undefined;
  /** A delay estimate under way (`delaySteps`): a step per frame until the delay is known, then one per chunk. */
  #job: Generator<void, DelayEstimate | undefined> | undefined;
  /** The windows `#job` correlates (the clip level is estimated on them too). */
  #jobWindows: { mic: Int16Array; ref: Int16Array } | undefined;
  /** A clip level estimate under way (`clipModel`: after each delay estimate, one step per chunk). */
  #clipJob: Generator<void, number | undefined> | undefined;
  /** The level the speaker clips at, in reference units (`clipModel`); undefined: it does not clip. */
  #clip: number | undefined;
  /** A level estimated once and not yet agreed by a second estimate (`level` undefined: none found). */
  #clipPending: { level: number | undefined } | undefined;
  /**
   * A clip level was estimated before (the first is taken at once), or remembered: a remembered
   * room's response was learned through its clip level, and a first estimate that found none (a
   * window early in a reply, the delay ~190 ms) cleared it and left ~10 dB of 30 (held-out 10).
   */
  #ranClip = false;
  readonly #clipModel: boolean;
  /** A step of `#job` was taken in this chunk. */
  #stepped = false;
  /** Where the microphone's clock last jumped: the ring before it does not line up. */
  #jumpAt = -Infinity;
  #micEnergy = 0;
  #outEnergy = 0;
  #processed = 0;
  #sounding = 0;
  readonly #refFrame: Int16Array<ArrayBuffer>;
  /** The engine ran on the frame before; ran at all (else, after a pause, it is brought up to date first: `#resume`). */
  #running = false;
  #ran = false;
  /** Shift the reference by the measured delay here (else the engine is told the delay: `EchoEngine.delayMs`). */
  readonly #alignHere: boolean;
  readonly #onDelay: ((delayMs: number) => void) | undefined;
  readonly #onJudged: EchoCancellerOptions['onJudged'];
  /** A filter started from a remembered room (`remembered`); undefined: started fresh. */
  #primed: Primed | undefined;
  /** The remembered room's response, taken off the microphone before the engine once placed (`RoomFilter`). */
  #room: RoomFilter | undefined;
  /** The placed response has heard the reference of the frames before its first (`#fillRoom`). */
  #roomFilled = false;
  /** A response taken off is being placed again after a pause (the first estimate since). */
  #replacing = false;
  /** A room's response being solved in this run (`#learnRoom`), or solved and not yet taken off; and how much of IRIS to have heard before the next try. */
  #solving: Generator<void, Float32Array | undefined> | undefined;
  #solved: Float32Array | undefined;
  #learnAtS: number;
  /** A remembered room's verdict, once a room learned in this run has taken its place. */
  #remembered: EchoStats['primed'];
  /** The microphone's and the output's energy over IRIS's last `RECENT_S` sounding (exponential): what the filter takes now. */
  readonly #recent = { mic: 0, out: 0 };
  /** The room's response being learned from what this run hears (`learned()`). */
  readonly #response: ResponseEstimate | undefined;

  private constructor(reference: EchoReference, engine: EchoEngine, options: EchoCancellerOptions & { alignHere?: boolean; warm?: EchoEngine; learn?: number }) {
    this.#reference = reference;
    this.#engine = engine;
    this.#warm = options.warm;
    this.#alignHere = options.alignHere ?? true;
    this.#clipModel = options.clipModel ?? true;
    this.#handOver = new WarmHandOver(options.warmAheadS);
    const rehearsal = options.rehearsal ?? REHEARSAL;
    const fresh = engine.fresh?.bind(engine);
    this.#rehearsal = rehearsal && fresh ? new Rehearsal(fresh, engine.frameSamples, rehearsal) : undefined;
    this.#onDelay = options.onDelay;
    this.#onJudged = options.onJudged;
    this.#frameSamples = engine.frameSamples;
    this.#refFrame = new Int16Array(engine.frameSamples);
    this.#maxLag = Math.round(((options.maxDelayMs ?? 500) * RATE) / 1000);
    this.#window = Math.round((options.windowS ?? 1.5) * RATE);
    this.#every = Math.round((options.everyS ?? 2) * RATE);
    this.#minStrength = options.minStrength ?? 0.2;
    this.#tail = Math.round(((options.filterMs ?? FILTER_MS) * RATE) / 1000);
    this.#micRing = new Int16Array(this.#window + this.#maxLag + SPEEX_FRAME * 8);
    const remembered = options.remembered;
    if (remembered) {
      this.#clip = remembered.clipLevel;
      this.#ranClip = true;
      // The remembered delay until this run's first estimate places the response (`Primed.placing`):
      // live the delay moved by up to 13 ms from one start to the next, and a response 1 ms off adds
      // to the echo. Until then the engine runs alone, as after a fresh start.
      this.#delay = Math.round((remembered.delayMs * RATE) / 1000);
      this.#primed = { verdict: 'judging', heardS: remembered.heardS, placing: remembered.taps, judged: { mic: 0, out: 0, samples: 0 }, learned: false };
    }
    this.#response = options.learn ? new ResponseEstimate(options.learn, RATE) : undefined;
    this.#learnAtS = options.learnAfterS ?? Infinity;
  }

  static async create(reference: EchoReference, options: EchoCancellerOptions = {}): Promise<EchoCanceller> {
    if ((options.engine ?? DEFAULT_ECHO_ENGINE) === 'webrtc') {
      try {
        const { reportDelay, ...settings } = { ...WEBRTC, ...options.webrtc };
        const webrtc = await WebrtcEcho.create({ rate: RATE, ...settings });
        webrtc.delayMs = (MARGIN_SAMPLES * 1000) / RATE; // the reference is aligned here; what is left is the margin
        const { remembered: _speexOnly, ...rest } = options; // a remembered room is speexdsp's filter
        return new EchoCanceller(reference, webrtc, { ...rest, alignHere: !reportDelay });
      } catch (error) {
        options.onFallback?.(`webrtc: ${messageOf(error)}; using speexdsp`);
      }
    }
    const filterSamples = Math.ceil(((options.filterMs ?? FILTER_MS) * RATE) / 1000 / SPEEX_FRAME) * SPEEX_FRAME;
    const speexOptions: SpeexEchoOptions = {
      frameSamples: SPEEX_FRAME,
      filterSamples,
      rate: RATE,
      // No preprocessor by default: until session 12 its residual-echo suppression never ran (speexdsp
      // applies no gain with its denoiser off) and only delayed the output 16 ms; made to work it cut
      // the person's wake word more than the echo (docs/room.md).
      echoSuppressDb: options.echoSuppressDb ?? 0,
      echoSuppressActiveDb: options.echoSuppressActiveDb ?? -15,
      noiseSuppressDb: options.noiseSuppressDb ?? 0,
    };
    const long = await SpeexEcho.create(speexOptions);
    // A remembered room of this filter's length is taken off first once placed, and no warm filter is needed.
    const { remembered, ...rest } = options;
    const room = remembered?.taps.length === filterSamples ? remembered : undefined;
    const warm = !room && filterSamples > WARM_FILTER_MS * (RATE / 1000) ? await SpeexEcho.create({ ...speexOptions, filterSamples: WARM_FILTER_MS * (RATE / 1000) }) : undefined;
    return new EchoCanceller(reference, long, { ...rest, ...(warm ? { warm } : {}), ...(room ? { remembered: room } : {}), learn: filterSamples });
  }

  /**
   * A canceller on filters made elsewhere: `engine`, and `warm` answering while it is fresh (the
   * seam tests use to hand in filters whose residue they set).
   */
  static withEngines(reference: EchoReference, engine: EchoEngine, warm?: EchoEngine, options: EchoCancellerOptions = {}): EchoCanceller {
    return new EchoCanceller(reference, engine, { ...options, ...(warm ? { warm } : {}) });
  }

  /** The adaptive filter in use. */
  get engine(): EchoEngineName {
    return this.#engine.name;
  }

  get stats(): EchoStats {
    return {
      delayMs: this.#delay === undefined ? undefined : (this.#delayOf(this.#micEnd) * 1000) / RATE,
      erleDb: this.#outEnergy > 0 && this.#micEnergy > 0 ? 10 * Math.log10(this.#micEnergy / this.#outEnergy) : undefined,
      processedS: this.#processed / RATE,
      soundingS: this.#sounding / RATE,
      heardS: this.#sounding / RATE + (this.#primed?.verdict === 'kept' ? this.#primed.heardS : 0),
      ageS: this.#sounding / RATE + (this.#room && this.#primed ? this.#primed.heardS : 0),
      ...(this.#handedOverS === undefined ? {} : { handedOverS: this.#handedOverS }),
      ...(this.#clip === undefined ? {} : { clipLevel: this.#clip }),
      ...(this.#rehearsal ? { rehearsals: { tookOver: this.#rehearsal.tookOver, turnedDown: this.#rehearsal.turnedDown } } : {}),
      ...(this.#primed && !this.#primed.learned ? { primed: this.#primed.verdict } : this.#remembered ? { primed: this.#remembered } : {}),
      ...(this.#primed?.learned ? { learned: this.#primed.verdict } : {}),
    };
  }

  /**
   * What this canceller has learned of the room, for the next start (`remembered`): the room's
   * response solved from what this run heard, once it has heard `LEARNED_S` of IRIS; undefined
   * before, or where the engine is not speexdsp. What is heard is read at the call; the solve
   * (~0.3 s of CPU) is spread over the event loop's turns.
   */
  async learned(): Promise<RoomEcho | undefined> {
    if (this.#delay === undefined || this.#primed?.verdict === 'judging' || !this.#response || this.#response.heardS < LEARNED_S) return undefined;
    const { heardS } = this.stats;
    const delayMs = (this.#delayOf(this.#micEnd) * 1000) / RATE;
    const clip = this.#clip;
    const taps = await this.#response.solve();
    return taps && { taps, delayMs, heardS, ...(clip === undefined ? {} : { clipLevel: clip }) };
  }

  /** `samples` from clock sample `at`, with the echo removed (a new array, same length). */
  process(samples: Int16Array, at: number): Int16Array {
    if (this.#processed > 0 && at !== this.#micEnd) {
      // The live clock moved its anchor: the microphone is now `jump` samples later against
      // the reference than it was, so the echo's delay changes by exactly that. What the ring
      // held before is misplaced: no estimate until a whole window lies after the jump.
      const jump = at - this.#micEnd;
      if (this.#delay !== undefined) [this.#delay, this.#delayAt] = [Math.min(this.#maxLag, Math.max(0, this.#delayOf(this.#micEnd) + jump)), at];
      this.#drift.clear();
      this.#pending = undefined;
      this.#job = undefined; // over audio that no longer lines up
      this.#clipJob = undefined;
      this.#jumpAt = at;
    }
    this.#remember(samples, at);
    this.#stepped = false;
    const out = new Int16Array(samples.length);
    const frame = this.#frameSamples;
    for (let offset = 0; offset + frame <= samples.length; offset += frame) {
      out.set(this.#frame(samples.subarray(offset, offset + frame), at + offset), offset);
    }
    const rest = samples.length % frame;
    if (rest) out.set(samples.subarray(samples.length - rest), samples.length - rest); // not a whole frame: as it is
    this.#processed += samples.length;
    return out;
  }

  /**
   * What IRIS played, as it will reach the microphone for mic samples from clock sample `at`
   * (`length` of them), `leadSamples` early: the reference is known before its echo arrives.
   */
  played(at: number, length: number, leadSamples = 0): Int16Array {
    return this.#reference.read(at - Math.round(this.#delay === undefined ? 0 : this.#delayOf(at)) + leadSamples, length);
  }

  destroy(): void {
    this.#engine.destroy();
    this.#primed?.before?.engine.destroy();
    this.#warm?.destroy();
    this.#rehearsal?.destroy();
  }

  /** Estimates come every half second and are stepped every frame: the delay is not known yet, or a remembered filter is not yet placed. */
  get #measuring(): boolean {
    return this.#delay === undefined || this.#primed?.placing !== undefined || this.#replacing;
  }

  /** A rehearsed filter takes over from the next frame (`Rehearsal`). */
  #adopt(engine: EchoEngine | undefined): void {
    if (!engine) return;
    this.#engine.destroy();
    this.#engine = engine;
  }

  /** The delay at microphone clock sample `at` (samples; the delay known). */
  #delayOf(at: number): number {
    return (this.#delay ?? 0) + this.#rate * (at - this.#delayAt);
  }

  #frame(mic: Int16Array, at: number): Int16Array {
    const lookback = this.#delay === undefined ? 0 : Math.round(this.#delayOf(at));
    const frame = this.#frameSamples;
    const sounding = this.#reference.sounding(at - Math.max(lookback, this.#maxLag) - this.#tail, at + frame);
    if (!sounding) {
      if (this.#running) {
        this.#response?.pause();
        this.#room?.clear();
      }
      this.#running = false;
      this.#adopt(this.#rehearsal?.idle());
      this.#learnRoom();
      return mic;
    }
    this.#sounding += frame;
    this.#sinceEstimate += frame;
    // Tracking (the delay known): one step per chunk, so no chunk carries more than ~1 ms of it.
    if (this.#job) {
      if (this.#measuring || !this.#stepped) this.#step();
    } else if (this.#clipJob) {
      if (!this.#stepped) this.#stepClip();
    } else if (this.#sinceEstimate >= (this.#primed?.placing || this.#replacing ? PLACING_EVERY : this.#measuring ? RATE / 2 : this.#every)) this.#track(at + frame);
    if (this.#delay === undefined) return mic; // not yet known: nothing to align
    const shift = this.#alignHere ? Math.max(0, this.#delayOf(at) - MARGIN_SAMPLES) : 0;
    if (!this.#alignHere) this.#engine.delayMs = Math.round((this.#delayOf(at) * 1000) / RATE);
    if (!this.#running && this.#ran) {
      this.#resume(at);
      // After a pause the speaker stream may be a new one, its lag a few samples other: with a
      // response taken off, the delay is measured again every quarter second from here until an
      // estimate holds (one begun before the pause is dropped), stepped every frame as at the placing.
      if (this.#room) {
        [this.#job, this.#clipJob, this.#replacing, this.#sinceEstimate] = [undefined, undefined, true, 0];
      }
    }
    [this.#running, this.#ran] = [true, true];
    // Two clocks drifting: the reference read at the microphone's rate, so the filter sees a still room.
    const ref = this.#rate === 0 ? this.#reference.read(at - shift, frame, this.#refFrame) : readDrifting((from, n) => this.#reference.read(from, n), at - shift, 1 - this.#rate, frame, this.#refFrame);
    if (this.#clip !== undefined) clipInPlace(ref, this.#clip);
    if (this.#room && !this.#roomFilled) this.#fillRoom(this.#room, at - shift);
    this.#response?.add(mic, ref);
    let out = this.#engine.process(this.#room ? this.#room.cancel(mic, ref) : mic, ref);
    // Not while a remembered room is unplaced (those frames' reference may stand a few ms off), nor
    // while it is taken off (the engine learns what it leaves; a rehearsed filter learns all of it).
    if (!this.#primed?.placing && !this.#room) this.#adopt(this.#rehearsal?.heard(mic, ref, out));
    if (this.#warm) {
      const early = this.#warm.process(mic, ref);
      if (!this.#handOver.frame(energy(out), energy(early), frame)) out = early;
      else {
        this.#warm.destroy();
        this.#warm = undefined;
        this.#handedOverS = (at + frame) / RATE;
      }
    }
    const [micEnergy, outEnergy] = [energy(mic), energy(out)];
    this.#micEnergy += micEnergy;
    this.#outEnergy += outEnergy;
    const keep = Math.exp(-frame / (RECENT_S * RATE));
    [this.#recent.mic, this.#recent.out] = [this.#recent.mic * keep + micEnergy, this.#recent.out * keep + outEnergy];
    if (this.#primed?.judged) this.#judge(this.#primed, micEnergy, outEnergy, frame);
    this.#learnRoom();
    return out;
  }

  /**
   * A primed filter over IRIS's first second: kept, or dropped for a fresh one. Kept, it is not
   * rehearsed (`RehearsalOptions.afterKept`): 0–2 s into IRIS's second reply it takes ~27 dB, as a
   * fresh canceller's rehearsal does, for a quarter of the CPU (docs/room.md, session 21); dropped,
   * the rehearsal goes on as after a fresh start.
   */
  #judge(primed: Primed, mic: number, out: number, samples: number): void {
    const judged = primed.judged;
    if (!judged) return;
    [judged.mic, judged.out, judged.samples] = [judged.mic + mic, judged.out + out, judged.samples + samples];
    if (judged.samples < PRIMED_JUDGE_S * RATE || primed.placing) return; // no verdict before the placing
    primed.judged = undefined;
    const took = judged.out > 0 ? 10 * Math.log10(judged.mic / judged.out) : Infinity;
    const before = primed.before;
    if ((before ? took < before.against - LEARNED_MARGIN_DB : took < PRIMED_DROP_DB) && this.#engine.fresh) {
      primed.verdict = 'dropped';
      this.#room = undefined;
      this.#adopt(before?.engine ?? this.#engine.fresh());
      this.#learnAtS = Math.max(this.#learnAtS, 2 * (this.#response?.heardS ?? 0));
    } else {
      primed.verdict = 'kept';
      before?.engine.destroy();
      this.#rehearsal?.roomKept();
    }
    primed.before = undefined;
    this.#onJudged?.(primed.verdict, took, primed.learned ? 'learned' : 'remembered');
  }

  /**
   * The engine starts again after passing the microphone through (IRIS silent): it still holds
   * the frames it last heard, maybe seconds ago (the person mid-word when the reply's tail ran
   * out), and its first output frames played them back, up to 22 dB over the microphone — a
   * burst the VAD took for speech. It hears the last frames of the microphone first, with
   * silence as the reference (the filter learns nothing from them), and their output is dropped.
   */
  #resume(at: number): void {
    const frame = this.#frameSamples;
    const silence = new Int16Array(frame);
    const size = this.#micRing.length;
    for (let k = RESUME_FRAMES; k > 0; k--) {
      const recent = new Int16Array(frame);
      for (let i = 0; i < frame; i++) recent[i] = this.#micRing[(((at - k * frame + i) % size) + size) % size] ?? 0;
      this.#engine.process(recent, silence);
      this.#adopt(this.#rehearsal?.heard(recent, silence, undefined));
      this.#warm?.process(recent, silence);
    }
  }

  /** Start re-estimating the delay over the last window (the work is spread over the next frames). */
  #track(end: number): void {
    if (this.#micEnd - end < 0 || end - this.#window - this.#maxLag < this.#micEnd - this.#micRing.length) return;
    const from = end - this.#window - this.#maxLag;
    if (from < this.#jumpAt) return;
    const ref = this.#reference.read(from, this.#window + this.#maxLag);
    const silent = energy(ref, this.#maxLag) === 0;
    // Silent yet (a clip's leading silence): placing again after a pause, the next frame tries.
    if (silent && this.#replacing) return;
    this.#sinceEstimate = 0;
    if (silent) return;
    const mic = new Int16Array(this.#window + this.#maxLag);
    for (let i = 0; i < mic.length; i++) mic[i] = this.#micRing[(from + i) % this.#micRing.length] ?? 0;
    // A primed filter is placed where it fits: the microphone against the reference through the
    // remembered room, not the reference alone (whose best lag moves with the words by a few
    // samples, and a filter learned a few samples off takes little).
    // So is a response taken off since: a few samples off, it adds to the echo instead.
    const room = this.#primed?.placing ?? this.#room?.taps;
    this.#job = delaySteps(mic, room ? throughRoom(ref, room, MARGIN_SAMPLES) : ref, this.#maxLag);
    this.#jobWindows = { mic, ref };
    this.#jobAt = end - this.#window / 2;
    this.#step();
  }

  /** One step of the estimate under way; when it is done, a change is taken when two estimates agree. */
  #step(): void {
    this.#stepped = true;
    const step = this.#job?.next();
    if (!step?.done) return;
    this.#job = undefined;
    const estimate = step.value;
    if (!estimate || estimate.strength < this.#minStrength) return;
    if (this.#primed?.placing) this.#place(this.#primed, estimate.delaySamples);
    if (this.#clipModel && this.#jobWindows) this.#clipJob = clipSteps(this.#jobWindows.mic, this.#jobWindows.ref, estimate.delaySamples, this.#maxLag);
    const rate = this.#drift.add(this.#jobAt, estimate.delaySamples);
    if (rate !== undefined && rate !== this.#rate && this.#delay !== undefined) {
      // The delay drifts (or stopped drifting): from here it moves at the new rate, without a jump.
      [this.#delay, this.#delayAt, this.#rate] = [this.#delayOf(this.#micEnd), this.#micEnd, rate];
    }
    const known = this.#delay === undefined ? undefined : this.#delayOf(this.#jobAt);
    this.#replacing = false;
    if (known !== undefined && this.#room && Math.abs(estimate.delaySamples - known) > ROOM_WITHIN) {
      // The response does not adapt: moved (a new speaker stream after a pause), it is moved at
      // once, and the filter after it starts afresh (what it learned since the move is wrong).
      [this.#delay, this.#delayAt] = [estimate.delaySamples, this.#jobAt];
      this.#adopt(this.#engine.fresh?.());
      this.#onDelay?.((estimate.delaySamples * 1000) / RATE);
      return;
    }
    if (known !== undefined && Math.abs(estimate.delaySamples - known) <= MARGIN_SAMPLES / 4) return; // within what the filter absorbs
    if (known === undefined || (this.#pending && Math.abs(this.#pending.delay - estimate.delaySamples) <= 16)) {
      [this.#delay, this.#delayAt] = [estimate.delaySamples, this.#jobAt];
      this.#pending = undefined;
      this.#onDelay?.((estimate.delaySamples * 1000) / RATE);
    } else this.#pending = { delay: estimate.delaySamples };
  }

  /**
   * The remembered room placed by this run's first estimate: from here its response is taken off
   * the microphone at the measured delay, and a fresh engine learns what it leaves (the one that
   * ran so far learned the whole echo).
   */
  #place(primed: Primed, delay: number): void {
    const taps = primed.placing;
    if (!taps || !this.#engine.fresh) return;
    primed.placing = undefined;
    [this.#delay, this.#delayAt] = [delay, this.#jobAt];
    this.#room = new RoomFilter(taps, this.#frameSamples);
    this.#roomFilled = false;
    this.#adopt(this.#engine.fresh());
    if (primed.judged) primed.judged = { mic: 0, out: 0, samples: 0 }; // judged from here
    this.#onDelay?.((this.#delayOf(this.#jobAt) * 1000) / RATE);
  }

  /**
   * A start in a room IRIS does not remember: the room's response solved a slice a frame from what
   * this run heard, then taken off the microphone with a fresh filter after it from the next frame,
   * the filter before kept aside until IRIS's next second has judged them (`LEARN_AFTER_S`).
   */
  #learnRoom(): void {
    if (this.#room || this.#primed?.verdict === 'judging' || !this.#response || !this.#engine.fresh || this.#delay === undefined) return;
    if (!this.#solved) {
      if (!this.#solving) {
        if (this.#response.heardS < this.#learnAtS) return;
        this.#solving = this.#response.solveSteps(RESPONSE_LOAD, SOLVE_ROWS);
      }
      const step = this.#solving.next();
      if (!step.done) return;
      this.#solving = undefined;
      if (!step.value) {
        this.#learnAtS = this.#response.heardS * 2;
        return;
      }
      this.#solved = step.value;
    }
    const against = this.#recent.out > 0 ? 10 * Math.log10(this.#recent.mic / this.#recent.out) : 0;
    const taps = this.#solved;
    if (!taps) return;
    this.#room = new RoomFilter(taps, this.#frameSamples);
    this.#roomFilled = false;
    this.#solved = undefined;
    const before = this.#engine;
    this.#engine = before.fresh?.() ?? before;
    this.#warm?.destroy();
    this.#warm = undefined;
    if (this.#primed && !this.#primed.learned) this.#remembered = this.#primed.verdict;
    this.#primed = { verdict: 'judging', heardS: 0, placing: undefined, judged: { mic: 0, out: 0, samples: 0 }, learned: true, before: { engine: before, against } };
  }

  /**
   * A response placed just now hears the reference of the frames before `from` (without it, the
   * echo of what IRIS played in the filter's length before the placing would be left whole).
   */
  #fillRoom(room: RoomFilter, from: number): void {
    const frame = this.#frameSamples;
    const silence = new Int16Array(frame);
    for (let k = room.frames; k > 0; k--) {
      const past = this.#reference.read(from - k * frame, frame);
      if (this.#clip !== undefined) clipInPlace(past, this.#clip);
      room.cancel(silence, past);
    }
    this.#roomFilled = true;
  }

  /**
   * The speaker's clip level: of the reference clipped at each level tried (and not at all), the
   * one whose echo at the measured delay correlates best with the microphone. Taken the first
   * time, then changed when two estimates agree within a step.
   */
  #stepClip(): void {
    this.#stepped = true;
    const step = this.#clipJob?.next();
    if (!step?.done) return;
    this.#clipJob = undefined;
    const level = step.value;
    const near = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? a === b : Math.abs(Math.log2(a / b)) <= 1 / 8 + 1e-9);
    if (near(level, this.#clip)) this.#clipPending = undefined;
    else if (!this.#ranClip || (this.#clipPending && near(level, this.#clipPending.level))) [this.#clip, this.#clipPending] = [level, undefined];
    else this.#clipPending = { level };
    this.#ranClip = true;
  }

  #remember(samples: Int16Array, at: number): void {
    const size = this.#micRing.length;
    for (let i = 0; i < samples.length; i++) this.#micRing[(((at + i) % size) + size) % size] = samples[i] ?? 0;
    this.#micEnd = at + samples.length;
  }
}

/**
 * A live microphone's clock: a chunk's position in the stream plus an anchor, the clock sample
 * the stream started at. A chunk is read at or after it was captured (a busy loop reads late,
 * and at start the models load while audio queues), so the anchor is the earliest any chunk
 * implies: the least-delayed reading. It never creeps (each step would shift the reference by
 * a sample, and the adaptive filter would lose what it learned): two cards' drift shows up as
 * a slowly moving delay instead, which the canceller tracks, and the anchor moves in steps of
 * more than `JITTER_SAMPLES` (the canceller shifts its delay by exactly that). It moves earlier
 * at once, and later once every chunk of a whole `ANCHOR_WINDOW_S` arrived that much later
 * than it implies: a microphone whose crystal runs slower than the system clock falls behind
 * by its drift (100 ppm: 0.36 s an hour), and with the anchor held the echo's delay shrank
 * by that much until it went below zero, where no canceller finds it.
 */
/** 10 ms: the live anchor moves only for a gain bigger than this; each move costs the filter some of what it learned. */
const JITTER_SAMPLES = 160;
/** How long every arrival must stand later than the anchor before it moves later (seconds): one late stretch of a loaded machine does not move it. */
const ANCHOR_WINDOW_S = 30;

export function liveClock(now: () => number = () => EchoReference.nowSamples()): (chunk: AudioChunk) => number {
  let anchor = Infinity;
  let last = -Infinity;
  /** The least-delayed arrival since `windowStart` (a stream position). */
  let windowLeast = Infinity;
  let windowStart = 0;
  return (chunk) => {
    const position = Math.round(chunk.atS * RATE);
    if (position < last) anchor = Infinity; // the microphone was opened again: its positions start over
    last = position;
    const implied = now() - position - chunk.samples.length;
    if (implied < anchor - JITTER_SAMPLES) anchor = implied; // smaller gains: jitter the delay estimate absorbs
    if (anchor === implied || position < windowStart) [windowLeast, windowStart] = [Infinity, position];
    windowLeast = Math.min(windowLeast, implied);
    if (position - windowStart >= ANCHOR_WINDOW_S * RATE) {
      if (windowLeast > anchor + JITTER_SAMPLES) anchor = windowLeast; // the microphone's clock is slow: follow it
      [windowLeast, windowStart] = [Infinity, position];
    }
    return Math.round(anchor) + position;
  };
}
