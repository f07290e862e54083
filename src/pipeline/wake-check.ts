/**
 * A second look at openWakeWord's near misses. In a reverberant room, over IRIS's echo or a
 * person reading aloud, some voices' wake words score 0.2–0.5 (docs/room.md, session 14): under
 * the threshold, so missed. Continuous speech seldom scores that high (one peak over 0.05 in 30
 * minutes of reading), but what the canceller leaves of IRIS's voice does (up to 0.48). So a
 * score from `fromScore` up to the threshold is a candidate: once its peak has passed, the audio
 * around it is decoded by pocketsphinx as the wake phrase and as a free phone loop, and the
 * candidate is a detection only when the phrase fits as well as real words do (`maxFit`).
 * What the canceller leaves of IRIS mostly cannot be placed as the phrase at all.
 */
import { SttError } from './stt.js';
import { decodeUtterance, loadLibrary, type PocketsphinxLibrary } from './pocketsphinx-binding.js';
import { measureFit, type Segment } from './pocketsphinx-confidence.js';
import { DEFAULT_DICTIONARY, DEFAULT_MODEL, checkModel, dictionaryEntries, withDictionary } from './pocketsphinx-model.js';

export interface WakeCheckOptions {
  /** A score from this up to the threshold is checked (0–1); at or over the threshold: no check. */
  fromScore: number;
  /** The window decoded: from this long before the candidate's peak frame ends… (seconds) */
  beforeS: number;
  /** …to this long after it: the detection waits for it (seconds). */
  afterS: number;
  /** The phrase's fit (per 10 ms frame, `measureFit`) at or under which it counts as said. */
  maxFit: number;
}

/**
 * Chosen on bench-room's dev rooms (scripts/study-wake-verify.ts, then every look the voice loop
 * took in the main bench's dev rooms; docs/room.md "A second look at near misses"), each window
 * with its own cepstral mean (`'window'`): the person's near misses (0.2–0.5) fit −2.6…8.1, what
 * IRIS's residual echo scored there 10.7 or more, or could not be placed as the phrase at all; a
 * 2 s window before the peak placed the phrase best. From 0.1 (session 15): one residual there
 * fit 9.0, so while IRIS plays a near miss must also stand above its residual echo (wakeword.ts
 * `LOOK_NEAR_DB`); with nothing playing, 60 minutes of reading gave no look that fit. From 0.03
 * (session 16): of 107 peaks 0.03–0.1 in dev and held-out 1 rooms and 30 minutes of reading none
 * fit ≤ 9 (the closest 10.5), the person's 4 of 7 did; held-out 5, run once: 0 dB 83 → 92 %.
 */
export const WAKE_CHECK: WakeCheckOptions = { fromScore: 0.03, beforeS: 2, afterS: 0.3, maxFit: 9 };

/** The words a wake word's name stands for: "hey jarvis" for hey_jarvis. */
export const wakePhrase = (word: string): string => word.replaceAll('_', ' ');

/**
 * Whose cepstral mean a window is decoded with: `'stream'`, pocketsphinx's live mean (its
 * running sums over the last 500–800 frames decoded); `'window'`, the window's own alone
 * (`-cmn current`, the window decoded as one whole utterance). With `'stream'` the same window's
 * fit moves with what was decoded before it (the stop word's level-route test window: 25.7, 31,
 * 29.7, 29.9 in one process); with `'window'` it does not (9.1 each time).
 */
export type PhraseCmn = 'stream' | 'window';

/** pocketsphinx decoding a window as one phrase and as a free phone loop. */
export class PhraseCheck {
  private constructor(readonly phrase: string, readonly lib: PocketsphinxLibrary, readonly decoder: unknown, readonly cmn: PhraseCmn) {}

  /**
   * A check for `phrase` (words separated by spaces), or why there is none: pocketsphinx or
   * its English model missing, or a word not in its dictionary (a custom wake word).
   */
  static async create(phrase: string, cmn: PhraseCmn = 'window'): Promise<PhraseCheck> {
    checkModel();
    const words = phrase.split(' ');
    const entries = dictionaryEntries(DEFAULT_DICTIONARY, new Set(words));
    const missing = words.filter((word) => !entries.some((entry) => entry.word === word));
    if (missing.length > 0) throw new SttError('stt_invalid', `"${missing.join('", "')}" is not in pocketsphinx's dictionary`);
    const lib = await loadLibrary('libpocketsphinx.so.3');
    const decoder = withDictionary(entries, (dict) => lib.init(['-hmm', DEFAULT_MODEL, '-dict', dict, '-allphone_ci', 'yes', ...(cmn === 'window' ? ['-cmn', 'current'] : []), '-logfn', '/dev/null']));
    if (!decoder || lib.setJsgf(decoder, 'phrase', `#JSGF V1.0;\ngrammar phrase;\npublic <s> = ${phrase};\n`) !== 0 || lib.setAllphone(decoder, 'phones') !== 0) {
      if (decoder) lib.free(decoder);
      throw new SttError('stt_failed', 'pocketsphinx could not start the wake-word check');
    }
    return new PhraseCheck(phrase, lib, decoder, cmn);
  }

  /**
   * How much worse the phrase scores than a free phone loop over its frames, per 10 ms frame
   * (Infinity when it cannot be placed). The window is decoded once first: with `'stream'` that
   * pulls pocketsphinx's cepstral mean towards the window's own; with `'window'` it keeps a
   * decoder's first utterance from scoring apart (a fresh decoder's first decode of the test
   * window fit 13.4, every later one 9.1).
   */
  fit(window: Int16Array): number {
    return this.place(window).fit;
  }

  /** `fit`, and the phrase's words as the decode placed them (frames from the window's start; none when it cannot be placed). */
  place(window: Int16Array): { fit: number; words: Segment[] } {
    this.#decode('phones', window);
    const words = this.#decode('phrase', window);
    if (words.length === 0) return { fit: Infinity, words };
    const origin = words[0]?.startFrame ?? 0; // a decoder's frames may count on from its first utterance
    return { fit: measureFit(words, this.#decode('phones', window)).fit, words: words.map((w) => ({ ...w, startFrame: w.startFrame - origin, endFrame: w.endFrame - origin })) };
  }

  free(): void {
    this.lib.free(this.decoder);
  }

  #decode(search: string, window: Int16Array): Segment[] {
    return decodeUtterance(this.lib, this.decoder, search, window, this.cmn === 'window'); // whole: `-cmn current` needs the utterance at once
  }

}

/**
 * One check per phrase for the whole process, made at the first candidate (a decoder, a few
 * MB): decoding is synchronous, so detectors on several streams share it. A phrase that cannot
 * be checked is remembered as such (its candidates stay misses, as without the check).
 */
const CHECKS = new Map<string, Promise<PhraseCheck | Error>>();

export function phraseCheck(phrase: string, cmn: PhraseCmn = 'window'): Promise<PhraseCheck | Error> {
  let check = CHECKS.get(`${cmn} ${phrase}`);
  if (check === undefined) {
    check = PhraseCheck.create(phrase, cmn).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
    CHECKS.set(`${cmn} ${phrase}`, check);
  }
  return check;
}
