/**
 * Model downloads against a hostile or broken mirror on loopback (a local HTTP server), and
 * installing a copy fetched elsewhere (`--from`): nothing written past a pinned size, a stalled
 * download given up, no `.part` left on any way out (Ctrl-C and SIGTERM included), file names
 * from the catalogue only, and nothing outside the state dir.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { IrisError } from '../src/errors.js';
import { fetchModel, installModelFile } from '../src/pipeline/models.js';
import { fetchPiperVoice, PIPER_VOICES, piperVoicePath, type PiperVoiceEntry } from '../src/pipeline/voices.js';
import { iris, startIris } from './helpers/cli.js';
import { emptyConfig, tempDir } from './helpers/tmp.js';

const LESSAC = PIPER_VOICES['en_US-lessac-medium'];
if (LESSAC === undefined) throw new Error('manifest lacks en_US-lessac-medium');
const JSON_PATH = `/${LESSAC.revision}/${LESSAC.path}.onnx.json`;
const MIB = 1024 * 1024;

interface Mirror {
  base: string;
  /** Bytes of body written to sockets so far. */
  sent: () => number;
  close: () => Promise<void>;
}

/** A local mirror answering every request with `handle`; it counts the body bytes it sends. */
async function mirror(handle: (req: IncomingMessage, res: ServerResponse, write: (chunk: Buffer) => Promise<boolean>) => void | Promise<void>): Promise<Mirror> {
  let sent = 0;
  /** Write with backpressure; false once the client has gone. */
  const writer = (res: ServerResponse) => (chunk: Buffer): Promise<boolean> => {
    if (res.destroyed) return Promise.resolve(false);
    sent += chunk.length;
    if (res.write(chunk)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        resolve(!res.destroyed);
      };
      res.on('drain', done);
      res.on('close', done);
    });
  };
  const server = createServer((req, res) => void handle(req, res, writer(res)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    sent: () => sent,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** Up to `total` bytes, chunked (no Content-Length), as fast as the client reads. */
const endless = (total: number, chunkBytes = 64 * 1024) => async (_req: IncomingMessage, res: ServerResponse, write: (chunk: Buffer) => Promise<boolean>): Promise<void> => {
  res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
  const chunk = Buffer.alloc(chunkBytes, 0x7b);
  for (let n = 0; n < total; n += chunk.length) if (!(await write(chunk))) return;
  res.end();
};

/** `bytes` bytes, then nothing: the connection held open until the client goes. */
const stalling = (bytes: number) => async (_req: IncomingMessage, res: ServerResponse, write: (chunk: Buffer) => Promise<boolean>): Promise<void> => {
  res.writeHead(200, { 'Content-Length': String(LESSAC.json.bytes) });
  await write(Buffer.alloc(bytes, 0x20));
};

/** Every file under `dir`, relative. */
function files(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)) : [];
}

async function rejection(promise: Promise<unknown>): Promise<IrisError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(IrisError);
  return error as IrisError;
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('a download is bounded by its pinned size', () => {
  it('a mirror sending 300 MiB for a 4,885-byte file is cut off at 4,885 bytes, nothing left', async () => {
    for (const chunkBytes of [64 * 1024, 1000]) {
      const served = await mirror(endless(300 * MIB, chunkBytes));
      try {
        const dest = join(tempDir(), 'models', 'voice.onnx.json');
        const error = await rejection(fetchModel({ url: `${served.base}/x.onnx.json`, ...LESSAC.json, dest }));
        expect(error.code).toBe('model_size');
        const written = Number(/stopped with (\d+) written/.exec(error.message)?.[1]);
        expect(written).toBeLessThanOrEqual(LESSAC.json.bytes);
        expect(served.sent()).toBeLessThan(32 * MIB); // socket buffers, not the 300 MiB
        expect(files(join(dest, '..'))).toEqual([]);
      } finally {
        await served.close();
      }
    }
  });

  it('iris models fetch piper:NAME: the same through the CLI, with the URL and the --from route', async () => {
    const served = await mirror(endless(300 * MIB));
    try {
      const state = tempDir();
      const run = await iris(['models', 'fetch', 'piper:en_US-lessac-medium'], { IRIS_CONFIG: emptyConfig(tempDir()), IRIS_STATE_DIR: state, IRIS_PIPER_MIRROR: served.base });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`${served.base}${JSON_PATH} sent more than its pinned 4885 bytes`);
      expect(run.stderr).toContain('next: download ');
      expect(run.stderr).toContain('iris models fetch piper:en_US-lessac-medium --from FILE.onnx');
      expect(served.sent()).toBeLessThan(32 * MIB);
      expect(files(state)).toEqual([]);
    } finally {
      await served.close();
    }
  });
});

