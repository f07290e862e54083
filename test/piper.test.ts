// Piper voices on onnxruntime-node, with voices of the real shape made here by
// test/fixtures/make-piper-voice.py (python3-onnx): phonemes as Piper makes them, the ids the
// model is given (read back from what it says), speakers, speed, a broken voice, barge-in.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { phonemize } from '../src/pipeline/phonemes.js';
import { createPiper } from '../src/pipeline/piper.js';
import { createTextToSpeech } from '../src/pipeline/tts.js';
import { wavInfo } from '../src/pipeline/wav.js';
import { fetchPiperVoice, PIPER_VOICES, piperVoicePath, type PiperVoiceEntry } from '../src/pipeline/voices.js';
import { iris } from './helpers/cli.js';
import { emptyConfig, tempDir } from './helpers/tmp.js';

const MAKE = fileURLToPath(new URL('fixtures/make-piper-voice.py', import.meta.url));
let dir = '';
const voice = (speakers: number): string => join(dir, `voice-${speakers}.onnx`);

beforeAll(() => {
  dir = tempDir();
  for (const speakers of [1, 3]) execFileSync('/usr/bin/python3', [MAKE, voice(speakers), String(speakers)]);
});

/** The 256-sample blocks of a generated voice's output, as the ids (and extras) they encode. */
function blocks(wav: Buffer): number[] {
  const { dataOffset, dataBytes, rate } = wavInfo(wav);
  expect(rate).toBe(22050);
  const samples = new Int16Array(wav.buffer.slice(wav.byteOffset + dataOffset, wav.byteOffset + dataOffset + dataBytes));
  const values: number[] = [];
  for (let i = 0; i < samples.length; i += 256) values.push(samples[i] ?? 0);
  return values;
}

describe('phonemes as Piper makes them (libespeak-ng through koffi)', () => {
  it('clause by clause, with the punctuation kept, NFD code points', async () => {
    expect(await phonemize('Test 1. Test 2.', 'en-us')).toEqual([
      ['t', 'ˈ', 'ɛ', 's', 't', ' ', 'w', 'ˈ', 'ʌ', 'n', '.'],
      ['t', 'ˈ', 'ɛ', 's', 't', ' ', 't', 'ˈ', 'u', 'ː', '.'],
    ]); // piper1-gpl's tests/test_piper.py
    for (const [word, ipa] of <[string, string][]>[['my', 'mˈaɪ'], ['cow', 'kˈaʊ'], ['toy', 'tˈɔɪ'], ['day', 'dˈeɪ'], ['no', 'nˈoʊ']]) {
      expect((await phonemize(word, 'en-us'))[0]?.join('')).toBe(ipa); // the same test's words; "aɪ" is two code points
    }
    expect((await phonemize('Hello, world! Is it 5? Yes; fine: ok.', 'en-us')).map((s) => s.join(''))).toEqual(['həlˈoʊ, wˈɜːld!', 'ɪz ɪt fˈaɪv?', 'jˈɛs; fˈaɪn: ˌoʊkˈeɪ.']);
  });
});

