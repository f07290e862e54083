/**
 * The tool host: one registry for native and remote tools. `call()` never throws: an unknown
 * tool, bad arguments, a timeout, cancellation or a crash all come back as an `isError`
 * result the model can read and recover from.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { isAbortError, messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import { errorResult, type CallToolResult, type NativeTool, type ToolDefinition } from './api.js';

export type ToolSource = 'native' | 'mcp';

export interface RegisterOptions {
  source?: ToolSource;
  server?: string;
  /** The `[tools]` key (native) or server name (MCP) that switches this tool. */
  toggle?: string;
  /** This tool's own per-call limit (ms), e.g. for a proxy whose servers enforce theirs. */
  timeoutMs?: number;
}

/** A row of `iris tools list`. */
export interface ToolInfo extends ToolDefinition {
  source: ToolSource;
  server?: string;
  enabled: boolean;
}

export interface CallOptions {
  /** The turn's signal: barge-in and shutdown cancel the call through it. */
  signal?: AbortSignal;
  /** Per-call limit in milliseconds; default the host's `timeoutMs`. */
  timeoutMs?: number;
}

export interface ToolHostOptions {
  /** Default per-call limit in milliseconds; default 10 000. */
  timeoutMs?: number;
  /** Is the switch named by a tool's `toggle` on? Default: everything on. */
  isEnabled?: (toggle: string) => boolean;
  log?: Logger;
}

interface Entry {
  tool: NativeTool;
  validate: ValidateFunction;
  source: ToolSource;
  server?: string;
  toggle?: string;
  timeoutMs?: number;
}

/** Longest argument document accepted, in characters: bounds validation and tool work. */
const MAX_ARGUMENTS_CHARS = 16_384;

export class ToolHost {
  readonly #tools = new Map<string, Entry>();
  readonly #ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: false });
  readonly #timeoutMs: number;
  readonly #log: Logger;
  #isEnabled: (toggle: string) => boolean;

  constructor(options: ToolHostOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#isEnabled = options.isEnabled ?? (() => true);
    this.#log = options.log ?? silentLogger;
  }

  register(tool: NativeTool, options: RegisterOptions = {}): void {
    if (this.#tools.has(tool.name)) throw new Error(`tool "${tool.name}" is already registered`);
    const entry: Entry = { tool, validate: this.#ajv.compile(tool.inputSchema), source: options.source ?? 'native' };
    if (options.server !== undefined) entry.server = options.server;
    if (options.toggle !== undefined) entry.toggle = options.toggle;
    if (options.timeoutMs !== undefined) entry.timeoutMs = options.timeoutMs;
    this.#tools.set(tool.name, entry);
  }

  unregister(name: string): boolean {
    return this.#tools.delete(name);
  }

  /** Replace the switch test, e.g. after the config was re-read. */
  setEnabled(isEnabled: (toggle: string) => boolean): void {
    this.#isEnabled = isEnabled;
  }

  /** Every registered tool with its on/off state. */
  list(): ToolInfo[] {
    return [...this.#tools.values()].map((entry) => {
      const { name, description, inputSchema, annotations } = entry.tool;
      const info: ToolInfo = { name, description, inputSchema, source: entry.source, enabled: this.#enabled(entry) };
      if (annotations !== undefined) info.annotations = annotations;
      if (entry.server !== undefined) info.server = entry.server;
      return info;
    });
  }

  /** What the model may be offered: the enabled tools' definitions. */
  definitions(): ToolDefinition[] {
    return this.list()
      .filter((info) => info.enabled)
      .map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));
  }

  has(name: string): boolean {
    const entry = this.#tools.get(name);
    return entry !== undefined && this.#enabled(entry);
  }

