/**
 * `iris models fetch`: which file a name means, where it goes (the models dir, under the state
 * dir unless the config puts [stt] model elsewhere), downloaded or `--from` a copy fetched
 * elsewhere, what to set in the config to use it, and the next step when a download fails.
 * Ctrl-C or SIGTERM stops it with nothing left behind.
 */
import { dirname, join } from 'node:path';
import type { Config } from '../config/schema.js';
import { IrisError, messageOf } from '../errors.js';
import { fetchModel, installModelFile, isModelFileName, KNOWN_MODELS, ownEntry, type FetchedModel } from '../pipeline/models.js';
import { fetchPiperVoice, piperBase, piperFiles, piperVoice, PIPER_VOICES } from '../pipeline/voices.js';
import { EXIT, Exit } from './output.js';

/** A command line that cannot work (exit 2). */
export class UsageError extends Exit {
  override name = 'UsageError' as const;
  constructor(message: string) {
    super(EXIT.usage, message);
  }
}

/** Stopped by SIGINT or SIGTERM; the exit code is 128 + the signal's number, as a shell reports it. */
export class StoppedError extends Exit {
  override name = 'StoppedError' as const;
  constructor(readonly signal: 'SIGINT' | 'SIGTERM') {
    super(signal === 'SIGINT' ? 130 : 143, `stopped by ${signal}; nothing was installed`);
  }
}

export interface ModelsFetchOptions {
  sha256?: string;
  out?: string;
  from?: string;
  /** Give up on a download after this many seconds without a byte. */
  stallS: number;
}

/**
 * Run `work` with a signal that SIGINT or SIGTERM aborts (the default handlers, which end the
 * process without cleaning up, are held off meanwhile); a stop is thrown as StoppedError.
 */
export async function untilStopped<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void => controller.abort(new StoppedError(signal));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await work(controller.signal);
  } catch (error) {
    throw controller.signal.aborted ? controller.signal.reason : error;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

const NAMES = (): string => Object.keys(KNOWN_MODELS).join(', ');
const VOICES = (): string => Object.keys(PIPER_VOICES).map((v) => `piper:${v}`).join(', ');

/**
 * Fetch or install `what` (a whisper.cpp model name, piper:VOICE or a URL) into `modelsDir`
 * (or `--out`); `say` gets each line for the user (the licence first, for a voice). Returns the
 * files installed.
 */
export async function modelsFetch(
  what: string,
  opts: ModelsFetchOptions,
  modelsDir: string,
  say: (line: string) => void,
  signal: AbortSignal,
): Promise<FetchedModel[]> {
  const stallTimeoutMs = opts.stallS * 1000;
  if (what.startsWith('piper:')) {
    const name = what.slice('piper:'.length);
    const entry = piperVoice(name);
    if (entry === undefined) throw new UsageError(`no Piper voice "${name}" in IRIS's manifest (${VOICES()})`);
    if (opts.sha256 !== undefined) throw new UsageError('--sha256 is for a URL; a Piper voice\'s checksums are pinned in IRIS\'s manifest');
    say(`${name}: licence of its training data: ${entry.licence}`);
    const dir = opts.out ?? modelsDir;
    try {
      return await fetchPiperVoice(name, dir, { signal, stallTimeoutMs, ...(opts.from !== undefined ? { from: opts.from } : {}) });
    } catch (error) {
      if (opts.from !== undefined || !isFailure(error, signal)) throw error;
      const urls = piperFiles(name, entry, dir, piperBase()).map((f) => f.url).join(' and ');
      throw new IrisError('model_download', `${messageOf(error)}\nnext: download ${urls} some other way, put them side by side and run: iris models fetch ${what} --from FILE.onnx`, { cause: error });
    }
  }
  const known = ownEntry<{ file: string; url: string; sha256: string; bytes: number }>(KNOWN_MODELS, what);
  if (known === undefined) {
    if (!/^https?:\/\//.test(what)) throw new UsageError(`no model "${what}": known are ${NAMES()}, Piper voices ${VOICES()}, or give an http(s) URL with --sha256`);
    if (opts.from !== undefined) throw new UsageError(`--from needs a known model name (${NAMES()}) or piper:VOICE, whose size and SHA-256 are pinned`);
  } else if (opts.sha256 !== undefined) {
    throw new UsageError(`--sha256 is for a URL; ${what}'s checksum is pinned in IRIS's catalogue`);
  }
  const sha256 = known?.sha256 ?? opts.sha256;
  if (sha256 === undefined) throw new UsageError('a URL needs --sha256 with the published checksum');
  if (!/^[0-9a-fA-F]{64}$/.test(sha256)) throw new UsageError(`--sha256 "${sha256}" is not 64 hex digits`);
  const url = known?.url ?? what;
  const file = known?.file ?? (new URL(url).pathname.split('/').pop() ?? ''); // not basename(): it skips a trailing /
  if (opts.out === undefined && !isModelFileName(file)) {
    throw new UsageError(`cannot name a file after ${url} (its last part is "${file}"): give --out PATH`);
  }
  const dest = opts.out ?? join(modelsDir, file);
  const pinned = { sha256, ...(known ? { bytes: known.bytes } : {}), dest, signal };
  if (opts.from !== undefined) return [await installModelFile({ ...pinned, from: opts.from })];
  try {
    return [await fetchModel({ ...pinned, url, stallTimeoutMs })];
  } catch (error) {
    if (!isFailure(error, signal)) throw error;
    const next = known
      ? `download ${url} some other way and run: iris models fetch ${what} --from FILE`
      : `download it some other way, check it with sha256sum and set [stt] model to its path`;
    throw new IrisError('model_download', `${messageOf(error)}\nnext: ${next}`, { cause: error });
  }
}

/**
 * `iris models fetch WHAT`: `what` fetched or installed into the models dir (the directory of
 * [stt] model), each file reported through `say`, then what to set in the config to use it.
 */
export async function fetchModels(what: string, opts: ModelsFetchOptions, config: Config, say: (line: string) => void): Promise<void> {
  const fetched = await untilStopped((signal) => modelsFetch(what, opts, dirname(config.stt.model), say, signal));
  for (const f of fetched) say(`${f.path}: ${f.bytes} bytes, SHA-256 ${f.sha256} verified`);
  const voice = what.startsWith('piper:') ? what.slice('piper:'.length) : undefined;
  if (voice !== undefined) say(`to use it, set in the config: [tts] engine = "piper" and voice = "${voice}", then: iris reload`);
  else if (fetched[0] && fetched[0].path !== config.stt.model) say(`to use it, set in the config: [stt] model = "${fetched[0].path}", then: iris reload`);
}

/** A download that went wrong, as opposed to one the user stopped. */
function isFailure(error: unknown, signal: AbortSignal): boolean {
  return !signal.aborted && error instanceof IrisError;
}