describe('a Piper voice', () => {
  it('gives the model ^ _ id _ … $ per sentence and says the sentences in order', async () => {
    const piper = await createPiper({ model: voice(1) });
    const map = (JSON.parse(execFileSync('cat', [`${voice(1)}.json`], { encoding: 'utf8' })) as { phoneme_id_map: Record<string, number[]> }).phoneme_id_map;
    const idOf = (p: string) => map[p]?.[0] ?? -1;
    const expected = (await phonemize('Test one. Test two.', 'en-us')).flatMap((sentence) => [
      idOf('^'), idOf('_'), ...sentence.flatMap((p) => [idOf(p), idOf('_')]), idOf('$'), 'length',
    ]);
    // Each sentence is its own model run, normalised on its own: its first block ('^', id 1,
    // at (1+1)/(K+1)) is the reference; after '$' (id 2) comes the length block.
    const values = blocks(await piper.synthesize('Test one. Test two.'));
    const decoded: (number | string)[] = [];
    for (let i = 0, bos = 1; i < values.length; i++) {
      if (decoded.length === 0 || decoded.at(-1) === 'length') bos = values[i] ?? 1;
      decoded.push(decoded.at(-1) === 2 ? 'length' : Math.round(((values[i] ?? 0) / bos) * 2) - 1);
    }
    expect(decoded.join(' ')).toBe(expected.join(' '));
  });

  it('passes the speaker of a voice with several (by name), and speed as length_scale', async () => {
    const fast = await createPiper({ model: voice(3), speaker: 'speaker2', rateWpm: 350 });
    const normal = await createPiper({ model: voice(3), speaker: '0' });
    const tail = (wav: Buffer) => blocks(wav).slice(-2); // [speaker block, length block]
    const [fastSpeaker, fastLength] = tail(await fast.synthesize('Hi.'));
    const [normalSpeaker, normalLength] = tail(await normal.synthesize('Hi.'));
    expect((fastSpeaker ?? 0) / (normalSpeaker ?? 1)).toBeCloseTo(3, 1); // -(2+1)/… against -(0+1)/…
    expect((fastLength ?? 0) / (normalLength ?? 1)).toBeCloseTo(0.5, 1); // 175 / 350
    await expect(createPiper({ model: voice(3), speaker: 'nobody' })).rejects.toThrow('the voice has no speaker "nobody"');
  });

  it('stops at once when barge-in aborts', async () => {
    const piper = await createPiper({ model: voice(1) });
    const controller = new AbortController();
    controller.abort(new DOMException('barge-in', 'AbortError'));
    await expect(piper.synthesize('One. Two. Three.', controller.signal)).rejects.toThrow('barge-in');
  });

  it('a broken voice falls back to espeak-ng, said once in the log', async () => {
    const broken = join(tempDir(), 'broken.onnx');
    writeFileSync(broken, 'not a model');
    writeFileSync(`${broken}.json`, JSON.stringify({ audio: { sample_rate: 22050 }, espeak: { voice: 'en-us' }, phoneme_id_map: {} }));
    const lines: string[] = [];
    const tts = createTextToSpeech({ tts: { engine: 'piper', voice: broken, speaker: '', rate_wpm: 175 } }, createLogger('test', { write: (l) => lines.push(l) }));
    const wav = await tts.synthesize('Hello there.');
    expect(wavInfo(wav).rate).toBe(22050); // espeak-ng's rate, and speech
    expect(wav.length).toBeGreaterThan(20_000);
    await tts.synthesize('Again.');
    expect(lines.filter((l) => /Piper voice unavailable .*cannot be loaded.*; speaking with espeak-ng/.test(l))).toHaveLength(1);
    expect(await tts.describe?.()).toBe('espeak-ng en-us (the Piper voice could not be loaded)');
  });

  it('the configured Piper voice speaks, text rewritten for the ear first', async () => {
    const tts = createTextToSpeech({ tts: { engine: 'piper', voice: voice(1), speaker: '', rate_wpm: 175 } });
    expect(await tts.describe?.()).toBe(`Piper ${voice(1)}`);
    const money = blocks(await tts.synthesize('$5.'));
    const words = blocks(await tts.synthesize('5 dollars.'));
    expect(money).toEqual(words);
  });
});

describe('fetching a Piper voice', () => {
  /** A local server with the layout of the voices repository, serving what `files` holds. */
  async function mirror(files: Record<string, Buffer>): Promise<{ base: string; close: () => Promise<void> }> {
    const server = createServer((req, res) => {
      const body = files[req.url ?? ''];
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'Content-Length': body.length }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return { base: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }
  const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

  it('installs both files when their SHA-256 match, and the voice then speaks by name', async () => {
    const onnx = readFileSync(voice(1));
    const json = readFileSync(`${voice(1)}.json`);
    const entry: PiperVoiceEntry = { revision: 'v1', path: 'en/en_US/test/medium/en_US-test-medium', onnx: { bytes: onnx.length, sha256: sha256(onnx) }, json: { bytes: json.length, sha256: sha256(json) }, licence: 'test data' };
    const served = await mirror({ [`/v1/${entry.path}.onnx`]: onnx, [`/v1/${entry.path}.onnx.json`]: json });
    try {
      const models = tempDir();
      const fetched = await fetchPiperVoice('en_US-test-medium', models, { base: served.base, voices: { 'en_US-test-medium': entry } });
      expect(fetched.map((f) => f.path)).toEqual([join(models, 'piper', 'en_US-test-medium.onnx.json'), join(models, 'piper', 'en_US-test-medium.onnx')]);
      expect(piperVoicePath('en_US-lessac-medium', models)).toBe(join(models, 'piper', 'en_US-lessac-medium.onnx'));
      expect(piperVoicePath('/srv/voices/x.onnx', models)).toBe('/srv/voices/x.onnx');
    } finally {
      await served.close();
    }
  });

  it('iris models fetch piper:NAME shows the licence first and installs nothing when a checksum does not match', async () => {
    const entry = PIPER_VOICES['en_US-lessac-medium'];
    if (entry === undefined) throw new Error('manifest lacks en_US-lessac-medium');
    const json = Buffer.alloc(entry.json.bytes, 0x20); // the pinned size, not the real file: its SHA-256 differs
    const served = await mirror({ [`/${entry.revision}/${entry.path}.onnx.json`]: json, [`/${entry.revision}/${entry.path}.onnx`]: readFileSync(voice(1)) });
    try {
      const models = tempDir();
      const run = await iris(['models', 'fetch', 'piper:en_US-lessac-medium', '--out', models], { IRIS_CONFIG: emptyConfig(tempDir()), IRIS_PIPER_MIRROR: served.base });
      expect(run.stdout).toMatch(/^en_US-lessac-medium: licence of its training data: Blizzard 2013 \(Lessac\) data: non-commercial use only/);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/has SHA-256 [0-9a-f]{64}, expected efe19c41[0-9a-f]+; nothing was installed/);
      expect(existsSync(join(models, 'piper')) ? readdirSync(join(models, 'piper')) : []).toEqual([]);
    } finally {
      await served.close();
    }
  });
});
