/**
 * pocketsphinx as the speech-to-text that needs no download (apt libpocketsphinx3 and
 * pocketsphinx-en-us): the only engine with a real English model on a fresh Debian install.
 * Called through its C library with koffi (a maintained FFI package, loaded by ffi.ts), not
 * one CLI run per utterance: audio is decoded as it arrives, the decoder and
 * its acoustic model stay loaded, and its cepstral mean adapts to the microphone across
 * utterances (the CLI starts cold every time: "ten minutes" came out as "two minute").
 *
 * Every transcript is scored (see `confidenceOf`): a grammar forces any speech into some
 * command, so the words alone cannot say whether it was one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadNative } from './ffi.js';
import { commandGrammar, grammarWords } from './grammar.js';
import { SttError, type SpeechToText, type SttStream, type Transcript } from './stt.js';

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

export const MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
export const DEFAULT_DICTIONARY = `${MODEL_DIR}/cmudict-en-us.dict`;
const MISSING = 'pocketsphinx is not installed (apt install libpocketsphinx3 pocketsphinx-en-us)';

/** One pronunciation: "word P R O N" or "word(2) P R O N" (a variant). */
export interface DictionaryEntry {
  word: string;
  line: string;
}

/** The entries of a pocketsphinx dictionary for `words` (all their variants). */
export function dictionaryEntries(file: string, words: ReadonlySet<string>): DictionaryEntry[] {
  const entries: DictionaryEntry[] = [];
  for (const [line, word] of readFileSync(file, 'latin1').matchAll(/^(\S+?)(?:\(\d+\))?[ \t].*$/gm)) {
    if (word && words.has(word)) entries.push({ word, line });
  }
  return entries;
}

/**
 * The command grammar, and a dictionary of just its words. pocketsphinx refuses a grammar word
 * its dictionary lacks, so branches with one are left out. The small dictionary matters:
 * loading the whole 126k-word one costs 0.15 s and 21 MB.
 */
export function grammarAndDictionary(wakePhrases: readonly string[], dictionaryFile: string): { grammar: string; dictionary: string; known: ReadonlySet<string> } {
  const entries = dictionaryEntries(dictionaryFile, grammarWords(wakePhrases));
  const known = new Set(entries.map((entry) => entry.word));
  return {
    grammar: commandGrammar({ wakePhrases, knows: (word) => known.has(word) }),
    dictionary: `${entries.map((entry) => entry.line).join('\n')}\n`,
    known,
  };
}

/** A word (or silence) the decoder placed, in 10 ms frames, with its acoustic score. */
interface Segment {
  word: string;
  startFrame: number;
  endFrame: number;
  acoustic: number;
}

/**
 * Two of the four measures behind a transcript's confidence (see `confidenceOf`), from the
 * grammar's words and an unconstrained phone loop's decode of the same audio
 * (context-independent phones, no language model: 40–60 ms for 3 s), per 10 ms frame:
 * - `fit`: how much worse the grammar's words score than the phone loop over the same frames
 *   (log base 1.0001, pocketsphinx's unit; right commands mostly 10–30, forced ones 20–70).
 * - `lost`: the share of the phone loop's speech frames after the first word that the grammar
 *   calls silence ("play some jazz music" became silence and "do it").
 */
