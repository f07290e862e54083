/**
 * Tool names and arguments as they come from models and clients, read one way everywhere: the
 * tool host, the MCP proxy and the model loop's repairs.
 */
import { jsonrepair } from 'jsonrepair';

/** Longest argument document accepted, in characters: bounds validation and tool work. */
export const MAX_ARGUMENTS_CHARS = 16_384;

export type ParsedArguments =
  | { ok: true; value: Record<string, unknown>; /** A string (or broken JSON) had to be read. */ repaired: boolean }
  | { ok: false; error: string };

/**
 * Arguments as an object: none is `{}`, a JSON string is parsed; `lenient` also reads the
 * sloppy JSON small models write (jsonrepair). Anything else is an error a model can act on.
 */
export function parseArguments(raw: unknown, lenient = false): ParsedArguments {
  let value: unknown = raw ?? {};
  let repaired = false;
  if (typeof value === 'string') {
    if (value.length > MAX_ARGUMENTS_CHARS) return { ok: false, error: `the arguments are longer than ${MAX_ARGUMENTS_CHARS} characters.` };
    if (value.trim() === '') return { ok: true, value: {}, repaired: true };
    const parsed = parseJson(value, lenient);
    if (parsed === undefined) return { ok: false, error: 'the arguments are not valid JSON; send an object such as {"name": "value"}.' };
    value = parsed;
    repaired = true;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, error: 'the arguments must be a JSON object.' };
  if (JSON.stringify(value).length > MAX_ARGUMENTS_CHARS) return { ok: false, error: `the arguments are longer than ${MAX_ARGUMENTS_CHARS} characters.` };
  return { ok: true, value: value as Record<string, unknown>, repaired };
}

/** JSON, or (lenient) JSON after jsonrepair; undefined when neither reads. */
export function parseJson(text: string, lenient = true): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    if (!lenient) return undefined;
    try {
      return JSON.parse(jsonrepair(text)) as unknown;
    } catch {
      return undefined;
    }
  }
}

/**
 * A tool name or "server.tool" path folded for matching what a model wrote: case, spaces and
 * hyphens, and a `functions.` / `tools.` prefix do not count.
 */
export const foldName = (name: string): string =>
  name.trim().toLowerCase().replace(/^(?:functions?|tools?)[./:]/, '').replace(/[-\s]+/g, '_');
