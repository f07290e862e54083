import { describe, expect, it } from 'vitest';
import { resolvePlace } from '../tools/time.js';
import { nativeHost, text } from './helpers/tools.js';
import { tempDir } from './helpers/tmp.js';

// 2026-07-01 12:00 UTC: summer time in Berlin and New York.
const NOON_UTC = Date.UTC(2026, 6, 1, 12, 0);

describe('get_current_time', () => {
  const host = () => nativeHost(tempDir(), { now: () => NOON_UTC }).host;

  it('tells the home time by default', async () => {
    const result = await host().call('get_current_time', {});
    expect(text(result)).toBe("It's 2:00 PM on Wednesday, July 1.");
    expect(result.structuredContent).toMatchObject({ zone: 'Europe/Berlin', utc_offset: '+02:00' });
  });

  it.each([
    ['Asia/Tokyo', "It's 9:00 PM on Wednesday, July 1 in Tokyo."],
    ['asia/tokyo', "It's 9:00 PM on Wednesday, July 1 in Tokyo."],
    ['Tokyo', "It's 9:00 PM on Wednesday, July 1 in Tokyo."],
    ['New York', "It's 8:00 AM on Wednesday, July 1 in New York."],
    ['new_york', "It's 8:00 AM on Wednesday, July 1 in New York."],
    ['Japan', "It's 9:00 PM on Wednesday, July 1 in Japan."],
    ['Paris', "It's 2:00 PM on Wednesday, July 1 in Paris."],
    ['Mumbai', "It's 5:30 PM on Wednesday, July 1 in Mumbai."],
    ['São Paulo', "It's 9:00 AM on Wednesday, July 1 in Sao Paulo."],
    ['UK', "It's 1:00 PM on Wednesday, July 1 in United Kingdom."],
    ['UTC', "It's 12:00 PM on Wednesday, July 1 in UTC."],
    // Two zones (Berlin, and Büsingen on Zurich's clock) that show the same time: either answers.
    ['germany', "It's 2:00 PM on Wednesday, July 1 in Germany."],
  ])('resolves %s', async (timezone, expected) => {
    expect(text(await host().call('get_current_time', { timezone }))).toBe(expected);
  });

  it('asks for a city when a country has several zones, and rejects unknown places', async () => {
    const usa = await host().call('get_current_time', { timezone: 'United States' });
    expect(usa.isError).toBe(true);
    expect(text(usa)).toMatch(/^United States has \d+ time zones; name a city/);
    const nowhere = await host().call('get_current_time', { timezone: 'Atlantis' });
    expect(text(nowhere)).toBe('I don\'t know the place or time zone "Atlantis". Use an IANA zone like "Asia/Tokyo" or a city name.');
  });

  it('maps zone names, cities and home', async () => {
    expect(await resolvePlace('los angeles', 'UTC')).toEqual({ zone: 'America/Los_Angeles', name: 'Los Angeles' });
    expect(await resolvePlace('America/Argentina/Buenos_Aires', 'UTC')).toEqual({ zone: 'America/Buenos_Aires', name: 'Buenos Aires' });
    expect(await resolvePlace('', 'Europe/Berlin')).toEqual({ zone: 'Europe/Berlin', name: '' });
  });
});
