/**
 * Timers and reminders: set_timer, set_reminder (one-off or recurring), list_timers,
 * cancel_timer. Every change is written to the state dir atomically before it is confirmed;
 * the daemon re-arms them at start and reports any that fell due while it was down as
 * missed, with their due time. Times are in the home zone (luxon); recurring reminders are
 * cron patterns (croner computes the next occurrence, in the zone, across DST).
 */
import { Ajv } from 'ajv';
import * as chrono from 'chrono-node';
import { Cron } from 'croner';
import { DateTime, Duration } from 'luxon';
import parseDurationText from 'parse-duration';
import {
  errorResult,
  textResult,
  type Announcement,
  type ToolContext,
  type ToolModule,
  type ToolSet,
} from '../src/toolhost/api.js';

export interface TimerRecord {
  id: string;
  kind: 'timer' | 'reminder';
  /** A timer's label ("tea") or a reminder's text ("call mom"); may be empty for a timer. */
  label: string;
  created: string;
  /** The next time it is due, ISO 8601 with the home zone's offset. */
  due: string;
  duration_s?: number;
  /** Recurring reminders: a 5-field cron pattern in the home zone, and how it was said. */
  cron?: string;
  repeat?: string;
  /** The room it was set in (a satellite's name): it is said there. */
  room?: string;
}

export interface TimerState {
  version: 1;
  next_id: number;
  timers: TimerRecord[];
}

/** Entries taken out of timers.json because they could not be used, kept for a person to read. */
interface SetAside {
  version: 1;
  entries: { set_aside: string; problem: string; entry: unknown }[];
}

const ajv = new Ajv({ allErrors: true });
/** The document around the entries; anything else is not a timers file, and is left alone. */
const validState = ajv.compile({
  type: 'object',
  properties: { version: { const: 1 }, next_id: { type: 'integer', minimum: 1 }, timers: { type: 'array' } },
  required: ['version', 'next_id', 'timers'],
});
const validRecord = ajv.compile({
  type: 'object',
  properties: {
    id: { type: 'string', minLength: 1 },
    kind: { enum: ['timer', 'reminder'] },
    label: { type: 'string' },
    created: { type: 'string' },
    due: { type: 'string' },
    duration_s: { type: 'number' },
    cron: { type: 'string' },
    repeat: { type: 'string' },
    room: { type: 'string' },
  },
  required: ['id', 'kind', 'label', 'due'],
});

/** Why a stored entry cannot be used, or undefined: checked on every read, so one bad entry never spins the daemon or breaks a listing. */
function problemOf(entry: unknown): string | undefined {
  if (!validRecord(entry)) return ajv.errorsText(validRecord.errors, { dataVar: 'entry' });
  const record = entry as unknown as TimerRecord;
  if (!DateTime.fromISO(record.due).isValid) return `"due" is not a date: ${JSON.stringify(record.due)}`;
  if (record.cron !== undefined) {
    try {
      new Cron(record.cron);
    } catch (error) {
      return `"cron" is not a pattern: ${JSON.stringify(record.cron)} (${(error as Error).message})`;
    }
  }
  return undefined;
}

/** Longest timer: beyond a month, a reminder with a date says it better. */
const MAX_TIMER_S = 31 * 24 * 3600;
/** setTimeout's limit (ms); longer waits are armed in steps. */
const MAX_DELAY_MS = 2 ** 31 - 1;
const EMPTY: TimerState = { version: 1, next_id: 1, timers: [] };

// ---------------------------------------------------------------------------------------------
// Parsing what people and models say

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

type When = { due: DateTime; cron?: string; repeat?: string };

/**
 * When a reminder is due: "in 20 minutes", "tomorrow at 7am", "2026-12-24T18:00", "7:30",
 * "every weekday at 7:00", "every monday and friday at 18:30", or a cron pattern.
 */
export function parseWhen(input: string, now: DateTime): When | string {
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
  if (iso.isValid) return iso > now ? { due: iso } : passed(iso, now);
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
  return due > now ? { due } : passed(due, now);
}

