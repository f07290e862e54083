/**
 * A timer or reminder as stored in the state dir (`timers.json`), and the checks every stored
 * entry passes before it is used: one bad entry never spins the daemon or breaks a listing.
 */
import { Ajv } from 'ajv';
import { Cron } from 'croner';
import { DateTime } from 'luxon';

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
export interface SetAside {
  version: 1;
  entries: { set_aside: string; problem: string; entry: unknown }[];
}

export const EMPTY: TimerState = { version: 1, next_id: 1, timers: [] };

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

/** Why a stored document is not a timers document, or undefined when it is one. */
export function stateProblem(stored: unknown): string | undefined {
  return validState(stored) ? undefined : ajv.errorsText(validState.errors, { dataVar: 'file' });
}

/** Why a stored entry cannot be used, or undefined: checked on every read. */
export function problemOf(entry: unknown): string | undefined {
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
