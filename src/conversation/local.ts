/**
 * The deterministic local path: time, arithmetic and timer requests recognised without a
 * model and answered with the native tools. It matches only what it is sure of: a false
 * match is worse than none, so anything ambiguous is left for the model.
 */
import { resultText, type CallToolResult } from '../toolhost/api.js';
import type { ToolHost } from '../toolhost/host.js';

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
}

/** One recognised request: the tool to call and how to turn its result into a reply. */
interface Intent {
  tool: string;
  args: Record<string, unknown>;
  /** A tool error means "not sure" (fall through to the model) rather than an answer. */
  errorMeansNoMatch?: boolean;
  reply?: (result: CallToolResult) => string;
}

const DURATION = String.raw`\d+(?:\.\d+)?\s*(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?)(?:(?:\s*,\s*|\s+and\s+|\s+)\d+(?:\.\d+)?\s*(?:seconds?|secs?|minutes?|mins?|hours?|hrs?))*`;
const TIMER_NOUN = String.raw`(?:timer|countdown)`;
const LEAD = /^(?:(?:hey |ok |okay )?(?:jarvis|iris|alexa|computer)[,\s]+)?(?:please |can you |could you |would you |will you |i want you to |i'd like you to )*/;

/** Lower-case, strip politeness and punctuation, spoken numbers to digits. */
export async function normalise(utterance: string): Promise<string> {
  let text = utterance.toLowerCase().replace(/[’‘]/g, "'").replace(/\s+/g, ' ').trim();
  text = text.replace(/[?!.]+$/, '').replace(LEAD, '').replace(/(?:,? please| for me| right now)+$/, '').trim();
  text = text
    .replace(/\bhalf an hour\b/g, '30 minutes')
    .replace(/\ban hour and a half\b/g, '90 minutes')
    .replace(/\b(?:a|an|one) (second|minute|hour|day)\b/g, '1 $1')
    .replace(/\ba quarter of an hour\b|\ba quarter hour\b/g, '15 minutes');
  if (/\b(zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|teen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|half)\b/.test(text)) {
    // "seconds" is a fraction to compromise ("ninety seconds" → 45) unless told it is a noun.
    const { default: nlp } = await import('compromise');
    const doc = nlp(text, { second: 'Singular', seconds: 'Plural' });
    doc.numbers().toNumber();
    text = doc.text().replace(/\s+/g, ' ').trim();
  }
  return text;
}

function recognise(text: string): Intent | undefined {
  let m: RegExpExecArray | null;

  // Time and date
  m = /^(?:what(?:'s| is) the (?:current |exact )?time|what time is it|what time's it|tell me the time|(?:the )?current time|time)(?: (?:in|at|for) (.+?))?(?: (?:right )?now)?$/.exec(text);
  if (m) {
    return {
      tool: 'get_current_time',
      args: m[1] === undefined ? {} : { timezone: m[1] },
      errorMeansNoMatch: m[1] !== undefined,
      reply: (r) => `It's ${clockOf(r)}${placeOf(r)}.`,
    };
  }
  if (/^(?:what(?:'s| is) (?:the date|today's date)|what day is (?:it|today)|what(?:'s| is) today)(?: today)?$/.test(text)) {
    return { tool: 'get_current_time', args: {}, reply: (r) => `It's ${dateOf(r)}.` };
  }

  // Timers
  m = new RegExp(`^(?:set|start|create|make|put on)(?: me)?(?: an?| the)?(?: ([a-z ]+?))? ${TIMER_NOUN} (?:for|of) (${DURATION})(?: (?:called|named|labell?ed|for) ([a-z ]+))?$`).exec(text);
  if (m) return timer(m[2], m[3] ?? m[1]);
  m = new RegExp(`^(?:set|start|create|make)?(?: me)?(?: an?)? ?(${DURATION})(?: long)? ([a-z ]+ )?${TIMER_NOUN}$`).exec(text);
  if (m) return timer(m[1], m[2]);
  m = new RegExp(`^${TIMER_NOUN} (?:for )?(${DURATION})$`).exec(text);
  if (m) return timer(m[1]);

  // Reminders: "remind me to X at/in/on/tomorrow/every …" or "remind me at/in … to X"
  m = /^remind me ((?:in|at|on|tomorrow|tonight|every|each|next) .+?) to (.+)$/.exec(text);
  if (m) return reminder(m[1], m[2]);
  m = /^remind me (?:to )?(.+?) ((?:in|at|on|every|each|next) .+|tomorrow(?: .+)?|tonight(?: .+)?)$/.exec(text);
  if (m) return reminder(m[2], m[1]);

  // Listing and cancelling
  if (/^(?:(?:list|show)(?: me)?(?: my| all| the)? (?:timers|reminders)|(?:what|which) (?:timers|reminders)(?: do i have| are (?:set|running|there|on))?|do i have any (?:timers|reminders)|how (?:much time|long) is left(?: on (?:the|my)(?: [a-z]+)? timer)?)$/.test(text)) {
    return { tool: 'list_timers', args: {} };
  }
  m = /^(?:cancel|stop|delete|remove|clear)(?: all)?(?: (?:the|my))?(?: ([a-z]+))? (?:timer|reminder|alarm)s?(?: (?:number )?#?(\d+))?$/.exec(text);
  if (m) {
    const all = /^\w+ all\b|(?:timer|reminder|alarm)s$/.test(text);
    const id = m[2] ?? (all ? 'all' : m[1]);
    return { tool: 'cancel_timer', args: id === undefined ? {} : { id } };
  }

  // Arithmetic: only when the calculator reads the whole expression
  m = /^(?:what(?:'s| is)|calculate|compute|how much is|evaluate|convert|what are)\s+(.+?)(?:\s+(?:equal|equals|make))?$/.exec(text);
  const expression = m?.[1] ?? text;
  // A number alone ("one", "42") is an answer to something, not a sum: it needs an operation.
  const operation = /[-+*/^%×÷]|\b(?:plus|minus|times|divided|over|percent|squared|cubed|root|sqrt|cbrt|mod|to|in)\b/;
  if (/\d/.test(expression) && operation.test(expression) && !/\b(?:timer|remind|reminder)\b/.test(expression)) {
    return { tool: 'calculator', args: { expression }, errorMeansNoMatch: true, reply: (r) => `That's ${resultText(r)}.` };
  }
  return undefined;
}

function timer(duration: string | undefined, label?: string): Intent {
  const args: Record<string, unknown> = { duration: duration ?? '' };
  if (label !== undefined && label.trim() !== '' && !/^(?:new|quick|kitchen)$/.test(label.trim())) args.label = label.trim();
  return { tool: 'set_timer', args, errorMeansNoMatch: true };
}

function reminder(at: string | undefined, what: string | undefined): Intent {
  return { tool: 'set_reminder', args: { at: (at ?? '').replace(/^at /, ''), text: what ?? '' }, errorMeansNoMatch: true };
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
 * Answer `utterance` on the local path, or `undefined` when it is not sure what was meant
 * (the caller then asks the model).
 */
export async function answerLocally(
  utterance: string,
  host: ToolHost,
  signal?: AbortSignal,
): Promise<LocalAnswer | undefined> {
  const intent = recognise(await normalise(utterance));
  if (intent === undefined || !host.has(intent.tool)) return undefined;
  const result = await host.call(intent.tool, intent.args, signal === undefined ? {} : { signal });
  if (result.isError === true && intent.errorMeansNoMatch === true) return undefined;
  const reply = result.isError === true || intent.reply === undefined ? resultText(result) : intent.reply(result);
  return { reply, tool_calls: [toolCallRecord(intent.tool, intent.args, result)] };
}
