/**
 * The small-model safety net. Small local models call tools badly: names with the wrong
 * separator or a namespace, arguments as a JSON string, calls written as JSON in the text or
 * left inside `thinking`. Each function here recovers one of those, and says that it did, so
 * the conversation can count and log every repair.
 */
import { jsonrepair } from 'jsonrepair';
import type { ToolCall } from './backend.js';

export type RepairKind = 'tool_name' | 'arguments_string' | 'call_in_text' | 'call_in_thinking' | 'unknown_tool';

const fold = (name: string): string =>
  name.trim().toLowerCase().replace(/^(?:functions?|tools?)[./:]/, '').replace(/[-\s.]+/g, '_');

/**
 * The registered tool a model meant: exact, else unique after folding case, hyphens/underscores
 * and a `functions.` prefix (seed 000's mapping). `undefined` when none or several match.
 */
export function resolveToolName(name: string, available: readonly string[]): { name: string; repaired: boolean } | undefined {
  if (available.includes(name)) return { name, repaired: false };
  const wanted = fold(name);
  const matches = available.filter((candidate) => fold(candidate) === wanted);
  return matches.length === 1 && matches[0] !== undefined ? { name: matches[0], repaired: true } : undefined;
}

/** Arguments as an object; a JSON string (or slightly broken JSON) is parsed. */
export function parseArguments(args: unknown): { value: Record<string, unknown> | string; repaired: boolean } {
  if (typeof args !== 'string') {
    return { value: (args ?? {}) as Record<string, unknown>, repaired: false };
  }
  const parsed = parseLooseJson(args);
  return parsed !== undefined && typeof parsed === 'object' && !Array.isArray(parsed)
    ? { value: parsed as Record<string, unknown>, repaired: true }
    : { value: args, repaired: false };
}

function parseLooseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    try {
      return JSON.parse(jsonrepair(text)) as unknown;
    } catch {
      return undefined;
    }
  }
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
      const found = callsIn(parseLooseJson(body));
      calls.push(...found);
      return found.length > 0 ? '' : whole;
    });
  }
  const trimmed = rest.trim();
  if (calls.length === 0 && /^[[{]/.test(trimmed)) {
    const found = callsIn(parseLooseJson(trimmed));
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
