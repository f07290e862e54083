// The control socket under abuse: idle clients, too many clients, half-closed clients, bursts
// of clients, and a daemon stopping with a request in flight.
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request, serveControl, type ControlHandler, type ControlOptions } from '../src/daemon/control.js';
import { silentLogger } from '../src/log.js';
import { tempDir } from './helpers/tmp.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A control server whose `status` answers at once and whose `ask` waits until the signal fires. */
async function serve(options: ControlOptions = {}): Promise<{ path: string; close: () => Promise<void>; asked: string[]; cancelled: AbortSignal[] }> {
  const path = join(tempDir(), 'control.sock');
  const asked: string[] = [];
  const cancelled: AbortSignal[] = [];
  const handle: ControlHandler = (req, signal) => {
    if (req.cmd !== 'ask') return Promise.resolve({ reloaded: 'x' });
    asked.push(req.text);
    return new Promise((_resolve, reject) => {
      signal.addEventListener('abort', () => {
        cancelled.push(signal);
        reject(signal.reason as Error);
      }, { once: true });
    });
  };
  const close = await serveControl(path, handle, silentLogger, options);
  let closed = false;
  const once = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await close();
  };
  closers.push(once);
  return { path, close: once, asked, cancelled };
}

/** Connect and collect what the server says until it closes the connection. */
function client(path: string): { socket: Socket; said: Promise<string> } {
  const socket = connect(path);
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  socket.on('error', () => undefined);
  const said = new Promise<string>((resolve) => socket.on('close', () => resolve(text)));
  return { socket, said };
}

const connected = (socket: Socket) => new Promise<void>((resolve) => socket.once('connect', () => resolve()));

describe('the control socket', () => {
  it('closes an idle connection, saying why', async () => {
    const { path } = await serve({ idleMs: 100 });
    const { said } = client(path);
    expect(JSON.parse(await said)).toEqual({ ok: false, error: 'idle for 0.1 s; closing' });
  });

  it('refuses connections past the cap with a reply, and serves again once one closes', async () => {
    const { path } = await serve({ maxConnections: 2 });
    const first = client(path);
    const second = client(path);
    await Promise.all([connected(first.socket), connected(second.socket)]);
    const third = client(path);
    expect(JSON.parse(await third.said)).toEqual({ ok: false, error: 'IRIS is serving 2 connections already; try again', busy: true });
    first.socket.destroy();
    await first.said;
    await expect(request(path, { cmd: 'reload' })).resolves.toEqual({ reloaded: 'x' });
    second.socket.destroy();
  });

  it('answers a client that half-closes after its request (no newline needed)', async () => {
    const { path } = await serve();
    const { socket, said } = client(path);
    socket.end('{"cmd":"reload"}');
    expect(JSON.parse(await said)).toEqual({ ok: true, result: { reloaded: 'x' } });
  });

  it('serves a burst of 500 parallel clients without refusing one', async () => {
    const { path } = await serve();
    const replies = await Promise.all(Array.from({ length: 500 }, () => request(path, { cmd: 'reload' })));
    expect(replies.filter((r) => r.reloaded === 'x')).toHaveLength(500);
  });

  it('answers bad requests plainly', async () => {
    const { path } = await serve();
    const { socket, said } = client(path);
    socket.end('{"cmd":"ask"}\nnot json\n{"cmd":"rm -rf"}\n');
    expect((await said).trim().split('\n').map((l) => JSON.parse(l) as unknown)).toEqual([
      { ok: false, error: 'bad request: "ask" needs a "text"' },
      { ok: false, error: expect.stringMatching(/^bad request: /) },
      { ok: false, error: 'unknown command "rm -rf"' },
    ]);
  });

  it('closing cancels a request in flight, tells its client, and closes idle connections at once', async () => {
    const { path, close, asked, cancelled } = await serve();
    const idle = client(path);
    await connected(idle.socket);
    const asking = request(path, { cmd: 'ask', text: 'think forever' });
    await expect.poll(() => asked).toEqual(['think forever']);
    const started = performance.now();
    const [, reply] = await Promise.all([close(), asking.then(() => 'answered', (error: Error) => error.message)]);
    expect(reply).toBe('IRIS is stopping; the request was cancelled');
    expect(cancelled).toHaveLength(1);
    expect(await idle.said).toBe('');
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
