/**
 * libpocketsphinx.so.3 (apt libpocketsphinx3, 5prealpha) through koffi: the functions IRIS
 * calls, declared once per process and shared by every recogniser and stop-word spotter.
 */
import { loadNative } from './ffi.js';
import type { Segment } from './pocketsphinx-confidence.js';
import { SttError } from './stt.js';

const MISSING = 'pocketsphinx is not installed (apt install libpocketsphinx3 pocketsphinx-en-us)';

export interface PocketsphinxLibrary {
  /** A decoder for these command-line arguments, or null when pocketsphinx refuses them. */
  init(argv: string[]): unknown;
  free(decoder: unknown): void;
  setJsgf(decoder: unknown, name: string, jsgf: string): number;
  setAllphone(decoder: unknown, name: string): number;
  setSearch(decoder: unknown, name: string): number;
  startUtt(decoder: unknown): number;
  /** Decode `samples`; with `noSearch` the frames wait, and are searched at `endUtt`. */
  processRaw(decoder: unknown, samples: Int16Array, noSearch?: boolean, fullUtt?: boolean): number;
  endUtt(decoder: unknown): number;
  hyp(decoder: unknown): string | null;
  /** The best path's score (log base 1.0001, acoustic and grammar weights together). */
  pathScore(decoder: unknown): number;
  segments(decoder: unknown): Segment[];
  /** The frame the search has reached (`Segment` frames count on from it; silence dropped). */
  frames(decoder: unknown): number;
}

/** The binding per library file: koffi declares each function once per process. */
const loaded = new Map<string, Promise<PocketsphinxLibrary>>();

/**
 * `samples` decoded as one utterance under `search` on `decoder`: the words (or phones) placed,
 * none when the search found no path. `whole` hands pocketsphinx the utterance at once (`-cmn
 * current` needs it).
 */
export function decodeUtterance(lib: PocketsphinxLibrary, decoder: unknown, search: string, samples: Int16Array, whole = false): Segment[] {
  lib.setSearch(decoder, search);
  lib.startUtt(decoder);
  lib.processRaw(decoder, samples, false, whole);
  lib.endUtt(decoder);
  return lib.hyp(decoder) === null ? [] : lib.segments(decoder);
}

export function loadLibrary(file = 'libpocketsphinx.so.3'): Promise<PocketsphinxLibrary> {
  let library = loaded.get(file);
  if (library === undefined) {
    library = bind(file);
    loaded.set(file, library);
    library.catch(() => loaded.delete(file)); // installed later: the next call tries again
  }
  return library;
}

async function bind(file: string): Promise<PocketsphinxLibrary> {
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
  const nFrames = ps.func('int ps_get_n_frames(void *ps)');
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
    processRaw: (decoder, samples, noSearch = false, fullUtt = false) => processRaw(decoder, samples, samples.length, noSearch ? 1 : 0, fullUtt ? 1 : 0) as number,
    endUtt: (decoder) => endUtt(decoder) as number,
    hyp: (decoder) => getHyp(decoder, [0]) as string | null,
    pathScore: (decoder) => {
      const out = [0];
      getHyp(decoder, out);
      return out[0] ?? 0;
    },
    frames: (decoder) => nFrames(decoder) as number,
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

