/**
 * The tool host: one registry for native and remote tools, and the one way every call runs —
 * the model's, a spoken or typed command's, an MCP tool's through the proxy. `call()` never
 * throws: an unknown tool, bad arguments, a timeout, cancellation or a crash all come back as
 * an `isError` result the model can read and recover from. The confirmation policy lives here:
 * a call that needs the person's yes is not run but answered with a typed `PendingCall`, which
 * only `runConfirmed` runs, once, before it expires.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { isAbortError, messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import {
  errorResult,
  type AskPerson,
  type CallOrigin,
  type CallToolResult,
  type Confirmation,
  type HostResult,
  type NativeTool,
  type PendingCall,
  type ToolDefinition,
} from './api.js';
import { parseArguments } from './arguments.js';
import { Deadline } from './deadline.js';

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
  /** Who asked; default `model`. Only `typed` skips the confirmation policy. */
  origin?: CallOrigin;
  /** How the tool may ask the person something while it runs; without it, its questions are declined. */
  ask?: AskPerson;
  /** The room the request came from, passed to the tool. */
  room?: string;
}

export interface ToolHostOptions {
  /** Default per-call limit in milliseconds, or how to read it at each call; default 10 000. */
  timeoutMs?: number | (() => number);
  /** Is the switch named by a tool's `toggle` on? Default: everything on. */
  isEnabled?: (toggle: string) => boolean;
  log?: Logger;
  /** How long a call waits for the person's yes (ms); read at each call. Default 60 000. */
  confirmTimeoutMs?: () => number;
  /** Epoch ms; default Date.now. */
  now?: () => number;
}

interface Entry {
  tool: NativeTool;
  validate: ValidateFunction;
  source: ToolSource;
  server?: string;
  toggle?: string;
  timeoutMs?: number;
}

export class ToolHost {
  readonly #tools = new Map<string, Entry>();
  readonly #ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: false });
  readonly #validators = new Map<string, ValidateFunction>();
  readonly #timeoutMs: () => number;
  readonly #log: Logger;
  readonly #confirmTimeoutMs: () => number;
  readonly #now: () => number;
  #dryRun = false;
  /** The calls this host is holding for a yes; each runs at most once. */
  readonly #held = new WeakSet<PendingCall>();
  #isEnabled: (toggle: string) => boolean;

  constructor(options: ToolHostOptions = {}) {
    const timeoutMs = options.timeoutMs ?? 10_000;
    this.#timeoutMs = typeof timeoutMs === 'number' ? () => timeoutMs : timeoutMs;
    this.#isEnabled = options.isEnabled ?? (() => true);
    this.#log = options.log ?? silentLogger;
    this.#confirmTimeoutMs = options.confirmTimeoutMs ?? (() => 60_000);
    this.#now = options.now ?? Date.now;
  }

