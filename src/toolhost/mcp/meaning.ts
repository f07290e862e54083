/**
 * Ranking by meaning: how near a remote tool's words are to a request's words in word-vector
 * space (word-vectors.ts), for the requests that share no word with their tool ("I'm freezing"
 * → set_temperature, "telly" → the TV). Every word of the request is matched to the nearest
 * word of the tool's name, description and server (soft term matching, as ColBERT's MaxSim over
 * words); similarities under a floor count nothing, the rest from 0 at the floor to 1 for the
 * same word, and rarer request words weigh more ("hoover" says more than "make"). Tried and not
 * kept: adding each request word's nearest tool words to the shared-words search (at best 80.5 %
 * of the dev requests, against 82.9 % for this), weighing a server's words less than the tool's
 * own (no better), adding the cosine of the request's and the tool's mean vectors (78–81 %),
 * all 317,000 plain words instead of 100,000 (no better), taking off each request word's mean
 * nearness to everything (hubness; no better), and a floor of 0.1–0.2 with weight 2 (82.9 %
 * within the budget, but unrelated words then reach tools: "polish the gadget" → garden). The score is
 * the weighted mean over the request's known words, 0 to 1. The tools' vocabulary (~1,000
 * words at 1,000 tools) is looked up once per index; a request costs one product of its words
 * with that vocabulary.
 */
import type { WordVectors } from './word-vectors.js';

export interface MeaningTuning {
  /** Cosine similarity under which a pair of words counts nothing (GloVe puts unrelated words at 0.1–0.4). */
  floor: number;
  /**
   * How much rarer words weigh: a word's weight is log(rank + rarityFrom), its rank by
   * frequency in the vectors' source; Infinity weighs every word alike.
   */
  rarityFrom: number;
}

/** Chosen on the dev requests only (scripts/tune-tool-rank.ts). */
export const MEANING_TUNING: MeaningTuning = { floor: 0.4, rarityFrom: 100 };

export class MeaningIndex {
  readonly #vectors: WordVectors;
  readonly #tuning: MeaningTuning;
  /** The tools' vocabulary, one unit vector per row. */
  readonly #matrix: Float32Array;
  readonly #vocabulary: number;
  /** Per tool, its words as rows of the matrix, from offsets[t] to offsets[t + 1]. */
  readonly #offsets: Int32Array;
  readonly #rows: Int32Array;

  /** `texts`: each tool's words (lower-case, stop words dropped): its name, description and server. */
  constructor(texts: readonly (readonly string[])[], vectors: WordVectors, tuning: MeaningTuning = MEANING_TUNING) {
    this.#vectors = vectors;
    this.#tuning = tuning;
    const rowOf = new Map<string, number>();
    const found: Float32Array[] = [];
    const rowFor = (word: string): number | undefined => {
      let row = rowOf.get(word);
      if (row === undefined) {
        const vector = vectors.vector(word);
        if (vector === undefined) return undefined;
        row = found.length;
        found.push(vector);
        rowOf.set(word, row);
      }
      return row;
    };
    const entries: number[][] = texts.map((words) => [...new Set(words.flatMap((word) => rowFor(word) ?? []))]);
    const dims = vectors.dimensions;
    this.#vocabulary = found.length;
    this.#matrix = new Float32Array(found.length * dims);
    found.forEach((v, row) => this.#matrix.set(v, row * dims));
    this.#offsets = new Int32Array(texts.length + 1);
    const total = entries.reduce((n, e) => n + e.length, 0);
    this.#rows = new Int32Array(total);
    let at = 0;
    entries.forEach((rows, t) => {
      this.#offsets[t] = at;
      for (const row of rows) this.#rows[at++] = row;
    });
    this.#offsets[texts.length] = at;
  }

  /** Words of the tools' texts that have a vector. */
  get vocabulary(): number {
    return this.#vocabulary;
  }

  /** Each tool's meaning score (0–1) for the request's words (lower-case, stop words dropped). */
  score(words: readonly string[]): Float32Array {
    const tools = this.#offsets.length - 1;
    const scores = new Float32Array(tools);
    const { floor, rarityFrom } = this.#tuning;
    const dims = this.#vectors.dimensions;
    const sims = new Float32Array(this.#vocabulary);
    let totalWeight = 0;
    for (const word of new Set(words)) {
      const q = this.#vectors.vector(word);
      if (q === undefined) continue;
      const weight = Number.isFinite(rarityFrom) ? Math.log((this.#vectors.rank(word) ?? 0) + rarityFrom) : 1;
      totalWeight += weight;
      for (let row = 0, base = 0; row < this.#vocabulary; row++, base += dims) {
        let dot = 0;
        for (let d = 0; d < dims; d++) dot += (this.#matrix[base + d] ?? 0) * (q[d] ?? 0);
        sims[row] = dot > floor ? (dot - floor) / (1 - floor) : 0;
      }
      for (let t = 0; t < tools; t++) {
        let best = 0;
        for (let i = this.#offsets[t] ?? 0, end = this.#offsets[t + 1] ?? 0; i < end; i++) {
          const s = sims[this.#rows[i] ?? 0] ?? 0;
          if (s > best) best = s;
        }
        scores[t] = (scores[t] ?? 0) + weight * best;
      }
    }
    if (totalWeight > 0) for (let t = 0; t < tools; t++) scores[t] = (scores[t] ?? 0) / totalWeight;
    return scores;
  }
}
