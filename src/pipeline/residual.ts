/**
 * What is left of IRIS's own echo after the canceller, predicted from what IRIS played: a
 * sound on the cancelled microphone is the person's only where it stands above that residual.
 * The stop word checks its candidates with it (stopword.ts `nearDb`), and the voice loop an
 * early answer's take-back (voice.ts): the canceller leaves 10–40 dB of IRIS's echo, which
 * sounds like speech to a spotter and to the VAD.
 *
 * Both feed it only while something plays (the stop word's armed chunks; chunks with IRIS's own
 * audio), so it learns the residual's gain over the last seconds of IRIS sounding, and keeps it
 * across pauses: the canceller, and so the room, stay the same.
 */
import { meanPower, SPEECH_FORMAT } from './audio.js';
import { EchoReference } from './echo.js';

const RATE = SPEECH_FORMAT.rate;
/** How far ahead of its echo IRIS's own audio is handed to the stop word and the wake word's own-voice veto (seconds; room-ear.ts): the reference is known before it sounds. */
export const OWN_LEAD_S = 0.2;
/** IRIS's audio this long before a stretch still sounds in the room during it (its reverberation; RT60 up to ~0.6 s). */
const ROOM_TAIL = RATE / 4;
/** Chunks of history (80 ms each: 1 s) before the residual echo's level is known. */
const HISTORY_CHUNKS = 12;
/** The history the residual echo's level is taken over (seconds), and its recent part. */
const HISTORY_S = 4;
const RECENT_S = 1;
/** What the rings hold (seconds): the history and a stretch measured in it. */
const RING_S = 4;

/** A stretch's level against what IRIS's own audio predicts there (dB); -99 when too little was heard yet to tell. */
export interface ResidualLevels {
  /** The stretch's power over the residual echo IRIS's own audio predicts there. */
  nearDb: number;
  /** The stretch's power over the cancelled stream's level before it. */
  riseDb: number;
  /** The residual echo's power IRIS's own audio predicts there (mean square; 0 when not known). */
  residual: number;
  /** IRIS's own audio whose echo sounds there, the room's tail included (mean square). */
  own: number;
  /** Enough was heard to predict the residual (otherwise `nearDb` is −99). */
  known: boolean;
}

/** A power ratio in dB, to 0.1 dB; -99 for none. */
export const db = (ratio: number): number => (ratio > 0 ? Math.round(100 * Math.log10(ratio)) / 10 : -99);

