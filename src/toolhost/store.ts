/**
 * JSON documents in the state dir, replaced atomically: write-file-atomic writes a temp file,
 * fsyncs it and renames it over the old one, so a crash leaves the old or the new document,
 * never half of one.
 */
import { mkdirSync, watch } from 'node:fs';
import { readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import type { JsonStore } from './api.js';
import type { Logger } from '../log.js';

export const DEFAULT_STATE_DIR = '/var/lib/iris';

/** `$IRIS_STATE_DIR`, else /var/lib/iris. */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.IRIS_STATE_DIR !== undefined && env.IRIS_STATE_DIR !== '' ? env.IRIS_STATE_DIR : DEFAULT_STATE_DIR;
}

export function createJsonStore<T>(dir: string, name: string, log: Logger): JsonStore<T> {
  const path = join(dir, `${name}.json`);
  let ensured = false;
  return {
    path,
    async read() {
      await removeStaleTemps(path);
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
      try {
        return JSON.parse(text) as T;
      } catch {
        // Keep the bad file for a person to look at; never overwrite it silently.
        const aside = `${path}.corrupt-${Date.now()}`;
        await rename(path, aside);
        log.error(`${path} was not valid JSON; moved it to ${aside} and started empty`);
        return undefined;
      }
    },
    async write(value) {
      if (!ensured) {
        mkdirSync(dir, { recursive: true, mode: 0o750 });
        ensured = true;
      }
      await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o640 });
    },
    watch(onChange) {
      mkdirSync(dir, { recursive: true, mode: 0o750 });
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
