/**
 * The tool host's public surface: everything a native tool in tools/ may import. Shapes follow
 * MCP (`Tool`, `CallToolResult`) so native and remote tools look the same to the model.
 */
import type { Logger } from '../log.js';

/** A JSON Schema for a tool's arguments (an object schema, as MCP requires). */
export interface InputSchema {
  type: 'object';
  properties?: Record<string, unknown>;
  required?: readonly string[];
  [keyword: string]: unknown;
}

/** MCP tool annotations: hints about behaviour, never trusted for safety on their own. */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** What the model is shown of a tool. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: InputSchema;
  annotations?: ToolAnnotations;
}

export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; data: string; mimeType: string }
  | { type: 'resource_link'; uri: string; name: string; [key: string]: unknown }
  | { type: 'resource'; resource: { uri: string; text?: string; blob?: string; mimeType?: string } };

/** MCP's `CallToolResult`. */
export interface CallToolResult {
  content: ContentBlock[];
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

/** What the tool host answers: a result, or (not run yet) the call waiting for a yes. */
/**
 * Results IRIS made itself that the person must hear word for word: how to sign in, with an
 * address and a code a model could garble in passing them on. Known by identity, so a
 * server's result (whatever its `_meta` says) can never be one.
 */
const SAID_AS_IS = new WeakSet<CallToolResult>();

/** Mark `result` to be said to the person as it is, ending the model's turn. */
export function sayAsIs<T extends CallToolResult>(result: T): T {
  SAID_AS_IS.add(result);
  return result;
}

export const isSaidAsIs = (result: CallToolResult): boolean => SAID_AS_IS.has(result);

export interface HostResult extends CallToolResult {
  pending?: PendingCall;
  /** The tool broke (threw, timed out), as opposed to refusing a request it could not read. */
  failed?: true;
}

export interface CallContext {
  /** Aborted on timeout, barge-in or shutdown; long work must stop when it fires. */
  signal: AbortSignal;
  /** Ask the person something while the call runs (an MCP server's elicitation); absent where nobody can answer. */
  ask?: AskPerson;
  /** The room the request came from (a satellite's name); none for the local microphone and typed requests. */
  room?: string;
}

/**
 * A question a running tool puts to the person: MCP's `elicitation/create`. A form asks for
 * a few flat values; a link asks them to open a URL (IRIS never opens or fetches it). Text
 * in it comes from the server: untrusted, to be shown as plain text only.
 */
export type ToolQuestion =
  | { mode: 'form'; server: string; message: string; schema: FormSchema }
  | { mode: 'url'; server: string; message: string; url: string };

/** MCP's `requestedSchema`: an object of primitive properties. */
export interface FormSchema {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required?: readonly string[];
}

export type FormValue = string | number | boolean | string[];

/** The person's answer, as MCP's `ElicitResult`. */
export interface ToolAnswer {
  action: 'accept' | 'decline' | 'cancel';
  /** The form's values, with `accept`. */
  content?: Record<string, FormValue>;
}

/** Ask the person and wait for the answer; `signal` aborts when the server withdraws the question. */
export type AskPerson = (question: ToolQuestion, signal: AbortSignal) => Promise<ToolAnswer>;

/**
 * Who asked for a call. The person's own typed words (`iris ask` matched locally, `iris tools
 * call`) act at once; what the model asks, and what was heard (it may be misheard), is
 * confirmed first when the tool says so.
 */
export type CallOrigin = 'model' | 'spoken' | 'typed';

/** What to ask the person before a call runs. */
export interface Confirmation {
  /** One spoken sentence ending in a question, e.g. "Cancel all 2 timers and reminders? Say yes or no." */
  question: string;
  /** The call as a person reads it in `tool_calls`, e.g. "files.write_file"; default the tool's name. */
  label?: string;
}

/**
 * A call held for the person's yes. Only the tool host makes these (`ToolHost.call`), and only
 * it runs one (`ToolHost.runConfirmed`), once, before `expiresAt`.
 */
export interface PendingCall extends Confirmation {
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
  readonly label: string;
  /** Epoch ms after which a yes no longer runs it. */
  readonly expiresAt: number;
}

/** A native tool: its definition plus the function that runs it, in-process. */
export interface NativeTool extends ToolDefinition {
  run(args: Record<string, unknown>, context: CallContext): Promise<CallToolResult> | CallToolResult;
  /**
   * Whether this call (valid arguments) needs the person's yes first: what to ask, or
   * undefined to go ahead. Without it the host asks before a tool annotated
   * `destructiveHint: true`. Not consulted for the person's own typed commands.
   */
  confirm?(args: Record<string, unknown>, context: CallContext): Promise<Confirmation | undefined> | Confirmation | undefined;
}

/** Something worth saying out loud, unasked: a timer going off, a missed reminder. */
export interface Announcement {
  kind: 'timer' | 'reminder' | 'missed';
  /** The sentence to speak. */
  text: string;
  id: string;
  /** When it was due (ISO 8601 with offset). */
  due: string;
  /** Where it was asked for (a satellite's room): said there. */
  room?: string;
}

/**
 * Something a tool tells the room it was asked in, not said aloud: a timer started (a
 * satellite shows it counting down; its end comes as an `Announcement`).
 */
export interface Notice {
  kind: 'timer-started';
  /** The timer's id, as its announcement will carry it. */
  id: string;
  /** How long it runs (s). */
  seconds: number;
  /** Its name ("tea"); '' for none. */
  label: string;
  /** Where it was asked for (a satellite's room). */
  room?: string;
}

/** A state document: every one carries the version of its shape. */
export interface Versioned {
  version: number;
}

/**
 * A JSON document in the state dir, written atomically (temp file, fsync, rename). A file of
 * another version is never read as this one nor overwritten: `read` and `update` throw a
 * `StateError` and leave it as it is.
 */
export interface JsonStore<T extends Versioned> {
  readonly path: string;
  /** The stored value, or `undefined` when there is none yet. */
  read(): Promise<T | undefined>;
  /**
   * Read, change and write under a lock shared by every IRIS process, so writers from other
   * processes (the CLI without a daemon, a second daemon) never interleave.
   */
  update<R>(change: (current: T | undefined) => Promise<{ value: T; result: R }> | { value: T; result: R }): Promise<{ value: T; result: R }>;
  /** Replace the document without reading it (a cache); refused after a version mismatch. */
  write(value: T): Promise<void>;
  /** Call `onChange` when another process replaces the file; returns a stop function. */
  watch(onChange: () => void): () => void;
}

/** What a tool module is given when it is created. */
export interface ToolContext {
  /** The home IANA zone from `[assistant] timezone`. */
  homeZone: string;
  log: Logger;
  /** Say something to the people in the room (logged when there is no audio). */
  announce: (announcement: Announcement) => void;
  /** Tell the room a request came from what it started (a timer): not said. */
  notify: (notice: Notice) => void;
  /** A JSON store named `name` in the state dir, for documents of this `version`. */
  store<T extends Versioned>(name: string, version: number): JsonStore<T>;
  /** Epoch milliseconds; injectable for tests. */
  now: () => number;
}

/** The tools a module offers, and an optional lifecycle for ones that run in the background. */
export interface ToolSet {
  tools: NativeTool[];
  /** Start background work (arming timers); only the daemon calls it. */
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

/** One file in tools/: the `[tools]` switch it answers to, and how to build it. */
export interface ToolModule {
  toggle: string;
  create(context: ToolContext): ToolSet;
}

/** A plain-text result. */
export function textResult(text: string, structuredContent?: Record<string, unknown>): CallToolResult {
  return structuredContent === undefined
    ? { content: [{ type: 'text', text }] }
    : { content: [{ type: 'text', text }], structuredContent };
}

/** An error the model can read and act on. */
export function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** The text parts of a result, joined. */
export function resultText(result: CallToolResult): string {
  return result.content
    .map((block) => (block.type === 'text' ? block.text : `[${block.type}]`))
    .join('\n');
}
