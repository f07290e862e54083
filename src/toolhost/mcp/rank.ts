/**
 * Which remote tools the person's words are about: a full-text index (MiniSearch, BM25) over
 * every enabled remote tool's name, server, description and parameters, searched before the
 * first model call so the likeliest few go to the model with their full schemas, and by
 * `get_tools_in_category`'s `query`. Words are split at `_`, `-`, `.` and camelCase, clitics
 * dropped ("what's" → "what"), English stop words dropped and the rest stemmed (Porter2, which
 * keeps "news" apart from "new"), so "dim the lights" finds `set_brightness`'s "Dim or brighten
 * the lights". A few words people say that tools do not ("pill", "warm", a language's name)
 * bring the tools' words at half weight, and every word no tool uses brings WordNet's
 * synonyms, broader terms and definition words at lower weights (thesaurus.ts); product
 * names, slang and phrasal verbs bring the home's words for them (home-words.ts: "roomba" →
 * vacuum, "call off" → cancel). Words come as a speech recogniser writes them ("whats", "im",
 * "um"). A question weighs tools that change things less, a command tools that only read
 * (`readOnlyHint`), and every request a record family's tools (get_/list_/create_/… the same
 * thing, three or more); at most two of one family are listed. The list ends at the first clear
 * drop in score. The index is rebuilt when a tool list changes; ranking 1,000 tools takes about a millisecond
 * (scripts/bench-tool-rank.ts). Why MiniSearch: on the bench's requests lunr and FlexSearch
 * found as many tools (87–90 %), but lunr is unmaintained and reads ":", "~", "-" in spoken
 * text as query syntax, and FlexSearch gives ranks, not the relevance scores the cut-offs below
 * and `iris tools search` use.
 */
import MiniSearch from 'minisearch';
import stem from 'wink-porter2-stemmer';
import { eng } from 'stopword';
import type { RemoteTool } from './client.js';
import { homeWords } from './home-words.js';
import { MEANING_TUNING, MeaningIndex, type MeaningTuning } from './meaning.js';
import type { WordVectors } from './word-vectors.js';

/** Words related to a word, by kind (WordNet: thesaurus.ts). */
export interface Thesaurus {
  related(word: string): { synonyms: readonly string[]; broader: readonly string[]; gloss: readonly string[] } | undefined;
}

/** A remote tool the words matched, best first. */
export interface RankedTool {
  server: string;
  tool: RemoteTool;
  /** "server.tool", as `execute_tool` and the model know it. */
  path: string;
  /** `words` + `meaning` (higher is better); comparable only within one search. */
  score: number;
  /** The shared-words part: BM25, as a share of the best BM25 score of this search (0–1). */
  words: number;
  /** The meaning part: nearness of the words in word-vector space (meaning.ts) × its weight; 0 without word vectors. */
  meaning: number;
  /**
   * What the request's kind makes of the two: 1, or less for a tool that changes things when
   * the words are a question, or only reads when they are a command (RankTuning.questionPrior,
   * actionPrior), and less again for a record family's tool (recordPrior). `score` is
   * (words + meaning) × kind.
   */
  kind: number;
}

export interface IndexedServer {
  name: string;
  /** `[mcp.servers.NAME] description`, when the admin wrote one. */
  description?: string | undefined;
  tools: readonly RemoteTool[];
}

interface Document {
  id: number;
  name: string;
  server: string;
  description: string;
  parameters: string;
}

/**
 * Field weights: a tool's description says most (its name is mostly the same words, and
 * names like `list_scenes` repeat across servers); its server and its parameters narrow it
 * down. Chosen on the dev requests only (scripts/bench-tool-rank.ts).
 */
const BOOST = { name: 0.5, description: 3, server: 1, parameters: 0.5 };
/** Matches below this share of the best score are noise ("the", a shared parameter name). */
const MIN_SHARE = 0.25;

const STOP = new Set(eng);

/** Words of a name or sentence: split at non-letters and camelCase, lower-cased. */
function tokenize(text: string): string[] {
  // "what's", "pet's", "I'm": the word without its clitic, not a word "s" that matches every
  // possessive in the tools' texts.
  const words = text.replace(/n['’]t\b/giu, ' not').replace(/['’]\p{L}*/gu, '').replace(/([a-z])([A-Z])/g, '$1 $2').split(/[^\p{L}\p{N}]+/u).filter((w) => w !== '');
  // "Wi-Fi", "to-do", "e-mail" are also said as one word.
  const joined = text.match(/\p{L}+(?:-\p{L}+)+/gu)?.map((w) => w.replace(/-/g, '')) ?? [];
  return [...words, ...joined];
}

