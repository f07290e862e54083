/**
 * whisper.cpp through a real whisper-server (built by test/global-setup.ts into .cache/whisper)
 * with a random-weight "micro" model: its transcripts are gibberish, so the tests assert that
 * runs succeed and return text, and how the process is managed. Model downloads run against a
 * local HTTP server.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeWhisperModel } from '../scripts/make-whisper-model.js';
import { SPEECH_FORMAT } from '../src/pipeline/audio.js';
import { fetchModel } from '../src/pipeline/models.js';
import { SttError } from '../src/pipeline/stt.js';
import { checkModel, cleanTranscript, findWhisperServer, whisperConfidence, WhisperStt } from '../src/pipeline/whisper.js';
import { speechSamples } from './helpers/speech.js';
import { tempDir } from './helpers/tmp.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVER = join(ROOT, '.cache/whisper/bin/whisper-server');

/** Exactly `seconds` of a spoken command (padded with silence or cut). */
function command(seconds: number): Int16Array {
  const out = new Int16Array(Math.round(seconds * SPEECH_FORMAT.rate));
  const speech = speechSamples('turn on the kitchen lights', { padS: [0.2, 0.3] });
  out.set(speech.subarray(0, out.length));
  return out;
}

async function rejection(promise: Promise<unknown>): Promise<SttError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(SttError);
  return error as SttError;
}

function waitExit(pid: number): Promise<void> {
  return new Promise((resolve) => {
    const poll = setInterval(() => {
      try {
        process.kill(pid, 0);
      } catch {
        clearInterval(poll);
        resolve();
      }
    }, 20);
  });
}

