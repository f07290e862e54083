/**
 * Installing a speech model safely, downloaded or from a file fetched elsewhere: streamed to
 * `<dest>.part` while hashing, cut off the moment it passes its pinned size, abandoned when a
 * download stalls, checked against a pinned SHA-256, then renamed into place. The `.part` goes
 * on every way out (a mismatch, an error, an abort), so a failed or tampered download never
 * leaves a file that looks like a model (whisper.cpp's download-ggml-model.sh leaves a 0-byte
 * one) nor fills the disk from a mirror that never stops sending.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { isAbortError, messageOf } from '../errors.js';
import { SttError } from './stt.js';

export interface KnownModel {
  /** The file's name in the models dir (never taken from the URL). */
  file: string;
  url: string;
  /** Hex SHA-256 of the file. */
  sha256: string;
  /** SHA-1 as whisper.cpp's models/README.md publishes it (the only hash in the vendored source). */
  sha1: string;
  /** Exact size in bytes. */
  bytes: number;
}

/**
 * The official whisper.cpp models on Hugging Face. whisper.cpp 1.9.1's models/README.md lists
 * SHA-1 only; the SHA-256 values are the Hugging Face LFS object ids as pinned (identically) by
 * several independent public projects (Nix fetchurl pins among them), not yet re-verified here.
 */
export const KNOWN_MODELS: Readonly<Record<'tiny.en' | 'base.en', Readonly<KnownModel>>> = Object.freeze({
  'tiny.en': Object.freeze({
    file: 'ggml-tiny.en.bin',
    url: 'https://huggingface.co/ggerganov/whisper.cpp/resolve/main/ggml-tiny.en.bin',
    sha256: '921e4cf8686fdd993dcd081a5da5b6c365bfde1162e72b08d75ac75289920b1f',
    sha1: 'c78c86eb1a8faa21b369bcd33207cc90d64ae9df',
    bytes: 77_704_715,
  }),
  'base.en': Object.freeze({
    file: 'ggml-base.en.bin',
    url: 'https://huggingface.co/ggerganov/whisper.cpp/resolve/main/ggml-base.en.bin',
    sha256: 'a03779c86df3323075f5e796cb2ce5029f00ec8869eee3fdfb897afe36c6d002',
    sha1: '137c40403d78fd54d454da0f9bd998f78703390c',
    bytes: 147_964_211,
  }),
});

/** The catalogue entry called `name`, if it is one: own keys only (`__proto__` is no model). */
export function ownEntry<T>(catalogue: Readonly<Record<string, T>>, name: string): T | undefined {
  return Object.hasOwn(catalogue, name) ? catalogue[name] : undefined;
}

/** A file name a model may be saved under: no path, no leading dot, no `.part` of its own. */
export function isModelFileName(name: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/.test(name) && !name.endsWith('.part');
}

/**
 * Give up on a download after this long without a byte (headers included): a working mirror
 * sends something every second, and 30 s rides out a Wi-Fi roam or a CDN hiccup.
 */
export const STALL_TIMEOUT_MS = 30_000;

/** What the file must be. */
export interface Pinned {
  /** Expected hex SHA-256 of the file (case-insensitive). */
  sha256: string;
  /** Exact size in bytes; anything past it is refused the moment it arrives. Absent: not pinned (a URL given with --sha256 alone). */
  bytes?: number;
}

export interface FetchModelOptions extends Pinned {
  url: string;
  /** Where the model goes; its directory is created. */
  dest: string;
  signal?: AbortSignal;
  /** Give up when no byte has arrived for this long (ms; default STALL_TIMEOUT_MS, 30 s). */
  stallTimeoutMs?: number;
}

export interface InstallModelOptions extends Pinned {
  /** A copy of the model fetched some other way. */
  from: string;
  /** Where the model goes; its directory is created. */
  dest: string;
  signal?: AbortSignal;
}

export interface FetchedModel {
  path: string;
  bytes: number;
  /** Hex SHA-256 of what was written. */
  sha256: string;
}

