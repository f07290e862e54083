/**
 * The daemon's control socket: a Unix socket in the runtime dir that `iris status`, `iris ask`
 * and `iris timers` use against the running daemon (protocol.ts: one JSON request per line,
 * one JSON reply per line). File permissions are the access control: owner iris, mode 0660.
 * A connection that idles is closed, connections past a cap are refused with a reply, a
 * client that half-closes still gets its answers, and closing the server cancels what is in
 * flight (its client is told) and closes every connection.
 */
import { chmod, chown, readFile, unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { retry } from '../supervise.js';
import { parseRequest, type Command, type ControlReply, type ControlRequest, type ControlResults, type RequestOf } from './protocol.js';

export type { ControlRequest } from './protocol.js';

/** Answers one request; `signal` aborts when the daemon stops. */
export type ControlHandler = (request: ControlRequest, signal: AbortSignal) => Promise<ControlResults[Command]>;

export interface ControlOptions {
  /** The group that may use the socket (`[daemon] socket_group`); '' keeps the daemon's own. */
  group?: string;
  /** Close a connection with nothing in flight after this long (ms); default 30 s. */
  idleMs?: number;
  /** Connections served at once; default 64. */
  maxConnections?: number;
}

/** Longest request line accepted (bytes): a question, never a file. */
const MAX_REQUEST_BYTES = 64 * 1024;
const IDLE_MS = 30_000;
const MAX_CONNECTIONS = 64;
/** Pending connections the kernel queues (capped by net.core.somaxconn); clients also retry EAGAIN. */
const BACKLOG = 1024;
/** Times a request is sent again when the kernel's queue was full (EAGAIN) or the daemon busy. */
const CONNECT_RETRIES = 30;

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
export async function serveControl(path: string, handle: ControlHandler, log: Logger, options: ControlOptions = {}): Promise<() => Promise<void>> {
  const { group = '', idleMs = IDLE_MS, maxConnections = MAX_CONNECTIONS } = options;
  await unlink(path).catch(() => undefined); // a socket file left by a crash
  const stopping = new AbortController();
  const connections = new Map<Socket, Connection>();
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', (error) => log.debug(`control client: ${messageOf(error)}`));
    if (connections.size >= maxConnections) {
      hangUp(socket, { ok: false, error: `IRIS is serving ${maxConnections} connections already; try again`, busy: true });
      return;
    }
    connections.set(socket, new Connection(socket, handle, stopping.signal, idleMs));
    socket.once('close', () => connections.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ path, backlog: BACKLOG }, () => resolve());
  });
  await chmod(path, 0o660);
  if (group !== '') {
    const gid = await groupId(group);
    if (gid === undefined) log.warn(`no group "${group}" for the control socket; keeping the daemon's own`);
    else await chown(path, -1, gid).catch((error: unknown) => log.warn(`control socket group ${group}: ${messageOf(error)}`));
  }
  log.info(`control socket at ${path}`);
  return async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    stopping.abort(new Error('IRIS is stopping'));
    // Requests in flight answer (cancelled), then end their connection; idle ones end now.
    for (const connection of connections.values()) connection.finishIfDone();
    await closed;
    await unlink(path).catch(() => undefined);
  };
}

/** One client: its request lines in, one reply line out per request, closed when done or idle. */
class Connection {
  #buffer = '';
  #inFlight = 0;
  #ended = false;

