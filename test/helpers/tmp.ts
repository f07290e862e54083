import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/** A fresh temp dir, removed after the test. */
export function tempDir(prefix = 'iris-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** An empty config file in `dir` (every key at its default), so no config on this machine is read. */
export function emptyConfig(dir: string): string {
  const path = join(dir, 'config');
  writeFileSync(path, '');
  return path;
}