/** The middle value (the upper of the two middles of an even count; 0 for none): levels over chunks. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

export class ResidualEcho {
  /** The cancelled microphone and IRIS's own audio, indexed by samples tracked. */
  readonly #heard = new EchoReference(RING_S);
  readonly #own = new EchoReference(RING_S);
  readonly #lead: number;
  readonly #chunks: boolean;
  /** Per chunk of the last `HISTORY_S`, oldest first: where it starts and ends, the cancelled stream's power, and its ratio to IRIS's own audio's at its echo's place (the residual echo's gain; undefined while IRIS was silent). */
  #history: { at: number; end: number; level: number; gain: number | undefined }[] = [];
  #tracked = 0;

  /**
   * `leadSamples`: how far ahead of its echo IRIS's own audio is given (room-ear.ts: 0.2 s).
   * `chunks`: for judging single 80 ms chunks (the voice loop; the stop word judges word-long
   * stretches and was chosen without it): (1) IRIS's audio at a stretch is the higher of its
   * mean with the room's tail and its mean over the stretch itself — where IRIS starts to talk,
   * the tail's 0.25 s of silence before it dilute a chunk's echo by up to 6 dB; (2) a chunk's own
   * audio is placed so it ends where the chunk's echo does — the front end hands a clip's first
   * chunk out from its echo's own time, `leadSamples` longer (frontend.ts `ownAudio`), which
   * placed from its start stood a lead late and left the first chunks' echo predicted from the
   * audio before the pause; (3) `track`'s `resumed` clears that audio; (4) the residual's gain is
   * the median over the whole history only: its last second before an early answer is the
   * person's wake word and command over IRIS (barge-in), whose voice in it made the answer's
   * echo predicted as loud as the person (live: every answer taken back, read −11…−21 dB).
   */
  constructor(leadSamples: number, options: { chunks?: boolean } = {}) {
    this.#lead = leadSamples;
    this.#chunks = options.chunks ?? false;
  }

  /** Samples tracked so far: the index `track` gives the next chunk. */
  get tracked(): number {
    return this.#tracked;
  }

  /**
   * A chunk of the cancelled microphone, and IRIS's own audio for it (`leadSamples` ahead of its
   * echo); returns where it starts. `resumed` (with `chunks`): IRIS was silent since the last
   * chunk tracked (nothing played), so nothing of its audio before sounds in this one.
   */
  track(cancelled: Int16Array, own: Int16Array, resumed = false): number {
    const at = this.#tracked;
    this.#heard.write(cancelled, at);
    if (this.#chunks && resumed) this.#own.write(new Int16Array(this.#lead + ROOM_TAIL), at - this.#lead - ROOM_TAIL);
    this.#own.write(own, this.#chunks ? at + cancelled.length - own.length : at);
    this.#tracked += cancelled.length;
    const level = meanPower(cancelled);
    const ownPower = this.#ownPower(at, at + cancelled.length);
    this.#history.push({ at, end: at + cancelled.length, level, gain: ownPower > 0 ? level / ownPower : undefined });
    while ((this.#history[0]?.at ?? at) < at - HISTORY_S * RATE) this.#history.shift();
    return at;
  }

  /** The cancelled microphone tracked from `from`, `length` samples (silence where it is not held). */
  heard(from: number, length: number): Int16Array {
    return this.#heard.read(from, length);
  }

  /** The cancelled stretch [from, to) against the residual echo IRIS's own audio predicts there, and against the level before it. */
  levels(from: number, to: number): ResidualLevels {
    const power = meanPower(this.#heard.read(from, to - from));
    const before = this.#before(from);
    const own = this.#ownPower(from, to);
    const residual = before.gain === undefined ? 0 : before.gain * own;
    return {
      residual,
      own,
      known: before.gain !== undefined,
      // Too little heard yet to know the residual echo's level (the first second IRIS ever plays): no telling.
      nearDb: before.gain === undefined ? -99 : db(power / Math.max(1, residual)),
      riseDb: before.level === undefined ? -99 : db(power / Math.max(1, before.level)),
    };
  }

  /** IRIS's own audio whose echo (and room) sounds in [from, to). */
  #ownPower(from: number, to: number): number {
    const withTail = meanPower(this.#own.read(from - this.#lead - ROOM_TAIL, to - from + ROOM_TAIL));
    return this.#chunks ? Math.max(withTail, meanPower(this.#own.read(from - this.#lead, to - from))) : withTail;
  }

  /**
   * The residual echo's gain and the cancelled stream's level before `from`: the higher of the
   * median over the history and over its last `RECENT_S` (a canceller that lost the echo's delay
   * lets it through for seconds; the level just before shows it). Undefined with too little history.
   */
  #before(from: number): { gain: number | undefined; level: number | undefined } {
    const before = this.#history.filter((h) => h.end <= from);
    const recent = before.filter((h) => h.at >= from - RECENT_S * RATE);
    const gains = (list: typeof before) => list.flatMap((h) => (h.gain === undefined ? [] : [h.gain]));
    const levels = (list: typeof before) => list.map((h) => h.level);
    const enough = (list: number[]) => list.length >= HISTORY_CHUNKS;
    return {
      gain: enough(gains(before)) ? (this.#chunks ? median(gains(before)) : Math.max(median(gains(before)), median(gains(recent)))) : undefined,
      level: enough(levels(before)) ? Math.max(median(levels(before)), median(levels(recent))) : undefined,
    };
  }
}
