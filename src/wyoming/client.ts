/**
 * The connection to a Wyoming satellite, IRIS as its client as Home Assistant is (notes/wyoming.md §3–4): it
 * connects, asks `describe` and waits for `info`, sends `run-satellite`, and keeps the link
 * alive — a `ping` 2 s after each `pong`, answered within 5 s or the link is dropped; the
 * satellite's own pings are answered with `pong`. A lost link is retried with backoff. The
 * satellite is untrusted: events are bounded by the reader in events.ts, and a malformed one
 * closes that link with one log line, nothing else disturbed.
 */
import { connect, type Socket } from 'node:net';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { LinkState } from '../satellite/link.js';
import { supervise } from '../supervise.js';
import { EventReader, WyomingError, type WyomingEvent } from './events.js';
import { decode, encode, type Message } from './messages.js';
import { parseListen } from './server.js';

export interface SatelliteConnectionOptions {
  /** `tcp://host:port`. */
  uri: string;
  log: Logger;
  /** Every event the satellite sends once it runs (not `ping`/`pong`, which the connection answers); one it throws for (a `WyomingError`: told to the satellite) drops the connection. */
  onEvent: (event: WyomingEvent) => void;
  /** The satellite answered `describe` and was told to run (its `info`). */
  onConnected?: (info: Extract<Message, { type: 'info' }>) => void;
  /** The link is gone (`why` in words); it is retried unless stopped. */
  onDisconnected?: (why: string) => void;
  /** First retry delay (ms); doubles up to `maxRetryMs`. Default 1 s. */
  retryMs?: number;
  /** Longest retry delay (ms); default 30 s. */
  maxRetryMs?: number;
  /** Time for connecting and for the `info` answer (ms); default 5 s. */
  connectTimeoutMs?: number;
  /** A `ping` this long after each `pong` (ms); default 2 s, as Home Assistant. */
  pingEveryMs?: number;
  /** No `pong` within this long drops the link (ms); default 5 s, as Home Assistant. */
  pongTimeoutMs?: number;
  /** A satellite with this much unread output has stopped reading and is dropped (bytes); default 8 MiB. */
  maxUnreadBytes?: number;
}

/** One satellite, kept connected until `stop()`. */
export class SatelliteConnection {
  readonly #o: SatelliteConnectionOptions;
  readonly #stopping = new AbortController();
  #socket: Socket | undefined;
  #running: Promise<void> | undefined;
  #state: LinkState = 'disconnected';
  #lastError = '';
  /** Why the link was dropped from outside a session (`send`). */
  #dropped: string | undefined;

  constructor(options: SatelliteConnectionOptions) {
    this.#o = options;
  }

  get state(): LinkState {
    return this.#state;
  }

  /** Why the link last went down ('' when it never did). */
  get lastError(): string {
    return this.#lastError;
  }

  /** Connect in the background, and reconnect whenever the link is lost. */
  start(): void {
    this.#running ??= this.#keepConnected();
  }

