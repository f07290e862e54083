/**
 * How timers and reminders are said: durations, times relative to now, a record in a listing,
 * the announcement when one is due, and the question when several could be meant.
 */
import { DateTime, Duration } from 'luxon';
import type { Announcement } from '../../src/toolhost/api.js';
import type { TimerRecord } from './record.js';

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

/** The refusal of a time in the past. */
export const passedSentence = (due: DateTime, now: DateTime): string => `${describeTime(due, now)} has already passed; I can only remind you of something still to come.`;

export function describeRecord(t: TimerRecord, now: DateTime): string {
  const due = DateTime.fromISO(t.due, { zone: now.zone });
  if (t.kind === 'timer') {
    const name = t.label === '' ? 'a timer' : `${/^[aeiou]/i.test(t.label) ? 'an' : 'a'} ${t.label} timer`;
    return `${name} (#${t.id}) with ${describeDuration(due.diff(now).as('seconds'))} left`;
  }
  const when = t.repeat !== undefined ? `${t.repeat}, next at ${describeTime(due, now)}` : `at ${describeTime(due, now)}`;
  return `a reminder (#${t.id}) to ${t.label} ${when}`;
}

export function announcement(t: TimerRecord, missed: boolean, now: DateTime): Announcement {
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

export const capitalise = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/** "The tea or the pasta timer?"; with reminders or unnamed timers, each said whole. */
export function whichOne(timers: TimerRecord[]): string {
  const named = timers.every((t) => t.kind === 'timer' && t.label !== '');
  const names = timers.map((t) => (named ? `the ${t.label}` : describeOne(t)));
  const list = `${names.slice(0, -1).join(', ')} or ${names.at(-1) ?? ''}`;
  return `${capitalise(list)}${named ? ' timer' : ''}?`;
}

/** "the tea timer", "timer 3", "the reminder to call mom". */
export function describeOne(t: TimerRecord): string {
  if (t.kind === 'reminder') return `the reminder to ${t.label}`;
  return t.label === '' ? `timer ${t.id}` : `the ${t.label} timer`;
}
