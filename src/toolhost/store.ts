/**
 * JSON documents in the state dir, replaced atomically: write-file-atomic writes a temp file,
 * fsyncs it and renames it over the old one, so a crash leaves the old or the new document,
 * never half of one. Changes go through `update`, under a proper-lockfile lock (a directory
 * created next to the file, stale after a crash), so two IRIS processes never interleave a
 * read-change-write. Every document carries a version; one of another version is left alone.
 */
import { mkdirSync, watch } from 'node:fs';
import { readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { basename, dirname, join } from 'node:path';
import lockfile from 'proper-lockfile';
import writeFileAtomic from 'write-file-atomic';
import { IrisError } from '../errors.js';
import type { JsonStore, Versioned } from './api.js';
import type { Logger } from '../log.js';

/** A state file IRIS must not touch: another version, or not a document of this kind. */
export class StateError extends IrisError {
  override name = 'StateError' as const;
}

/**
 * How a writer waits for the lock: up to about 30 s of growing, jittered retries (1,000
 * parallel writes from 10 processes finish well inside it); a lock left by a crash is stale
 * after 10 s (the holder refreshes it while alive).
 */
const LOCK_OPTIONS = {
  realpath: false,
  stale: 10_000,
  retries: { retries: 300, factor: 1.3, minTimeout: 5, maxTimeout: 100, randomize: true },
};
/** A document that does not parse is read again this many times, 50 ms apart, before it is set aside: `cp` over it is not atomic. */
const PARSE_RETRIES = 10;

export const DEFAULT_STATE_DIR = '/var/lib/iris';

/** `$IRIS_STATE_DIR`, else /var/lib/iris. */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.IRIS_STATE_DIR !== undefined && env.IRIS_STATE_DIR !== '' ? env.IRIS_STATE_DIR : DEFAULT_STATE_DIR;
}

/** `mode`: the file's permissions (default 0640); `dirMode`: its directory's, when created (default 0750). */
export function createJsonStore<T extends Versioned>(
  dir: string, name: string, log: Logger, version: number, { mode = 0o640, dirMode = 0o750 }: { mode?: number; dirMode?: number } = {},
): JsonStore<T> {
  const path = join(dir, `${name}.json`);
  let ensured = false;
  /** Set once a file of another version was seen: nothing is written over it. */
  let refused: StateError | undefined;
  const ensureDir = (): void => {
    if (ensured) return;
    mkdirSync(dir, { recursive: true, mode: dirMode });
    ensured = true;
  };

  async function read(): Promise<T | undefined> {
    await removeStaleTemps(path);
    for (let attempt = 0; ; attempt++) {
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text) as unknown;
      } catch {
        if (attempt < PARSE_RETRIES) {
          if (attempt === 0) log.debug(`${path} is not valid JSON yet; reading it again (a copy in progress?)`);
          await sleep(50); // someone may be writing it in place (cp, an editor)
          continue;
        }
        // Keep the bad file for a person to look at; never overwrite it silently.
        const aside = `${path}.corrupt-${Date.now()}`;
        await rename(path, aside);
        log.error(`${path} was not valid JSON; moved it to ${aside} and started empty`);
        return undefined;
      }
      const found = (parsed as Partial<Versioned> | null)?.version;
      if (found !== version) {
        refused = new StateError('state_version', `${path} is ${typeof found === 'number' ? `version ${found}` : 'not a versioned IRIS document'}; this IRIS reads version ${version}. It was left as it is: upgrade IRIS, or move the file away to start afresh.`);
        throw refused;
      }
      refused = undefined;
      return parsed as T;
    }
  }

  async function write(value: T): Promise<void> {
    if (refused !== undefined) throw refused;
    ensureDir();
    await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`, { mode });
  }

  return {
    path,
    read,
    write,
    async update(change) {
      ensureDir();
      const release = await lockfile.lock(path, { ...LOCK_OPTIONS, lockfilePath: `${path}.lock` });
      try {
        const changed = await change(await read());
        await write(changed.value);
        return changed;
      } finally {
        await release().catch((error: unknown) => log.warn(`${path}: releasing the lock: ${String(error)}`));
      }
    },
    watch(onChange) {
      ensureDir();
      // Watch the directory: an atomic rename replaces the file's inode.
      const watcher = watch(dir, (_event, file) => {
        if (file === basename(path)) onChange();
      });
      watcher.unref();
      return () => watcher.close();
    },
  };
}

/** A temp file older than this was left by a crash, not by a writer at work (ms). */
const STALE_TEMP_MS = 60_000;

/** write-file-atomic names its temp files `<file>.<hash>`; a crash mid-write leaves one. */
async function removeStaleTemps(path: string): Promise<void> {
  const prefix = `${basename(path)}.`;
  let names: string[];
  try {
    names = await readdir(dirname(path));
  } catch {
    return;
  }
  await Promise.all(
    names
      .filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
      .map(async (n) => {
        const temp = join(dirname(path), n);
        if (Date.now() - (await stat(temp)).mtimeMs > STALE_TEMP_MS) await unlink(temp);
      })
      .map((p) => p.catch(() => undefined)),
  );
}
