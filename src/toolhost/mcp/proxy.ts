/**
 * The lazy MCP proxy: the model sees two meta-tools instead of every remote tool's schema
 * (plus the few `rank` finds for the person's words, which the conversation shows in full).
 * `get_tools_in_category` browses servers → tools → one tool's full input schema (the part the
 * existing lazy-mcp proxies never show, so small models had to guess arguments);
 * `execute_tool` validates the arguments against that schema, answers a bad call with a repair
 * hint, and forwards the rest. Which calls wait for the user's yes is the tool host's policy;
 * `execute_tool`'s `confirm` tells it, per remote tool and server.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { errorResult, textResult, type AskPerson, type CallToolResult, type Confirmation, type NativeTool, type ToolDefinition } from '../api.js';
import { foldName as fold, parseArguments } from '../arguments.js';
import { askToRun, explain } from '../host.js';
import type { McpServerConfig } from '../../config/schema.js';
import type { RemoteTool } from './client.js';
import { ToolIndex, TUNING, type RankedTool, type RankOptions, type Thesaurus } from './rank.js';
import type { WordVectors } from './word-vectors.js';
import type { McpServers } from './servers.js';

interface Entry {
  server: string;
  config: McpServerConfig;
  tool: RemoteTool;
}

/** Longest one-line description in a category listing (characters). */
const SUMMARY_CHARS = 90;
/**
 * A tool's input schema larger than this (bytes of JSON) is not compiled: the server checks the
 * arguments itself. ajv compiles a 20,000-choice enum in 2.4 s on the daemon's one thread; real
 * schemas are a few KiB.
 */
const COMPILED_SCHEMA_BYTES = 64 * 1024;
/** Tools a `query` browse returns: a few more than a first request shows. */
const QUERY_RESULTS = 8;
/** Categories named in the meta-tool's description; past this it counts them (its tokens stay flat at 50 servers). */
const NAMED_CATEGORIES = 12;

export class McpProxy {
  readonly #servers: McpServers;
  readonly #validators = new Map<string, ValidateFunction>();
  #ajv = new Ajv({ allErrors: true, strict: false });
  #ajv2020 = new Ajv2020({ allErrors: true, strict: false });
  /** The search index over every visible remote tool; built at first use after a change. */
  #index: ToolIndex | undefined;

  readonly #wordVectors: (() => WordVectors | undefined) | undefined;
  readonly #thesaurus: (() => Thesaurus | undefined) | undefined;

  /** `wordVectors`, `thesaurus`: asked at each index build (once there are tools), for the ranking's meaning part and wider words (rank.ts). */
  constructor(servers: McpServers, wordVectors?: () => WordVectors | undefined, thesaurus?: () => Thesaurus | undefined) {
    this.#servers = servers;
    this.#wordVectors = wordVectors;
    this.#thesaurus = thesaurus;
  }

  /** Forget compiled schemas and the search index: a server's tool list changed. */
  invalidate(): void {
    this.#validators.clear();
    // Fresh ajv instances: one keeps every function it compiled for as long as it lives, and
    // the tools are compiled again from the new lists (a server could list new schemas forever).
    this.#ajv = new Ajv({ allErrors: true, strict: false });
    this.#ajv2020 = new Ajv2020({ allErrors: true, strict: false });
    this.#index = undefined;
  }

  /**
   * The remote tools best matching the person's words, best first, at most `limit`: from the
   * tool lists known now (cached or live), so it never waits for a server to start.
   */
  rank(words: string, limit: number, options?: RankOptions): RankedTool[] {
    if (this.#index === undefined) {
      const catalogue = this.#servers.catalogue().map((s) => ({ name: s.name, description: s.config.description, tools: s.tools }));
      // The word vectors and the thesaurus are opened only once there are tools to rank.
      const any = catalogue.some((s) => s.tools.length > 0);
      this.#index = new ToolIndex(catalogue, any ? this.#wordVectors?.() : undefined, TUNING, any ? this.#thesaurus?.() : undefined);
    }
    return this.#index.rank(words, limit, options);
  }


