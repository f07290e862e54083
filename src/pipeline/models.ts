/**
 * Downloading a speech model safely: streamed to `<dest>.part` while hashing, checked against a
 * pinned SHA-256, then renamed into place, so a failed or tampered download never leaves a file
 * that looks like a model (whisper.cpp's own download-ggml-model.sh leaves a 0-byte one).
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { isAbortError, messageOf } from '../errors.js';
import { SttError } from './stt.js';

export interface KnownModel {
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
    url: 'https://huggingface.co/ggerganov/whisper.cpp/resolve/main/ggml-tiny.en.bin',
    sha256: '921e4cf8686fdd993dcd081a5da5b6c365bfde1162e72b08d75ac75289920b1f',
    sha1: 'c78c86eb1a8faa21b369bcd33207cc90d64ae9df',
    bytes: 77_704_715,
  }),
  'base.en': Object.freeze({
    url: 'https://huggingface.co/ggerganov/whisper.cpp/resolve/main/ggml-base.en.bin',
    sha256: 'a03779c86df3323075f5e796cb2ce5029f00ec8869eee3fdfb897afe36c6d002',
    sha1: '137c40403d78fd54d454da0f9bd998f78703390c',
    bytes: 147_964_211,
  }),
});

export interface FetchModelOptions {
  url: string;
  /** Expected hex SHA-256 of the file (case-insensitive). */
  sha256: string;
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

/** Download `url` to `dest` if, and only if, its SHA-256 is `sha256`. */
export async function fetchModel({ url, sha256, dest, signal }: FetchModelOptions): Promise<FetchedModel> {
  const expected = sha256.toLowerCase();
  const part = `${dest}.part`;
  await mkdir(dirname(dest), { recursive: true });
  const hash = createHash('sha256');
  let bytes = 0;
  try {
    const response = await fetch(url, signal ? { signal } : {});
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      throw new SttError('model_download', `downloading ${url} failed: HTTP ${response.status}`);
    }
    const count = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    await pipeline(body, count, createWriteStream(part), signal ? { signal } : {});
    const file = await open(part, 'r+');
    await file.sync().finally(() => file.close()); // on disk before the rename makes it the model
  } catch (error) {
    await rm(part, { force: true });
    if (error instanceof SttError || signal?.aborted || isAbortError(error)) throw error;
    throw new SttError('model_download', `downloading ${url} failed: ${messageOf(error)}`, { cause: error });
  }
  const actual = hash.digest('hex');
  if (actual !== expected) {
    await rm(part, { force: true });
    throw new SttError('model_checksum', `${url} has SHA-256 ${actual}, expected ${expected}; nothing was installed`);
  }
  await rename(part, dest);
  return { path: dest, bytes, sha256: actual };
}
