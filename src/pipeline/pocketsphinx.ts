/**
 * pocketsphinx as the speech-to-text that needs no download (apt libpocketsphinx3 and
 * pocketsphinx-en-us): the only engine with a real English model on a fresh Debian install.
 * Called through its C library (pocketsphinx-binding.ts), not one CLI run per utterance: audio
 * is decoded as it arrives, the decoders and their acoustic model stay loaded, and their
 * cepstral mean adapts to the microphone across utterances (the CLI starts cold every time:
 * "ten minutes" came out as "two minute").
 *
 * Every transcript is scored (pocketsphinx-confidence.ts): a grammar forces any speech into
 * some command, so the words alone cannot say whether it was one. The scoring's decodes (a
 * phone loop, the audio slower and faster) run beside the main one as the audio arrives, each
 * on a decoder of its own (~8–13 MB each): one decoder running them after the end instead took
 * the transcript from ~10 ms to ~0.9 s after the last word (docs/development.md).
 */
import { grammarAndDictionary } from './grammar.js';
import { loadLibrary, type PocketsphinxLibrary } from './pocketsphinx-binding.js';
import { confidenceOf, DISTORTED_ECHO_PARAMS, measureFit, OVER_SPEECH_PARAMS, rivalsOverEcho, SCORE_PARAMS, type Measures } from './pocketsphinx-confidence.js';
import { checkModel, DEFAULT_DICTIONARY, DEFAULT_MODEL, withDictionary } from './pocketsphinx-model.js';
import { Resampler } from './resample.js';
import { SttError, type SpeechToText, type StreamOptions, type SttStream, type Transcript } from './stt.js';

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

/** Audio decoded again per turn of the event loop after a settle is voided: one block, ~30 ms
 * of the four decoders on a busy core. */
const CATCH_UP_SLICE = BLOCK;

/**
 * Speeds the audio is also decoded at, as a check: a transcript whose meaning changes when the
 * audio is played 8 % slower or faster was a guess. Each decode that disagrees scales the
 * confidence by `perDisagreement`; on the benchmark this is the margin of safety below
 * `min_confidence` (README, "Decisions").
 */
const PERTURBATIONS = [0.92, 1.08];