  /** The two meta-tools, for the tool host. */
  metaTools(): NativeTool[] {
    const categories = this.#servers.catalogue().map((s) => s.name);
    const named = categories.length <= NAMED_CATEGORIES ? categories.join(', ') || 'none' : `${categories.length}, listed by path ""`;
    return [
      {
        name: 'get_tools_in_category',
        description: `Browse more tools. path "" lists categories, "category" its tools, "category.tool" that tool's arguments; or query "words" finds tools in all categories. Categories: ${named}.`,
        inputSchema: { type: 'object', properties: { path: { type: 'string' }, query: { type: 'string' } } },
        annotations: { readOnlyHint: true },
        run: (args) => (typeof args.query === 'string' && args.query.trim() !== '' ? this.search(args.query) : this.browse(typeof args.path === 'string' ? args.path : '')),
      },
      {
        name: 'execute_tool',
        description: 'Run a tool found with get_tools_in_category, by its path "category.tool".',
        inputSchema: {
          type: 'object',
          properties: { tool_path: { type: 'string' }, arguments: { type: ['object', 'string'] } },
          required: ['tool_path'],
        },
        run: (args, { signal, ask }) => this.execute(args.tool_path as string, args.arguments, signal, ask),
        confirm: (args) => this.confirmation(args.tool_path as string, args.arguments),
      },
    ];
  }

  /** Every remote tool the model can reach through the proxy, with its server. */
  remoteTools(): { server: string; tool: RemoteTool }[] {
    return this.#servers.catalogue().flatMap((s) => s.tools.map((tool) => ({ server: s.name, tool })));
  }

  async browse(rawPath: string): Promise<CallToolResult> {
    const path = rawPath.trim().replace(/^\/+|\/+$/g, '').replace(/\//g, '.');
    await this.#load(path);
    const catalogue = this.#servers.catalogue();
    if (path === '') {
      const categories = Object.fromEntries(catalogue.map((s) => [s.name, {
        overview: s.config.description ?? overview(s.tools),
        tools: s.tools.length,
        ...(s.state === 'up' || s.state === 'starting' || s.state === 'stopped' ? {} : { state: s.state === 'needs-sign-in' ? 'needs sign-in' : 'offline' }),
      }]));
      return textResult(JSON.stringify({ categories }));
    }
    const [first, ...rest] = path.split('.');
    const server = catalogue.find((s) => fold(s.name) === fold(first ?? ''));
    if (server !== undefined && rest.length === 0) {
      const tools = this.#servers.catalogue().find((s) => s.name === server.name)?.tools ?? [];
      return textResult(JSON.stringify({
        category: server.name,
        tools: Object.fromEntries(tools.map((t) => [t.name, { description: summary(t.description), tool_path: `${server.name}.${t.name}` }])),
      }));
    }
    const entry = this.#resolve(path);
    if (typeof entry === 'string') return errorResult(entry);
    return textResult(JSON.stringify({
      tool_path: `${entry.server}.${entry.tool.name}`,
      description: entry.tool.description,
      inputSchema: compact(entry.tool.inputSchema),
      ...(needsConfirmation(entry) ? { note: 'asks the user to confirm before running' } : {}),
    }));
  }

  /**
   * What the first request shows in full, best first, at most `limit`: the remote tools the
   * previous round called (`recent` paths: "and the kitchen too" needs the same tool again),
   * then the best matches for the words.
   */
  likely(words: string, recent: readonly string[], limit: number): RankedTool[] {
    if (limit <= 0) return [];
    const again = recent.flatMap((path) => {
      const entry = this.#resolve(path);
      return typeof entry === 'string' ? [] : [{ server: entry.server, tool: entry.tool, path: `${entry.server}.${entry.tool.name}`, score: 0, words: 0, meaning: 0, kind: 1 }];
    });
    const ranked = this.rank(words, limit).filter((r) => !again.some((a) => a.path === r.path));
    return [...again, ...ranked].slice(0, limit);
  }

  /**
   * The tools best matching `query` across every category: path and one line each, and the
   * category names, so a model whose tool is not among them opens its category next instead
   * of listing the root first.
   */
  search(query: string): CallToolResult {
    const found = this.rank(query, QUERY_RESULTS, { atGap: false });
    const categories = this.#servers.catalogue().map((s) => s.name);
    return textResult(JSON.stringify({ query, tools: Object.fromEntries(found.map((r) => [r.path, summary(r.tool.description ?? '')])), categories }));
  }

  async execute(toolPath: string, rawArgs: unknown, signal?: AbortSignal, ask?: AskPerson): Promise<CallToolResult> {
    const call = await this.#prepare(toolPath, rawArgs);
    if (typeof call === 'string') {
      // A server waiting for a sign-in answers for its tools, listed or not: how to sign in.
      const waiting = this.#servers.status().find((s) => s.state === 'needs-sign-in' && fold(s.name) === fold(toolPath.split('.')[0] ?? ''));
      return waiting === undefined ? errorResult(call) : this.#servers.call(waiting.name, '', {}, signal);
    }
    return this.#servers.call(call.entry.server, call.entry.tool.name, call.args, signal, ask);
  }

  /**
   * What to ask before this call runs, for the tool host: nothing for a call that will fail
   * anyway (its error is the answer) or that the server's `confirm` lets through.
   */
  async confirmation(toolPath: string, rawArgs: unknown): Promise<Confirmation | undefined> {
    const call = await this.#prepare(toolPath, rawArgs);
    if (typeof call === 'string' || !needsConfirmation(call.entry)) return undefined;
    const { server, tool } = call.entry;
    return { question: askToRun(tool.name, call.args, server), label: `${server}.${tool.name}` };
  }

  /** The remote tool a path names and its validated arguments, or what is wrong with the call. */
  async #prepare(toolPath: string, rawArgs: unknown): Promise<{ entry: Entry; args: Record<string, unknown> } | string> {
    await this.#load(toolPath);
    const entry = this.#resolve(toolPath);
    if (typeof entry === 'string') return entry;
    const args = parseArguments(rawArgs);
    if (!args.ok) return `"arguments" must be a JSON object matching the tool's inputSchema: ${args.error}`;
    const validate = this.#validator(entry);
    if (!validate(args.value)) {
      return `Invalid arguments for ${entry.server}.${entry.tool.name}: ${explain(validate.errors ?? [])}. `
        + `Its inputSchema: ${JSON.stringify(compact(entry.tool.inputSchema))}`;
    }
    return { entry, args: args.value };
  }