  /** Run a tool. Never throws; every failure is an `isError` result. */
  async call(name: string, args: unknown, options: CallOptions = {}): Promise<CallToolResult> {
    const entry = this.#tools.get(name);
    if (entry === undefined || !this.#enabled(entry)) {
      const available = this.definitions().map((d) => d.name);
      const why = entry === undefined ? `There is no tool named "${name}".` : `The tool "${name}" is switched off.`;
      return errorResult(`${why} Available tools: ${available.join(', ') || 'none'}.`);
    }
    const parsed = parseArguments(args);
    if (typeof parsed === 'string') return errorResult(`Invalid arguments for ${name}: ${parsed}`);
    if (!entry.validate(parsed)) {
      // Names the schema does not know are the usual cause: say so, even where the schema allows extras.
      const known = Object.keys(entry.tool.inputSchema.properties ?? {});
      const unknown = Object.keys(parsed).filter((key) => !known.includes(key)).map((key) => `"${key}" is not an argument of ${name}`);
      const problems = [...new Set([explain(entry.validate.errors ?? []), ...unknown])].join('; ');
      return errorResult(`Invalid arguments for ${name}: ${problems}. ${usage(entry.tool)}`);
    }
    return this.#run(entry.tool, parsed, entry.timeoutMs === undefined || options.timeoutMs !== undefined ? options : { ...options, timeoutMs: entry.timeoutMs });
  }

  async #run(tool: NativeTool, args: Record<string, unknown>, options: CallOptions): Promise<CallToolResult> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const controller = new AbortController();
    const outer = options.signal;
    const abort = (): void => controller.abort(outer?.reason);
    if (outer?.aborted) return errorResult(`${tool.name} was cancelled.`);
    outer?.addEventListener('abort', abort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const stopped = new Promise<CallToolResult>((resolve) => {
      timer = setTimeout(() => {
        resolve(errorResult(`${tool.name} timed out after ${timeoutMs / 1000} s.`));
        controller.abort(new Error('timeout'));
      }, timeoutMs);
      controller.signal.addEventListener('abort', () => resolve(errorResult(`${tool.name} was cancelled.`)), {
        once: true,
      });
    });
    try {
      const ran = Promise.resolve().then(() => tool.run(args, { signal: controller.signal }));
      return normalise(await Promise.race([ran, stopped]));
    } catch (error) {
      if (isAbortError(error) || controller.signal.aborted) return errorResult(`${tool.name} was cancelled.`);
      this.#log.warn(`${tool.name} failed: ${messageOf(error)}`);
      return errorResult(`${tool.name} failed: ${messageOf(error)}`);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', abort);
    }
  }

  #enabled(entry: Entry): boolean {
    return entry.toggle === undefined || this.#isEnabled(entry.toggle);
  }
}

/** Arguments as an object: a JSON string is parsed (small models send those), none is `{}`. */
function parseArguments(args: unknown): Record<string, unknown> | string {
  let value: unknown = args ?? {};
  if (typeof value === 'string') {
    if (value.length > MAX_ARGUMENTS_CHARS) return `the arguments are longer than ${MAX_ARGUMENTS_CHARS} characters.`;
    if (value.trim() === '') return {};
    try {
      value = JSON.parse(value) as unknown;
    } catch {
      return 'the arguments are not valid JSON; send an object such as {"name": "value"}.';
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'the arguments must be a JSON object.';
  }
  if (JSON.stringify(value).length > MAX_ARGUMENTS_CHARS) {
    return `the arguments are longer than ${MAX_ARGUMENTS_CHARS} characters.`;
  }
  return value as Record<string, unknown>;
}

/** ajv's errors as one sentence a small model can act on. */
export function explain(errors: readonly ErrorObject[]): string {
  const parts = errors.map((error) => {
    const where = error.instancePath === '' ? '' : `"${error.instancePath.slice(1).replace(/\//g, '.')}" `;
    switch (error.keyword) {
      case 'required':
        return `"${String(error.params.missingProperty)}" is required`;
      case 'additionalProperties':
        return `"${String(error.params.additionalProperty)}" is not a known argument`;
      case 'enum':
        return `${where}must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
      default:
        return `${where}${error.message ?? 'is invalid'}`;
    }
  });
  return [...new Set(parts)].join('; ');
}

/** A one-line reminder of a tool's arguments: `Usage: set_timer(duration: string, label?: string).` */
export function usage(tool: ToolDefinition): string {
  const required = new Set(tool.inputSchema.required ?? []);
  const args = Object.entries(tool.inputSchema.properties ?? {}).map(([name, schema]) => {
    const type = (schema as { type?: unknown }).type;
    const shown = Array.isArray(type) ? type.join('|') : typeof type === 'string' ? type : 'any';
    return `${name}${required.has(name) ? '' : '?'}: ${shown}`;
  });
  return `Usage: ${tool.name}(${args.join(', ')}).`;
}

function normalise(result: CallToolResult): CallToolResult {
  if (!Array.isArray(result?.content)) return errorResult('the tool returned no content.');
  return result;
}
