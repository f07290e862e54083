/**
 * The stop word's spotters (two pocketsphinx decoders, ~20 MB) exist only while IRIS plays
 * (stopword-lifecycle.ts): made on the first chunk the front end arms them for, so "stop" is
 * heard on the very first playback, and freed once nothing has played for a while.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { samplesSource } from '../src/pipeline/capture.js';
import { EchoReference } from '../src/pipeline/echo.js';
import { frontEnd } from '../src/pipeline/frontend.js';
import { StopWord } from '../src/pipeline/stopword.js';
import { StopWordWhilePlaying } from '../src/pipeline/stopword-lifecycle.js';
import { commandSamples, speechSamples } from './helpers/speech.js';

const RATE = 16_000;

describe('the stop word while IRIS plays', () => {
  afterEach(() => void vi.useRealTimers());

  it('has no spotters while nothing plays, makes them for the first playback and hears "stop" in it, and frees them when idle', async () => {
    const stopWord = new StopWordWhilePlaying(await StopWord.prepare(), { idleMs: 300 });
    const played = speechSamples('The weather today is sunny with a high of twenty two degrees. Tomorrow brings some clouds.', { padS: [0.2, 0.2] });
    const playAtS = 3;
    const reference = new EchoReference(30);
    reference.write(played, playAtS * RATE);
    const stop = commandSamples('stop', { padS: [0, 0] });
    const mic = new Int16Array(Math.round((playAtS + played.length / RATE + 3) * RATE));
    mic.set(stop, RATE); // said while nothing plays: not listened for
    const saidAtS = playAtS + 2;
    mic.set(stop, saidAtS * RATE);
    const heard: number[] = [];
    const loadedAt: { atS: number; loaded: boolean }[] = [];
    const source = frontEnd(samplesSource(mic), {
      stopWord,
      clockOf: (chunk) => Math.round(chunk.atS * RATE),
      own: (at, length) => reference.read(at + RATE / 5, length),
      armed: (at, length) => reference.sounding(at - RATE / 4, at + length),
      onStop: (atS) => heard.push(atS),
    });
    for await (const chunk of source.frames(new AbortController().signal)) loadedAt.push({ atS: chunk.atS, loaded: stopWord.loaded });
    const playEndS = playAtS + played.length / RATE;
    // No spotter before anything plays (the front end arms 0.25 s ahead of the sound), one while it plays.
    expect(loadedAt.filter((c) => c.atS < playAtS - 0.4).every((c) => !c.loaded)).toBe(true);
    expect(loadedAt.filter((c) => c.atS >= playAtS && c.atS < playEndS).every((c) => c.loaded)).toBe(true);
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeGreaterThan(saidAtS);
    expect(stopWord.made).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(stopWord.loaded).toBe(false);
  }, 60_000);

  it('keeps the spotters for a playback soon after, makes them again after idle, and frees them when stopped', () => {
    vi.useFakeTimers();
    const freed: number[] = [];
    let n = 0;
    const make = () => {
      const id = ++n;
      return { push: () => undefined, reset: () => undefined, free: () => void freed.push(id) } as unknown as StopWord;
    };
    const stopWord = new StopWordWhilePlaying(make, { idleMs: 10_000 });
    const chunk = new Int16Array(1280);
    expect(stopWord.loaded).toBe(false);
    stopWord.push(chunk, chunk, 1);
    stopWord.reset(); // playback ended
    vi.advanceTimersByTime(9_000);
    stopWord.push(chunk, chunk, 10); // the next sentence
    stopWord.reset();
    vi.advanceTimersByTime(9_000);
    expect({ loaded: stopWord.loaded, made: stopWord.made, freed }).toEqual({ loaded: true, made: 1, freed: [] });
    vi.advanceTimersByTime(1_000);
    expect({ loaded: stopWord.loaded, freed }).toEqual({ loaded: false, freed: [1] });
    stopWord.push(chunk, chunk, 30);
    stopWord.free(); // the daemon stops
    vi.advanceTimersByTime(20_000);
    expect({ loaded: stopWord.loaded, made: stopWord.made, freed }).toEqual({ loaded: false, made: 2, freed: [1, 2] });
  });
});
