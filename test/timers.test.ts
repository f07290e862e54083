import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DateTime } from 'luxon';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../src/log.js';
import type { TimerState } from '../tools/timers.js';
import { parseDuration, parseWhen } from '../tools/timers/when.js';
import { nativeHost, text } from './helpers/tools.js';
import { tempDir } from './helpers/tmp.js';

const ZONE = 'Europe/Berlin';
/** Friday 2026-11-20 18:00 in Berlin. */
const FRIDAY_6PM = DateTime.fromISO('2026-11-20T18:00', { zone: ZONE });

afterEach(() => vi.useRealTimers());

describe('parsing durations and times', () => {
  it.each([
    ['10m', 600], ['10 minutes', 600], ['1h30m', 5400], ['1 hour and 30 minutes', 5400], ['90s', 90],
    ['PT10M', 600], ['pt1h', 3600], [90, 90], ['45', 45], ['2.5 hours', 9000], ['2 and a half hours', 9000], ['for 5 min', 300],
  ])('%s → %i s', (input, seconds) => {
    expect(parseDuration(input)).toBe(seconds);
  });

  it.each([['soon'], ['0s'], ['-5m'], ['40 days'], ['']])('refuses %s', (input) => {
    expect(typeof parseDuration(input)).toBe('string');
  });

  it.each([
    ['in 20 minutes', '2026-11-20T18:20:00.000+01:00', undefined],
    ['tomorrow at 7am', '2026-11-21T07:00:00.000+01:00', undefined],
    ['7:30', '2026-11-21T07:30:00.000+01:00', undefined],
    ['8 pm', '2026-11-20T20:00:00.000+01:00', undefined],
    ['2026-12-24T18:00', '2026-12-24T18:00:00.000+01:00', undefined],
    ['every weekday at 7:00', '2026-11-23T07:00:00.000+01:00', '0 7 * * 1-5'],
    ['every monday and thursday at 18:30', '2026-11-23T18:30:00.000+01:00', '30 18 * * 1,4'],
    ['every day at 6pm', '2026-11-21T18:00:00.000+01:00', '0 18 * * *'],
    ['weekends at 9', '2026-11-21T09:00:00.000+01:00', '0 9 * * 0,6'],
    ['0 7 * * 1-5', '2026-11-23T07:00:00.000+01:00', '0 7 * * 1-5'],
  ])('%s → %s', (input, due, cron) => {
    const when = parseWhen(input, FRIDAY_6PM);
    if (typeof when === 'string') throw new Error(when);
    expect(when.due.toISO()).toBe(due);
    expect(when.cron).toBe(cron);
  });

  it('refuses times that passed or cannot be read', () => {
    expect(parseWhen('2026-01-01T10:00', FRIDAY_6PM)).toBe('10:00 AM on January 1, 2026 has already passed; I can only remind you of something still to come.');
    expect(parseWhen('yesterday at 5pm', FRIDAY_6PM)).toBe('5:00 PM yesterday has already passed; I can only remind you of something still to come.');
    expect(parseWhen('blorp', FRIDAY_6PM)).toMatch(/Cannot read the time/);
    expect(parseWhen('every blue moon at 7', FRIDAY_6PM)).toMatch(/Cannot read the repeat/);
  });

  it('keeps recurring times on the wall clock across a DST change', () => {
    const saturday = DateTime.fromISO('2026-10-24T08:00', { zone: ZONE }); // clocks go back on the 25th
    const when = parseWhen('every day at 7:00', saturday);
    if (typeof when === 'string') throw new Error(when);
    expect(when.due.toISO()).toBe('2026-10-25T07:00:00.000+01:00');
  });
});