  register(tool: NativeTool, options: RegisterOptions = {}): void {
    if (this.#tools.has(tool.name)) throw new Error(`tool "${tool.name}" is already registered`);
    const entry: Entry = { tool, validate: this.#validator(tool.inputSchema), source: options.source ?? 'native' };
    if (options.server !== undefined) entry.server = options.server;
    if (options.toggle !== undefined) entry.toggle = options.toggle;
    if (options.timeoutMs !== undefined) entry.timeoutMs = options.timeoutMs;
    this.#tools.set(tool.name, entry);
  }

  /**
   * One validator per distinct schema. ajv keeps every function it compiled for as long as it
   * lives, and the MCP meta-tools are registered anew at every change of the servers (each
   * reload, each server up or down): compiled each time, they grew the daemon without end.
   */
  #validator(schema: NativeTool['inputSchema']): ValidateFunction {
    const text = JSON.stringify(schema);
    let validate = this.#validators.get(text);
    if (validate === undefined) {
      validate = this.#ajv.compile(schema);
      this.#validators.set(text, validate);
    }
    return validate;
  }

  unregister(name: string): boolean {
    return this.#tools.delete(name);
  }

  /** Replace the switch test, e.g. after the config was re-read. */
  setEnabled(isEnabled: (toggle: string) => boolean): void {
    this.#isEnabled = isEnabled;
  }

  /**
   * A dry run (`iris listen --dry-run`): from now on only tools marked `readOnlyHint` run; any
   * other call is answered "not run" without reaching the tool (no timer set, no remote call).
   */
  dryRun(): void {
    this.#dryRun = true;
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

  /**
   * Run a tool, or hold it for a yes: a call the tool wants confirmed (its `confirm`, else a
   * `destructiveHint`) comes back not run, with `pending` set — unless the person typed it.
   * Never throws; every failure is an `isError` result.
   */
  async call(name: string, args: unknown, options: CallOptions = {}): Promise<HostResult> {
    const entry = this.#tools.get(name);
    if (entry === undefined || !this.#enabled(entry)) {
      const available = this.definitions().map((d) => d.name);
      const why = entry === undefined ? `There is no tool named "${name}".` : `The tool "${name}" is switched off.`;
      return errorResult(`${why} Available tools: ${available.join(', ') || 'none'}.`);
    }
    const parsed = parseArguments(args);
    if (!parsed.ok) return errorResult(`Invalid arguments for ${name}: ${parsed.error}`);
    if (!entry.validate(parsed.value)) {
      // Names the schema does not know are the usual cause: say so, even where the schema allows extras.
      const known = Object.keys(entry.tool.inputSchema.properties ?? {});
      const unknown = Object.keys(parsed.value).filter((key) => !known.includes(key)).map((key) => `"${key}" is not an argument of ${name}`);
      const problems = [...new Set([explain(entry.validate.errors ?? []), ...unknown])].join('; ');
      return errorResult(`Invalid arguments for ${name}: ${problems}. ${usage(entry.tool)}`);
    }
    if (this.#dryRun && entry.tool.annotations?.readOnlyHint !== true) {
      // `refused`: the local path says this as it is; `dry_run` tells scripts nothing was done.
      const text = `Dry run: I would call ${name} with ${JSON.stringify(parsed.value)}; nothing was done.`;
      return { ...errorResult(text), structuredContent: { dry_run: true, refused: true } };
    }
    if ((options.origin ?? 'model') !== 'typed') {
      const asked = await this.#confirmation(entry.tool, parsed.value, options.signal);
      if (asked !== undefined) return this.#hold(name, parsed.value, asked);
    }
    return this.#run(entry, parsed.value, options);
  }

  /** Run a call this host held, now that the person said yes: once, and only before it expires. */
  async runConfirmed(pending: PendingCall, options: Omit<CallOptions, 'origin'> = {}): Promise<HostResult> {
    if (!this.#held.delete(pending)) return errorResult(`${pending.label} was not waiting for a yes; it was not run.`);
    if (this.#now() > pending.expiresAt) return errorResult(`The question about ${pending.label} expired; it was not run.`);
    const entry = this.#tools.get(pending.tool);
    if (entry === undefined || !this.#enabled(entry)) return errorResult(`The tool "${pending.tool}" is gone or switched off; it was not run.`);
    return this.#run(entry, pending.arguments, options);
  }

  /** What to ask before this call, if anything. A policy that fails asks (never runs unasked). */
  async #confirmation(tool: NativeTool, args: Record<string, unknown>, signal?: AbortSignal): Promise<Confirmation | undefined> {
    if (tool.confirm === undefined) {
      return tool.annotations?.destructiveHint === true ? { question: askToRun(tool.name, args) } : undefined;
    }
    try {
      return await tool.confirm(args, { signal: signal ?? new AbortController().signal });
    } catch (error) {
      this.#log.warn(`${tool.name}: could not tell whether to ask first (${messageOf(error)}); asking`);
      return { question: askToRun(tool.name, args) };
    }
  }

  #hold(name: string, args: Record<string, unknown>, asked: Confirmation): HostResult {
    const label = asked.label ?? name;
    const pending: PendingCall = { tool: name, arguments: args, question: asked.question, label, expiresAt: this.#now() + this.#confirmTimeoutMs() };
    this.#held.add(pending);
    return { ...errorResult(`Not run yet: ${label} needs the user's yes, and IRIS is asking them. Do not call it again; wait for the user.`), pending };
  }

  async #run(entry: Entry, args: Record<string, unknown>, options: CallOptions): Promise<HostResult> {
    const { tool } = entry;
    const timeoutMs = options.timeoutMs ?? entry.timeoutMs ?? this.#timeoutMs();
    const controller = new AbortController();
    const outer = options.signal;
    const abort = (): void => controller.abort(outer?.reason);
    if (outer?.aborted) return errorResult(`${tool.name} was cancelled.`);
    outer?.addEventListener('abort', abort, { once: true });
    let settle: (result: HostResult) => void = () => undefined;
    const stopped = new Promise<HostResult>((resolve) => {
      settle = resolve;
      controller.signal.addEventListener('abort', () => resolve(errorResult(`${tool.name} was cancelled.`)), {
        once: true,
      });
    });
    // The time the person takes to answer the tool's questions does not count.
    const deadline = new Deadline(timeoutMs, () => {
      settle({ ...errorResult(`${tool.name} timed out after ${timeoutMs / 1000} s.`), failed: true });
      controller.abort(new Error('timeout'));
    });
    const ask = options.ask === undefined ? {} : { ask: deadline.around(options.ask) };
    try {
      const ran = Promise.resolve().then(() => tool.run(args, { signal: controller.signal, ...ask, ...(options.room === undefined ? {} : { room: options.room }) }));
      return normalise(await Promise.race([ran, stopped]));
    } catch (error) {
      if (isAbortError(error) || controller.signal.aborted) return errorResult(`${tool.name} was cancelled.`);
      this.#log.warn(`${tool.name} failed: ${messageOf(error)}`);
      return { ...errorResult(`${tool.name} failed: ${messageOf(error)}`), failed: true };
    } finally {
      deadline.clear();
      outer?.removeEventListener('abort', abort);
    }
  }

  #enabled(entry: Entry): boolean {
    return entry.toggle === undefined || this.#isEnabled(entry.toggle);
  }
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

/** The question before a call: "Should I run write file from files with path /x? Say yes to go ahead." */
export function askToRun(tool: string, args: Record<string, unknown>, server?: string): string {
  const shown = Object.entries(args)
    .map(([k, v]) => `${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(', ')
    .slice(0, 160);
  return `Should I run ${tool.replace(/[-_]/g, ' ')}${server === undefined ? '' : ` from ${server}`}${shown === '' ? '' : ` with ${shown}`}? Say yes to go ahead.`;
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
