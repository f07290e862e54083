import { describe, expect, it } from 'vitest';
import { answerLocally, normalise } from '../src/conversation/local.js';
import { nativeHost } from './helpers/tools.js';
import { tempDir } from './helpers/tmp.js';

// Friday 2026-11-20 14:04 UTC (15:04 in Berlin).
const NOW = Date.UTC(2026, 10, 20, 14, 4);

function setup() {
  return nativeHost(tempDir(), { now: () => NOW }).host;
}

describe('normalise', () => {
  it.each([
    ['Hey Jarvis, set a timer for ten minutes.', 'hey jarvis set a timer for 10 minutes'],
    ['Could you please set a timer for ninety seconds?', 'could you please set a timer for 90 seconds'],
    ['What is seventeen percent of two thousand three hundred forty?', 'what is 17 percent of 2340'],
    ['set a timer for an hour', 'set a timer for 1 hour'],
    ['set a timer for half an hour please', 'set a timer for 30 minutes please'],
    ['What’s the time in Tokyo right now?', "what's the time in tokyo right now"],
    ["um, what's three point five times four", "um what's 3.5 times 4"],
    ['What time is it in São Paulo?', 'what time is it in sao paulo'],
    ['Zürich, Montréal, Kraków', 'zurich montreal krakow'],
  ])('%s → %s', async (input, expected) => {
    expect(await normalise(input)).toBe(expected);
  });
});