/** Download `url` to `dest` if, and only if, it has the pinned size and SHA-256. */
export async function fetchModel({ url, sha256, bytes, dest, signal, stallTimeoutMs = STALL_TIMEOUT_MS }: FetchModelOptions): Promise<FetchedModel> {
  const stall = new AbortController();
  const stalled = new SttError('model_stalled', `downloading ${url} failed: nothing arrived for ${stallTimeoutMs / 1000} s`);
  const timer = setTimeout(() => stall.abort(stalled), stallTimeoutMs);
  const both = signal ? AbortSignal.any([signal, stall.signal]) : stall.signal;
  try {
    let response: Response;
    try {
      response = await fetch(url, { signal: both });
    } catch (error) {
      if (stall.signal.aborted) throw stalled;
      if (signal?.aborted || isAbortError(error)) throw error;
      const cause = (error as { cause?: unknown }).cause;
      throw new SttError('model_download', `downloading ${url} failed: ${messageOf(cause ?? error)}`, { cause: error });
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      throw new SttError('model_download', `downloading ${url} failed: HTTP ${response.status}`);
    }
    const declared = Number(response.headers.get('content-length') ?? NaN);
    if (bytes !== undefined && declared > bytes) {
      await response.body.cancel();
      throw new SttError('model_size', `${url} is ${declared} bytes, more than the pinned ${bytes}; nothing was installed`);
    }
    const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    return await writeChecked(body, { what: url, sha256, bytes, dest, signal: both, onChunk: () => void timer.refresh() }).catch((error: unknown) => {
      throw stall.signal.aborted ? stalled : error;
    });
  } finally {
    clearTimeout(timer);
  }
}

/** Install a copy of a model fetched elsewhere (`--from FILE`) if it has the pinned size and SHA-256. */
export async function installModelFile({ from, sha256, bytes, dest, signal }: InstallModelOptions): Promise<FetchedModel> {
  let size: number;
  try {
    size = (await stat(from)).size;
  } catch (error) {
    throw new SttError('model_file', `cannot read ${from}: ${messageOf(error)}`, { cause: error });
  }
  if (bytes !== undefined && size !== bytes) throw new SttError('model_size', `${from} is ${size} bytes, expected ${bytes}; nothing was installed`);
  return writeChecked(createReadStream(from), { what: from, sha256, bytes, dest, signal });
}

/**
 * `source` into `dest` through `<dest>.part`: stopped as soon as it passes `bytes`, renamed into
 * place only when it is exactly `bytes` long with the SHA-256 `sha256`. The `.part` never
 * outlives the call.
 */
async function writeChecked(
  source: Readable,
  { what, sha256, bytes: pinned, dest, signal, onChunk }: { what: string; sha256: string; bytes: number | undefined; dest: string; signal: AbortSignal | undefined; onChunk?: () => void },
): Promise<FetchedModel> {
  const expected = sha256.toLowerCase();
  const part = `${dest}.part`;
  const hash = createHash('sha256');
  let bytes = 0;
  try {
    await mkdir(dirname(dest), { recursive: true });
    const count = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        onChunk?.();
        if (pinned !== undefined && bytes + chunk.length > pinned) {
          done(new SttError('model_size', `${what} sent more than its pinned ${pinned} bytes: stopped with ${bytes} written; nothing was installed`));
          return;
        }
        hash.update(chunk);
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    try {
      await pipeline(source, count, createWriteStream(part), signal ? { signal } : {});
    } catch (error) {
      if (error instanceof SttError || signal?.aborted || isAbortError(error)) throw error;
      throw new SttError('model_download', `reading ${what} failed: ${messageOf(error)}`, { cause: error });
    }
    if (pinned !== undefined && bytes !== pinned) {
      throw new SttError('model_size', `${what} is ${bytes} bytes, expected ${pinned}; nothing was installed`);
    }
    const actual = hash.digest('hex');
    if (actual !== expected) throw new SttError('model_checksum', `${what} has SHA-256 ${actual}, expected ${expected}; nothing was installed`);
    const file = await open(part, 'r+');
    await file.sync().finally(() => file.close()); // on disk before the rename makes it the model
    await rename(part, dest);
    return { path: dest, bytes, sha256: actual };
  } catch (error) {
    await rm(part, { force: true });
    throw error;
  }
}