export function createPocketsphinx(options: PocketsphinxOptions): SpeechToText {
  const agree = options.agree ?? ((a: string, b: string) => a === b);
  let ready: Promise<{ lib: PocketsphinxLibrary; grammars: unknown[]; phones: unknown; rivals: (readonly string[])[] }> | undefined;
  /** One decode at a time: the decoders hold one utterance each. */
  let queue: Promise<unknown> = Promise.resolve();

  const prepare = () => (ready ??= (async () => {
    const model = options.model ?? DEFAULT_MODEL;
    const dictionary = options.dictionary ?? DEFAULT_DICTIONARY;
    checkModel(model, dictionary);
    const lib = await loadLibrary(options.library);
    const files = grammarAndDictionary(options.wakePhrases, dictionary);
    const made: unknown[] = [];
    try {
      return withDictionary(files.entries, (dict) => {
        const common = ['-hmm', model, '-dict', dict, '-logfn', '/dev/null'];
        const grammars = [1, ...PERTURBATIONS].map(() => lib.init(common));
        // The phone loop: context-independent phones (context-dependent ones take 100× as long).
        const phones = lib.init([...common, '-allphone_ci', 'yes']);
        made.push(...[...grammars, phones].filter(Boolean));
        if (grammars.some((g) => !g) || !phones) throw new SttError('stt_failed', `pocketsphinx could not load its model from ${model}`);
        for (const g of grammars) {
          if (lib.setJsgf(g, 'iris', files.grammar) !== 0 || lib.setSearch(g, 'iris') !== 0) throw new SttError('stt_failed', 'pocketsphinx refused the command grammar');
        }
        if (lib.setAllphone(phones, 'phones') !== 0 || lib.setSearch(phones, 'phones') !== 0) throw new SttError('stt_failed', 'pocketsphinx refused the phone loop');
        for (const d of [...grammars, phones]) {
          if (lib.setJsgf(d, 'prime', PRIME_GRAMMAR) !== 0) throw new SttError('stt_failed', 'pocketsphinx refused the priming grammar');
        }
        for (const g of grammars) lib.setSearch(g, 'iris');
        lib.setSearch(phones, 'phones');
        const rivals = (options.rivals ?? []).map((set) => set.filter((w) => w.split(' ').every((part) => files.known.has(part)))).filter((set) => set.length > 1);
        return { lib, grammars, phones, rivals };
      });
    } catch (error) {
      made.forEach((d) => lib.free(d)); // the decoders that did start
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
  const open = async (prime?: Int16Array, options: StreamOptions = {}): Promise<SttStream> => {
    const { lib, grammars, phones, rivals } = await prepare();
    let release: () => void = () => undefined;
    const previous = queue;
    queue = new Promise<void>((resolve) => (release = resolve));
    await previous;
    const decoders = [...grammars, phones];
    if (prime !== undefined && prime.length > 0) {
      // The mean is updated at the end of an utterance, which also searches every frame: under
      // a one-word grammar that costs next to nothing (four full searches of 2.5 s cost
      // ~200 ms at each wake word).
      for (const decoder of decoders) {
        lib.setSearch(decoder, 'prime');
        lib.startUtt(decoder);
        for (let i = 0; i < prime.length; i += BLOCK) lib.processRaw(decoder, prime.subarray(i, i + BLOCK), true);
        lib.endUtt(decoder);
        lib.setSearch(decoder, decoder === phones ? 'phones' : 'iris');
      }
    }
    const [main, ...perturbed] = grammars;
    /** Everything heard, for the rival check and for decoding again after a settle. */
    const heard: Int16Array[] = [];
    let stretches: Resampler[] = [];
    /** Where IRIS's echo ends (`options.echoS`), in samples of this utterance. */
    const echoSamples = Math.round((options.echoS ?? 0) * 16_000);
    /** Samples fed in this utterance, and the main decoder's frame count when the echo ended. */
    let fed = 0;
    let echoEnd: number | undefined;
    /** Words after an early answer taken back lie over its echo (`overEcho`): the over-IRIS scale, nothing forgiven. */
    let overEcho = false;
    const feedBlock = (block: Int16Array) => {
      lib.processRaw(main, block);
      lib.processRaw(phones, block);
      perturbed.forEach((d, k) => lib.processRaw(d, stretches[k]?.push(block) ?? block));
      fed += block.length;
      if (echoEnd === undefined && echoSamples > 0 && fed >= echoSamples) echoEnd = lib.frames(main);
    };
    const feed = (samples: Int16Array) => {
      for (let i = 0; i < samples.length; i += BLOCK) {
        const block = samples.subarray(i, i + BLOCK);
        // The block where the echo ends is fed in two, so that frame is known to 10 ms.
        const cut = echoEnd === undefined && echoSamples > fed && echoSamples < fed + block.length ? echoSamples - fed : 0;
        if (cut > 0) feedBlock(block.subarray(0, cut));
        feedBlock(cut > 0 ? block.subarray(cut) : block);
      }
    };
    const begin = () => {
      decoders.forEach((d) => lib.startUtt(d));
      stretches = PERTURBATIONS.map((factor) => new Resampler(factor));
      fed = 0;
      echoEnd = undefined;
    };
    begin();
    /** `decoding`: in an utterance; `settled`: ended at a pause, `snapshot` its transcript;
     * `catching-up`: decoding what was heard again after speech went on (`resume`); `done`:
     * ended or cancelled. */
    let state: 'decoding' | 'settled' | 'catching-up' | 'done' = 'decoding';
    /** Read through a function: TypeScript narrows `state` across the awaits that change it. */
    const ended = () => state === 'done';
    let snapshot: { text: string; transcript: Promise<Transcript> } | undefined;
    /** Audio arrived after the settle: the snapshot is void once its scoring is over. */
    let stale = false;

    /** End the utterance in every decoder and score it. The decoders are not touched after
     * the synchronous part, but the lock is held until `end` or `cancel`. */
    const score = (): { text: string; transcript: Promise<Transcript> } => {
      decoders.forEach((d) => lib.endUtt(d));
      const text = (lib.hyp(main) ?? '').trim().toLowerCase();
      const words = lib.segments(main);
      // Segment frames count on across utterances from the first one's (the utterance's start;
      // silence longer than pocketsphinx's VAD keeps is not counted): the echo's end in them.
      const echoFrames = echoSamples === 0 ? 0 : echoEnd === undefined ? Infinity : (words[0]?.startFrame ?? 0) + echoEnd;
      const { fit, lost, echo, clean } = measureFit(words, lib.segments(phones), echoFrames);
      const echoRivals = rivalsOverEcho(words, echoFrames, rivals);
      const others = perturbed.map((d) => (lib.hyp(d) ?? '').trim().toLowerCase());
      const rest = async (): Promise<Transcript> => {
        let agreeing = 0;
        for (const other of others) if (await agree(text, other)) agreeing += 1;
        const measures: Measures = { fit, lost, agreeing, margin: Infinity, ...(echo && clean ? { echo: { ...echo, rivals: echoRivals }, clean } : {}) };
        const params = echoSamples === 0 && !overEcho ? SCORE_PARAMS : options.echoDistorted ? DISTORTED_ECHO_PARAMS : OVER_SPEECH_PARAMS;
        // The rival check costs a decode per word checked: only when the rest leaves a chance.
        if (text !== '' && confidenceOf(measures, perturbed.length, params) > 0) measures.margin = rivalMargin(lib, main, text, heard, rivals);
        const confidence = text === '' ? 0 : confidenceOf(measures, perturbed.length, params);
        const margin = Number.isFinite(measures.margin) ? Math.round(measures.margin * 10) / 10 : 999;
        const finite = (x: number) => (Number.isFinite(x) ? x : 999);
        const split = echo && clean ? { echo_fit: finite(echo.fit), echo_frames: echo.frames, clean_fit: finite(clean.fit), clean_frames: clean.frames, echo_rivals: echoRivals } : {};
        return { text, confidence, details: { fit: finite(fit), lost, agreeing, margin, ...split } };
      };
      return { text, transcript: rest() };
    };
    /**
     * Speech went on after a settle: decode everything heard again, in a new utterance, a
     * slice at a time between turns of the event loop — at once it held the audio path (every
     * room's wake word and VAD) for 1.2-1.3 s after 4 s of speech. What arrives meanwhile is
     * decoded after it, in order.
     */
    let catchingUp: Promise<void> | undefined;
    const resume = (): Promise<void> => (catchingUp ??= (async () => {
      await snapshot?.transcript.catch(() => undefined);
      if (state !== 'settled' || !stale) return;
      state = 'catching-up';
      stale = false;
      snapshot = undefined;
      begin();
      for (let i = 0; i < heard.length; i++) {
        const samples = heard[i] as Int16Array;
        for (let at = 0; at < samples.length; at += CATCH_UP_SLICE) {
          feed(samples.subarray(at, at + CATCH_UP_SLICE)); // whole blocks: the same decode as at once
          await new Promise(setImmediate);
          if (ended()) return; // cancelled meanwhile
        }
      }
      state = 'decoding';
    })().finally(() => (catchingUp = undefined)));
    const finish = () => {
      const was = state;
      state = 'done';
      if (was === 'decoding' || was === 'catching-up') decoders.forEach((d) => lib.endUtt(d));
      void (snapshot?.transcript.catch(() => undefined) ?? Promise.resolve()).then(release);
    };
    return {
      push(samples) {
        if (state === 'done') return;
        heard.push(samples.slice());
        if (state === 'decoding') feed(samples);
        else if (state === 'settled' && !stale) {
          stale = true;
          void resume();
        }
      },
      // While catching up, the words so far are only part of what was said: none yet.
      partial: () => (state === 'decoding' ? (lib.hyp(main) ?? '') : state === 'catching-up' ? '' : (snapshot?.text ?? '')),
      async settle(): Promise<Transcript> {
        if (state === 'catching-up') await resume();
        if (ended()) throw new SttError('stt_failed', 'the utterance was already ended');
        if (state === 'decoding') {
          state = 'settled';
          snapshot = score();
        }
        return (snapshot as { transcript: Promise<Transcript> }).transcript;
      },
      async end(): Promise<Transcript> {
        if (state === 'done') throw new SttError('stt_failed', 'the utterance was already ended');
        try {
          if (stale || state === 'catching-up') await resume();
          if (ended()) throw new SttError('stt_failed', 'the utterance was cancelled');
          if (state === 'decoding') {
            state = 'settled';
            snapshot = score();
          }
          return await (snapshot as { transcript: Promise<Transcript> }).transcript;
        } finally {
          finish();
        }
      },
      overEcho: () => {
        overEcho = true;
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
  const rivalMargin = (lib: PocketsphinxLibrary, decoder: unknown, text: string, heard: Int16Array[], rivals: (readonly string[])[]): number => {
    const words = text.split(' ');
    const positions = words.map((word) => rivals.find((set) => set.includes(word))).map((set, i) => ({ set, i })).filter((p) => p.set !== undefined);
    if (positions.length === 0) return Infinity;
    const frames = heard.reduce((n, block) => n + block.length, 0) / 160;
    const forced = (body: string): number => {
      lib.setJsgf(decoder, 'check', `#JSGF V1.0;\ngrammar check;\npublic <s> = ${body};\n`);
      lib.setSearch(decoder, 'check');
      lib.startUtt(decoder);
      for (const block of heard) lib.processRaw(decoder, block);
      lib.endUtt(decoder);
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
      const parts = await was?.catch(() => undefined);
      if (parts) {
        await queue;
        [...parts.grammars, parts.phones].forEach((d) => parts.lib.free(d));
      }
    },
  };
}
