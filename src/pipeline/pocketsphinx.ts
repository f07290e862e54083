/**
 * pocketsphinx as the speech-to-text that needs no download (apt libpocketsphinx3 and
 * pocketsphinx-en-us): the only engine with a real English model on a fresh Debian install.
 * Called through its C library (pocketsphinx-binding.ts), not one CLI run per utterance: audio
 * is decoded as it arrives, the decoder and its acoustic model stay loaded, and its cepstral
 * mean adapts to the microphone across utterances (the CLI starts cold every time: "ten
 * minutes" came out as "two minute").
 *
 * Every transcript is scored (pocketsphinx-confidence.ts): a grammar forces any speech into
 * some command, so the words alone cannot say whether it was one. The scoring decodes the
 * utterance again (a phone loop, the audio slower and faster, the rival checks); all of it
 * runs on the one decoder, each pass with its own cepstral mean, as when each had a decoder
 * of its own (~13 MB each while listening).
 */
import { concatSamples } from './audio.js';
import { grammarAndDictionary } from './grammar.js';
import { loadLibrary, type CmnState, type PocketsphinxLibrary } from './pocketsphinx-binding.js';
import { confidenceOf, measureFit, type Measures } from './pocketsphinx-confidence.js';
import { checkModel, DEFAULT_DICTIONARY, DEFAULT_MODEL, withDictionary } from './pocketsphinx-model.js';
import { resample } from './resample.js';
import { SttError, type SpeechToText, type SttStream, type Transcript } from './stt.js';

// For stopword.ts, until it imports them from pocketsphinx-model.ts and pocketsphinx-binding.ts.
export { DEFAULT_DICTIONARY, MODEL_DIR, dictionaryEntries } from './pocketsphinx-model.js';
export { loadLibrary, type PocketsphinxLibrary } from './pocketsphinx-binding.js';

export interface PocketsphinxOptions {
  /** Wake phrases the grammar allows before a command, e.g. ["hey jarvis"]. */
  wakePhrases: readonly string[];
  /** The acoustic model directory; default Debian's pocketsphinx-en-us one. */
  model?: string;
  /** Pronunciation dictionary; default Debian's pocketsphinx-en-us one. */
  dictionary?: string;
  /** The shared library; default libpocketsphinx.so.3 from the system. */
  library?: string;
  /** Whether two transcripts mean the same (the daemon: the same intent and arguments);
   * default: the same words. */
  agree?: (a: string, b: string) => boolean | Promise<boolean>;
  /** Sets of words that can stand in for each other (numbers, places, timer names): a
   * transcript's word from one must beat every other word of its set by a margin. */
  rivals?: readonly (readonly string[])[];
}

/** The search that priming runs under: one word, so searching it costs nothing. */
const PRIME_GRAMMAR = '#JSGF V1.0;\ngrammar prime;\npublic <s> = yes;\n';

/** Samples per ps_process_raw call: 100 ms, so a cancelled decode stops within one. */
const BLOCK = 1600;

/**
 * Speeds the audio is also decoded at, as a check: a transcript whose meaning changes when the
 * audio is played 8 % slower or faster was a guess. Each decode that disagrees scales the
 * confidence by `perDisagreement`; on the benchmark this is the margin of safety below
 * `min_confidence` (README, "Decisions").
 */
const PERTURBATIONS = [0.92, 1.08];

/**
 * The passes over an utterance, each with its own cepstral mean: `main` (the grammar, as the
 * audio arrives, then the rival checks), `phones` (the phone loop, after), and one per speed.
 */
type Pass = 'main' | 'phones' | `speed ${number}`;
const SPEEDS = PERTURBATIONS.map((factor) => ({ factor, pass: `speed ${factor}` as const }));
const PASSES: readonly Pass[] = ['main', 'phones', ...SPEEDS.map((s) => s.pass)];

/** The decoder, and the cepstral mean of each pass between utterances. */
interface Decoder {
  lib: PocketsphinxLibrary;
  decoder: unknown;
  means: Map<Pass, CmnState>;
  rivals: (readonly string[])[];
}

/**
 * Decode `chunks` (each in `BLOCK`s) as one utterance of `pass` under `search`: the pass's mean
 * in, its updated mean kept. With `noSearch` the frames are only searched at the end (priming,
 * under the one-word grammar: the mean is all it is for).
 */
function runPass(d: Decoder, pass: Pass, search: string, chunks: readonly Int16Array[], noSearch = false): void {
  const { lib, decoder } = d;
  const mean = d.means.get(pass);
  if (mean !== undefined) lib.setCmn(decoder, mean);
  lib.setSearch(decoder, search);
  lib.startUtt(decoder);
  for (const chunk of chunks) for (let i = 0; i < chunk.length; i += BLOCK) lib.processRaw(decoder, chunk.subarray(i, i + BLOCK), noSearch);
  lib.endUtt(decoder);
  d.means.set(pass, lib.cmn(decoder));
}

