/**
 * The parts pocketsphinx's recogniser is made of, without decoding: the binding loaded once
 * per process, the dictionary search for just the grammar's words, the model check, and the
 * linear resampler it shares with the echo reference (playback.ts).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadLibrary } from '../src/pipeline/pocketsphinx-binding.js';
import { checkModel, dictionaryEntries, withDictionary } from '../src/pipeline/pocketsphinx-model.js';
import { referenceSamples, Resampler } from '../src/pipeline/resample.js';
import { encodeWav } from '../src/pipeline/wav.js';
import { tempDir } from './helpers/tmp.js';

describe('pocketsphinx binding', () => {
  it('is declared once per process: every recogniser and spotter gets the same one', async () => {
    const first = loadLibrary();
    expect(loadLibrary('libpocketsphinx.so.3')).toBe(first);
    expect(typeof (await first).init).toBe('function');
  });

  it('a library that is not there is a clear stt_missing, and is tried again next time', async () => {
    const missing = loadLibrary('/nonexistent/libpocketsphinx.so.3');
    await expect(missing).rejects.toMatchObject({ code: 'stt_missing', message: /apt install libpocketsphinx3/ });
    expect(loadLibrary('/nonexistent/libpocketsphinx.so.3')).not.toBe(missing);
    await loadLibrary('/nonexistent/libpocketsphinx.so.3').catch(() => undefined);
  });
});

describe('pocketsphinx dictionary', () => {
  const dict = ['a AH', 'a(2) EY', 'a. EY', 'c++ S IY P L AH S P L AH S', 'abc EY B IY S IY', 'stop S T AA P', 'stop(2) S T AO P', 'stopped S T AA P T'].join('\n');

  it('finds just the words asked for, with their variants, words with regex characters too', () => {
    const file = join(tempDir(), 'test.dict');
    writeFileSync(file, `${dict}\n`);
    expect(dictionaryEntries(file, new Set(['stop', 'c++', 'a.']))).toEqual([
      { word: 'a.', line: 'a. EY' },
      { word: 'c++', line: 'c++ S IY P L AH S P L AH S' },
      { word: 'stop', line: 'stop S T AA P' },
      { word: 'stop', line: 'stop(2) S T AO P' },
    ]);
    expect(dictionaryEntries(file, new Set(['a']))).toEqual([{ word: 'a', line: 'a AH' }, { word: 'a', line: 'a(2) EY' }]);
    expect(dictionaryEntries(file, new Set())).toEqual([]);
  });

  it('hands the decoder a temporary file with the entries, removed after', () => {
    let seen = '';
    let path = '';
    const result = withDictionary([{ word: 'stop', line: 'stop S T AA P' }], (file) => {
      path = file;
      seen = readFileSync(file, 'latin1');
      return 42;
    });
    expect(result).toBe(42);
    expect(seen).toBe('stop S T AA P\n');
    expect(existsSync(path)).toBe(false);
  });

  it('a missing model names the package to install', () => {
    expect(() => checkModel('/nonexistent/en-us')).toThrow(/apt install pocketsphinx-en-us/);
  });
});

describe('resampling', () => {
  const ramp = Int16Array.from({ length: 4000 }, (_, i) => i * 5);

  it('gives the same stream however the audio is split into blocks', () => {
    const whole = new Resampler(1.08).push(ramp);
    const stream = new Resampler(1.08);
    const parts: number[] = [];
    for (let i = 0; i < ramp.length; i += 333) parts.push(...stream.push(ramp.subarray(i, i + 333)));
    expect(parts.length).toBe(whole.length);
    expect(Math.max(...parts.map((x, i) => Math.abs(x - (whole[i] ?? 0))))).toBeLessThanOrEqual(1);
  });

  it('reads the input every `step` samples, interpolated', () => {
    const faster = new Resampler(1.08).push(ramp);
    expect(faster.length).toBe(Math.ceil((ramp.length - 1) / 1.08));
    for (const i of [0, 1, 7, 500, 3000]) expect(faster[i]).toBe(Math.round(i * 1.08 * 5));
    const slower = new Resampler(0.92).push(ramp);
    expect(slower[100]).toBe(Math.round(100 * 0.92 * 5));
  });

  it('turns a 22,050 Hz stereo clip into 16 kHz mono for the echo reference', () => {
    const frames = 22_050;
    const stereo = new Int16Array(frames * 2);
    for (let i = 0; i < frames; i++) {
      stereo[2 * i] = 1000;
      stereo[2 * i + 1] = 3000;
    }
    const out = referenceSamples(encodeWav(stereo, { rate: 22_050, width: 2, channels: 2 }));
    expect(out?.length).toBeGreaterThanOrEqual(15_999);
    expect(out?.length).toBeLessThanOrEqual(16_000);
    // The channels' mean, its level kept (the first and last millisecond ring: a clip that starts at full level).
    expect(out?.subarray(16, -16).every((v) => Math.abs(v - 2000) <= 1)).toBe(true);
    expect(referenceSamples(Buffer.from('not a wav'))).toBeUndefined();
  });

  it('makes the echo reference band-limited: a 7 kHz tone at 22,050 Hz comes out at its level, nothing aliased', () => {
    // espeak-ng's sibilants reach 7–10 kHz; the two-tap low-pass and linear interpolation left a 7 kHz tone 13 dB low (2 dB clean).
    const tone = (rate: number, n: number, offset = 0) => Float64Array.from({ length: n }, (_, i) => 8000 * Math.sin((2 * Math.PI * 7000 * (i + offset)) / rate));
    const clip = Int16Array.from(tone(22_050, 22_050), Math.round);
    for (const offset of [0, 0.37]) {
      const out = referenceSamples(encodeWav(clip, { rate: 22_050, width: 2, channels: 1 }), offset) ?? new Int16Array(0);
      // Against the same tone sampled at 16 kHz from where the clip started `offset` of a sample before.
      const truth = tone(16_000, out.length, offset);
      let [signal, error] = [0, 0];
      for (let i = 200; i < out.length - 200; i++) [signal, error] = [signal + (truth[i] ?? 0) ** 2, error + ((out[i] ?? 0) - (truth[i] ?? 0)) ** 2];
      expect(10 * Math.log10(signal / error)).toBeGreaterThanOrEqual(35);
    }
  });
});
