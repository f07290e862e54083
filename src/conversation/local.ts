/**
 * The deterministic local path: time, arithmetic and timer requests recognised without a
 * model and answered with the native tools. It matches only what it is sure of: a false
 * match is worse than none, so anything ambiguous is left for the model.
 */
import { resultText, type CallOrigin, type CallToolResult, type PendingCall } from '../toolhost/api.js';
import type { ToolHost } from '../toolhost/host.js';
import { matchIntent, normalise, type IntentMatch } from '../intents/match.js';
import type { ReminderSet } from '../../tools/timers.js';
import { describeDuration } from '../../tools/timers/words.js';

export { normalise };

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
  /** The tool asked which one ("The tea or the pasta timer?"): naming one answers it. */
  choice?: Choice;
}

/** A tool's "which one?" (its result's `structuredContent.choices`): the tool, and each choice's id and label. */
export interface Choice {
  tool: string;
  choices: { id: string; label: string }[];
}

/** Words that name no choice: "the tea one", "cancel the pasta timer please", "I mean the tea". */
const NOT_A_NAME = new Set(['the', 'a', 'my', 'one', 'timer', 'reminder', 'to', 'please', 'cancel', 'stop', 'i', 'mean', 'that', 'oh']);
const ORDINALS: Record<string, number> = { first: 0, '1st': 0, second: 1, '2nd': 1, third: 2, '3rd': 2 };
/** The naming words: fillers out, and a last "one" (normalised to "1") after a name ("the pasta one"). */
const nameOf = (text: string): string => text.replace(/(?<=\S) 1$/, '').split(' ').filter((w) => !NOT_A_NAME.has(w)).join(' ');

/**
 * The choice `utterance` names, by its label's own words ("the tea", "tea", "the pasta one")
 * or its place ("the first one", "the last one"); undefined when it names none or several.
 */
export async function choose(utterance: string, choice: Choice): Promise<{ id: string } | undefined> {
  const said = nameOf(await normalise(utterance));
  if (said === '') return undefined;
  const last = said === 'last' ? choice.choices.length - 1 : undefined;
  const place = last ?? ORDINALS[said];
  if (place !== undefined) return choice.choices[place] === undefined ? undefined : { id: choice.choices[place].id };
  const named = await Promise.all(choice.choices.map(async (c) => nameOf(await normalise(c.label))));
  const hits = choice.choices.filter((_, i) => named[i] === said);
  return hits.length === 1 && hits[0] !== undefined ? { id: hits[0].id } : undefined;
}

/** The choices a tool's refusal offers, if any. */
function choiceOf(tool: string, result: CallToolResult): Choice | undefined {
  const choices = result.structuredContent?.choices;
  if (!Array.isArray(choices)) return undefined;
  const valid = choices.filter((c): c is { id: string; label: string } => typeof (c as { id?: unknown }).id === 'string' && typeof (c as { label?: unknown }).label === 'string');
  return valid.length > 1 ? { tool, choices: valid } : undefined;
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
  return callLocally(tool, found.args, REPLIES[found.intent.name] ?? {}, found.slots, host, { signal, origin, room });
}

/** The answer to a tool's "which one?" (`choose` found the choice named), as a local answer. */
export async function answerChoice(
  choice: Choice,
  args: { id: string },
  host: ToolHost,
  how: { signal?: AbortSignal; origin: Exclude<CallOrigin, 'model'>; room?: string | undefined },
): Promise<LocalAnswer | undefined> {
  return host.has(choice.tool) ? callLocally(choice.tool, args, {}, {}, host, how) : undefined;
}

async function callLocally(
  tool: string,
  args: Record<string, unknown>,
  how: (typeof REPLIES)[string],
  slots: Readonly<Record<string, string>>,
  host: ToolHost,
  { signal, origin, room }: { signal?: AbortSignal | undefined; origin: Exclude<CallOrigin, 'model'>; room?: string | undefined },
): Promise<LocalAnswer | undefined> {
  const result = await host.call(tool, args, { origin, ...(signal === undefined ? {} : { signal }), ...(room === undefined ? {} : { room }) });
  if (result.pending !== undefined) return { reply: result.pending.question, tool_calls: [], pending: result.pending };
  // A request the tool could not read may be the model's to answer; a tool that broke (the
  // state dir not writable) is said as it is, not handed to the model to guess around.
  const refused = result.structuredContent?.refused === true;
  if (result.isError === true && how.errorMeansNoMatch === true && result.failed !== true && !refused) return undefined;
  const reply = result.isError === true || how.reply === undefined ? resultText(result) : how.reply(result, slots);
  const choice = refused ? choiceOf(tool, result) : undefined;
  return { reply, tool_calls: [toolCallRecord(tool, args, result)], ...(choice === undefined ? {} : { choice }) };
}
