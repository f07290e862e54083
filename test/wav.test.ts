/**
 * Reading WAV files: every common encoding, rate and channel count comes out as 16 kHz mono
 * int16 with its length and level kept, and anything else is refused in one line. The files are
 * made by sox, as a person's recording would be; `iris listen` runs on one of them end to end.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeWav, WavError } from '../src/pipeline/wav.js';
import { iris } from './helpers/cli.js';
import { commandWav } from './helpers/speech.js';
import { emptyConfig, tempDir } from './helpers/tmp.js';

/** One second of a 440 Hz sine at half scale in channel 1, silence in the others, made by sox. */
function sine(dir: string, encoding: string[], rate: number, channels: number): string {
  const out = join(dir, `sine-${encoding.join('')}-${rate}-${channels}.wav`);
  const remix = ['1', ...Array<string>(channels - 1).fill('0')];
  execFileSync('sox', ['-D', '-n', '-r', String(rate), '-c', String(channels), ...encoding, out, 'synth', '1', 'sine', '440', 'vol', '0.5', 'remix', ...remix]);
  return out;
}

/**
 * Peak (0–1) and frequency (Hz, from zero crossings) of one second of decoded samples. The peak
 * leaves out 10 ms at each end: the sine starts and stops abruptly, and any band-limited
 * resampler rings there.
 */
function measure(samples: Int16Array): { peak: number; hz: number } {
  const edge = 160;
  let peak = 0;
  let crossings = 0;
  samples.forEach((s, i) => {
    if (i >= edge && i < samples.length - edge) peak = Math.max(peak, Math.abs(s) / 32768);
    if (i > 0 && (samples[i - 1] ?? 0) < 0 !== s < 0) crossings++;
  });
  return { peak, hz: crossings / 2 };
}

/**
 * A WAVE_FORMAT_EXTENSIBLE file of 32-bit floats (what many recorders write for 3+ channels;
 * sox itself writes tag 3 for floats, so the header is made here around sox's raw samples).
 */
function extensibleFloat(dir: string, rate: number, channels: number): string {
  const raw = join(dir, 'sine.f32');
  const remix = ['1', ...Array<string>(channels - 1).fill('0')];
  execFileSync('sox', ['-D', '-n', '-r', String(rate), '-c', String(channels), '-t', 'f32', raw, 'synth', '1', 'sine', '440', 'vol', '0.5', 'remix', ...remix]);
  const data = readFileSync(raw);
  const fmt = Buffer.alloc(40);
  fmt.writeUInt16LE(0xfffe, 0); // WAVE_FORMAT_EXTENSIBLE
  fmt.writeUInt16LE(channels, 2);
  fmt.writeUInt32LE(rate, 4);
  fmt.writeUInt32LE(rate * channels * 4, 8);
  fmt.writeUInt16LE(channels * 4, 12);
  fmt.writeUInt16LE(32, 14);
  fmt.writeUInt16LE(22, 16); // extension size
  fmt.writeUInt16LE(32, 18); // valid bits
  fmt.writeUInt32LE(0, 20); // channel mask: unassigned
  Buffer.from('0300000000001000800000aa00389b71', 'hex').copy(fmt, 24); // KSDATAFORMAT_SUBTYPE_IEEE_FLOAT
  const chunk = (id: string, body: Buffer) => Buffer.concat([Buffer.from(id, 'ascii'), Buffer.from(new Uint32Array([body.length]).buffer), body]);
  const out = join(dir, 'extensible-float.wav');
  writeFileSync(out, chunk('RIFF', Buffer.concat([Buffer.from('WAVE', 'ascii'), chunk('fmt ', fmt), chunk('data', data)])));
  return out;
}