describe('whisper-server adapter (random-weight micro model)', () => {
  let dir: string;
  let model: string;
  let stt: WhisperStt;

  beforeAll(() => {
    if (!existsSync(SERVER)) throw new Error(`${SERVER} is missing: test/global-setup.ts builds it with scripts/build-whisper.sh`);
    dir = mkdtempSync(join(tmpdir(), 'iris-whisper-'));
    model = join(dir, 'ggml-micro.bin');
    writeWhisperModel('micro', model, 1);
    stt = new WhisperStt({ model, threads: 2, audioCtx: 512, command: SERVER, startTimeoutMs: 20_000 });
  });

  afterAll(async () => {
    await stt?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('loads the model once and transcribes 2 s of speech twice', async () => {
    await stt.start();
    const pid = stt.pid;
    expect(pid).toBeGreaterThan(0);
    const first = await stt.transcribe(command(2));
    const second = await stt.transcribe(command(2));
    expect(typeof first.text).toBe('string');
    expect(typeof second.text).toBe('string');
    expect(first.text).toBe(first.text.trim().toLowerCase());
    expect(first.confidence).toBeGreaterThanOrEqual(0);
    expect(first.confidence).toBeLessThanOrEqual(1);
    expect(stt.starts).toBe(1);
    expect(stt.pid).toBe(pid);
  });

  it('restarts a server that died, on the next utterance', async () => {
    await stt.start();
    const before = stt.starts;
    const pid = stt.pid ?? 0;
    process.kill(pid, 'SIGKILL');
    await waitExit(pid);
    expect(typeof (await stt.transcribe(command(2))).text).toBe('string');
    expect(stt.starts).toBe(before + 1);
    expect(stt.pid).not.toBe(pid);
  });

  it('gives up an aborted utterance at once and stays usable', async () => {
    await stt.start();
    const controller = new AbortController();
    const pending = stt.transcribe(command(2), controller.signal);
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await expect(stt.transcribe(command(1), AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
    expect(typeof (await stt.transcribe(command(1))).text).toBe('string');
  });

  it('stops the server', async () => {
    await stt.start();
    const pid = stt.pid ?? 0;
    await stt.stop();
    expect(stt.pid).toBeUndefined();
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it('refuses a missing, an empty, a non-model and a weightless file before spawning anything', async () => {
    const files = tempDir();
    const empty = join(files, 'ggml-tiny.en.bin');
    writeFileSync(empty, '');
    const html = join(files, 'ggml-base.en.bin');
    writeFileSync(html, '<!DOCTYPE html><title>404</title>');
    const headerOnly = join(files, 'ggml-small.en.bin');
    writeFileSync(headerOnly, readFileSync(model).subarray(0, 100_000)); // whisper.cpp would run it, weightless
    const missing = await rejection(new WhisperStt({ model: join(files, 'nope.bin'), threads: 1, audioCtx: 0, command: SERVER }).start());
    expect(missing.code).toBe('stt_model_missing');
    expect(missing.message).toContain('does not exist');
    const zero = new WhisperStt({ model: empty, threads: 1, audioCtx: 0, command: SERVER });
    const error = await rejection(zero.transcribe(command(1)));
    expect(error.code).toBe('stt_model_missing');
    expect(error.message).toMatch(/empty \(0 bytes\)/);
    expect(zero.starts).toBe(0);
    const invalid = (file: string) => {
      try {
        checkModel(file);
      } catch (e) {
        return e;
      }
      return undefined;
    };
    expect(invalid(html)).toMatchObject({ code: 'stt_model_invalid', message: expect.stringMatching(/not a ggml whisper model/) });
    expect(invalid(headerOnly)).toMatchObject({ code: 'stt_model_invalid', message: expect.stringMatching(/too small/) });
  });

  it('says clearly when whisper-server is missing', async () => {
    const error = await rejection(new WhisperStt({ model, threads: 1, audioCtx: 0, command: '/nonexistent/whisper-server' }).start());
    expect(error.code).toBe('stt_missing');
  });

  it('reports a server that dies while loading', async () => {
    const files = tempDir();
    const truncated = join(files, 'truncated.bin');
    writeFileSync(truncated, readFileSync(model).subarray(0, 2_000_000)); // ends inside the weights
    const error = await rejection(new WhisperStt({ model: truncated, threads: 1, audioCtx: 0, command: SERVER }).start());
    expect(error.code).toBe('stt_failed');
    expect(error.message).toMatch(/ended while loading .*: .*(not all tensors loaded|failed to initialize)/);
  });
});

describe('whisper helpers', () => {
  it('finds whisper-server in $IRIS_WHISPER_SERVER (an override), then installed, then on PATH', () => {
    const dir = tempDir();
    const onPath = join(dir, 'path');
    mkdirSync(onPath);
    writeFileSync(join(onPath, 'whisper-server'), '#!/bin/sh\n');
    chmodSync(join(onPath, 'whisper-server'), 0o755);
    const env = { PATH: `/nonexistent:${onPath}` };
    expect(findWhisperServer({}, '/nonexistent/whisper-server')).toBeUndefined();
    expect(findWhisperServer(env, '/nonexistent/whisper-server')).toBe(join(onPath, 'whisper-server'));
    expect(findWhisperServer({ ...env, IRIS_WHISPER_SERVER: SERVER }, '/nonexistent/whisper-server')).toBe(SERVER);
    expect(findWhisperServer({ ...env, IRIS_WHISPER_SERVER: SERVER }, join(onPath, 'whisper-server'))).toBe(SERVER);
    expect(findWhisperServer(env, join(onPath, 'whisper-server'))).toBe(join(onPath, 'whisper-server'));
  });

  it('removes non-speech tags and lower-cases', () => {
    expect(cleanTranscript(' [BLANK_AUDIO]\n')).toBe('');
    // Confidence: mean token log-probability, discounted by the no-speech probability.
    expect(whisperConfidence('what time is it', [{ avg_logprob: -0.1, no_speech_prob: 0.02 }]).confidence).toBeCloseTo(Math.exp(-0.1) * 0.98, 3);
    expect(whisperConfidence('what time is it', [{ avg_logprob: -2.5, no_speech_prob: 0.1 }]).confidence).toBeLessThan(0.1);
    expect(whisperConfidence('', [{ avg_logprob: -0.1, no_speech_prob: 0 }]).confidence).toBe(0);
    expect(whisperConfidence('x', 'garbage').confidence).toBe(0);
    expect(cleanTranscript(' Set a timer (upbeat music) for TEN minutes. [Music]')).toBe('set a timer for ten minutes.');
  });
});

describe('fetchModel', () => {
  const body = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256));
  const sha256 = createHash('sha256').update(body).digest('hex');
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/ggml-test.bin') res.end(body);
      else res.writeHead(404).end('not found');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });

  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('puts a download with the right hash in place', async () => {
    const dest = join(tempDir(), 'models', 'ggml-test.bin');
    const fetched = await fetchModel({ url: `${base}/ggml-test.bin`, sha256: sha256.toUpperCase(), dest });
    expect(fetched).toEqual({ path: dest, bytes: body.length, sha256 });
    expect(readFileSync(dest).equals(body)).toBe(true);
    expect(existsSync(`${dest}.part`)).toBe(false);
  });

  it('refuses a download with the wrong hash and leaves nothing behind', async () => {
    const dest = join(tempDir(), 'ggml-test.bin');
    const wrong = '0'.repeat(64);
    const error = await rejection(fetchModel({ url: `${base}/ggml-test.bin`, sha256: wrong, dest }));
    expect(error.code).toBe('model_checksum');
    expect(error.message).toContain(wrong);
    expect(error.message).toContain(sha256);
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(`${dest}.part`)).toBe(false);
  });

  it('refuses an HTTP error', async () => {
    const dest = join(tempDir(), 'ggml-missing.bin');
    const error = await rejection(fetchModel({ url: `${base}/ggml-missing.bin`, sha256, dest }));
    expect(error.code).toBe('model_download');
    expect(existsSync(dest)).toBe(false);
  });
});
