import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/** A fresh temp dir, removed after the test. */
export function tempDir(prefix = 'iris-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
