/**
 * Timers and reminders, the tool module: set_timer, set_reminder (one-off or recurring),
 * list_timers, cancel_timer, and the storage and scheduling behind them. Every change is written
 * to the state dir atomically before it is confirmed; the daemon re-arms them at start and
 * reports any that fell due while it was down as missed, with their due time. A timer started
 * is told to the room it was set in as a notice (a satellite shows it); one due is announced.
 * Reading spoken times is in timers/when.ts, saying them in timers/words.ts.
 */
import { DateTime } from 'luxon';
import {
  errorResult,
  textResult,
  type CallToolResult,
  type ToolContext,
  type ToolModule,
  type ToolSet,
} from '../src/toolhost/api.js';
import { EMPTY, problemOf, stateProblem, type SetAside, type TimerRecord, type TimerState } from './timers/record.js';
import { nextOccurrence, parseDuration, readWhen } from './timers/when.js';
import { announcement, capitalise, describeDuration, describeOne, describeRecord, describeTime, passedSentence, whichOne } from './timers/words.js';

export type { TimerRecord, TimerState } from './timers/record.js';

/** set_reminder's `structuredContent`: the record, and its time as the reply says it ("7:00 AM tomorrow"), for a caller that words its own reply. */
export interface ReminderSet {
  timer: TimerRecord;
  due_said: string;
}

/** setTimeout's limit (ms); longer waits are armed in steps. */
const MAX_DELAY_MS = 2 ** 31 - 1;

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
    const problem = stateProblem(stored);
    if (problem !== undefined) throw new Error(`${store.path} is not a timers document (${problem}); it was left as it is`);
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
          context.notify({ kind: 'timer-started', id: t.id, seconds, label, ...(room === undefined ? {} : { room }) });
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
          const when = readWhen(String(args.at), at);
          if (typeof when === 'string') return errorResult(when);
          // A time in the past was understood and is refused: `refused` tells the local path to
          // say so rather than pass the request on as something it could not read.
          if ('passed' in when) return { ...errorResult(passedSentence(when.passed, at)), structuredContent: { refused: true } };
          const record: Omit<TimerRecord, 'id' | 'created'> = { kind: 'reminder', label: text, due: when.due.toISO() ?? '' };
          if (when.cron !== undefined) record.cron = when.cron;
          if (when.repeat !== undefined) record.repeat = when.repeat;
          if (room !== undefined) record.room = room;
          const t = await add(record);
          const dueSaid = describeTime(when.due, at);
          const timing = when.repeat !== undefined ? `${when.repeat}, starting at ${dueSaid}` : `at ${dueSaid}`;
          const set: ReminderSet = { timer: t, due_said: dueSaid };
          return textResult(`OK, I'll remind you to ${text} ${timing}.`, { ...set });
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
            if (wanted === '' && draft.timers.length > 1) return askWhich(draft.timers);
            const matches = matching(draft.timers, wanted);
            // "cancel the timer" with a reminder pending too: only the timers are meant.
            if (matches.length > 1 && isKind(draft.timers, wanted)) return askWhich(matches);
            if (matches.length === 0 && isKind(draft.timers, wanted) && draft.timers.length > 0) {
              return errorResult(`You have no ${wanted}s, only ${draft.timers.map(describeOne).join(', ')}.`);
            }
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

/** "The tea or the pasta timer?": nothing is cancelled; `choices` let the next words answer it. */
const askWhich = (among: TimerRecord[]): CallToolResult => ({
  ...errorResult(whichOne(among)),
  structuredContent: { refused: true, choices: among.map((t) => ({ id: String(t.id), label: describeOne(t) })) },
});
export default timers;

/** The `id` argument of cancel_timer as compared: "#3" → "3", a label in lower case, or "all". */
const wantedId = (args: Record<string, unknown>): string => (typeof args.id === 'string' ? args.id : '').trim().replace(/^#/, '').toLowerCase();

/** "timer" or "reminder" said for a kind ("cancel the timer"), not as some record's label. */
const isKind = (timers: TimerRecord[], wanted: string): boolean =>
  (wanted === 'timer' || wanted === 'reminder') && !timers.some((t) => t.label.toLowerCase() === wanted);

/** The records `wanted` names: all, the only one (no id), those of a kind, or those with that id or label. */
function matching(timers: TimerRecord[], wanted: string): TimerRecord[] {
  if (wanted === 'all') return timers;
  if (wanted === '') return timers.length === 1 ? timers : [];
  if (isKind(timers, wanted)) return timers.filter((t) => t.kind === wanted);
  return timers.filter((t) => t.id === wanted || t.label.toLowerCase() === wanted);
}
