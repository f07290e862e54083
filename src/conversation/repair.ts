/**
 * The small-model safety net. Small local models call tools badly: names with the wrong
 * separator or a namespace, arguments as a JSON string, calls written as JSON in the text or
 * left inside `thinking`. Each function here recovers one of those, and says that it did, so
 * the conversation can count and log every repair.
 */
import { foldName, parseJson } from '../toolhost/arguments.js';
import type { ToolCall } from './backend.js';

/** `call_refused`: a call the model did not make as its action (quoted, or inside a reply); never run. */
export type RepairKind = 'tool_name' | 'arguments_string' | 'call_in_text' | 'call_in_thinking' | 'unknown_tool' | 'call_refused';

const fold = (name: string): string => foldName(name).replace(/\./g, '_');

/**
 * The registered tool a model meant: exact, else unique after folding case, hyphens/underscores
 * and a `functions.` prefix (seed 000's mapping), else a remote tool shown as "server.tool"
 * called by its bare tool name. `undefined` when none or several match.
 */
export function resolveToolName(name: string, available: readonly string[]): { name: string; repaired: boolean } | undefined {
  if (available.includes(name)) return { name, repaired: false };
  const wanted = fold(name);
  const unique = (matches: string[]) => (matches.length === 1 && matches[0] !== undefined ? { name: matches[0], repaired: true } : undefined);
  return unique(available.filter((candidate) => fold(candidate) === wanted))
    ?? unique(available.filter((candidate) => candidate.includes('.') && fold(candidate.slice(candidate.indexOf('.') + 1)) === wanted));
}

/** Patterns small models use to write a call in text: Hermes, seed 004, fenced JSON. */
const WRAPPED = [
  /<tool_call>\s*([\s\S]*?)\s*(?:<\/tool_call>|$)/g,
  /<tool>\s*([\s\S]*?)\s*(?:<\/tool>|$)/g,
  /<function_call>\s*([\s\S]*?)\s*(?:<\/function_call>|$)/g,
  /```(?:json|tool_call)?\s*(\{[\s\S]*?\})\s*```/g,
];

/** Markers after which text is a tool call, never something to speak. */
export const CALL_MARKERS = /<tool_call>|<tool>|<function_call>|```|^\s*[[{]/;

/**
 * Tool calls written into text: `<tool_call>{…}</tool_call>`, `<tool>{…}</tool>`, fenced JSON,
 * or a reply that is nothing but a `{"name": …, "arguments": …}` object (or a list of them).
 * Returns the calls and the text with them removed.
 */
export function extractTextCalls(text: string): { calls: ToolCall[]; rest: string } {
  const calls: ToolCall[] = [];
  let rest = text;
  for (const pattern of WRAPPED) {
    rest = rest.replace(pattern, (whole, body: string) => {
      const found = callsIn(parseJson(body));
      calls.push(...found);
      return found.length > 0 ? '' : whole;
    });
  }
  const trimmed = rest.trim();
  if (calls.length === 0 && /^[[{]/.test(trimmed)) {
    const found = callsIn(parseJson(trimmed));
    if (found.length > 0) return { calls: found, rest: '' };
  }
  return { calls, rest: rest.trim() };
}

function callsIn(value: unknown): ToolCall[] {
  if (Array.isArray(value)) return value.flatMap(callsIn);
  if (value === null || typeof value !== 'object') return [];
  const object = value as Record<string, unknown>;
  const fn = (object.function ?? object) as Record<string, unknown>;
  const name = fn.name ?? fn.tool ?? fn.tool_name;
  if (typeof name !== 'string' || name === '') return [];
  const args = fn.arguments ?? fn.parameters ?? fn.args ?? fn.input ?? {};
  return [{ name, arguments: args as Record<string, unknown> | string }];
}

/**
 * Every call written anywhere in `text`, also inside other text: the wrapped and bare forms
 * `extractTextCalls` reads, and any JSON object in it that has a tool name. For telling a call
 * the model makes from one it copies out of a tool result.
 */
export function callsWrittenIn(text: string): ToolCall[] {
  const found = extractTextCalls(text).calls;
  for (const object of jsonObjectsIn(text)) found.push(...callsIn(object));
  return found;
}

/** A call's identity for comparing: the folded name and the arguments in key order. */
export function callKey(call: ToolCall): string {
  const args = typeof call.arguments === 'string' ? parseJson(call.arguments) ?? call.arguments : call.arguments;
  return `${fold(call.name)} ${stableJson(args)}`;
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Longest text scanned for embedded JSON objects (characters): tool results are cut well below this. */
const MAX_SCAN_CHARS = 100_000;
const NAMED = /"(?:name|tool|tool_name)"\s*:/;

/**
 * The JSON objects embedded in text that could be calls (they have a name key), nested ones
 * included: balanced braces outside strings, found in one pass, parsed strictly.
 */
function* jsonObjectsIn(text: string): Generator<unknown> {
  const scanned = text.slice(0, MAX_SCAN_CHARS);
  const open: number[] = [];
  let inString = false;
  for (let i = 0; i < scanned.length; i++) {
    const c = scanned[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = open.length > 0; // quotes in prose are not JSON strings
    else if (c === '{') open.push(i);
    else if (c === '}') {
      const start = open.pop();
      if (start === undefined) continue;
      const candidate = scanned.slice(start, i + 1);
      if (!NAMED.test(candidate)) continue;
      const value = parseJson(candidate, false);
      if (value !== undefined) yield value;
    }
  }
}