describe('a stalled download', () => {
  it('is given up after the stall timeout, mid-body or before the headers, with no .part', async () => {
    const served = await mirror((req, res, write) => (req.url === '/body' ? stalling(1000)(req, res, write) : undefined));
    try {
      const dir = tempDir();
      for (const path of ['/body', '/headers']) {
        const dest = join(dir, `m${path.slice(1)}.json`);
        const started = performance.now();
        const error = await rejection(fetchModel({ url: `${served.base}${path}`, ...LESSAC.json, dest, stallTimeoutMs: 200 }));
        expect(error.code).toBe('model_stalled');
        expect(error.message).toBe(`downloading ${served.base}${path} failed: nothing arrived for 0.2 s`);
        expect(performance.now() - started).toBeLessThan(5000);
      }
      expect(files(dir)).toEqual([]);
    } finally {
      await served.close();
    }
  });

  it('iris models fetch --stall-s: says what stalled and what to do next', async () => {
    const served = await mirror(stalling(1000));
    try {
      const state = tempDir();
      const run = await iris(['models', 'fetch', 'piper:en_US-lessac-medium', '--stall-s', '0.3'], { IRIS_CONFIG: emptyConfig(tempDir()), IRIS_STATE_DIR: state, IRIS_PIPER_MIRROR: served.base });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`downloading ${served.base}${JSON_PATH} failed: nothing arrived for 0.3 s`);
      expect(run.stderr).toContain('--from FILE.onnx');
      expect(files(state)).toEqual([]);
      expect((await iris(['models', 'fetch', 'piper:x', '--stall-s', '1e9'], {})).code).toBe(2);
    } finally {
      await served.close();
    }
  });

  it('an unreachable mirror: the URL and the --from route', async () => {
    const served = await mirror(() => undefined);
    const base = served.base;
    await served.close();
    const run = await iris(['models', 'fetch', 'piper:en_US-lessac-medium'], { IRIS_CONFIG: emptyConfig(tempDir()), IRIS_STATE_DIR: tempDir(), IRIS_PIPER_MIRROR: base });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`^downloading ${base}${JSON_PATH} failed: .*ECONNREFUSED`));
    expect(run.stderr).toContain(`next: download ${base}${JSON_PATH} and ${base}/${LESSAC.revision}/${LESSAC.path}.onnx some other way`);
  });
});

describe('stopping a download', () => {
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    it(`${signal} mid-download leaves no .part (in $IRIS_STATE_DIR/models) and exits ${code}`, async () => {
      const served = await mirror(stalling(1000));
      try {
        const state = tempDir();
        const part = join(state, 'models', 'piper', 'en_US-lessac-medium.onnx.json.part');
        const child = startIris(['models', 'fetch', 'piper:en_US-lessac-medium'], { IRIS_CONFIG: emptyConfig(tempDir()), IRIS_STATE_DIR: state, IRIS_PIPER_MIRROR: served.base });
        let stderr = '';
        child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
        await vi.waitFor(() => expect(existsSync(part)).toBe(true), { timeout: 15_000, interval: 20 });
        child.kill(signal);
        expect(await exited).toBe(code);
        expect(stderr).toContain(`stopped by ${signal}; nothing was installed`);
        expect(files(state)).toEqual([]);
      } finally {
        await served.close();
      }
    });
  }
});

describe('names', () => {
  it('a URL ending in / (or with no usable last part) is refused before anything is written', async () => {
    const served = await mirror((_req, res) => void res.end(Buffer.alloc(100)));
    try {
      const state = tempDir();
      for (const url of [`${served.base}/models/`, `${served.base}/`, `${served.base}/%2e%2e`]) {
        const run = await iris(['models', 'fetch', url, '--sha256', 'a'.repeat(64)], { IRIS_CONFIG: emptyConfig(tempDir()), IRIS_STATE_DIR: state });
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(/^cannot name a file after .*: give --out PATH/);
      }
      expect(files(state)).toEqual([]);
      expect(served.sent()).toBe(0);
    } finally {
      await served.close();
    }
  });

  it('piper:__proto__ and other inherited names are no model: a usage error listing what exists', async () => {
    for (const name of ['piper:__proto__', 'piper:constructor', 'piper:toString', '__proto__', 'constructor', 'hasOwnProperty']) {
      const run = await iris(['models', 'fetch', name], { IRIS_CONFIG: emptyConfig(tempDir()), IRIS_STATE_DIR: tempDir() });
      expect(run.code, name).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).not.toMatch(/undefined|TypeError/);
      expect(run.stderr).toContain(name.startsWith('piper:') ? `no Piper voice "${name.slice(6)}" in IRIS's manifest (piper:en_US-lessac-medium)` : `no model "${name}": known are tiny.en, base.en`);
    }
    expect(piperVoicePath('__proto__', '/m')).toBe('__proto__');
    expect(piperVoicePath('en_US-lessac-medium', '/m')).toBe('/m/piper/en_US-lessac-medium.onnx');
  });
});

