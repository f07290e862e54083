/**
 * Reading what people and models say about time: a timer's duration ("10m", "1h30m", "PT90S",
 * seconds) and a reminder's time ("in 20 minutes", "tomorrow at 7am", "every weekday at 7:00",
 * a cron pattern), in the home zone (luxon, chrono; croner for the next occurrence across DST).
 * What cannot be read is a sentence saying how to say it.
 */
import * as chrono from 'chrono-node';
import { Cron } from 'croner';
import { DateTime, Duration } from 'luxon';
import parseDurationText from 'parse-duration';
import { passedSentence } from './words.js';

/** Longest timer: beyond a month, a reminder with a date says it better. */
const MAX_TIMER_S = 31 * 24 * 3600;

/** "10m", "1h30m", "ten minutes" (already digits), "PT90S", 90 (seconds) → seconds. */
export function parseDuration(input: string | number): number | string {
  let seconds: number | null | undefined;
  if (typeof input === 'number') seconds = input;
  else {
    const text = input.trim().replace(/^(in|for)\s+/i, '');
    if (/^\d+(\.\d+)?$/.test(text)) seconds = Number(text);
    else if (/^P/i.test(text)) seconds = Duration.fromISO(text.toUpperCase()).as('seconds');
    else seconds = parseDurationText(text.replace(/(\d+) and a half\b/i, '$1.5').replace(/\band\b|,/g, ' '), 's');
  }
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) {
    return `Cannot read the duration "${String(input)}"; use e.g. "10m", "1h30m" or a number of seconds.`;
  }
  if (seconds < 1) return 'A timer must run for at least one second.';
  if (seconds > MAX_TIMER_S) return 'That is longer than a month; set a reminder with a date instead.';
  return Math.round(seconds);
}

const DAYS: Record<string, string> = {
  sunday: '0', monday: '1', tuesday: '2', wednesday: '3', thursday: '4', friday: '5', saturday: '6',
};

export interface When {
  due: DateTime;
  /** Recurring: the 5-field cron pattern in the home zone, and how it was said. */
  cron?: string;
  repeat?: string;
}

/** A time understood and already past: refused as such, not as something unreadable. */
export interface Passed {
  passed: DateTime;
}

/**
 * When a reminder is due: "in 20 minutes", "tomorrow at 7am", "2026-12-24T18:00", "7:30",
 * "every weekday at 7:00", "every monday and friday at 18:30", or a cron pattern; `Passed`
 * for a time already gone; a sentence when it cannot be read.
 */
export function readWhen(input: string, now: DateTime): When | Passed | string {
  const text = input.trim();
  if (text.length === 0 || text.length > 120) return 'Say when, e.g. "in 20 minutes" or "tomorrow at 7am".';
  const relative = /^in\s+(.+)$/i.exec(text);
  if (relative?.[1] !== undefined) {
    const seconds = parseDuration(relative[1]);
    return typeof seconds === 'string' ? seconds : { due: now.plus({ seconds }) };
  }
  const cron = /^[\d*/,-]+(\s+[\d*/,-]+){4}$/.test(text) ? text : recurringToCron(text, now);
  if (typeof cron === 'string' && cron !== '') return nextOccurrence(cron, now, text);
  if (cron === undefined) return cronProblem(text);
  const iso = DateTime.fromISO(text, { zone: now.zone });
  if (iso.isValid) return iso > now ? { due: iso } : { passed: iso };
  const parsed = chrono.parse(text, { instant: now.toJSDate(), timezone: now.offset }, { forwardDate: true })[0];
  if (parsed === undefined) return `Cannot read the time "${text}"; use e.g. "tomorrow at 7am" or "in 20 minutes".`;
  const c = parsed.start;
  const due = DateTime.fromObject(
    {
      year: c.get('year') ?? now.year,
      month: c.get('month') ?? now.month,
      day: c.get('day') ?? now.day,
      hour: c.get('hour') ?? 9,
      minute: c.get('minute') ?? 0,
      second: c.get('second') ?? 0,
    },
    { zone: now.zone },
  );
  if (!due.isValid) return `Cannot read the time "${text}".`;
  return due > now ? { due } : { passed: due };
}

/** `readWhen` with a time in the past said as its refusal. */
export function parseWhen(input: string, now: DateTime): When | string {
  const when = readWhen(input, now);
  return typeof when !== 'string' && 'passed' in when ? passedSentence(when.passed, now) : when;
}

/** "every weekday at 7:00" → "0 7 * * 1-5"; '' when not a recurring phrase; undefined when unreadable. */
function recurringToCron(text: string, now: DateTime): string | undefined {
  const match = /^(?:every|each)\s+(.+?)\s+at\s+(.+)$/i.exec(text) ?? /^(daily|weekdays|weekends)\s+at\s+(.+)$/i.exec(text);
  if (match?.[1] === undefined || match[2] === undefined) return /^(every|each|daily)\b/i.test(text) ? undefined : '';
  const days = match[1].toLowerCase();
  let dow: string | undefined;
  if (/^(day|daily|morning|evening|night)$/.test(days)) dow = '*';
  else if (/^week ?days?$/.test(days)) dow = '1-5';
  else if (/^week ?ends?$/.test(days)) dow = '0,6';
  else {
    const names = days.split(/\s*(?:,|\band\b)\s*/).filter(Boolean).map((d) => DAYS[d.replace(/s$/, '')]);
    if (names.length > 0 && names.every((d) => d !== undefined)) dow = names.join(',');
  }
  const time = chrono.parse(`at ${match[2]}`, { instant: now.toJSDate(), timezone: now.offset })[0]?.start;
  if (dow === undefined || time === undefined || !time.isCertain('hour')) return undefined;
  return `${time.get('minute') ?? 0} ${time.get('hour') ?? 0} * * ${dow}`;
}

function cronProblem(text: string): string {
  return `Cannot read the repeat "${text}"; say e.g. "every weekday at 7:00" or "every monday and friday at 18:30".`;
}

/** The next time a cron pattern falls due after `after`, in its zone. */
export function nextOccurrence(pattern: string, after: DateTime, said: string): When | string {
  try {
    const next = new Cron(pattern, { timezone: after.zoneName ?? 'UTC', paused: true }).nextRun(after.toJSDate());
    if (next === null) return cronProblem(said);
    return { due: DateTime.fromJSDate(next, { zone: after.zone }), cron: pattern, repeat: said };
  } catch {
    return cronProblem(said);
  }
}
