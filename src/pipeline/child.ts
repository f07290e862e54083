/**
 * Stopping a child process the way the MCP SDK's stdio transport does: close stdin, then
 * SIGTERM, then SIGKILL after a deadline, with unref'd timers so a stuck child never holds the
 * daemon open.
 */
import type { ChildProcess } from 'node:child_process';

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