/** The end of every refusal of a time in the past (set_reminder tells those apart). */
const PASSED = 'has already passed; I can only remind you of something still to come.';
const passed = (due: DateTime, now: DateTime): string => `${describeTime(due, now)} ${PASSED}`;

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

function nextOccurrence(pattern: string, after: DateTime, said: string): When | string {
  try {
    const next = new Cron(pattern, { timezone: after.zoneName ?? 'UTC', paused: true }).nextRun(after.toJSDate());
    if (next === null) return cronProblem(said);
    return { due: DateTime.fromJSDate(next, { zone: after.zone }), cron: pattern, repeat: said };
  } catch {
    return cronProblem(said);
  }
}

// ---------------------------------------------------------------------------------------------
// Saying it

export function describeDuration(seconds: number): string {
  const d = Duration.fromObject({ seconds: Math.max(0, Math.round(seconds)) }).shiftTo('days', 'hours', 'minutes', 'seconds');
  const parts = Object.fromEntries(Object.entries(d.toObject()).filter(([, v]) => v !== 0));
  return Object.keys(parts).length === 0 ? '0 seconds' : Duration.fromObject(parts).toHuman({ listStyle: 'long' });
}

export function describeTime(at: DateTime, now: DateTime): string {
  const clock = at.toFormat('h:mm a');
  const days = Math.round(at.startOf('day').diff(now.startOf('day'), 'days').days);
  if (days === 0) return clock;
  if (days === 1) return `${clock} tomorrow`;
  if (days === -1) return `${clock} yesterday`;
  if (days > 1 && days < 7) return `${clock} on ${at.toFormat('cccc')}`;
  if (days < 0) return `${clock} on ${at.toFormat('LLLL d, yyyy')}`;
  return `${clock} on ${at.toFormat('cccc, LLLL d')}`;
}

function describeRecord(t: TimerRecord, now: DateTime): string {
  const due = DateTime.fromISO(t.due, { zone: now.zone });
  if (t.kind === 'timer') {
    const name = t.label === '' ? 'a timer' : `${/^[aeiou]/i.test(t.label) ? 'an' : 'a'} ${t.label} timer`;
    return `${name} (#${t.id}) with ${describeDuration(due.diff(now).as('seconds'))} left`;
  }
  const when = t.repeat !== undefined ? `${t.repeat}, next at ${describeTime(due, now)}` : `at ${describeTime(due, now)}`;
  return `a reminder (#${t.id}) to ${t.label} ${when}`;
}

function announcement(t: TimerRecord, missed: boolean, now: DateTime): Announcement {
  const due = DateTime.fromISO(t.due, { zone: now.zone });
  const what = t.kind === 'timer'
    ? `your ${t.label === '' ? '' : `${t.label} `}timer`
    : `your reminder to ${t.label}`;
  const text = missed
    ? `While I was off, ${what} was due at ${describeTime(due, now)}.` // "5:00 PM yesterday", "… on November 19, 2026"
    : t.kind === 'timer'
      ? `${capitalise(what)} is done.`
      : `Reminder: ${t.label}.`;
  return { kind: missed ? 'missed' : t.kind, text, id: t.id, due: t.due, ...(t.room === undefined ? {} : { room: t.room }) };
}

const capitalise = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

// ---------------------------------------------------------------------------------------------
// The module: state, arming, tools