  /** Servers start lazily: connect the one a path names (or all, for a bare tool name) if it has no tool list yet. */
  async #load(path: string): Promise<void> {
    const first = fold(path.split('.')[0] ?? '');
    const server = this.#servers.catalogue().find((s) => fold(s.name) === first);
    if (server !== undefined) await this.#servers.ensureTools(server.name);
    else await this.#servers.ensureAllTools();
  }

  /** "server.tool", a folded variant of it ("Files.read-file"), or a tool name unique across servers. */
  #resolve(path: string): Entry | string {
    const all = this.#servers.catalogue().flatMap((s) => s.tools.map((tool) => ({ server: s.name, config: s.config, tool })));
    const wanted = fold(path);
    const exact = all.filter((e) => `${e.server}.${e.tool.name}` === path);
    const byPath = exact.length > 0 ? exact : all.filter((e) => fold(`${e.server}.${e.tool.name}`) === wanted);
    const found = byPath.length > 0 ? byPath : all.filter((e) => fold(e.tool.name) === wanted || fold(e.tool.name) === wanted.split('.').pop());
    if (found.length === 1 && found[0] !== undefined) return found[0];
    if (found.length > 1) return `"${path}" matches ${found.map((e) => `${e.server}.${e.tool.name}`).join(', ')}; use the full tool_path.`;
    const offline = this.#servers.status().find((s) => fold(s.name) === fold(path.split('.')[0] ?? '') && s.state !== 'up');
    if (offline?.state === 'needs-sign-in' && offline.reason !== undefined) return offline.reason; // "… run iris mcp login NAME"
    if (offline !== undefined && offline.tools === 0) {
      return `The ${offline.name} tools are offline right now${offline.reason === undefined ? '' : ` (${offline.reason})`}.`;
    }
    const [first, ...rest] = path.split('.');
    const server = this.#servers.catalogue().find((s) => fold(s.name) === fold(first ?? ''));
    if (server !== undefined && rest.length > 0) {
      const names = server.tools.map((t) => t.name);
      const shown = names.length > 30 ? [...names.slice(0, 30), `… (${names.length} in all)`] : names;
      return `The server "${server.name}" has no tool "${rest.join('.')}". Its tools: ${shown.join(', ') || 'none'}.`;
    }
    const categories = this.#servers.catalogue().map((s) => s.name);
    return `No tool "${path}". Call get_tools_in_category with path "" to list categories (${categories.join(', ') || 'none configured'}), then a category to list its tools.`;
  }

  #validator(entry: Entry): ValidateFunction {
    const key = `${entry.server}.${entry.tool.name}`;
    let validate = this.#validators.get(key);
    if (validate === undefined) {
      const schema = entry.tool.inputSchema;
      const draft2020 = typeof schema.$schema === 'string' && schema.$schema.includes('2020-12');
      const serverJudges = Object.assign(() => true, { errors: null }) as unknown as ValidateFunction;
      try {
        if (JSON.stringify(schema).length > COMPILED_SCHEMA_BYTES) validate = serverJudges;
        else validate = draft2020 ? this.#ajv2020.compile(schema) : this.#ajv.compile(compact(schema));
      } catch {
        validate = serverJudges; // a schema ajv cannot read: let the server judge
      }
      this.#validators.set(key, validate);
    }
    return validate;
  }
}

