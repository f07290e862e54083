/**
 * Child processes of the voice path: stopping one the way the MCP SDK's stdio transport does
 * (close stdin, then SIGTERM, then SIGKILL after a deadline, with unref'd timers so a stuck
 * child never holds the daemon open), and running one to its end for its output.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** How long a child gets to exit after SIGTERM before SIGKILL (ms). */
const KILL_AFTER_MS = 1_000;

/**
 * `first` is SIGKILL for a player: aplay blocked in a write handles SIGTERM by draining the
 * device first, which is the opposite of stopping the sound now.
 */
export async function stopChild(child: ChildProcess, first: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.stdin?.destroy();
  child.kill(first);
  const timer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
  timer.unref();
  await exited;
  clearTimeout(timer);
}

export interface RunResult {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/**
 * Run a program to its end with an argument vector (never a shell), `input` on stdin, and
 * collect its output. A missing program rejects with `missing(error)`; a cancelled run with
 * the signal's reason. The exit code is the caller's to judge.
 */
export function runChild(command: string, args: readonly string[], options: { input?: string; signal?: AbortSignal | undefined; missing: (cause: Error) => Error }): Promise<RunResult> {
  const { input, signal } = options;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], ...(signal ? { signal } : {}) });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      reject(error.code === 'ENOENT' ? options.missing(error) : error);
    });
    child.on('close', (code) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      resolve({ code, stdout: Buffer.concat(chunks), stderr });
    });
    if (input !== undefined && child.stdin) {
      child.stdin.on('error', () => undefined); // the program exiting early must not crash us
      child.stdin.end(input);
    }
  });
}