describe('decodeWav', () => {
  const cases: [string, string[], number, number][] = [
    ['8-bit unsigned, 8 kHz mono', ['-b', '8', '-e', 'unsigned'], 8000, 1],
    ['16-bit, 16 kHz mono', ['-b', '16'], 16_000, 1],
    ['16-bit, 44.1 kHz stereo', ['-b', '16'], 44_100, 2],
    ['24-bit, 44.1 kHz stereo (extensible)', ['-b', '24'], 44_100, 2],
    ['24-bit, 48 kHz, 6 channels (extensible)', ['-b', '24'], 48_000, 6],
    ['32-bit integer, 96 kHz mono (extensible)', ['-b', '32'], 96_000, 1],
    ['32-bit float, 22.05 kHz stereo', ['-e', 'floating-point', '-b', '32'], 22_050, 2],
    ['64-bit float, 11.025 kHz mono', ['-e', 'floating-point', '-b', '64'], 11_025, 1],
    ['µ-law, 8 kHz mono', ['-e', 'mu-law'], 8000, 1],
    ['A-law, 8 kHz stereo', ['-e', 'a-law'], 8000, 2],
  ];
  it.each(cases)('reads %s as 16 kHz mono with its length and level', (_name, encoding, rate, channels) => {
    const samples = decodeWav(readFileSync(sine(tempDir(), encoding, rate, channels)));
    expect(Math.abs(samples.length - 16_000)).toBeLessThanOrEqual(2);
    // The other channels are silent, so the average of the channels peaks at 0.5 / channels.
    const { peak, hz } = measure(samples);
    expect(Math.abs(peak - 0.5 / channels)).toBeLessThan(0.02);
    expect(Math.abs(hz - 440)).toBeLessThanOrEqual(2);
  });

  it('reads WAVE_FORMAT_EXTENSIBLE 32-bit float as floats, not integers', () => {
    const samples = decodeWav(readFileSync(extensibleFloat(tempDir(), 48_000, 3)));
    expect(Math.abs(samples.length - 16_000)).toBeLessThanOrEqual(2);
    const { peak, hz } = measure(samples);
    expect(Math.abs(peak - 0.5 / 3)).toBeLessThan(0.02);
    expect(Math.abs(hz - 440)).toBeLessThanOrEqual(2);
  });

  it('gives 16-bit 16 kHz mono back sample for sample', () => {
    const file = readFileSync(sine(tempDir(), ['-b', '16'], 16_000, 1));
    const pcm = file.subarray(file.indexOf('data') + 8);
    expect(decodeWav(file)).toEqual(new Int16Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.length)));
  });

  it('refuses what it cannot read with one line naming the file', () => {
    const dir = tempDir();
    const msAdpcm = readFileSync(sine(dir, ['-e', 'ms-adpcm'], 16_000, 1));
    const int64 = Buffer.from(readFileSync(sine(dir, ['-e', 'floating-point', '-b', '64'], 16_000, 1)));
    int64.writeUInt16LE(1, 20); // the format tag: 64-bit integer PCM
    const s16 = readFileSync(sine(dir, ['-b', '16'], 16_000, 1));
    const refusals: [Buffer, RegExp][] = [
      [Buffer.alloc(0), /^x\.wav is not a WAV file/],
      [Buffer.from('hello, this is text and not audio at all'), /^x\.wav is not a WAV file/],
      [s16.subarray(0, 40), /^x\.wav is not a WAV file .*"data"/],
      [msAdpcm, /^x\.wav is encoded as format tag 0x0002, 4-bit; IRIS reads/],
      [int64, /^x\.wav is encoded as 64-bit integer PCM; IRIS reads/],
    ];
    for (const [wav, message] of refusals) {
      let error: unknown;
      try {
        decodeWav(wav, 'x.wav');
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(WavError);
      expect((error as WavError).message).toMatch(message);
      expect((error as WavError).message).not.toContain('\n');
    }
  });
});

describe('iris listen --file', () => {
  it('runs the pipeline over a 24-bit stereo 44.1 kHz recording to a transcript', async () => {
    const dir = tempDir();
    const file = join(dir, 'request-24bit-stereo.wav');
    execFileSync('sox', ['-D', commandWav('hey jarvis, what time is it'), '-r', '44100', '-c', '2', '-b', '24', file]);
    const vars = { IRIS_CONFIG: emptyConfig(dir), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 's') };
    const run = await iris(['listen', '--file', file, '--json'], vars);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ wake: { detected: true, word: 'hey_jarvis' }, transcript: 'what time is it', outcome: 'answered', route: 'local' });
  });

  it('says in one line why a file is not readable, and exits 1', async () => {
    const dir = tempDir();
    const file = join(dir, 'notes.wav');
    writeFileSync(file, 'not audio\n');
    const vars = { IRIS_CONFIG: emptyConfig(dir), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 's') };
    const run = await iris(['listen', '--file', file], vars);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toMatch(new RegExp(`^${file} is not a WAV file[^\\n]*\\n$`));
  });
});