/**
 * `confirm = "destructive"` (the default) takes a server's `readOnlyHint: true` as the admin's
 * trust in that server: such tools run without a yes. A server one does not trust gets
 * `confirm = "always"`, whatever its tools claim.
 */
function needsConfirmation(entry: Entry): boolean {
  const mode = entry.config.confirm ?? 'destructive';
  if (mode === 'never') return false;
  if (mode === 'always') return true;
  return entry.tool.annotations?.readOnlyHint !== true;
}

function summary(description: string): string {
  const first = description.split(/(?<=[.!?])\s|\n/)[0] ?? '';
  return first.length <= SUMMARY_CHARS ? first : `${first.slice(0, SUMMARY_CHARS - 1)}…`;
}

function overview(tools: readonly RemoteTool[]): string {
  const names = tools.map((t) => t.name);
  return names.length <= 8 ? names.join(', ') : `${names.slice(0, 8).join(', ')} and ${names.length - 8} more`;
}

/** A ranked tool as the model is shown it: named by its path, with its full input schema. */
export function fullDefinition(ranked: RankedTool): ToolDefinition {
  const { tool, path } = ranked;
  return { name: path, description: tool.description ?? '', inputSchema: compact(tool.inputSchema) as ToolDefinition['inputSchema'] };
}

/**
 * How many of the tools shown in a first request come with their parameters' descriptions:
 * the rest show parameter names and types only (about 23 % fewer tokens at 1,000 tools), so
 * more fit in [budget] tool_tokens; a call with bad arguments gets the full schema back
 * (execute_tool's checks). Chosen on the dev requests: 4 gave 215 of 263 found, all in full
 * 210, none in full 216 (scripts/tune-tool-rank.ts).
 */
export const FULL_SCHEMAS = 4;

/** The ranked tools as the first request shows them: the first FULL_SCHEMAS in full, the rest without parameter descriptions. */
export function shownDefinitions(ranked: readonly RankedTool[]): ToolDefinition[] {
  return ranked.map((r, i) => (i < FULL_SCHEMAS ? fullDefinition(r) : briefDefinition(r)));
}

/** A ranked tool with its parameters' names, types and constraints but not their descriptions. */
export function briefDefinition(ranked: RankedTool): ToolDefinition {
  const full = fullDefinition(ranked);
  const { properties, ...rest } = full.inputSchema as { properties?: Record<string, unknown> };
  if (properties === undefined) return full;
  const brief = Object.fromEntries(Object.entries(properties).map(([name, schema]) => {
    if (typeof schema !== 'object' || schema === null) return [name, schema];
    const { description: _description, ...kept } = schema as Record<string, unknown>;
    return [name, kept];
  }));
  return { ...full, inputSchema: { ...rest, properties: brief } as ToolDefinition['inputSchema'] };
}

/** The schema without what only identifies it ($schema, $id); meaning unchanged. */
export function compact(schema: object): object {
  const { $schema: _schema, $id: _id, ...rest } = schema as Record<string, unknown>;
  return rest;
}