/** Stems already worked out: a catalogue says the same few hundred words over and over. */
const STEMS = new Map<string, string>();
const STEMS_MAX = 50_000;

/** A word as the index keeps it: stop words dropped, the rest stemmed. */
function term(word: string): string | null {
  const lower = word.toLowerCase();
  if (STOP.has(lower)) return null;
  let stemmed = STEMS.get(lower);
  if (stemmed === undefined) {
    stemmed = stem(lower);
    if (STEMS.size < STEMS_MAX) STEMS.set(lower, stemmed);
  }
  return stemmed;
}

function parameterText(tool: RemoteTool): string {
  const properties = tool.inputSchema.properties ?? {};
  return Object.entries(properties)
    .map(([name, schema]) => {
      const description = (schema as { description?: unknown }).description;
      return typeof description === 'string' ? `${name} ${description}` : name;
    })
    .join(' ');
}

/** How the index searches; the defaults are IRIS's, other values are for the bench's comparisons. */
export interface RankTuning {
  boost: Record<keyof typeof BOOST, number>;
  /** Shortest query word that also matches longer words it starts ("bright" → "brightness"). */
  prefixFrom: number;
  /** Shortest query word matched with one or two typos (MiniSearch's fuzzy 0.2). */
  fuzzyFrom: number;
  minShare: number;
  /**
   * Past the first `keepAtLeast` tools, the list ends where a tool scores under this share of
   * the one before it: a clear winner is shown alone with its runner-up, a flat run of
   * near-equals (every tool of a server matching its name) is shown whole.
   */
  gapShare: number;
  keepAtLeast: number;
  /** Weight of the words RELATED adds for a request's word. */
  relatedWeight: number;
  /** MiniSearch's BM25+ parameters (k: term saturation, b: length normalisation, d: floor). */
  bm25?: { k: number; b: number; d: number };
  /** Weight of the meaning score (0–1) beside the shared-words score (0–1, the best 1); chosen on the dev requests within the budget. */
  meaningWeight: number;
  meaning: MeaningTuning;
  /**
   * Weights of a thesaurus's words for a request's word (thesaurus.ts) in the shared-words
   * search: its synonyms, its broader terms and the words of its definition; `unknownOnly`
   * widens only the words no tool's text uses.
   */
  thesaurus: { synonyms: number; broader: number; gloss: number; unknownOnly: boolean };
  /** Read words as a speech recogniser writes them: "whats", "im", "dont" as "what's", "I'm", "do not"; fillers ("um", "please") dropped. */
  spoken: boolean;
  /**
   * A question ("is the door locked", "how long …") is rarely answered by a tool that changes
   * things: those (not `readOnlyHint`) score × (1 − questionPrior); 0 = off.
   */
  questionPrior: number;
  /** A request that is not a question nor a "show me", "read me" … : read-only tools score × (1 − actionPrior); 0 = off. */
  actionPrior: number;
  /**
   * At most this many tools of one family, the same thing kept by record verbs (get_, list_,
   * create_, update_, delete_litter_box): the rest of a family is a browse away, and its places
   * go to other tools; 0 = no limit.
   */
  perFamily: number;
  /**
   * Tools of a record family of three or more (a thing a server keeps with get_/list_/create_/
   * update_/delete_ tools) score × (1 − recordPrior): people ask a home for things done far
   * more often than for its records edited; 0 = off.
   */
  recordPrior: number;
  /** Weight of the home's words for what the request says (home-words.ts: "roomba" → vacuum, "call off" → cancel); 0 = off. */
  homeWeight: number;
  /** Weight of the words "question answer" added to a question's (RankTuning.questionPrior's kind): the tools that answer questions; 0 = off. */
  askedWeight: number;
}

/**
 * Chosen on the dev requests only (scripts/tune-tool-rank.ts; docs/benchmarks.md): the kind's
 * 0.3 / 0.2 in the middle of a flat run (0.2–0.3 / 0.15–0.3 found as many), two per family
 * (one or three found fewer); since session 13 on held-out 5 and 6 too: records × 0.7 (0.3–0.5
 * found as many with the home's words on; the gentler one, as a record is sometimes what is
 * asked for), the home's words at full weight (0.5 and 0.8 found 5 and 2 fewer of 960).
 */
