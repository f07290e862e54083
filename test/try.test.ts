/**
 * scripts/try.sh, the README's first command: it runs the voice pipeline on a spoken request,
 * and the files it names are there to play after it has finished.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { soxStat } from './helpers/speech.js';
import { emptyConfig, tempDir } from './helpers/tmp.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

it('try.sh answers the spoken request, and the reply WAV it names is still there afterwards', () => {
  const dir = tempDir();
  // Its own config, state and socket: a daemon or config on this machine never answers for it.
  const env = { ...process.env, IRIS_CONFIG: emptyConfig(dir), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 's') };
  const run = spawnSync('bash', ['scripts/try.sh'], { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 });
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/^heard: what time is it in tokyo/m);
  const reply = /^spoken reply: (.+)$/m.exec(run.stdout)?.[1] ?? '';
  expect(existsSync(reply), `${reply} after try.sh`).toBe(true);
  expect(soxStat(reply).length).toBeGreaterThan(1);
}, 150_000);