describe('timer tools', () => {
  it('sets, lists and cancels, persisting every change', async () => {
    const dir = tempDir();
    const { host } = nativeHost(dir, { now: () => FRIDAY_6PM.toMillis() });
    expect(text(await host.call('set_timer', { duration: '10m', label: 'tea' }))).toBe('Tea timer set for 10 minutes.');
    expect(text(await host.call('set_reminder', { at: 'tomorrow at 7am', text: 'to water the plants' })))
      .toBe("OK, I'll remind you to water the plants at 7:00 AM tomorrow.");
    expect(text(await host.call('set_reminder', { at: 'every weekday at 7:00', text: 'stretch' })))
      .toBe("OK, I'll remind you to stretch every weekday at 7:00, starting at 7:00 AM on Monday.");
    const listed = await host.call('list_timers', {});
    expect(text(listed)).toBe('You have 3: a tea timer (#1) with 10 minutes left; a reminder (#2) to water the plants at 7:00 AM tomorrow; '
      + 'a reminder (#3) to stretch every weekday at 7:00, next at 7:00 AM on Monday.');
    const state = JSON.parse(readFileSync(join(dir, 'timers.json'), 'utf8')) as TimerState;
    expect(state.timers.map((t) => t.id)).toEqual(['1', '2', '3']);
    expect(state.timers[2]).toMatchObject({ cron: '0 7 * * 1-5', repeat: 'every weekday at 7:00' });

    // One of several, asked by the model: held for a yes; typed by the person: done at once.
    expect((await host.call('cancel_timer', { id: 'tea' })).pending?.question).toBe('Cancel the tea timer? You have 3. Say yes or no.');
    expect((await host.call('cancel_timer', { id: 'all' })).pending?.question).toBe('Cancel all 3 timers and reminders? Say yes or no.');
    expect(text(await host.call('cancel_timer', { id: 'tea' }, { origin: 'typed' }))).toBe('Cancelled the timer "tea".');
    expect((await host.call('cancel_timer', { id: '#2' }, { origin: 'spoken' })).pending?.question).toBe('Cancel the reminder to water the plants? You have 2. Say yes or no.');
    expect(text(await host.call('cancel_timer', { id: '#2' }, { origin: 'typed' }))).toBe('Cancelled the reminder "water the plants".');
    const none = await host.call('cancel_timer', { id: 'pasta' }); // nothing to lose: not asked, the error says why
    expect(none.isError).toBe(true);
    expect(text(none)).toBe('No timer matches "pasta". #3 stretch');
    expect(text(await host.call('cancel_timer', {}))).toBe('Cancelled the reminder "stretch".');
    expect(text(await host.call('list_timers', {}))).toBe('You have no timers or reminders.');
  });

  it('rejects bad durations and times without saving anything', async () => {
    const dir = tempDir();
    const { host } = nativeHost(dir);
    expect((await host.call('set_timer', { duration: 'a while' })).isError).toBe(true);
    expect((await host.call('set_reminder', { at: 'blorp', text: 'x' })).isError).toBe(true);
    expect((await host.call('set_timer', {})).isError).toBe(true);
    expect(existsSync(join(dir, 'timers.json'))).toBe(false);
  });

  it('a timer started tells its room (a notice, not a sentence to parse); a reminder says its time and refuses a past one as typed results', async () => {
    const { host, noticed } = nativeHost(tempDir(), { now: () => FRIDAY_6PM.toMillis() });
    await host.call('set_timer', { duration: '90s', label: 'the eggs' }, { room: 'kitchen' });
    await host.call('set_timer', { duration: '10m' });
    await host.call('set_timer', { duration: 'a while' }, { room: 'kitchen' });
    expect(noticed).toEqual([
      { kind: 'timer-started', id: '1', seconds: 90, label: 'eggs', room: 'kitchen' },
      { kind: 'timer-started', id: '2', seconds: 600, label: '' },
    ]);
    const set = await host.call('set_reminder', { at: 'tomorrow at 7am', text: 'wake up' });
    expect(set.structuredContent).toMatchObject({ due_said: '7:00 AM tomorrow', timer: { id: '3', kind: 'reminder' } });
    const past = await host.call('set_reminder', { at: 'yesterday at 5pm', text: 'wake up' });
    expect(past).toMatchObject({ isError: true, structuredContent: { refused: true } });
    expect(text(past)).toBe('5:00 PM yesterday has already passed; I can only remind you of something still to come.');
    expect((await host.call('set_reminder', { at: 'blorp', text: 'x' })).structuredContent).toBeUndefined(); // unreadable: not refused
    expect(noticed).toHaveLength(2); // reminders are not timers a satellite counts down
  });

  it('fires a timer when due, announces it once and forgets it', async () => {
    vi.useFakeTimers({ now: FRIDAY_6PM.toMillis(), toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const dir = tempDir();
    const { host, announced, timers } = nativeHost(dir);
    await timers.start?.();
    await host.call('set_timer', { duration: '90s', label: 'eggs' });
    await vi.advanceTimersByTimeAsync(89_000);
    expect(announced).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_000);
    await vi.waitFor(() => expect(announced).toHaveLength(1));
    expect(announced[0]).toMatchObject({ kind: 'timer', text: 'Your eggs timer is done.', id: '1', due: '2026-11-20T18:01:30.000+01:00' });
    await timers.stop?.();
    expect((JSON.parse(readFileSync(join(dir, 'timers.json'), 'utf8')) as TimerState).timers).toEqual([]);
  });

  it('re-arms a recurring reminder for its next day after firing', async () => {
    vi.useFakeTimers({ now: FRIDAY_6PM.toMillis(), toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { host, announced, timers } = nativeHost(tempDir());
    await timers.start?.();
    await host.call('set_reminder', { at: 'every day at 18:05', text: 'feed the cat' });
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    await vi.waitFor(() => expect(announced).toHaveLength(1));
    expect(announced[0]?.text).toBe('Reminder: feed the cat.');
    const listed = await host.call('list_timers', {});
    expect(listed.structuredContent?.timers).toEqual([expect.objectContaining({ due: '2026-11-21T18:05:00.000+01:00' })]);
    await timers.stop?.();
  });

  it('arms waits longer than setTimeout allows in steps', async () => {
    vi.useFakeTimers({ now: FRIDAY_6PM.toMillis(), toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { host, announced, timers } = nativeHost(tempDir());
    await timers.start?.();
    await host.call('set_reminder', { at: 'in 30 days', text: 'renew the domain' });
    await vi.advanceTimersByTimeAsync(29 * 86_400_000);
    expect(announced).toEqual([]);
    await vi.advanceTimersByTimeAsync(86_400_000);
    await vi.waitFor(() => expect(announced).toHaveLength(1));
    await timers.stop?.();
  });

  it('after a restart reports what fell due while down, with its due time, and keeps the rest', async () => {
    const dir = tempDir();
    let now = FRIDAY_6PM.toMillis();
    const before = nativeHost(dir, { now: () => now });
    await before.host.call('set_timer', { duration: '5m', label: 'pizza' });
    await before.host.call('set_reminder', { at: 'every day at 18:30', text: 'walk the dog' });
    await before.host.call('set_reminder', { at: 'tomorrow at 9am', text: 'call mom' });

    now = FRIDAY_6PM.plus({ hours: 1 }).toMillis(); // down for an hour
    const after = nativeHost(dir, { now: () => now });
    await after.timers.start?.();
    expect(after.announced.map((a) => [a.kind, a.text])).toEqual([
      ['missed', 'While I was off, your pizza timer was due at 6:05 PM.'],
      ['missed', 'While I was off, your reminder to walk the dog was due at 6:30 PM.'],
    ]);
    const left = (await after.host.call('list_timers', {})).structuredContent?.timers as { label: string; due: string }[];
    expect(left.map((t) => [t.label, t.due])).toEqual([
      ['call mom', '2026-11-21T09:00:00.000+01:00'],
      ['walk the dog', '2026-11-21T18:30:00.000+01:00'],
    ]);
    await after.timers.stop?.();
  });

  it('moves a corrupt state file aside instead of overwriting it', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'timers.json'), '{"version":1,"timers":[{"id"');
    const { host } = nativeHost(dir);
    expect(text(await host.call('set_timer', { duration: '1m' }))).toBe('Timer set for 1 minute.');
    expect(readdirSync(dir).filter((f) => f.startsWith('timers.json.corrupt-'))).toHaveLength(1);
  });
});

describe('the timers file: versioned, checked, copied over safely', () => {
  const record = (id: string, label: string, due = '2030-01-01T12:00:00.000+01:00') => ({ id, kind: 'timer', label, created: due, due, duration_s: 600 });

  it('a file of another version is refused with a clear error and never overwritten', async () => {
    const dir = tempDir();
    const newer = `${JSON.stringify({ version: 2, next_id: 4, timers: [record('1', 'a'), record('2', 'b'), record('3', 'c')] })}\n`;
    writeFileSync(join(dir, 'timers.json'), newer);
    const { host } = nativeHost(dir);
    const set = await host.call('set_timer', { duration: '10m', label: 'tea' });
    expect(set.isError).toBe(true);
    expect(text(set)).toMatch(/timers\.json is version 2; this IRIS reads version 1\. It was left as it is/);
    expect(text(await host.call('list_timers', {}))).toMatch(/is version 2/);
    expect(readFileSync(join(dir, 'timers.json'), 'utf8')).toBe(newer);
  });

  it('bad entries are set aside and reported; the rest keep working', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'timers.json'), JSON.stringify({
      version: 1, next_id: 4, timers: [record('1', 'tea'), { ...record('2', 'x'), due: 'not a date' }, null, { ...record('3', 'y'), cron: 'every blue moon' }],
    }));
    const lines: string[] = [];
    const { host, timers } = nativeHost(dir, { log: createLogger('test', { write: (line) => lines.push(line) }) });
    await timers.start?.();
    expect(text(await host.call('list_timers', {}))).toMatch(/^You have one: a tea timer \(#1\)/);
    const aside = JSON.parse(readFileSync(join(dir, 'timers-set-aside.json'), 'utf8')) as { entries: { problem: string; entry: unknown }[] };
    expect(aside.entries.map((e) => e.problem)).toEqual([
      '"due" is not a date: "not a date"',
      'entry must be object',
      expect.stringMatching(/^"cron" is not a pattern: "every blue moon"/),
    ]);
    expect(lines.some((l) => /3 unusable entries in .*timers\.json moved to .*timers-set-aside\.json/.test(l))).toBe(true);
    expect((JSON.parse(readFileSync(join(dir, 'timers.json'), 'utf8')) as TimerState).timers.map((t) => t.id)).toEqual(['1']);
    expect(text(await host.call('set_timer', { duration: '5m', label: 'egg' }))).toBe('Egg timer set for 5 minutes.');
    await timers.stop?.();
  });

  it('a file being copied in place is waited for, not set aside as corrupt', async () => {
    const dir = tempDir();
    const backup = JSON.stringify({ version: 1, next_id: 4, timers: [record('1', 'a'), record('2', 'b'), record('3', 'c')] });
    let sawPartial: () => void = () => undefined;
    const partialRead = new Promise<void>((resolve) => (sawPartial = resolve));
    const log = createLogger('test', { level: 'debug', write: (line) => /not valid JSON yet/.test(line) && sawPartial() });
    const { host } = nativeHost(dir, { log });
    writeFileSync(join(dir, 'timers.json'), backup.slice(0, 40)); // cp has written the first block
    const listing = host.call('list_timers', {});
    await partialRead;
    appendFileSync(join(dir, 'timers.json'), backup.slice(40)); // … and the rest
    expect(text(await listing)).toMatch(/^You have 3:/);
    expect(readdirSync(dir).filter((f) => f.includes('corrupt'))).toEqual([]);
  });
});
