/**
 * The deterministic local path: time, arithmetic and timer requests recognised without a
 * model and answered with the native tools. It matches only what it is sure of: a false
 * match is worse than none, so anything ambiguous is left for the model.
 */
import { resultText, type CallOrigin, type CallToolResult, type PendingCall } from '../toolhost/api.js';
import type { ToolHost } from '../toolhost/host.js';
import { matchIntent, type IntentMatch } from '../intents/match.js';
import type { ReminderSet } from '../../tools/timers.js';
import { describeDuration } from '../../tools/timers/words.js';

export { normalise } from '../intents/match.js';

export interface ToolCallRecord {
  name: string;
  arguments: Record<string, unknown>;
  /** With `isError` always present, as CONTRACT.md's `iris ask --json` shows it. */
  result: CallToolResult & { isError: boolean };
}

export const toolCallRecord = (name: string, args: Record<string, unknown>, result: CallToolResult): ToolCallRecord =>
  ({ name, arguments: args, result: { ...result, isError: result.isError === true } });

export interface LocalAnswer {
  reply: string;
  tool_calls: ToolCallRecord[];
  /** The tool host held the call for a yes: `reply` is its question. */
  pending?: PendingCall;
}

/** How each intent's tool result becomes a reply (given the slots heard), and whether a tool
 * error means "not sure" — unless the tool marks it `refused`: understood, and said as it is. */
const REPLIES: Record<string, { errorMeansNoMatch?: boolean; reply?: (result: CallToolResult, slots: Readonly<Record<string, string>>) => string }> = {
  time: { errorMeansNoMatch: true, reply: (r) => `It's ${clockOf(r)}${placeOf(r)}.` },
  date: { reply: (r) => `It's ${dateOf(r)}.` },
  set_timer: { errorMeansNoMatch: true },
  set_reminder: { errorMeansNoMatch: true },
  set_alarm: { errorMeansNoMatch: true, reply: (r) => `Alarm set for ${(r.structuredContent as Partial<ReminderSet> | undefined)?.due_said ?? resultText(r)}.` },
  time_left: { reply: (r, slots) => timeLeft(r, slots.name ?? '') },
  calculate: { errorMeansNoMatch: true, reply: (r) => `That's ${resultText(r)}.` },
};

/** "The pizza timer has 4 minutes left.", from list_timers' rows for that name. */
function timeLeft(result: CallToolResult, name: string): string {
  const rows = (result.structuredContent?.timers ?? []) as { kind: string; label: string; remaining_s: number }[];
  const mine = rows.filter((t) => t.kind === 'timer' && t.label.toLowerCase() === name.toLowerCase());
  if (mine.length === 0) return `You have no ${name} timer.${rows.length === 0 ? '' : ` ${resultText(result)}`}`;
  const left = mine.map((t) => describeDuration(t.remaining_s));
  return mine.length === 1
    ? `The ${name} timer has ${left[0] ?? ''} left.`
    : `You have ${mine.length} ${name} timers: ${left.join(', ')} left.`;
}

function placeOf(result: CallToolResult): string {
  const place = result.structuredContent?.place;
  return typeof place === 'string' && place !== '' ? ` in ${place}` : '';
}

function clockOf(result: CallToolResult): string {
  return /^It's (\d{1,2}:\d{2} [AP]M)/.exec(resultText(result))?.[1] ?? resultText(result);
}

function dateOf(result: CallToolResult): string {
  const text = resultText(result);
  return /on (.+?)(?: in .+)?\.$/.exec(text)?.[1] ?? text;
}

/**
 * Whether `match` is answered on the local path by a native tool that only reads (its
 * `readOnlyHint`: the time, a sum, the timers left): such an answer changes nothing, so it may
 * start before the person has surely finished and be taken back if they go on (the voice
 * loop's early answer). Setting or cancelling a timer, and any remote tool, is not.
 */
export function answersReadOnly(match: IntentMatch | undefined, host: ToolHost): boolean {
  const tool = match?.intent.tool;
  if (tool === undefined || !host.has(tool)) return false;
  const info = host.list().find((t) => t.name === tool);
  return info?.source === 'native' && info.annotations?.readOnlyHint === true;
}

/**
 * Answer `utterance` on the local path, or `undefined` when it is not sure what was meant
 * (the caller then asks the model). `match` is the utterance's intent when the caller has it;
 * `origin` says whether it was typed (acts at once) or heard (the host may ask first).
 */
export async function answerLocally(
  utterance: string,
  host: ToolHost,
  signal?: AbortSignal,
  match?: IntentMatch,
  origin: Exclude<CallOrigin, 'model'> = 'typed',
  room?: string,
): Promise<LocalAnswer | undefined> {
  const found = match ?? await matchIntent(utterance);
  const tool = found?.intent.tool;
  if (found === undefined || tool === undefined || !host.has(tool)) return undefined;
  const how = REPLIES[found.intent.name] ?? {};
  const result = await host.call(tool, found.args, { origin, ...(signal === undefined ? {} : { signal }), ...(room === undefined ? {} : { room }) });
  if (result.pending !== undefined) return { reply: result.pending.question, tool_calls: [], pending: result.pending };
  // A request the tool could not read may be the model's to answer; a tool that broke (the
  // state dir not writable) is said as it is, not handed to the model to guess around.
  const refused = result.structuredContent?.refused === true;
  if (result.isError === true && how.errorMeansNoMatch === true && result.failed !== true && !refused) return undefined;
  const reply = result.isError === true || how.reply === undefined ? resultText(result) : how.reply(result, found.slots);
  return { reply, tool_calls: [toolCallRecord(tool, found.args, result)] };
}
