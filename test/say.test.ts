import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEspeak } from '../src/pipeline/espeak.js';
import { iris } from './helpers/cli.js';
import { soxStat } from './helpers/speech.js';
import { tempDir } from './helpers/tmp.js';

describe('iris say (espeak-ng)', () => {
  it('writes a WAV that is speech, not silence', async () => {
    const out = join(tempDir(), 'reply.wav');
    const run = await iris(['say', "It's 3:04 PM in Tokyo.", '--out', out], {});
    expect(run.code).toBe(0);
    const wav = readFileSync(out);
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    // The sizes in the header are the file's (espeak-ng --stdout leaves placeholders).
    expect([wav.readUInt32LE(4), wav.readUInt32LE(40)]).toEqual([wav.length - 8, wav.length - 44]);
    const { length, rms } = soxStat(out);
    expect(length).toBeGreaterThan(1);
    expect(rms).toBeGreaterThan(0.02);
  });

  it('speaks hostile text as text: no option, no shell, no markup', async () => {
    const dir = tempDir();
    const marker = join(dir, 'pwned');
    const tts = createEspeak({ voice: 'en-us', rateWpm: 175 });
    const wav = await tts.synthesize(`-v xx --stdout $(touch ${marker}) \`touch ${marker}\`; <speak><audio src="/etc/passwd"/></speak>`);
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    expect(wav.length).toBeGreaterThan(10_000);
    expect(existsSync(marker)).toBe(false);
    const run = await iris(['say', '--out', join(dir, 'x.wav'), '--', `-rf $(touch ${marker})`], {});
    expect(run.code).toBe(0);
    expect(existsSync(marker)).toBe(false);
  });

  it('reads phoneme brackets and embedded commands as words: the audio is the plain text\'s', async () => {
    const tts = createEspeak({ voice: 'en-us', rateWpm: 175 });
    const plain = (await tts.synthesize("say  h@'loU  now")).length;
    // Unsanitised, espeak-ng reads [[…]] as phonemes (a third shorter) and Ctrl-A 20S as "speak at 20 wpm" (twice as long).
    expect((await tts.synthesize("say [[h@'loU]] now")).length).toBe(plain);
    expect((await tts.synthesize("say \u000120S h@'loU now")).length).toBeLessThan(plain * 1.3);
  });

  it('says clearly when espeak-ng is missing', async () => {
    const tts = createEspeak({ voice: 'en-us', rateWpm: 175, command: '/nonexistent/espeak-ng' });
    await expect(tts.synthesize('hello')).rejects.toThrow('espeak-ng is not installed (apt install espeak-ng)');
  });
});
