/**
 * The daemon's control socket: a Unix socket in the runtime dir that `iris status`, `iris ask`
 * and `iris timers` use against the running daemon. One JSON request per line, one JSON answer
 * per line: `{"cmd": "status"}` → `{"ok": true, "result": …}` or `{"ok": false, "error": "…"}`.
 * File permissions are the access control: owner iris, mode 0660.
 */
import { chmod, chown, readFile, unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';

export interface ControlRequest {
  cmd: string;
  [key: string]: unknown;
}

export type ControlHandler = (request: ControlRequest) => Promise<unknown>;

/** Longest request line accepted (bytes): a question, never a file. */
const MAX_REQUEST_BYTES = 64 * 1024;

/** `$IRIS_SOCKET`, else `$RUNTIME_DIRECTORY/control.sock` (systemd), else /run/iris/control.sock. */
export function socketPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.IRIS_SOCKET) return env.IRIS_SOCKET;
  const runtime = env.RUNTIME_DIRECTORY?.split(':')[0];
  return join(runtime || '/run/iris', 'control.sock');
}

/** A group's id from /etc/group (Node has no getgrnam). */
async function groupId(name: string): Promise<number | undefined> {
  const groups = await readFile('/etc/group', 'utf8').catch(() => '');
  const line = groups.split('\n').find((l) => l.split(':')[0] === name);
  const gid = Number(line?.split(':')[2]);
  return Number.isInteger(gid) ? gid : undefined;
}

/** Serve requests on `path` until the returned close function is called. */
export async function serveControl(path: string, handle: ControlHandler, log: Logger, group = ''): Promise<() => Promise<void>> {
  await unlink(path).catch(() => undefined); // a socket file left by a crash
  const server: Server = createServer((socket) => serveConnection(socket, handle, log));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  await chmod(path, 0o660);
  if (group !== '') {
    const gid = await groupId(group);
    if (gid === undefined) log.warn(`no group "${group}" for the control socket; keeping the daemon's own`);
    else await chown(path, -1, gid).catch((error: unknown) => log.warn(`control socket group ${group}: ${messageOf(error)}`));
  }
  log.info(`control socket at ${path}`);
  return async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await unlink(path).catch(() => undefined);
  };
}

function serveConnection(socket: Socket, handle: ControlHandler, log: Logger): void {
  let buffer = '';
  socket.setEncoding('utf8');
  socket.on('error', (error) => log.debug(`control client: ${messageOf(error)}`));
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    if (buffer.length > MAX_REQUEST_BYTES) {
      socket.end(`${JSON.stringify({ ok: false, error: 'request too long' })}\n`);
      return;
    }
    let newline = buffer.indexOf('\n');
    while (newline !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      void answer(line, handle).then((reply) => socket.write(`${JSON.stringify(reply)}\n`));
      newline = buffer.indexOf('\n');
    }
  });
}

async function answer(line: string, handle: ControlHandler): Promise<{ ok: boolean; result?: unknown; error?: string }> {
  let request: ControlRequest;
  try {
    request = JSON.parse(line) as ControlRequest;
    if (typeof request.cmd !== 'string') throw new Error('no "cmd"');
  } catch (error) {
    return { ok: false, error: `bad request: ${messageOf(error)}` };
  }
  try {
    return { ok: true, result: await handle(request) };
  } catch (error) {
    return { ok: false, error: messageOf(error) };
  }
}

/** Why the daemon could not be asked: not running, or not allowed. */
export class ControlUnavailable extends Error {
  constructor(readonly reason: 'not_running' | 'forbidden', message: string) {
    super(message);
  }
}

/** Send one request to the daemon and wait for its answer. */
export function request<T>(path: string, body: ControlRequest, timeoutMs = 120_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    let buffer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the daemon did not answer within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(`${JSON.stringify(body)}\n`));
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      const newline = buffer.indexOf('\n');
      if (newline === -1) return;
      clearTimeout(timer);
      socket.end();
      const reply = JSON.parse(buffer.slice(0, newline)) as { ok: boolean; result?: T; error?: string };
      if (reply.ok) resolve(reply.result as T);
      else reject(new Error(reply.error ?? 'the daemon refused the request'));
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') {
        reject(new ControlUnavailable('not_running', `IRIS is not running (no daemon listens on ${path})`));
      } else if (error.code === 'EACCES' || error.code === 'EPERM') {
        reject(new ControlUnavailable('forbidden', `permission denied on ${path}: add yourself to the iris group (sudo adduser $USER iris) and log in again`));
      } else reject(error);
    });
  });
}