export function measureFit(words: Segment[], phones: Segment[]): { fit: number; lost: number } {
  const isSilence = (word: string) => /^(?:<sil>|<s>|<\/s>|\[[A-Z]+\]|\+\+.*|\(NULL\)|SIL|\+.*)$/.test(word);
  const phoneScore = (from: number, to: number): number => {
    let total = 0;
    for (const p of phones) {
      const overlap = Math.min(to, p.endFrame) - Math.max(from, p.startFrame) + 1;
      if (overlap > 0) total += (p.acoustic * overlap) / (p.endFrame - p.startFrame + 1);
    }
    return total;
  };
  let gap = 0;
  let frames = 0;
  const silent = new Set<number>();
  let begun = false; // silence before the first word is pre-roll: the wake phrase, or earlier talk
  for (const w of words) {
    if (isSilence(w.word)) {
      if (!begun) continue;
      for (let f = w.startFrame; f <= w.endFrame; f++) silent.add(f);
      continue;
    }
    const n = w.endFrame - w.startFrame + 1;
    if (n <= 0) continue;
    begun = true;
    gap += phoneScore(w.startFrame, w.endFrame) - w.acoustic;
    frames += n;
  }
  let speech = 0;
  let lost = 0;
  for (const p of phones) {
    if (isSilence(p.word)) continue;
    for (let f = p.startFrame; f <= p.endFrame; f++) {
      speech += 1;
      if (silent.has(f)) lost += 1;
    }
  }
  const fit = frames === 0 ? Infinity : gap / frames;
  const lostShare = speech === 0 ? 1 : lost / speech;
  return { fit: Math.round(fit * 10) / 10, lost: Math.round(lostShare * 1000) / 1000 };
}

/** The measures behind a pocketsphinx transcript's confidence (reported as `details`). */
export interface Measures {
  /** See `measureFit`; Infinity when no word was heard. */
  fit: number;
  lost: number;
  /** How many of the perturbed decodes mean the same. */
  agreeing: number;
  /** How much the transcript's rival-set words beat their best rival, per frame (Infinity
   * when it has none). */
  margin: number;
}

export interface ScoreParams {
  /** Fit at or under this: full marks; at or over `fitBad`: none. */
  fitGood: number;
  fitBad: number;
  /** Each 1 % of speech lost costs this many % of the confidence. */
  lostWeight: number;
  /** Confidence kept for each perturbed decode that means something else. */
  perDisagreement: number;
  /** Margin (per frame) for full marks; less scales the confidence down. */
  marginGood: number;
}

/**
 * Chosen on the development set of scripts/bench-understanding.ts (scripts/tune-confidence.ts
 * searches the grid): the most right answers with no wrong one at `[stt] min_confidence` 0.6,
 * and none at 0.5 either, for a margin of safety. The held-out set, never used to choose,
 * got no wrong answer with them either (README).
 */
export const SCORE_PARAMS: ScoreParams = { fitGood: 15, fitBad: 40, lostWeight: 2, perDisagreement: 2 / 3, marginGood: 3 };

const clamp01 = (x: number): number => Math.min(1, Math.max(0, x));

/** A transcript's confidence, 0–1, from its measures. */
export function confidenceOf(m: Measures, perturbations: number, p: ScoreParams = SCORE_PARAMS): number {
  if (!Number.isFinite(m.fit)) return 0;
  const byFit = clamp01((p.fitBad - m.fit) / (p.fitBad - p.fitGood)) * clamp01(1 - p.lostWeight * m.lost);
  const byAgreement = p.perDisagreement ** (perturbations - m.agreeing);
  const byMargin = Number.isFinite(m.margin) ? clamp01(m.margin / p.marginGood) : 1;
  return Math.round(byFit * byAgreement * byMargin * 1000) / 1000;
}

// ---------------------------------------------------------------------------------------------
// The C library

export interface PocketsphinxLibrary {
  init(argv: string[]): unknown;
  free(decoder: unknown): void;
  setJsgf(decoder: unknown, name: string, jsgf: string): number;
  setAllphone(decoder: unknown, name: string): number;
  setSearch(decoder: unknown, name: string): number;
  startUtt(decoder: unknown): number;
  /** Decode `samples`; with `noSearch` the frames wait, and are searched at `endUtt`. */
  processRaw(decoder: unknown, samples: Int16Array, noSearch?: boolean): number;
  endUtt(decoder: unknown): number;
  hyp(decoder: unknown): string | null;
  /** The best path's score (log base 1.0001, acoustic and grammar weights together). */
  pathScore(decoder: unknown): number;
  segments(decoder: unknown): Segment[];
}