describe('the local path', () => {
  it.each([
    ['what time is it in Tokyo', "It's 11:04 PM in Tokyo.", 'get_current_time'],
    ["What's the time in New York?", "It's 9:04 AM in New York.", 'get_current_time'],
    ['what time is it', "It's 3:04 PM.", 'get_current_time'],
    ['hey jarvis what time is it', "It's 3:04 PM.", 'get_current_time'],
    ['what day is it today', "It's Friday, November 20.", 'get_current_time'],
    ['what is 17% of 2,340', "That's 397.8.", 'calculator'],
    ['what is seventeen percent of two thousand three hundred forty', "That's 397.8.", 'calculator'],
    ["what's 12 times 12", "That's 144.", 'calculator'],
    ['how much is 5 miles in km', "That's 8.04672 km.", 'calculator'],
    ['calculate the square root of 144', "That's 12.", 'calculator'],
    ['set a timer for ten minutes', 'Timer set for 10 minutes.', 'set_timer'],
    ['Hey Jarvis, set a timer for 1 minute and 30 seconds', 'Timer set for 1 minute and 30 seconds.', 'set_timer'],
    ['set a pasta timer for 8 minutes', 'Pasta timer set for 8 minutes.', 'set_timer'],
    ['start a 5 minute timer', 'Timer set for 5 minutes.', 'set_timer'],
    ['set a timer for 20 minutes called laundry', 'Laundry timer set for 20 minutes.', 'set_timer'],
    ['remind me to call mom at 7 pm', "OK, I'll remind you to call mom at 7:00 PM.", 'set_reminder'],
    ['remind me in 20 minutes to check the oven', "OK, I'll remind you to check the oven at 3:24 PM.", 'set_reminder'],
    // Place names with accents and in other spellings (the tool knows both forms).
    ['what time is it in São Paulo', "It's 11:04 AM in Sao Paulo.", 'get_current_time'],
    ['what time is it in Sao Paulo', "It's 11:04 AM in Sao Paulo.", 'get_current_time'],
    ['what time is it in Zürich', "It's 3:04 PM in Zurich.", 'get_current_time'],
    ['what time is it in Zurich', "It's 3:04 PM in Zurich.", 'get_current_time'],
    ["what's the time in Montréal", "It's 9:04 AM in Montréal.", 'get_current_time'],
    ['what time is it in Kraków', "It's 3:04 PM in Kraków.", 'get_current_time'],
    // Alarms: reminders at a clock time.
    ['set an alarm for 7am', 'Alarm set for 7:00 AM tomorrow.', 'set_reminder'],
    ['wake me up at 6:30 tomorrow', 'Alarm set for 6:30 AM tomorrow.', 'set_reminder'],
    ['wake me up at 6:30 pm', 'Alarm set for 6:30 PM.', 'set_reminder'],
    // A timer's name without its article.
    ['set a timer for 90 seconds for the eggs', 'Eggs timer set for 1 minute and 30 seconds.', 'set_timer'],
    ['remind me to take out the bins every monday at 7:00', "OK, I'll remind you to take out the bins every monday at 7:00, starting at 7:00 AM on Monday.", 'set_reminder'],
  ])('%s', async (utterance, reply, tool) => {
    const answer = await answerLocally(utterance, setup());
    expect(answer?.reply).toBe(reply);
    expect(answer?.tool_calls.map((c) => c.name)).toEqual([tool]);
  });

  it('lists and cancels timers by label', async () => {
    const host = setup();
    await answerLocally('set a tea timer for 3 minutes', host);
    expect((await answerLocally('what timers do I have', host))?.reply).toBe('You have one: a tea timer (#1) with 3 minutes left.');
    expect((await answerLocally('cancel the tea timer', host))?.reply).toBe('Cancelled the timer "tea".');
    expect((await answerLocally('cancel the timer', host))?.reply).toBe('There are no timers or reminders.');
  });

  it('says how long one named timer has left', async () => {
    const host = setup();
    await answerLocally('set a pizza timer for 12 minutes', host);
    await answerLocally('set a tea timer for 3 minutes', host);
    expect((await answerLocally('how long until my pizza timer ends', host))?.reply).toBe('The pizza timer has 12 minutes left.');
    expect((await answerLocally('how much time is left on the tea timer', host))?.reply).toBe('The tea timer has 3 minutes left.');
    expect((await answerLocally('how long until my rice timer is done', host))?.reply).toMatch(/^You have no rice timer\. You have 2: a tea timer/);
  });

  it('lists a timer named with an article by its name', async () => {
    const host = setup();
    await answerLocally('set a timer for 90 seconds for the eggs', host);
    expect((await answerLocally('what timers do I have', host))?.reply).toBe('You have one: an eggs timer (#1) with 1 minute and 30 seconds left.');
    expect((await answerLocally('cancel the eggs timer', host))?.reply).toBe('Cancelled the timer "eggs".');
  });

  it('refuses a reminder in the past, says so and stores nothing', async () => {
    const dir = tempDir();
    const { host } = nativeHost(dir, { now: () => NOW });
    const answer = await answerLocally('remind me yesterday at 5pm to pay rent', host);
    expect(answer?.reply).toBe('5:00 PM yesterday has already passed; I can only remind you of something still to come.');
    expect(answer?.tool_calls[0]?.arguments).toEqual({ at: 'yesterday at 5pm', text: 'pay rent' });
    expect((await answerLocally('what timers do I have', host))?.reply).toBe('You have no timers or reminders.');
    expect((await answerLocally('wake me up at 9am today', host))?.reply).toMatch(/^9:00 AM has already passed/);
  });

  it('asks which timer an unclear cancel means, and cancels nothing', async () => {
    const host = setup();
    await answerLocally('set a tea timer for 3 minutes', host);
    await answerLocally('set a pasta timer for 8 minutes', host);
    expect((await answerLocally('cancel the timer', host))?.reply).toBe('The tea or the pasta timer?');
    expect((await answerLocally('what timers do I have', host))?.reply).toMatch(/^You have 2: a tea timer .* a pasta timer/);
    await answerLocally('remind me in 20 minutes to check the oven', host);
    // "the timer" means the timers: the reminder is not offered, and nothing is cancelled.
    expect((await answerLocally('stop the timer', host))?.reply).toBe('The tea or the pasta timer?');
    expect((await answerLocally('what timers do I have', host))?.reply).toMatch(/^You have 3:/);
  });

  it('cancels the one timer "the timer" means when a reminder is pending too, and says when there is no timer', async () => {
    const host = setup();
    await answerLocally('remind me in 20 minutes to check the oven', host);
    expect((await answerLocally('cancel the timer', host))?.reply).toBe('You have no timers, only the reminder to check the oven.');
    await answerLocally('set a tea timer for 3 minutes', host);
    expect((await answerLocally('cancel the timer', host))?.reply).toBe('Cancelled the timer "tea".');
    expect((await answerLocally('what timers do I have', host))?.reply).toMatch(/^You have one: a reminder .*check the oven/);
  });

  // A false match is worse than none: these must reach the model.
  it.each([
    'what is the capital of France',
    'what is love',
    'what time does the bakery open',
    'what time is the match in Tokyo tomorrow',
    'time flies like an arrow',
    'set a timer for the pasta',
    'remind me about the meeting',
    'remind me to call mom',
    'how many people live in Tokyo',
    'what is 5 euros in dollars',
    'play route 66',
    'tell me a joke about 42',
    'what time is it in Atlantis',
    'turn off the lights in 10 minutes',
    'one',
    '42',
    'what is 7',
  ])('leaves "%s" to the model', async (utterance) => {
    expect(await answerLocally(utterance, setup())).toBeUndefined();
  });

  it('does not use a tool that is switched off', async () => {
    const { host } = nativeHost(tempDir());
    host.setEnabled((toggle) => toggle !== 'calculator');
    expect(await answerLocally('what is 2 plus 2', host)).toBeUndefined();
  });
});