function createTimers(context: ToolContext): ToolSet {
  const store = context.store<TimerState>('timers', 1);
  const setAsideStore = context.store<SetAside>('timers-set-aside', 1);
  const now = (): DateTime => DateTime.fromMillis(context.now(), { zone: context.homeZone });
  let state: TimerState = EMPTY;
  let chain: Promise<unknown> = Promise.resolve();
  let armed: NodeJS.Timeout | undefined;
  let started = false;
  let unwatch: (() => void) | undefined;

  /** The stored document as usable state; a document of another shape is refused and left as it is. */
  const usable = (stored: TimerState | undefined): TimerState => {
    if (stored === undefined) return structuredClone(EMPTY);
    if (!validState(stored)) {
      throw new Error(`${store.path} is not a timers document (${ajv.errorsText(validState.errors, { dataVar: 'file' })}); it was left as it is`);
    }
    return stored;
  };
  const badEntries = (state: TimerState): { entry: unknown; problem: string }[] =>
    state.timers.flatMap((entry) => {
      const problem = problemOf(entry);
      return problem === undefined ? [] : [{ entry, problem }];
    });

  /** Inside the lock: move bad entries into timers-set-aside.json and say so. */
  async function withoutBadEntries(stored: TimerState | undefined): Promise<TimerState> {
    const draft = usable(stored);
    const bad = badEntries(draft);
    if (bad.length === 0) return draft;
    const at = now().toISO() ?? '';
    await setAsideStore.update((kept) => ({
      value: { version: 1, entries: [...(kept?.entries ?? []), ...bad.map(({ entry, problem }) => ({ set_aside: at, problem, entry }))] },
      result: undefined,
    }));
    context.log.error(`${bad.length} unusable entr${bad.length === 1 ? 'y' : 'ies'} in ${store.path} moved to ${setAsideStore.path}: ${bad.map((b) => b.problem).join('; ')}`);
    const entries = new Set(bad.map((b) => b.entry));
    return { ...draft, timers: draft.timers.filter((t) => !entries.has(t)) };
  }

  /** The current state, read fresh; bad entries are set aside first (under the lock). */
  async function load(): Promise<TimerState> {
    const stored = usable(await store.read());
    if (badEntries(stored).length === 0) return stored;
    return (await store.update(async (latest) => ({ value: await withoutBadEntries(latest), result: undefined }))).value;
  }

  /** Read, change and write under the cross-process lock, then re-arm: one change at a time. */
  function mutate<R>(change: (draft: TimerState) => R): Promise<R> {
    const run = chain.then(async () => {
      const { value, result } = await store.update(async (latest) => {
        const draft = await withoutBadEntries(latest);
        return { value: draft, result: change(draft) };
      });
      state = value;
      arm();
      return result;
    });
    chain = run.catch(() => undefined);
    return run;
  }

  /** Announce everything due and advance or drop it. */
  function fireDue(draft: TimerState, missed: boolean): number {
    const at = now();
    const due = draft.timers.filter((t) => DateTime.fromISO(t.due) <= at);
    for (const t of due) {
      context.announce(announcement(t, missed, at));
      if (t.cron !== undefined) {
        const next = nextOccurrence(t.cron, at, t.repeat ?? t.cron);
        if (typeof next !== 'string') t.due = next.due.toISO() ?? t.due;
      }
    }
    draft.timers = draft.timers.filter((t) => !due.includes(t) || (t.cron !== undefined && DateTime.fromISO(t.due) > at));
    return due.length;
  }

  function arm(): void {
    clearTimeout(armed);
    armed = undefined;
    if (!started || state.timers.length === 0) return;
    const next = Math.min(...state.timers.map((t) => DateTime.fromISO(t.due).toMillis()).filter(Number.isFinite));
    if (!Number.isFinite(next)) return;
    const delay = Math.min(Math.max(0, next - context.now()), MAX_DELAY_MS);
    armed = setTimeout(() => {
      mutate((draft) => fireDue(draft, false)).catch((error: unknown) =>
        context.log.error(`could not save timers after firing: ${String(error)}`),
      );
    }, delay);
  }

  async function sync(): Promise<void> {
    const run = chain.then(async () => {
      state = await load();
      arm();
    });
    chain = run.catch(() => undefined);
    await run;
  }

  async function add(record: Omit<TimerRecord, 'id' | 'created'>): Promise<TimerRecord> {
    return mutate((draft) => {
      const created: TimerRecord = { id: String(draft.next_id), created: now().toISO() ?? '', ...record };
      draft.next_id += 1;
      draft.timers.push(created);
      return created;
    });
  }

  return {
    tools: [
      {
        name: 'set_timer',
        description: 'Start a countdown timer.',
        inputSchema: {
          type: 'object',
          properties: {
            duration: { type: ['string', 'number'], description: '"10m", "1h30m" or seconds' },
            label: { type: 'string' },
          },
          required: ['duration'],
        },
        async run(args: Record<string, unknown>, { room }) {
          const seconds = parseDuration(args.duration as string | number);
          if (typeof seconds === 'string') return errorResult(seconds);
          // "the eggs" is named "eggs": an article is how the name was said, not part of it.
          const label = (typeof args.label === 'string' ? args.label : '').trim().replace(/\s*timer$/i, '').replace(/^(?:the|a|an|my)\s+/i, '').slice(0, 80);
          const t = await add({ kind: 'timer', label, due: now().plus({ seconds }).toISO() ?? '', duration_s: seconds, ...(room === undefined ? {} : { room }) });
          const name = label === '' ? 'Timer' : `${capitalise(label)} timer`;
          return textResult(`${name} set for ${describeDuration(seconds)}.`, { timer: t });
        },
      },
      {
        name: 'set_reminder',
        description: 'Set a reminder. at: "in 20 minutes", "tomorrow 7am", "every weekday at 7:00".',
        inputSchema: {
          type: 'object',
          properties: { at: { type: 'string' }, text: { type: 'string' } },
          required: ['at', 'text'],
        },
        async run(args: Record<string, unknown>, { room }) {
          const text = String(args.text).trim().replace(/^to\s+/i, '').replace(/[.!]+$/, '').slice(0, 200);
          if (text === '') return errorResult('Say what to remind about, in "text".');
          const at = now();
          const when = parseWhen(String(args.at), at);
          // A time in the past was understood and is refused: `refused` tells the local path to
          // say so rather than pass the request on as something it could not read.
          if (typeof when === 'string') return when.endsWith(PASSED) ? { ...errorResult(when), structuredContent: { refused: true } } : errorResult(when);
          const record: Omit<TimerRecord, 'id' | 'created'> = { kind: 'reminder', label: text, due: when.due.toISO() ?? '' };
          if (when.cron !== undefined) record.cron = when.cron;
          if (when.repeat !== undefined) record.repeat = when.repeat;
          if (room !== undefined) record.room = room;
          const t = await add(record);
          const timing = when.repeat !== undefined
            ? `${when.repeat}, starting at ${describeTime(when.due, at)}`
            : `at ${describeTime(when.due, at)}`;
          return textResult(`OK, I'll remind you to ${text} ${timing}.`, { timer: t });
        },
      },
      {
        name: 'list_timers',
        description: 'List pending timers and reminders.',
        inputSchema: { type: 'object', properties: {} },
        annotations: { readOnlyHint: true },
        async run() {
          await sync();
          const at = now();
          const timers = [...state.timers].sort((a, b) => a.due.localeCompare(b.due));
          const rows = timers.map((t) => ({
            ...t,
            remaining_s: Math.max(0, Math.round(DateTime.fromISO(t.due).diff(at).as('seconds'))),
          }));
          const text = timers.length === 0
            ? 'You have no timers or reminders.'
            : `You have ${timers.length === 1 ? 'one' : timers.length}: ${timers.map((t) => describeRecord(t, at)).join('; ')}.`;
          return textResult(text, { timers: rows });
        },
      },
      {
        name: 'cancel_timer',
        description: 'Cancel a timer or reminder by id or label, or "all".',
        inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
        annotations: { destructiveHint: true },
        /** Cancelling all, or one of several (a misheard or mistaken name must not take the wrong one), is asked first. */
        async confirm(args: Record<string, unknown>) {
          await sync();
          const count = state.timers.length;
          const wanted = wantedId(args);
          const matches = matching(state.timers, wanted);
          const only = matches[0];
          if (count === 0 || matches.length === 0) return undefined; // nothing to lose: the tool says so
          if (wanted === 'all') return { question: `Cancel all ${count === 1 ? 'one timer or reminder' : `${count} timers and reminders`}? Say yes or no.` };
          if (count === 1 || matches.length > 1 || only === undefined) return undefined;
          return { question: `Cancel ${describeOne(only)}? You have ${count}. Say yes or no.` };
        },
        async run(args: Record<string, unknown>) {
          const wanted = wantedId(args);
          return mutate((draft) => {
            // "cancel the timer" with several pending: ask which, cancel nothing.
            if (wanted === '' && draft.timers.length > 1) return { ...errorResult(whichOne(draft.timers)), structuredContent: { refused: true } };
            const matches = matching(draft.timers, wanted);
            if (matches.length === 0) {
              const which = draft.timers.length === 0 ? 'There are no timers or reminders' : `No timer matches "${wanted}"`;
              return errorResult(`${which}. ${draft.timers.map((t) => `#${t.id} ${t.label || t.kind}`).join(', ')}`.trim());
            }
            if (matches.length > 1 && wanted !== 'all') {
              return errorResult(`Several match "${wanted}": ${matches.map((t) => `#${t.id}`).join(', ')}. Give the id.`);
            }
            draft.timers = draft.timers.filter((t) => !matches.includes(t));
            const what = matches.length === 1 && matches[0] !== undefined
              ? `${matches[0].kind === 'timer' ? 'timer' : 'reminder'}${matches[0].label === '' ? '' : ` "${matches[0].label}"`}`
              : `${matches.length} timers and reminders`;
            return textResult(`Cancelled the ${what}.`, { cancelled: matches.map((t) => t.id) });
          });
        },
      },
    ],
    /** Report what fell due while down, then arm; follow changes other processes make. */
    async start() {
      started = true;
      try {
        const missed = await mutate((draft) => fireDue(draft, true));
        if (missed > 0) context.log.warn(`${missed} timer(s) fell due while IRIS was not running`);
      } catch (error) {
        // The daemon stays up; each timer request says the same until the file is sorted out.
        context.log.error(`timers unavailable: ${error instanceof Error ? error.message : String(error)}`);
      }
      unwatch = store.watch(() => {
        sync().catch((error: unknown) => context.log.error(`could not re-read timers: ${String(error)}`));
      });
      context.log.info(`${state.timers.length} timer(s) and reminder(s) armed`);
    },
    async stop() {
      started = false;
      unwatch?.();
      clearTimeout(armed);
      await chain;
    },
  };
}

const timers: ToolModule = { toggle: 'timers', create: createTimers };
export default timers;

/** The `id` argument of cancel_timer as compared: "#3" → "3", a label in lower case, or "all". */
const wantedId = (args: Record<string, unknown>): string => (typeof args.id === 'string' ? args.id : '').trim().replace(/^#/, '').toLowerCase();

/** The records `wanted` names: all, the only one (no id), or those with that id or label. */
function matching(timers: TimerRecord[], wanted: string): TimerRecord[] {
  if (wanted === 'all') return timers;
  if (wanted === '') return timers.length === 1 ? timers : [];
  return timers.filter((t) => t.id === wanted || t.label.toLowerCase() === wanted);
}

/** "The tea or the pasta timer?"; with reminders or unnamed timers, each said whole. */
function whichOne(timers: TimerRecord[]): string {
  const named = timers.every((t) => t.kind === 'timer' && t.label !== '');
  const names = timers.map((t) => (named ? `the ${t.label}` : describeOne(t)));
  const list = `${names.slice(0, -1).join(', ')} or ${names.at(-1) ?? ''}`;
  return `${capitalise(list)}${named ? ' timer' : ''}?`;
}

/** "the tea timer", "timer 3", "the reminder to call mom". */
function describeOne(t: TimerRecord): string {
  if (t.kind === 'reminder') return `the reminder to ${t.label}`;
  return t.label === '' ? `timer ${t.id}` : `the ${t.label} timer`;
}