export async function loadLibrary(file: string): Promise<PocketsphinxLibrary> {
  const { libs: [ps, sb] } = await loadNative([file, file.replace('pocketsphinx', 'sphinxbase')], (message, cause) => new SttError('stt_missing', message, { cause }), MISSING);
  if (ps === undefined || sb === undefined) throw new SttError('stt_missing', MISSING);
  const parse = sb.func('void *cmd_ln_parse_r(void *inout, void *defn, int argc, const char **argv, int strict)');
  const args = ps.func('void *ps_args()');
  const init = ps.func('void *ps_init(void *config)');
  const free = ps.func('int ps_free(void *ps)');
  const setJsgf = ps.func('int ps_set_jsgf_string(void *ps, const char *name, const char *jsgf)');
  const setAllphone = ps.func('int ps_set_allphone(void *ps, const char *name, void *lm)');
  const setSearch = ps.func('int ps_set_search(void *ps, const char *name)');
  const startUtt = ps.func('int ps_start_utt(void *ps)');
  const processRaw = ps.func('int ps_process_raw(void *ps, const int16_t *data, size_t n, int no_search, int full_utt)');
  const endUtt = ps.func('int ps_end_utt(void *ps)');
  const getHyp = ps.func('const char *ps_get_hyp(void *ps, _Out_ int32_t *score)');
  const segIter = ps.func('void *ps_seg_iter(void *ps)');
  const segNext = ps.func('void *ps_seg_next(void *seg)');
  const segWord = ps.func('const char *ps_seg_word(void *seg)');
  const segFrames = ps.func('void ps_seg_frames(void *seg, _Out_ int *sf, _Out_ int *ef)');
  const segProb = ps.func('int32_t ps_seg_prob(void *seg, _Out_ int32_t *ascr, _Out_ int32_t *lscr, _Out_ int32_t *lback)');
  return {
    init: (argv) => {
      const config: unknown = parse(null, args(), argv.length, argv, 1);
      return config === null ? null : (init(config) as unknown);
    },
    free: (decoder) => void free(decoder),
    setJsgf: (decoder, name, jsgf) => setJsgf(decoder, name, jsgf) as number,
    setAllphone: (decoder, name) => setAllphone(decoder, name, null) as number,
    setSearch: (decoder, name) => setSearch(decoder, name) as number,
    startUtt: (decoder) => startUtt(decoder) as number,
    processRaw: (decoder, samples, noSearch = false) => processRaw(decoder, samples, samples.length, noSearch ? 1 : 0, 0) as number,
    endUtt: (decoder) => endUtt(decoder) as number,
    hyp: (decoder) => getHyp(decoder, [0]) as string | null,
    pathScore: (decoder) => {
      const out = [0];
      getHyp(decoder, out);
      return out[0] ?? 0;
    },
    segments: (decoder) => {
      const out: Segment[] = [];
      for (let seg: unknown = segIter(decoder); seg !== null; seg = segNext(seg)) {
        const sf = [0];
        const ef = [0];
        const ascr = [0];
        segFrames(seg, sf, ef);
        segProb(seg, ascr, [0], [0]);
        out.push({ word: segWord(seg) as string, startFrame: sf[0] ?? 0, endFrame: ef[0] ?? 0, acoustic: ascr[0] ?? 0 });
      }
      return out;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The engine

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

/** Resamples a stream by `factor` (linear interpolation, state carried across blocks): the
 * audio played `factor` times as fast, pitch and tempo together. */
export class Stretch {
  #position = 0;
  #last = 0;
  constructor(readonly factor: number) {}

  push(block: Int16Array): Int16Array {
    const out: number[] = [];
    // Positions are relative to this block, where index -1 is the previous block's last sample.
    for (; this.#position < block.length - 1; this.#position += this.factor) {
      const k = Math.floor(this.#position);
      const a = this.#position - k;
      const left = k < 0 ? this.#last : (block[k] ?? 0);
      const right = block[k + 1] ?? 0;
      out.push(Math.round(left * (1 - a) + right * a));
    }
    this.#position -= block.length;
    this.#last = block[block.length - 1] ?? 0;
    return Int16Array.from(out);
  }
}

export function createPocketsphinx(options: PocketsphinxOptions): SpeechToText {
  const agree = options.agree ?? ((a: string, b: string) => a === b);
  let ready: Promise<{ lib: PocketsphinxLibrary; grammars: unknown[]; phones: unknown; rivals: (readonly string[])[] }> | undefined;
  /** One decode at a time: the decoders hold one utterance each. */
  let queue: Promise<unknown> = Promise.resolve();

  const prepare = () => (ready ??= (async () => {
    const model = options.model ?? `${MODEL_DIR}/en-us`;
    const dictionary = options.dictionary ?? DEFAULT_DICTIONARY;
    if (!existsSync(dictionary) || !existsSync(model)) throw new SttError('stt_missing', `pocketsphinx's English model is missing (${existsSync(model) ? dictionary : model}): apt install pocketsphinx-en-us`);
    const lib = await loadLibrary(options.library ?? 'libpocketsphinx.so.3');
    const files = grammarAndDictionary(options.wakePhrases, dictionary);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'iris-stt-'));
    try {
      const dict = path.join(dir, 'iris.dict');
      await writeFile(dict, files.dictionary);
      const common = ['-hmm', model, '-dict', dict, '-logfn', '/dev/null'];
      const grammars = [1, ...PERTURBATIONS].map(() => lib.init(common));
      // The phone loop: context-independent phones (context-dependent ones take 100× as long).
      const phones = lib.init([...common, '-allphone_ci', 'yes']);
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
    } finally {
      await rm(dir, { recursive: true, force: true }); // read at init; not needed after
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
    let stretches: Stretch[] = [];
    const feed = (samples: Int16Array) => {
      for (let i = 0; i < samples.length; i += BLOCK) {
        const block = samples.subarray(i, i + BLOCK);
        lib.processRaw(main, block);
        lib.processRaw(phones, block);
        perturbed.forEach((d, k) => lib.processRaw(d, stretches[k]?.push(block) ?? block));
      }
    };
    const begin = () => {
      decoders.forEach((d) => lib.startUtt(d));
      stretches = PERTURBATIONS.map((factor) => new Stretch(factor));
    };
    begin();
    /** `decoding`: in an utterance; `settled`: ended at a pause, `snapshot` its transcript;
     * `done`: ended or cancelled. */
    let state: 'decoding' | 'settled' | 'done' = 'decoding';
    let snapshot: { text: string; transcript: Promise<Transcript> } | undefined;
    /** Audio arrived after the settle: the snapshot is void once its scoring is over. */
    let stale = false;

    /** End the utterance in every decoder and score it. The decoders are not touched after
     * the synchronous part, but the lock is held until `end` or `cancel`. */
    const score = (): { text: string; transcript: Promise<Transcript> } => {
      decoders.forEach((d) => lib.endUtt(d));
      const text = (lib.hyp(main) ?? '').trim().toLowerCase();
      const { fit, lost } = measureFit(lib.segments(main), lib.segments(phones));
      const others = perturbed.map((d) => (lib.hyp(d) ?? '').trim().toLowerCase());
      const rest = async (): Promise<Transcript> => {
        let agreeing = 0;
        for (const other of others) if (await agree(text, other)) agreeing += 1;
        const measures: Measures = { fit, lost, agreeing, margin: Infinity };
        // The rival check costs a decode per word checked: only when the rest leaves a chance.
        if (text !== '' && confidenceOf(measures, perturbed.length) > 0) measures.margin = rivalMargin(lib, main, text, heard, rivals);
        const confidence = text === '' ? 0 : confidenceOf(measures, perturbed.length);
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
      if (was === 'decoding') decoders.forEach((d) => lib.endUtt(d));
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
      partial: () => (state === 'decoding' ? (lib.hyp(main) ?? '') : (snapshot?.text ?? '')),
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