  /** Send a message; dropped when not connected. */
  send(message: Message): void {
    const socket = this.#socket;
    if (socket === undefined || socket.destroyed || this.#state !== 'connected') return;
    if (socket.writableLength > (this.#o.maxUnreadBytes ?? 8 * 1024 * 1024)) {
      this.#drop(socket, 'it stopped reading');
      return;
    }
    socket.write(encode(message));
  }

  /** Tell the satellite to pause (as Home Assistant does before closing), close, stop retrying. */
  async stop(): Promise<void> {
    this.#stopping.abort(new Error('stopping'));
    const socket = this.#socket;
    if (socket !== undefined && !socket.destroyed) {
      if (this.#state === 'connected') socket.write(encode({ type: 'pause-satellite' }));
      socket.end();
      socket.destroySoon();
    }
    await this.#running;
    this.#state = 'stopped';
  }

  async #keepConnected(): Promise<void> {
    await supervise(() => this.#session(), {
      signal: this.#stopping.signal,
      firstMs: this.#o.retryMs ?? 1_000,
      maxMs: this.#o.maxRetryMs ?? 30_000, // and a link up this long starts the backoff over
      onExit: (ended, retryMs) => {
        const why = typeof ended === 'string' ? ended : messageOf(ended);
        this.#state = 'disconnected';
        this.#lastError = why;
        this.#o.onDisconnected?.(why);
        this.#o.log.warn(`${this.#o.uri}: ${why}; reconnecting in ${Math.round(retryMs / 100) / 10} s`);
      },
    });
  }

  /** One connection, from connect to close; resolves with why it ended. */
  #session(): Promise<string> {
    const { host, port } = parseListen(this.#o.uri);
    const connectTimeoutMs = this.#o.connectTimeoutMs ?? 5_000;
    const pingEveryMs = this.#o.pingEveryMs ?? 2_000;
    const pongTimeoutMs = this.#o.pongTimeoutMs ?? 5_000;
    this.#state = 'connecting';
    return new Promise<string>((resolve) => {
      const socket = connect({ host, port, noDelay: true }); // small events (a transcript, a detection) go out at once
      this.#socket = socket;
      const reader = new EventReader();
      let running = false;
      let why = 'the satellite closed the connection';
      let timer: NodeJS.Timeout | undefined;
      const arm = (ms: number, then: () => void) => {
        clearTimeout(timer);
        timer = setTimeout(then, ms);
      };
      const fail = (reason: string) => {
        why = reason;
        socket.destroy();
      };
      arm(connectTimeoutMs, () => fail(running ? 'no pong' : `no answer within ${connectTimeoutMs / 1000} s`));
      socket.on('connect', () => socket.write(encode({ type: 'describe' })));
      socket.on('error', (error: NodeJS.ErrnoException) => (why = error.code === 'ECONNREFUSED' ? 'connection refused' : messageOf(error)));
      socket.on('close', () => {
        clearTimeout(timer);
        if (this.#socket === socket) this.#socket = undefined;
        resolve(this.#dropped ?? why);
        this.#dropped = undefined;
      });
      socket.on('data', (chunk: Buffer) => {
        let events: WyomingEvent[];
        try {
          events = reader.push(chunk);
        } catch (error) {
          // One line for the log; the satellite is told why, then dropped.
          socket.end(encode({ type: 'error', text: messageOf(error), code: error instanceof WyomingError ? error.code : 'failed' }));
          fail(`sent a bad event (${messageOf(error)})`);
          return;
        }
        for (const event of events) {
          if (socket.destroyed) return;
          // Only what the connection itself reads is decoded here; the rest is its owner's to decode.
          const own = event.type === 'ping' || event.type === 'pong' || (!running && event.type === 'info') ? decode(event) : undefined;
          if (own?.type === 'ping') {
            // Answered through the same limit as every send: a peer that pings and never reads
            // must not fill the daemon's memory with pongs.
            if (socket.writableLength > (this.#o.maxUnreadBytes ?? 8 * 1024 * 1024)) return this.#drop(socket, 'it stopped reading');
            socket.write(encode({ type: 'pong', ...(own.text === undefined ? {} : { text: own.text.slice(0, 256) }) }));
          } else if (own?.type === 'pong') {
            arm(pingEveryMs, () => {
              socket.write(encode({ type: 'ping' }));
              arm(pongTimeoutMs, () => fail(`no pong within ${pongTimeoutMs / 1000} s`));
            });
          } else if (own?.type === 'info') {
            running = true;
            this.#state = 'connected';
            socket.write(encode({ type: 'run-satellite' }));
            socket.write(encode({ type: 'ping' }));
            arm(pongTimeoutMs, () => fail(`no pong within ${pongTimeoutMs / 1000} s`));
            try {
              this.#o.onConnected?.(own);
            } catch (error) {
              fail(messageOf(error));
            }
          } else if (running) {
            try {
              this.#o.onEvent(event);
            } catch (error) {
              // Audio IRIS cannot take (a format, a pace): the satellite is told why, then dropped.
              if (error instanceof WyomingError) socket.end(encode({ type: 'error', text: messageOf(error), code: error.code }));
              fail(error instanceof WyomingError ? messageOf(error) : `could not handle ${JSON.stringify(event.type.slice(0, 60))} (${messageOf(error)})`);
            }
          }
        }
      });
    });
  }

  #drop(socket: Socket, why: string): void {
    this.#dropped = why;
    socket.destroy();
  }
}

/** Ask a Wyoming endpoint `describe` and return its `info` (then close): for `iris doctor` and discovery. */
export function describeEndpoint(uri: string, timeoutMs = 2_000): Promise<Record<string, unknown>> {
  const { host, port } = parseListen(uri);
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const reader = new EventReader();
    const timer = setTimeout(() => finish(new WyomingError('wyoming_timeout', `no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    const finish = (result: Error | Record<string, unknown>) => {
      clearTimeout(timer);
      socket.destroy();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    socket.on('connect', () => socket.write(encode({ type: 'describe' })));
    socket.on('error', (error: NodeJS.ErrnoException) => finish(new WyomingError('wyoming_unreachable', error.code ?? messageOf(error))));
    socket.on('close', () => finish(new WyomingError('wyoming_unreachable', 'closed without an answer')));
    socket.on('data', (chunk: Buffer) => {
      try {
        const info = reader.push(chunk).find((e) => e.type === 'info');
        if (info) finish(info.data);
      } catch (error) {
        finish(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
}