describe('--from: a copy fetched elsewhere', () => {
  const onnx = Buffer.from('a voice model, made up');
  const json = Buffer.from('{"audio": {"sample_rate": 22050}}');
  const entry: PiperVoiceEntry = { revision: 'v1', path: 'en/en_US/test/medium/en_US-test-medium', onnx: { bytes: onnx.length, sha256: sha256(onnx) }, json: { bytes: json.length, sha256: sha256(json) }, licence: 'test data' };

  it('the right files are installed after their size and SHA-256 are checked', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'dl.onnx'), onnx);
    writeFileSync(join(dir, 'dl.onnx.json'), json);
    const models = join(dir, 'models');
    const fetched = await fetchPiperVoice('en_US-test-medium', models, { voices: { 'en_US-test-medium': entry }, from: join(dir, 'dl.onnx'), base: 'http://127.0.0.1:9' });
    expect(fetched.map((f) => [f.path, f.bytes, f.sha256])).toEqual([
      [join(models, 'piper', 'en_US-test-medium.onnx.json'), json.length, entry.json.sha256],
      [join(models, 'piper', 'en_US-test-medium.onnx'), onnx.length, entry.onnx.sha256],
    ]);
    expect(readFileSync(join(models, 'piper', 'en_US-test-medium.onnx')).equals(onnx)).toBe(true);
    expect(files(models)).toEqual(['piper/en_US-test-medium.onnx', 'piper/en_US-test-medium.onnx.json'].sort());
  });

  it('a wrong file (size or SHA-256) installs nothing', async () => {
    const dir = tempDir();
    const wrong = Buffer.from(onnx.map((b) => b ^ 1));
    writeFileSync(join(dir, 'wrong.bin'), wrong);
    writeFileSync(join(dir, 'short.bin'), onnx.subarray(1));
    const dest = join(dir, 'models', 'm.bin');
    const bad = await rejection(installModelFile({ from: join(dir, 'wrong.bin'), ...entry.onnx, dest }));
    expect(bad.code).toBe('model_checksum');
    const short = await rejection(installModelFile({ from: join(dir, 'short.bin'), ...entry.onnx, dest }));
    expect(short.message).toBe(`${join(dir, 'short.bin')} is ${onnx.length - 1} bytes, expected ${onnx.length}; nothing was installed`);
    expect(files(join(dir, 'models'))).toEqual([]);
  });

  it('iris models fetch NAME --from FILE: a wrong copy is refused, nothing written', async () => {
    const dir = tempDir();
    const state = tempDir();
    writeFileSync(join(dir, 'v.onnx'), onnx);
    writeFileSync(join(dir, 'v.onnx.json'), Buffer.alloc(LESSAC.json.bytes, 0x20)); // the pinned size, not the pinned bytes
    writeFileSync(join(dir, 'ggml.bin'), onnx);
    const env = { IRIS_CONFIG: emptyConfig(tempDir()), IRIS_STATE_DIR: state };
    const voice = await iris(['models', 'fetch', 'piper:en_US-lessac-medium', '--from', join(dir, 'v.onnx')], env);
    expect(voice.code).toBe(1);
    expect(voice.stderr).toMatch(new RegExp(`^${join(dir, 'v.onnx.json')} has SHA-256 [0-9a-f]{64}, expected ${LESSAC.json.sha256}; nothing was installed`));
    const whisper = await iris(['models', 'fetch', 'base.en', '--from', join(dir, 'ggml.bin')], env);
    expect(whisper.code).toBe(1);
    expect(whisper.stderr).toBe(`${join(dir, 'ggml.bin')} is ${onnx.length} bytes, expected 147964211; nothing was installed\n`);
    expect((await iris(['models', 'fetch', 'https://example.org/m.bin', '--sha256', 'a'.repeat(64), '--from', join(dir, 'ggml.bin')], env)).code).toBe(2);
    expect(files(state)).toEqual([]);
  });
});

describe('the models dir', () => {
  it('is under $IRIS_STATE_DIR unless the config names [stt] model', () => {
    expect(parseConfig('', 'c', { IRIS_STATE_DIR: '/srv/iris' }).stt.model).toBe('/srv/iris/models/ggml-base.en.bin');
    expect(parseConfig('', 'c', {}).stt.model).toBe('/var/lib/iris/models/ggml-base.en.bin');
    expect(parseConfig('[stt]\nmodel = "/opt/m.bin"\n', 'c', { IRIS_STATE_DIR: '/srv/iris' }).stt.model).toBe('/opt/m.bin');
    expect(parseConfig('[stt]\nthreads = 3\n', 'c', { IRIS_STATE_DIR: '/srv/iris' }).stt).toMatchObject({ model: '/srv/iris/models/ggml-base.en.bin', threads: 3 });
  });

});
