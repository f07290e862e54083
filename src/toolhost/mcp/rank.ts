/**
 * Which remote tools the person's words are about: a full-text index (MiniSearch, BM25) over
 * every enabled remote tool's name, server, description and parameters, searched before the
 * first model call so the likeliest few go to the model with their full schemas, and by
 * `get_tools_in_category`'s `query`. Words are split at `_`, `-`, `.` and camelCase, English
 * stop words dropped and the rest stemmed (Porter), so "dim the lights" finds
 * `set_brightness`'s "Dim or brighten the lights". The index is rebuilt when a tool list changes;
 * ranking 1,000 tools takes under a millisecond (scripts/bench-tool-rank.ts). Why MiniSearch:
 * on the bench's requests lunr and FlexSearch found as many tools (87–90 %), but lunr is
 * unmaintained and reads ":", "~", "-" in spoken text as query syntax, and FlexSearch gives
 * ranks, not the relevance scores the cut-off below and `iris tools search` use.
 */
import MiniSearch from 'minisearch';
import { stemmer } from 'stemmer';
import { eng } from 'stopword';
import type { RemoteTool } from './client.js';

/** A remote tool the words matched, best first. */
export interface RankedTool {
  server: string;
  tool: RemoteTool;
  /** "server.tool", as `execute_tool` and the model know it. */
  path: string;
  /** BM25 score (higher is better); comparable only within one search. */
  score: number;
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
  const words = text.replace(/([a-z])([A-Z])/g, '$1 $2').split(/[^\p{L}\p{N}]+/u).filter((w) => w !== '');
  // "Wi-Fi", "to-do", "e-mail" are also said as one word.
  const joined = text.match(/\p{L}+(?:-\p{L}+)+/gu)?.map((w) => w.replace(/-/g, '')) ?? [];
  return [...words, ...joined];
}

/** A word as the index keeps it: stop words dropped, the rest stemmed. */
function term(word: string): string | null {
  const lower = word.toLowerCase();
  return STOP.has(lower) ? null : stemmer(lower);
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
}

const TUNING: RankTuning = { boost: BOOST, prefixFrom: 4, fuzzyFrom: 6, minShare: MIN_SHARE };

export class ToolIndex {
  readonly #entries: { server: string; tool: RemoteTool }[] = [];
  readonly #search: MiniSearch<Document>;
  readonly #minShare: number;

  constructor(servers: readonly IndexedServer[], tuning: RankTuning = TUNING) {
    this.#minShare = tuning.minShare;
    this.#search = new MiniSearch<Document>({
      fields: ['name', 'server', 'description', 'parameters'],
      tokenize,
      processTerm: term,
      searchOptions: {
        boost: tuning.boost,
        combineWith: 'OR',
        prefix: (t) => t.length >= tuning.prefixFrom,
        fuzzy: (t) => (t.length >= tuning.fuzzyFrom ? 0.2 : false),
      },
    });
    const documents: Document[] = [];
    for (const server of servers) {
      const about = `${server.name} ${server.description ?? ''}`;
      for (const tool of server.tools) {
        documents.push({ id: this.#entries.length, name: tool.name, server: about, description: tool.description ?? '', parameters: parameterText(tool) });
        this.#entries.push({ server: server.name, tool });
      }
    }
    this.#search.addAll(documents);
  }

  get size(): number {
    return this.#entries.length;
  }

  /** The tools best matching `words`, at most `limit`, dropping matches far below the best. */
  rank(words: string, limit: number): RankedTool[] {
    if (limit <= 0 || words.trim() === '') return [];
    const hits = this.#search.search(words);
    const best = hits[0]?.score ?? 0;
    return hits
      .filter((hit) => hit.score >= best * this.#minShare)
      .slice(0, limit)
      .flatMap((hit) => {
        const entry = this.#entries[hit.id as number];
        return entry === undefined ? [] : [{ ...entry, path: `${entry.server}.${entry.tool.name}`, score: Math.round(hit.score * 100) / 100 }];
      });
  }
}
