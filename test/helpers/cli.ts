import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

/** The bundle test/global-setup.ts builds: what the package ships. */
const ENTRY = fileURLToPath(new URL('../../dist/iris.mjs', import.meta.url));

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Every `iris` this test file started and that has not exited. A test that times out never
 * reaches its own `finally`, so a daemon it started would run on after the file (spinning on
 * a virtual microphone): whatever is left is killed when the file ends.
 */
const running = new Set<ChildProcess>();
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

/** Start the real `iris` executable (the bundle) with a private config and state dir. */
export function startIris(args: string[], env: Record<string, string>, withInput = false): ChildProcess {
  const child = spawn(process.execPath, [ENTRY, ...args], {
    env: { ...process.env, ...env },
    stdio: [withInput ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Run `iris ARGS` to completion. */
export function iris(args: string[], env: Record<string, string>): Promise<Run> {
  return irisWithInput(args, env);
}

/** Run `iris ARGS` to completion, with `input` on its stdin. */
export function irisWithInput(args: string[], env: Record<string, string>, input?: string): Promise<Run> {
  const child = startIris(args, env, input !== undefined);
  if (input !== undefined) child.stdin?.end(input);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/**
 * Run `iris ARGS` with its stdout a pipe closed before it writes anything, as `| head -1` does
 * once it has its line: what the command then says on stderr, and its exit code.
 */
export function irisWithStdoutClosed(args: string[], env: Record<string, string>): Promise<Omit<Run, 'stdout'>> {
  const child = startIris(args, env);
  child.stdout?.destroy();
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

/** Resolve when `child`'s stderr has printed a line matching `pattern`. */
export function waitForLine(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      const line = seen.split('\n').find((l) => pattern.test(l));
      if (line !== undefined) {
        child.stderr?.off('data', onData);
        resolve(line);
      }
    };
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited (${code}) before ${pattern}: ${seen}`)));
  });
}