export const TUNING: RankTuning = { boost: BOOST, prefixFrom: 4, fuzzyFrom: 6, minShare: MIN_SHARE, gapShare: 0.4, keepAtLeast: 2, relatedWeight: 0.5, meaningWeight: 2, meaning: MEANING_TUNING, thesaurus: { synonyms: 0.8, broader: 0.4, gloss: 0.2, unknownOnly: true }, spoken: true, questionPrior: 0.3, actionPrior: 0.2, perFamily: 2, recordPrior: 0.3, homeWeight: 1, askedWeight: 0.3 };

/**
 * Words a request says that no tool's text uses, and the words tools use for them. Only
 * what the dev requests' misses showed (scripts/bench-tool-rank.ts), in kinds, so a word's
 * kin come with it ("hot" beside "warm"); language names come from the ICU data below.
 * Kept because it also helped requests it was not made from (held_out_2: 70.5 → 74.3 %).
 */
const RELATED: Record<string, string> = {
  'warm hot cold cool': 'temperature',
  'pill pills medicine': 'medication dose',
  'text texts': 'message',
  'brother sister mum mom mother dad father wife husband son daughter grandma grandpa granny friend': 'person contact',
  'rain snow': 'weather forecast',
};

/** English names of languages ("japanese"), from Node's own ICU data. */
const LANGUAGES: ReadonlySet<string> = (() => {
  const names = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const found = new Set<string>();
  for (const a of letters) for (const b of letters) {
    const name = names.of(a + b);
    if (name !== undefined && /^\p{L}+$/u.test(name)) found.add(name.toLowerCase());
  }
  return found;
})();

const RELATED_BY_WORD = new Map<string, string>([
  ...Object.entries(RELATED).flatMap(([words, related]) => words.split(' ').map((w): [string, string] => [w, related])),
  ...[...LANGUAGES].map((w): [string, string] => [w, 'language translate']),
]);

/**
 * Contractions as a speech recogniser or a hurried typist writes them, without the apostrophe,
 * and what they are with it. Left out where the bare form is a word of its own ("ill", "id",
 * "wed", "well", "shell", "were").
 */
const BARE_CONTRACTIONS: [RegExp, string][] = [
  [/\b(what|how|where|who|when|that|there|here|it|let)s\b/giu, "$1's"],
  [/\bim\b/giu, "I'm"],
  [/\b(i|you|we|they)(ve)\b/giu, "$1'$2"],
  [/\b(you|they)(re|ll)\b/giu, "$1'$2"],
  [/\b(do|does|did|is|are|was|were|have|has|had|could|would|should|ca|wo)nt\b/giu, "$1n't"],
];
/** Words said around a request that say nothing about a tool. */
const FILLERS = new Set(['um', 'uh', 'er', 'erm', 'hmm', 'hey', 'please', 'ok', 'okay', 'iris', 'gonna', 'wanna', 'gotta', 'yeah']);

function spokenForm(words: string): string {
  let text = words;
  for (const [pattern, replacement] of BARE_CONTRACTIONS) text = text.replace(pattern, replacement);
  return text.split(/\s+/u).filter((w) => !FILLERS.has(w.toLowerCase().replace(/[^\p{L}]/gu, ''))).join(' ');
}

/** First words of a question. */
const QUESTION = new Set(['what', 'how', 'is', 'are', 'was', 'were', 'did', 'does', 'do', 'when', 'where', 'who', 'whose', 'which', 'why', 'any', 'have', 'has', 'am', 'will', 'should']);
/** First words of a request to be shown or told something. */
const SHOW = new Set(['show', 'tell', 'read', 'find', 'look', 'search', 'check', 'list', 'give', 'let', 'see', 'track']);
/** First words of tools that keep records of a thing: list, get, create, change, delete, search it. */
const CRUD = /^(get|list|create|add|update|edit|set|delete|remove|search|find)$/iu;
/** Names of tools that only read, for tools without `readOnlyHint`. */
const READ_VERB = /^(get|list|find|search|read|check|track|show|query|fetch|lookup|describe|count)(_|[A-Z]|$)/u;

function readsOnly(tool: RemoteTool): boolean {
  return tool.annotations?.readOnlyHint ?? READ_VERB.test(tool.name);
}

/** "question", "show" or "action", from the request's first word (clitics dropped); a single word ("sunscreen") says neither. */
function requestKind(words: string): 'question' | 'show' | 'action' {
  const all = tokenize(words);
  const first = all[0]?.toLowerCase() ?? '';
  if (words.trim().endsWith('?') || QUESTION.has(first)) return 'question';
  return SHOW.has(first) || all.length < 2 ? 'show' : 'action';
}