export function createPocketsphinx(options: PocketsphinxOptions): SpeechToText {
  const agree = options.agree ?? ((a: string, b: string) => a === b);
  let ready: Promise<Decoder> | undefined;
  /** One decode at a time: the decoder holds one utterance. */
  let queue: Promise<unknown> = Promise.resolve();

  const prepare = () => (ready ??= (async (): Promise<Decoder> => {
    const model = options.model ?? DEFAULT_MODEL;
    const dictionary = options.dictionary ?? DEFAULT_DICTIONARY;
    checkModel(model, dictionary);
    const lib = await loadLibrary(options.library);
    const files = grammarAndDictionary(options.wakePhrases, dictionary);
    // The phone loop: context-independent phones (context-dependent ones take 100× as long).
    const decoder = await withDictionary(files.entries, (dict) => lib.init(['-hmm', model, '-dict', dict, '-allphone_ci', 'yes', '-logfn', '/dev/null']));
    if (!decoder) throw new SttError('stt_failed', `pocketsphinx could not load its model from ${model}`);
    try {
      if (lib.setJsgf(decoder, 'iris', files.grammar) !== 0) throw new SttError('stt_failed', 'pocketsphinx refused the command grammar');
      if (lib.setAllphone(decoder, 'phones') !== 0) throw new SttError('stt_failed', 'pocketsphinx refused the phone loop');
      if (lib.setJsgf(decoder, 'prime', PRIME_GRAMMAR) !== 0) throw new SttError('stt_failed', 'pocketsphinx refused the priming grammar');
      lib.setSearch(decoder, 'iris');
      const start = lib.cmn(decoder);
      const rivals = (options.rivals ?? []).map((set) => set.filter((w) => w.split(' ').every((part) => files.known.has(part)))).filter((set) => set.length > 1);
      return { lib, decoder, means: new Map(PASSES.map((pass) => [pass, start])), rivals };
    } catch (error) {
      lib.free(decoder);
      throw error;
    }
  })());

  /**
   * Start decoding an utterance; audio goes in as it arrives. `prime` (audio from the same
   * room and voice, e.g. the wake phrase) first sets the cepstral mean: live CMN otherwise
   * uses the previous utterance's mean, or the model's generic one for the first, and a cold
   * start turned "set a timer for ten minutes" into "two minute" (4 of 32 commands right
   * cold, 12 primed, on espeak-ng voices).
   */
  const open = async (prime?: Int16Array): Promise<SttStream> => {
    const d = await prepare();
    const { lib, decoder } = d;
    let release: () => void = () => undefined;
    const previous = queue;
    queue = new Promise<void>((resolve) => (release = resolve));
    await previous;
    if (prime !== undefined && prime.length > 0) {
      // The mean is updated at the end of an utterance, which also searches every frame: under
      // a one-word grammar that costs next to nothing (full searches of 2.5 s cost ~50 ms each).
      for (const pass of PASSES) runPass(d, pass, 'prime', [prime], true);
    }
    /** Everything heard, for the passes after the end and for decoding again after a settle. */
    const heard: Int16Array[] = [];
    const feed = (samples: Int16Array) => {
      for (let i = 0; i < samples.length; i += BLOCK) lib.processRaw(decoder, samples.subarray(i, i + BLOCK));
    };
    /** The main pass: the grammar, as the audio arrives. */
    const begin = () => {
      const mean = d.means.get('main');
      if (mean !== undefined) lib.setCmn(decoder, mean);
      lib.setSearch(decoder, 'iris');
      lib.startUtt(decoder);
    };
    /** End the main pass; its mean is kept for the next utterance. */
    const endMain = () => {
      lib.endUtt(decoder);
      d.means.set('main', lib.cmn(decoder));
    };
    begin();
    /** `decoding`: in an utterance; `settled`: ended at a pause, `snapshot` its transcript;
     * `done`: ended or cancelled. */
    let state: 'decoding' | 'settled' | 'done' = 'decoding';
    let snapshot: { text: string; transcript: Promise<Transcript> } | undefined;
    /** Audio arrived after the settle: the snapshot is void once its scoring is over. */
    let stale = false;

    /** End the utterance and score it: the passes after the main one run in `transcript`,
     * and the lock is held until `end` or `cancel`. */
    const score = (): { text: string; transcript: Promise<Transcript> } => {
      endMain();
      const text = (lib.hyp(decoder) ?? '').trim().toLowerCase();
      const words = lib.segments(decoder);
      const audio = heard.slice();
      const rest = async (): Promise<Transcript> => {
        const turn = () => new Promise(setImmediate); // other rooms' audio between the passes
        await turn();
        runPass(d, 'phones', 'phones', audio);
        const { fit, lost } = measureFit(words, lib.segments(decoder));
        const whole = concatSamples(audio);
        const others: string[] = [];
        for (const { factor, pass } of SPEEDS) {
          await turn();
          runPass(d, pass, 'iris', [resample(whole, factor)]);
          others.push((lib.hyp(decoder) ?? '').trim().toLowerCase());
        }
        let agreeing = 0;
        for (const other of others) if (await agree(text, other)) agreeing += 1;
        const measures: Measures = { fit, lost, agreeing, margin: Infinity };
        // The rival check costs a decode per word checked: only when the rest leaves a chance.
        if (text !== '' && confidenceOf(measures, PERTURBATIONS.length) > 0) measures.margin = rivalMargin(d, text, audio);
        const confidence = text === '' ? 0 : confidenceOf(measures, PERTURBATIONS.length);
        const margin = Number.isFinite(measures.margin) ? Math.round(measures.margin * 10) / 10 : 999;
        return { text, confidence, details: { fit: Number.isFinite(fit) ? fit : 999, lost, agreeing, margin } };
      };
      return { text, transcript: rest() };
    };
    /** Speech went on after a settle: decode everything heard again, in a new utterance. */
    const resume = async () => {
      await snapshot?.transcript.catch(() => undefined);
      if (state !== 'settled' || !stale) return;
      state = 'decoding';
      stale = false;
      snapshot = undefined;
      begin();
      heard.forEach(feed);
    };
    const finish = () => {
      const was = state;
      state = 'done';
      if (was === 'decoding') {
        // Cut off: every pass's mean still takes in what was heard, as its own decoder did.
        endMain();
        const whole = concatSamples(heard);
        runPass(d, 'phones', 'prime', heard, true);
        for (const { factor, pass } of SPEEDS) runPass(d, pass, 'prime', [resample(whole, factor)], true);
      }
      void (snapshot?.transcript.catch(() => undefined) ?? Promise.resolve()).then(release);
    };
    return {
      push(samples) {
        if (state === 'done') return;
        heard.push(samples.slice());
        if (state === 'decoding') feed(samples);
        else if (!stale) {
          stale = true;
          void resume();
        }
      },
      partial: () => (state === 'decoding' ? (lib.hyp(decoder) ?? '') : (snapshot?.text ?? '')),
      settle(): Promise<Transcript> {
        if (state === 'done') return Promise.reject(new SttError('stt_failed', 'the utterance was already ended'));
        if (state === 'decoding') {
          state = 'settled';
          snapshot = score();
        }
        return (snapshot as { transcript: Promise<Transcript> }).transcript;
      },
      async end(): Promise<Transcript> {
        if (state === 'done') throw new SttError('stt_failed', 'the utterance was already ended');
        try {
          if (stale) await resume();
          if (state === 'decoding') {
            state = 'settled';
            snapshot = score();
          }
          return await (snapshot as { transcript: Promise<Transcript> }).transcript;
        } finally {
          finish();
        }
      },
      cancel: () => {
        if (state !== 'done') finish();
      },
    };
  };

  /**
   * How much better the transcript's words from a rival set fit than their best rival, per
   * 10 ms frame: the audio is decoded again against the transcript itself and, for each such
   * word, against the transcript with that word replaced by any other of its set. "fifteen"
   * heard as "fifty" at full marks, "ten" as "two": the two decodes come out close.
   */
  const rivalMargin = (d: Decoder, text: string, heard: Int16Array[]): number => {
    const { lib, decoder, rivals } = d;
    const words = text.split(' ');
    const positions = words.map((word) => rivals.find((set) => set.includes(word))).map((set, i) => ({ set, i })).filter((p) => p.set !== undefined);
    if (positions.length === 0) return Infinity;
    const frames = heard.reduce((n, block) => n + block.length, 0) / 160;
    const forced = (body: string): number => {
      lib.setJsgf(decoder, 'check', `#JSGF V1.0;\ngrammar check;\npublic <s> = ${body};\n`);
      runPass(d, 'main', 'check', heard);
      return lib.hyp(decoder) ? lib.pathScore(decoder) : -Infinity;
    };
    try {
      const own = forced(words.join(' '));
      let margin = Infinity;
      for (const { set, i } of positions) {
        const others = (set ?? []).filter((w) => w !== words[i]);
        const rival = forced([...words.slice(0, i), `( ${others.join(' | ')} )`, ...words.slice(i + 1)].join(' '));
        margin = Math.min(margin, (own - rival) / frames);
      }
      return margin;
    } finally {
      lib.setSearch(decoder, 'iris');
    }
  };

  return {
    name: 'pocketsphinx',
    async start() {
      await prepare();
    },
    stream: open,
    async transcribe(samples, signal) {
      const stream = await open(samples);
      try {
        for (let i = 0; i < samples.length; i += BLOCK * 10) {
          if (signal?.aborted) throw signal.reason ?? new DOMException('aborted', 'AbortError');
          stream.push(samples.subarray(i, i + BLOCK * 10));
          await new Promise(setImmediate); // let a cancellation in between 1 s blocks
        }
        return await stream.end();
      } finally {
        stream.cancel();
      }
    },
    async stop() {
      const was = ready;
      ready = undefined;
      const d = await was?.catch(() => undefined);
      if (d) {
        await queue;
        d.lib.free(d.decoder);
      }
    },
  };
}