  constructor(
    private readonly socket: Socket,
    private readonly handle: ControlHandler,
    private readonly stopping: AbortSignal,
    private readonly idleMs: number,
  ) {
    socket.setEncoding('utf8');
    socket.setTimeout(idleMs);
    socket.on('timeout', () => hangUp(socket, { ok: false, error: `idle for ${idleMs / 1000} s; closing` }));
    socket.on('data', (chunk: string) => this.#read(chunk));
    // The client closed its side (socat, `printf … | nc -U`): answer what it sent, then close
    // ours. A client that ends its side may still be waiting, so its request runs on; one that
    // is gone is seen when the answer is written (EPIPE, logged at debug).
    socket.on('end', () => {
      this.#ended = true;
      if (this.#buffer.trim() !== '') this.#serve(this.#buffer);
      this.#buffer = '';
      this.finishIfDone();
    });
  }

  /** Close once nothing is in flight and the client ended or the daemon is stopping. */
  finishIfDone(): void {
    if (this.#inFlight === 0 && (this.#ended || this.stopping.aborted)) hangUp(this.socket);
  }

  #read(chunk: string): void {
    this.#buffer += chunk;
    if (this.#buffer.length > MAX_REQUEST_BYTES) {
      this.#buffer = '';
      hangUp(this.socket, { ok: false, error: 'request too long' });
      return;
    }
    for (let newline = this.#buffer.indexOf('\n'); newline !== -1; newline = this.#buffer.indexOf('\n')) {
      const line = this.#buffer.slice(0, newline);
      this.#buffer = this.#buffer.slice(newline + 1);
      if (line.trim() !== '') this.#serve(line);
    }
  }

  #serve(line: string): void {
    this.#inFlight += 1;
    this.socket.setTimeout(0); // a long answer (a model turn) is not idling
    void answer(line, this.handle, this.stopping).then((reply) => {
      if (!this.socket.destroyed) this.socket.write(`${JSON.stringify(reply)}\n`);
      this.#inFlight -= 1;
      if (this.#inFlight === 0) this.socket.setTimeout(this.idleMs);
      this.finishIfDone();
    });
  }
}

/** Say a last line (if any) and close both directions: a half-open client must not hold the connection. */
function hangUp(socket: Socket, last?: ControlReply): void {
  if (socket.destroyed) return;
  socket.end(last === undefined ? '' : `${JSON.stringify(last)}\n`, () => socket.destroy());
}

async function answer(line: string, handle: ControlHandler, stopping: AbortSignal): Promise<ControlReply> {
  const request = parseRequest(line);
  if (typeof request === 'string') return { ok: false, error: request };
  try {
    return { ok: true, result: await handle(request, stopping) };
  } catch (error) {
    if (stopping.aborted) return { ok: false, error: 'IRIS is stopping; the request was cancelled' };
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
export async function request<C extends Command>(path: string, body: RequestOf<C>, timeoutMs = 120_000): Promise<ControlResults[C]> {
  return retry(() => requestOnce<C>(path, body, timeoutMs), {
    attempts: CONNECT_RETRIES + 1,
    retryIf: (error) => ['EAGAIN', 'EBUSY'].includes((error as NodeJS.ErrnoException).code ?? ''),
    delayMs: (attempt) => 10 + Math.random() * 20 * Math.min(attempt, 10), // a burst of clients: back off and try again
  });
}

function requestOnce<C extends Command>(path: string, body: RequestOf<C>, timeoutMs: number): Promise<ControlResults[C]> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    let buffer = '';
    let settled = false;
    const settle = (work: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      work();
    };
    const timer = setTimeout(() => {
      socket.destroy();
      settle(() => reject(new Error(`the daemon did not answer within ${timeoutMs / 1000} s`)));
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(`${JSON.stringify(body)}\n`));
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      const newline = buffer.indexOf('\n');
      if (newline === -1) return;
      socket.end();
      settle(() => {
        let reply: ControlReply<C>;
        try {
          reply = JSON.parse(buffer.slice(0, newline)) as ControlReply<C>;
        } catch {
          reject(new Error('the daemon sent something that is not a reply'));
          return;
        }
        if (reply.ok) resolve(reply.result);
        else reject(Object.assign(new Error(reply.error), reply.busy === true ? { code: 'EBUSY' } : {}));
      });
    });
    socket.on('close', () => settle(() => reject(new Error('the daemon closed the connection without answering (did it stop?)'))));
    socket.on('error', (error: NodeJS.ErrnoException) => settle(() => {
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') {
        reject(new ControlUnavailable('not_running', `IRIS is not running (no daemon listens on ${path})`));
      } else if (error.code === 'EACCES' || error.code === 'EPERM') {
        reject(new ControlUnavailable('forbidden', `permission denied on ${path}: add yourself to the iris group (sudo adduser $USER iris) and log in again`));
      } else reject(error);
    }));
  });
}
