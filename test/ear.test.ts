// Text for the ear: sentences the way models write them, and what a voice is given to say.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { forTheEar } from '../src/pipeline/ear.js';

describe('text for the ear', () => {
  it.each([
    ['That costs $5.50 in total.', 'That costs 5 dollars 50 in total.'],
    ['Only $1 or €1, or £3.', 'Only 1 dollar or 1 euro, or 3 pounds.'],
    ['It was $0.99.', 'It was 99 cents.'],
    ['Revenue hit $2.5 million.', 'Revenue hit 2.5 million dollars.'],
    ['A $1,250 bill.', 'A 1250 dollars bill.'],
    ['The train leaves at 15:05.', 'The train leaves at 15 oh 5.'],
    ['Meet me at 3:45pm.', 'Meet me at 3 45 PM.'],
    ['Lunch is at 12:00 p.m. sharp.', 'Lunch is at 12 PM sharp.'],
    ['Wake at 7:00.', "Wake at 7 o'clock."],
    ['Dinner at 18:00.', 'Dinner at 18 hundred.'],
    ["It's 10°C outside, 50°F inside, and 30° in the shade.", "It's 10 degrees Celsius outside, 50 degrees Fahrenheit inside, and 30 degrees in the shade."],
    ['Bring fruit, e.g. apples, i.e. something sweet, etc.', 'Bring fruit, for example apples, that is something sweet, et cetera'],
    ['It is 5 km away and weighs 12 kg.', 'It is 5 kilometres away and weighs 12 kilograms.'],
    ['Drive at 100 km/h, or 60 mph.', 'Drive at 100 kilometres per hour, or 60 miles per hour.'],
    ['Add 500g of flour and 1 kg of sugar.', 'Add 500 grams of flour and 1 kilogram of sugar.'],
    ['The disk has 7 GB free, 512MB used.', 'The disk has 7 gigabytes free, 512 megabytes used.'],
    ['The release is on 2026-11-24.', 'The release is on November 24th, 2026.'],
    ['3 x 4 = 12', '3 times 4 equals 12'],
    ['We are #1, ~5 ahead.', 'We are number 1, about 5 ahead.'],
    ['Salt & pepper.', 'Salt and pepper.'],
    ['Dr. Smith vs. Dr. Jones', 'Doctor Smith versus Doctor Jones'],
    // Left alone: what espeak-ng already reads well, and what would be a guess.
    ['It is 50% done, the 1st of 3, with 1,234 items.', 'It is 50% done, the 1st of 3, with 1,234 items.'],
    ['Put 2 in the box, watch 5G, the 1990s, 4K video, at 3 PM.', 'Put 2 in the box, watch 5G, the 1990s, 4K video, at 3 PM.'],
    ['A 16:9 screen.', 'A 16:9 screen.'],
  ])('%s', (model, spoken) => {
    expect(forTheEar(model)).toBe(spoken);
  });

  it('espeak-ng then says money, times and units as words, not symbols', () => {
    const phonemes = (text: string) => execFileSync('espeak-ng', ['-q', '-x'], { input: text, encoding: 'utf8' }).trim();
    expect(phonemes(forTheEar('$5.50'))).toBe(phonemes('five dollars fifty'));
    expect(phonemes(forTheEar('15:05'))).toBe(phonemes('fifteen oh five'));
    expect(phonemes(forTheEar('5 km'))).toBe(phonemes('five kilometres'));
  });
});
