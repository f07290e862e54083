/**
 * A checkout runs from source without a build (README, "Using it from a checkout"): the
 * files the build copies into dist/models — tiktoken's WebAssembly, the wake-word and VAD
 * models — are found in their npm packages instead. The checkout here is a copy of the
 * sources with no dist/ at all, so nothing the worktree's own build left behind can help.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandWav } from './helpers/speech.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);

/** A fresh clone's shape: sources and package files, the installed node_modules, no dist/. */
function unbuiltCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'iris-checkout-'));
  for (const part of ['src', 'tools', 'package.json', 'tsconfig.json']) cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** `npm run --silent iris -- ARGS` in `dir`, exactly as the README says, with a private config and state. */
async function irisFromSource(dir: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env, IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock'),
  };
  delete env.IRIS_CONFIG; // the default config path: all defaults where /etc/iris/config is absent
  delete env.IRIS_MODELS_DIR;
  return run('npm', ['run', '--silent', 'iris', '--', ...args], { cwd: dir, env, timeout: 120_000 });
}

describe('a checkout that was never built', () => {
  let dir = '';
  beforeAll(() => {
    dir = unbuiltCheckout();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('counts tokens: tiktoken\'s WebAssembly comes from its npm package', async () => {
    const { stdout } = await irisFromSource(dir, ['tools', 'budget', '--json']);
    const report = JSON.parse(stdout) as { exposed_tokens: number; tokenizer: string };
    expect(report.tokenizer).toMatch(/qwen/i);
    expect(report.exposed_tokens).toBeGreaterThan(100);
  }, 120_000);

  it('hears the wake word and the end of speech: their models come from their npm packages', async () => {
    const { stdout } = await irisFromSource(dir, ['listen', '--file', commandWav('hey jarvis, what time is it in tokyo'), '--json']);
    const report = JSON.parse(stdout) as Record<string, unknown>;
    expect(report).toMatchObject({ wake: { detected: true, word: 'hey_jarvis' }, transcript: 'what time is it in tokyo', route: 'local' });
  }, 120_000);
});