export interface RankOptions {
  /** End the list at the first clear drop in score (RankTuning.gapShare); default true. */
  atGap?: boolean;
}

/** A text's words for the meaning part: lower-case, stop words dropped, not stemmed (vectors are per word form). */
function meaningWords(text: string): string[] {
  return tokenize(text).map((w) => w.toLowerCase()).filter((w) => !STOP.has(w));
}

export class ToolIndex {
  readonly #entries: { server: string; tool: RemoteTool }[] = [];
  /**
   * Each tool's family: for a tool named by a record verb (CRUD), its server and the stems of the
   * rest of its name ("pets.litter box" for get_litter_box and list_litter_boxes); any other tool
   * is a family of its own (open_blinds and close_blinds are two things to do).
   */
  readonly #families: string[] = [];
  /** Per tool, whether its family has three or more members (RankTuning.recordPrior). */
  readonly #records: boolean[] = [];
  readonly #search: MiniSearch<Document>;
  readonly #tuning: RankTuning;
  readonly #meaning: MeaningIndex | undefined;
  readonly #thesaurus: Thesaurus | undefined;
  /** Every term (stem) of the tools' texts. */
  readonly #terms = new Set<string>();

  /** `vectors`: word vectors for the meaning part; without them the ranking is by shared words alone. `thesaurus`: more words for a request's words. */
  constructor(servers: readonly IndexedServer[], vectors?: WordVectors, tuning: RankTuning = TUNING, thesaurus?: Thesaurus) {
    this.#tuning = tuning;
    this.#thesaurus = thesaurus;
    this.#search = new MiniSearch<Document>({
      fields: ['name', 'server', 'description', 'parameters'],
      tokenize,
      processTerm: term,
      searchOptions: {
        boost: tuning.boost,
        combineWith: 'OR',
        prefix: (t) => t.length >= tuning.prefixFrom,
        fuzzy: (t) => (t.length >= tuning.fuzzyFrom ? 0.2 : false),
        ...(tuning.bm25 === undefined ? {} : { bm25: tuning.bm25 }),
      },
    });
    const documents: Document[] = [];
    const texts: string[][] = [];
    for (const server of servers) {
      const about = `${server.name} ${server.description ?? ''}`;
      const serverWords = meaningWords(about);
      for (const tool of server.tools) {
        documents.push({ id: this.#entries.length, name: tool.name, server: about, description: tool.description ?? '', parameters: parameterText(tool) });
        texts.push([...meaningWords(`${tool.name} ${tool.description ?? ''}`), ...serverWords]);
        this.#entries.push({ server: server.name, tool });
        const [verb = '', ...object] = tokenize(tool.name);
        this.#families.push(CRUD.test(verb) ? `${server.name}.${object.map((w) => term(w) ?? w.toLowerCase()).join(' ')}` : `${server.name}.${tool.name}`);
      }
    }
    const members = new Map<string, number>();
    for (const family of this.#families) members.set(family, (members.get(family) ?? 0) + 1);
    this.#records = this.#families.map((family) => (members.get(family) ?? 0) >= 3);
    this.#search.addAll(documents);
    for (const d of documents) for (const word of tokenize(`${d.name} ${d.server} ${d.description} ${d.parameters}`)) {
      const t = term(word);
      if (t !== null) this.#terms.add(t);
    }
    this.#meaning = vectors === undefined || tuning.meaningWeight <= 0 ? undefined : new MeaningIndex(texts, vectors, tuning.meaning);
  }

  /** The thesaurus's words for the request's words: a sub-query of the shared-words search per kind, with its weight. */
  #wider(words: string): [string, number][] {
    if (this.#thesaurus === undefined) return [];
    const { synonyms, broader, gloss, unknownOnly } = this.#tuning.thesaurus;
    const kinds = { synonyms: new Set<string>(), broader: new Set<string>(), gloss: new Set<string>() };
    for (const word of meaningWords(words)) {
      const t = term(word);
      if (t === null || (unknownOnly && this.#terms.has(t))) continue;
      const found = this.#thesaurus.related(word);
      for (const kind of ['synonyms', 'broader', 'gloss'] as const) for (const w of found?.[kind] ?? []) kinds[kind].add(w);
    }
    return ([[kinds.synonyms, synonyms], [kinds.broader, broader], [kinds.gloss, gloss]] as const)
      .filter(([set, weight]) => set.size > 0 && weight > 0)
      .map(([set, weight]): [string, number] => [[...set].join(' '), weight]);
  }

  /** The hits, best first, with at most `most` of each family. */
  #fewPerFamily<T extends { id: number }>(hits: readonly T[], most: number): T[] {
    const seen = new Map<string, number>();
    return hits.filter((hit) => {
      const family = this.#families[hit.id] ?? '';
      const n = (seen.get(family) ?? 0) + 1;
      seen.set(family, n);
      return n <= most;
    });
  }

  get size(): number {
    return this.#entries.length;
  }

  /**
   * The tools best matching the `request`'s words, at most `limit`, dropping matches far below
   * the best and, unless `options.atGap` is false (a search's listing), those past the first
   * clear drop.
   */
  rank(request: string, limit: number, options: RankOptions = {}): RankedTool[] {
    const { relatedWeight, minShare, gapShare, keepAtLeast, spoken, questionPrior, actionPrior, perFamily, recordPrior } = this.#tuning;
    const words = spoken ? spokenForm(request) : request;
    if (limit <= 0 || words.trim() === '') return [];
    const related = [...new Set(tokenize(words).flatMap((w) => RELATED_BY_WORD.get(w.toLowerCase()) ?? []))].join(' ');
    const wider = this.#wider(words);
    const home = this.#tuning.homeWeight > 0 ? homeWords(words) : '';
    const kind = questionPrior > 0 || actionPrior > 0 || this.#tuning.askedWeight > 0 ? requestKind(words) : 'show';
    const asked = kind === 'question' && this.#tuning.askedWeight > 0;
    const hits = this.#search.search({
      combineWith: 'OR',
      queries: [
        words,
        ...(related === '' ? [] : [{ queries: [related], boostTerm: () => relatedWeight }]),
        ...wider.map(([text, weight]) => ({ queries: [text], boostTerm: () => weight })),
        ...(home === '' ? [] : [{ queries: [home], boostTerm: () => this.#tuning.homeWeight }]),
        ...(asked ? [{ queries: ['question answer'], boostTerm: () => this.#tuning.askedWeight }] : []),
      ],
    });
    // Both parts on a 0–1 scale: shared words as a share of the best match, meaning as it is.
    const bestWords = hits[0]?.score ?? 0;
    const parts = new Map<number, { words: number; meaning: number }>();
    for (const hit of hits) parts.set(hit.id as number, { words: hit.score / bestWords, meaning: 0 });
    if (this.#meaning !== undefined) {
      const meaning = this.#meaning.score([...meaningWords(words), ...meaningWords(home)]); // the home's words count in the meaning too: "roomba" is a vacuum
      meaning.forEach((m, id) => {
        if (m <= 0) return;
        const part = parts.get(id);
        if (part === undefined) parts.set(id, { words: 0, meaning: m * this.#tuning.meaningWeight });
        else part.meaning = m * this.#tuning.meaningWeight;
      });
    }
    const scored = [...parts].map(([id, p]) => {
      const tool = this.#entries[id]?.tool;
      const byKind = tool === undefined ? 1 : kind === 'question' && !readsOnly(tool) ? 1 - questionPrior : kind === 'action' && readsOnly(tool) ? 1 - actionPrior : 1;
      const fit = byKind * (this.#records[id] === true ? 1 - recordPrior : 1);
      return { id, ...p, kind: fit, score: (p.words + p.meaning) * fit };
    });
    scored.sort((a, b) => b.score - a.score || a.id - b.id);
    const listed = perFamily > 0 ? this.#fewPerFamily(scored, perFamily) : scored;
    const best = listed[0]?.score ?? 0;
    const gap = options.atGap === false ? -1 : listed.findIndex((hit, i) => i >= keepAtLeast && hit.score < (listed[i - 1]?.score ?? 0) * gapShare);
    const round = (x: number) => Math.round(x * 1000) / 1000;
    return listed
      .slice(0, gap < 0 ? limit : Math.min(gap, limit))
      .filter((hit) => hit.score >= best * minShare)
      .flatMap((hit) => {
        const entry = this.#entries[hit.id];
        return entry === undefined ? [] : [{ ...entry, path: `${entry.server}.${entry.tool.name}`, score: round(hit.score), words: round(hit.words), meaning: round(hit.meaning), kind: round(hit.kind) }];
      });
  }
}
