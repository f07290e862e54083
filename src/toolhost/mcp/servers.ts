/**
 * The MCP servers IRIS knows: their connections, states and tool lists. Enabled servers start
 * a few at a time (a slow or broken one never blocks the others); tool lists are cached in the
 * state dir with a fingerprint of the server's config and re-listed on the server's
 * list_changed, so the hierarchy and the ranking are there before the servers are; without
 * pre-warm a server starts at its first call and stops again when idle; a server that dies
 * is restarted with exponential backoff and marked down when it keeps dying. Calls never
 * throw: an offline server is an `isError` result.
 */
import { createHash } from 'node:crypto';
import type { McpServerConfig } from '../../config/schema.js';
import { isAbortError, messageOf } from '../../errors.js';
import type { Logger } from '../../log.js';
import { errorResult, sayAsIs, type AskPerson, type CallToolResult, type JsonStore, type ToolAnswer, type ToolQuestion } from '../api.js';
import { Deadline } from '../deadline.js';
import { Backoff } from '../../supervise.js';
import { connect as connectSdk, type ConnectOptions, type McpConnection, type RemoteTool } from './client.js';
import { Health, type HealthReport } from './health.js';
import { describeAuthFailure, signInErrorOf, signInSentence } from './auth/errors.js';
import { timerMs } from '../../timer.js';

/** `needs-sign-in`: an OAuth sign-in is missing or lapsed (iris mcp login NAME); no restarts until then. */
export type ServerState = 'stopped' | 'starting' | 'up' | 'restarting' | 'down' | 'disabled' | 'needs-sign-in';

export interface ServerStatus {
  name: string;
  state: ServerState;
  /** Why it is down or restarting. */
  reason?: string;
  transport?: McpConnection['transport'];
  tools: number;
  /** A running stdio server's process. */
  pid?: number;
  health: HealthReport;
}

interface ToolCache {
  version: 1;
  servers: Record<string, { fingerprint: string; tools: RemoteTool[] }>;
}

interface Server {
  name: string;
  config: McpServerConfig;
  fingerprint: string;
  state: ServerState;
  reason?: string;
  tools: RemoteTool[];
  connection?: McpConnection;
  starting?: Promise<McpConnection | undefined>;
  /** Restart delays, and failures in a row. */
  backoff: Backoff;
  upSince: number;
  restart?: NodeJS.Timeout;
  health: Health;
  /** A sign-in by code under way: its sentence (the same code until it ends). */
  byCode?: Promise<string | undefined>;
  /** How the calls in flight that can ask the person do so, oldest first. */
  askers: AskPerson[];
  /** Calls in flight: an idle stop waits for none. */
  calls: number;
  /** Stops it after `idleStopMs` without a call (servers started on demand only). */
  idle?: NodeJS.Timeout;
  /** Stopped by IRIS on purpose (idle, or its tool list learnt): not a failure until it starts again. */
  resting?: boolean;
}

export interface McpServersOptions {
  log: Logger;
  cache: JsonStore<ToolCache>;
  connectTimeoutMs: number;
  /** Injected for tests; default the SDK client. */
  connect?: (options: ConnectOptions) => Promise<McpConnection>;
  /** First restart delay (ms), doubled per failure; default 1 000. */
  backoffMs?: number;
  /** OAuth for an HTTP server (auth/http.ts httpAuth); may throw a SignInError for a bad [oauth] table. */
  auth?: (name: string, config: McpServerConfig) => ConnectOptions['auth'];
  /**
   * Without pre-warm, a server started on demand stops after this long without a call (ms),
   * read at each call; 0 or absent: never.
   */
  idleStopMs?: () => number;
  /** A sign-in by code (auth/device.ts startDeviceSignIn): what to say, and when it is done. Daemon only. */
  signInByCode?: (name: string, config: McpServerConfig, signal: AbortSignal) => Promise<{ sentence: string; done: Promise<boolean> } | undefined>;
}

/** Restarts: 1 s, 2 s, 4 s … at most this long apart (ms). */
const MAX_BACKOFF_MS = 30_000;
/** A server that fails this many times in a row is marked down until the config changes. */
const MAX_FAILURES = 5;
/** Up this long (ms) and the failure count starts again. */
const STABLE_MS = 60_000;
/** Servers started at once: each is a Node process on a 2-core machine. */
const START_CONCURRENCY = 3;
/** A call that asks the person stays open at most this much longer than its timeout_s (ms). */
const ASKING_MS = 10 * 60_000;

export function fingerprint(config: McpServerConfig): string {
  const { command, args, env, cwd, url, transport, headers, oauth } = config;
  return createHash('sha256').update(JSON.stringify({ command, args, env, cwd, url, transport, headers, oauth })).digest('hex').slice(0, 16);
}

export class McpServers {
  readonly #servers = new Map<string, Server>();
  readonly #options: McpServersOptions;
  readonly #log: Logger;
  #cache: ToolCache = { version: 1, servers: {} };
  #cacheLoaded = false;
  #running = false;
  #healthTimer: NodeJS.Timeout | undefined;
  /** Aborted at stop: ends sign-ins by code. */
  readonly #stopping = new AbortController();
  /** Called when any server's tool list changes (the proxy rebuilds its index). */
  onChange: () => void = () => undefined;

  constructor(options: McpServersOptions) {
    this.#options = options;
    this.#log = options.log;
  }

  /** Apply a server table: new and changed servers (re)start, removed and disabled ones stop. */
  async configure(servers: Readonly<Record<string, McpServerConfig>>): Promise<void> {
    await this.#loadCache();
    for (const [name, server] of this.#servers) {
      const next = servers[name];
      if (next === undefined || next.enabled === false || fingerprint(next) !== server.fingerprint) {
        const why = next === undefined ? 'removed from the config' : next.enabled === false ? 'disabled' : 'changed';
        if (server.state !== 'disabled' || next?.enabled !== false) this.#log.info(`${name}: ${why}`);
        await this.#shutdown(server, next?.enabled === false ? 'disabled' : 'stopped');
        this.#servers.delete(name);
      } else server.config = next; // allow/deny/confirm/timeout changes apply live
    }
    for (const [name, config] of Object.entries(servers)) {
      if (this.#servers.has(name)) continue;
      const print = fingerprint(config);
      const cached = this.#cache.servers[name];
      const server: Server = {
        name, config, fingerprint: print, state: config.enabled === false ? 'disabled' : 'stopped',
        tools: cached?.fingerprint === print ? cached.tools : [], upSince: 0, health: new Health(), askers: [], calls: 0,
        backoff: new Backoff({ firstMs: this.#options.backoffMs ?? 1000, maxMs: MAX_BACKOFF_MS, stableMs: STABLE_MS }),
      };
      this.#servers.set(name, server);
    }
    this.onChange();
    if (this.#running) await this.startAll();
  }

  /** Start every enabled server that is not running, a few at a time; never throws. */
  async startAll(): Promise<void> {
    this.#running = true;
    await this.#startEach([...this.#servers.values()].filter((s) => s.state === 'stopped'));
  }

  /**
   * Learn the tool lists not cached yet (a server new to this state dir, or whose command
   * changed), a few servers at a time, so ranking has every tool without waiting for a start
   * when a request comes. Without pre-warm each is stopped again once listed; never throws.
   */
  async learnTools(): Promise<void> {
    const unknown = [...this.#servers.values()].filter((s) => s.state === 'stopped' && s.tools.length === 0);
    await this.#startEach(unknown, async (server) => {
      if (this.#running || server.state !== 'up' || server.calls > 0) return;
      this.#log.info(`${server.name}: ${server.tools.length} tools learnt; stopped until used`);
      server.resting = true;
      await this.#shutdown(server, 'stopped');
    });
  }

  /** Start `servers`, START_CONCURRENCY at a time, each followed by `then`. */
  async #startEach(servers: Server[], then?: (server: Server) => Promise<void>): Promise<void> {
    const waiting = [...servers];
    const worker = async (): Promise<void> => {
      for (let server = waiting.shift(); server !== undefined; server = waiting.shift()) {
        await this.#start(server);
        await then?.(server);
      }
    };
    await Promise.all(Array.from({ length: START_CONCURRENCY }, worker));
  }

  /** The PID of a stdio server's process, while it runs. */
  pid(name: string): number | undefined {
    return this.#servers.get(name)?.connection?.pid;
  }

  status(): ServerStatus[] {
    return [...this.#servers.values()].map((s) => {
      const resting = s.resting === true && s.state === 'stopped';
      const status: ServerStatus = { name: s.name, state: s.state, tools: s.tools.length, health: s.health.report(s.connection !== undefined, s.upSince, Date.now(), resting) };
      if (s.reason !== undefined) status.reason = s.reason;
      if (s.connection !== undefined) status.transport = s.connection.transport;
      if (s.connection?.pid !== undefined) status.pid = s.connection.pid;
      return status;
    });
  }

  /** Enabled servers with the tools the model may use (allow/deny applied, task-only tools hidden). */
  catalogue(): { name: string; config: McpServerConfig; state: ServerState; tools: RemoteTool[] }[] {
    return [...this.#servers.values()]
      .filter((s) => s.state !== 'disabled')
      .map((s) => ({ name: s.name, config: s.config, state: s.state, tools: s.tools.filter((t) => visible(t, s.config)) }));
  }

  /** Every tool of every configured server, hidden ones included, with whether the model may use it. */
  listing(): { server: string; state: ServerState; tool: RemoteTool; enabled: boolean }[] {
    return [...this.#servers.values()].flatMap((s) =>
      s.tools.map((tool) => ({ server: s.name, state: s.state, tool, enabled: s.state !== 'disabled' && visible(tool, s.config) })),
    );
  }

  /** Connect every server that has no tool list yet (one-shot commands that must list them). */
  async ensureAllTools(): Promise<void> {
    await this.#startEach([...this.#servers.values()].filter((s) => s.tools.length === 0 && s.state === 'stopped'));
  }

  /** The server's tools, connecting first when it has none cached (servers started lazily). */
  async ensureTools(name: string): Promise<void> {
    const server = this.#servers.get(name);
    if (server !== undefined && server.tools.length === 0 && server.state === 'stopped') await this.#start(server);
  }

  /**
   * Call a tool. Never throws: an offline server or a failed call is an `isError` result.
   * With `ask`, the server's questions during the call go to the person; their time to
   * answer does not count against `timeout_s`.
   */
  async call(name: string, tool: string, args: Record<string, unknown>, signal?: AbortSignal, ask?: AskPerson): Promise<CallToolResult> {
    const server = this.#servers.get(name);
    if (server === undefined || server.state === 'disabled') return errorResult(`There is no enabled tool server named "${name}".`);
    const connection = server.connection
      ?? (server.state === 'stopped' ? await this.#start(server) : server.starting !== undefined ? await server.starting : undefined);
    if (server.state === 'needs-sign-in') return sayAsIs(errorResult(await this.#signInText(server)));
    if (connection === undefined) {
      return errorResult(`The ${name} tools are offline right now${server.reason ? ` (${server.reason})` : ''}.`);
    }
    const started = performance.now();
    const timeoutMs = (server.config.timeout_s ?? 30) * 1000;
    const asking = ask === undefined ? undefined : askingCall(timeoutMs, ask, signal);
    if (asking !== undefined) server.askers.push(asking.ask);
    server.calls += 1;
    clearTimeout(server.idle);
    try {
      const result = await connection.callTool(tool, args, asking === undefined
        ? { timeoutMs, ...(signal ? { signal } : {}) }
        : { timeoutMs: timeoutMs + ASKING_MS, signal: asking.signal });
      server.health.record(true, performance.now() - started);
      return result;
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason ?? error;
      if (signInErrorOf(error)?.code === 'needs_sign_in') {
        await this.#needsSignIn(server);
        return sayAsIs(errorResult(await this.#signInText(server)));
      }
      const text = describeAuthFailure(name, error) ?? messageOf(error);
      server.health.record(false, performance.now() - started, text);
      if (/-32001|timed out/i.test(text)) return errorResult(`${name}.${tool} timed out after ${server.config.timeout_s ?? 30} s.`);
      if (/-32000|Connection closed|Not connected|fetch failed/i.test(text)) {
        return errorResult(`The ${name} tools went offline during the call (${text}).`);
      }
      return errorResult(`${name}.${tool} failed: ${text}`);
    } finally {
      asking?.deadline.clear();
      server.askers = server.askers.filter((a) => a !== asking?.ask);
      server.calls -= 1;
      this.#armIdleStop(server);
    }
  }

  /** Without pre-warm, stop a server after `idleStopMs` with no call; its next call starts it again. */
  #armIdleStop(server: Server): void {
    clearTimeout(server.idle);
    const idleMs = this.#options.idleStopMs?.() ?? 0;
    if (this.#running || idleMs <= 0 || server.calls > 0 || server.connection === undefined) return;
    server.idle = setTimeout(() => {
      if (server.calls > 0 || server.connection === undefined || this.#running) return;
      this.#log.info(`${server.name}: no call for ${idleMs / 1000} s; stopped until used`);
      server.resting = true;
      void this.#shutdown(server, 'stopped');
    }, idleMs);
    server.idle.unref();
  }

  /**
   * Ping every connected server every `intervalMs()` (read at each round, so a reload changes
   * it): its health has a response time and a success rate even when nobody calls its tools.
   */
  startHealthChecks(intervalMs: () => number): void {
    clearTimeout(this.#healthTimer);
    const round = async (): Promise<void> => {
      await this.checkHealth();
      this.#healthTimer = setTimeout(() => void round(), timerMs(intervalMs()));
      this.#healthTimer.unref();
    };
    this.#healthTimer = setTimeout(() => void round(), timerMs(intervalMs()));
    this.#healthTimer.unref();
  }

  /** Ping every connected server once, now. */
  async checkHealth(): Promise<void> {
    await Promise.all([...this.#servers.values()].map(async (server) => {
      const connection = server.connection;
      if (connection === undefined) return;
      const started = performance.now();
      try {
        await connection.ping(5_000);
        server.health.record(true, performance.now() - started);
      } catch (error) {
        server.health.record(false, performance.now() - started, `ping: ${messageOf(error)}`);
      }
    }));
  }

  /**
   * Connect a server again now (after `iris mcp login` or `logout` changed its sign-in): a
   * server that is down or waiting for a sign-in gets a fresh start. Throws for an unknown name.
   */
  async reconnect(name: string): Promise<ServerStatus> {
    const server = this.#servers.get(name);
    if (server === undefined || server.state === 'disabled') throw new Error(`there is no enabled MCP server named "${name}"`);
    await this.#shutdown(server, 'stopped');
    server.backoff.reset();
    delete server.reason;
    await this.#start(server);
    const status = this.status().find((s) => s.name === name);
    if (status === undefined) throw new Error(`${name} was removed`);
    return status;
  }

  async stop(): Promise<void> {
    clearTimeout(this.#healthTimer);
    this.#stopping.abort();
    this.#running = false;
    await Promise.all([...this.#servers.values()].map((s) => this.#shutdown(s, 'stopped')));
  }

  async #start(server: Server): Promise<McpConnection | undefined> {
    if (server.starting !== undefined) return server.starting;
    server.state = server.state === 'restarting' ? 'restarting' : 'starting';
    server.starting = this.#connect(server).finally(() => {
      delete server.starting;
    });
    return server.starting;
  }

  async #connect(server: Server): Promise<McpConnection | undefined> {
    const { name } = server;
    const started = performance.now();
    let connection: McpConnection | undefined;
    try {
      connection = await (this.#options.connect ?? connectSdk)({
        name,
        config: server.config,
        timeoutMs: this.#options.connectTimeoutMs,
        log: this.#log,
        onClose: (why) => this.#closed(server, connection, why),
        onToolsChanged: () => void this.#refresh(server, connection),
        auth: this.#options.auth?.(name, server.config),
        onQuestion: (question, signal) => this.#ask(server, question, signal),
      });
      server.connection = connection;
      delete server.resting;
      server.tools = await connection.listTools();
      server.state = 'up';
      server.upSince = Date.now();
      delete server.reason;
      this.#log.info(`${name}: up over ${connection.transport}, ${server.tools.length} tools, ${Math.round(performance.now() - started)} ms`);
      await this.#saveCache(server);
      this.onChange();
      this.#armIdleStop(server);
      return connection;
    } catch (error) {
      await connection?.close().catch(() => undefined);
      delete server.connection;
      const signIn = signInErrorOf(error)?.code;
      const refused = signIn === 'unreachable' ? undefined : describeAuthFailure(name, error);
      if (signIn === 'needs_sign_in') await this.#needsSignIn(server);
      else if (refused !== undefined) {
        // Credentials refused, no OAuth offered, hostile metadata, a bad [oauth] table: restarts
        // cannot fix it. One line, no raw response body; a reload or `iris mcp login` tries again.
        server.state = 'down';
        server.reason = refused;
        this.#log.error(`${name}: ${refused}`);
      } else this.#failed(server, isAbortError(error) ? 'start was cancelled' : messageOf(error));
      return undefined;
    }
  }

  /**
   * A server's question goes to the person through the oldest call in flight that can ask
   * (MCP does not say which call a question belongs to); with none, it is declined.
   */
  async #ask(server: Server, question: ToolQuestion, signal: AbortSignal): Promise<ToolAnswer> {
    const [ask, ...others] = server.askers;
    // MCP does not say which call a question belongs to: with calls from two conversations in
    // flight (two rooms), asking one of them could put one person's question to another.
    if (ask !== undefined && others.length === 0) return ask(question, signal);
    this.#log.info(`${server.name}: asked the person a question ${ask === undefined ? 'where nobody can answer' : 'while several of its calls run, so whose it is is unknown'}; declined`);
    return { action: 'decline' };
  }

  #closed(server: Server, connection: McpConnection | undefined, why: string): void {
    if (connection === undefined || server.connection !== connection) return; // an old or never-finished connection
    delete server.connection;
    if (server.state === 'stopped' || server.state === 'disabled') return; // we closed it
    if (why.includes(signInSentence(server.name))) { // a ping found the sign-in lapsed: no restarts
      void this.#needsSignIn(server);
      return;
    }
    if (!this.#running) {
      // Started on demand (no pre-warm): the next call starts it again.
      server.state = 'stopped';
      server.reason = why;
      this.#log.warn(`${server.name}: ${why}`);
      return;
    }
    this.#failed(server, why, Date.now() - server.upSince);
  }

  /** A start failed, or a connection that lasted `ranMs` was lost: restart after the backoff's delay, or give up. */
  #failed(server: Server, why: string, ranMs = 0): void {
    const delayMs = server.backoff.failed(ranMs);
    server.reason = why;
    if (server.backoff.failures >= MAX_FAILURES) {
      server.state = 'down';
      this.#log.error(`${server.name}: down after ${server.backoff.failures} failures in a row (last: ${why})`);
      return;
    }
    server.state = 'restarting';
    this.#log.warn(`${server.name}: ${why}; restarting in ${delayMs / 1000} s`);
    clearTimeout(server.restart);
    server.restart = setTimeout(() => void this.#start(server), delayMs);
    server.restart.unref();
  }

  /**
   * What a tool of a server that needs sign-in answers: in the daemon, where the authorization
   * server offers it, a code to enter on any device (polled; once signed in the server
   * reconnects); else how to run `iris mcp login`.
   */
  async #signInText(server: Server): Promise<string> {
    const start = this.#options.signInByCode;
    if (start === undefined || this.#stopping.signal.aborted) return signInSentence(server.name);
    server.byCode ??= start(server.name, server.config, this.#stopping.signal).then((byCode) => {
      void byCode?.done.then((signedIn) => {
        delete server.byCode;
        if (signedIn && !this.#stopping.signal.aborted) void this.reconnect(server.name).catch(() => undefined);
      });
      return byCode?.sentence;
    }, (error: unknown) => {
      this.#log.warn(`${server.name}: no sign-in by code (${messageOf(error)})`);
      return undefined;
    });
    const sentence = await server.byCode;
    if (sentence === undefined) delete server.byCode;
    return sentence ?? signInSentence(server.name);
  }

  /** The sign-in is missing or lapsed: no restarts until `iris mcp login` says so (reconnect). */
  async #needsSignIn(server: Server): Promise<void> {
    const connection = server.connection;
    delete server.connection;
    clearTimeout(server.restart);
    const first = server.state !== 'needs-sign-in';
    server.state = 'needs-sign-in';
    server.reason = signInSentence(server.name);
    if (first) this.#log.warn(`${server.name}: needs sign-in: run iris mcp login ${server.name}`);
    await connection?.close().catch(() => undefined);
  }

  async #refresh(server: Server, connection: McpConnection | undefined): Promise<void> {
    if (connection === undefined || server.connection !== connection) return;
    try {
      server.tools = await connection.listTools();
      this.#log.info(`${server.name}: tool list changed, now ${server.tools.length} tools`);
      await this.#saveCache(server);
      this.onChange();
    } catch (error) {
      // A list that changed as the session closed (stopped, reconfigured): nothing is wrong.
      const closed = server.connection !== connection;
      this.#log[closed ? 'debug' : 'warn'](`${server.name}: could not re-list tools${closed ? ' (the session closed meanwhile)' : ''}: ${messageOf(error)}`);
    }
  }

  async #shutdown(server: Server, state: ServerState): Promise<void> {
    clearTimeout(server.restart);
    clearTimeout(server.idle);
    server.state = state;
    const connection = server.connection;
    delete server.connection;
    await connection?.close().catch((error: unknown) => this.#log.warn(`${server.name}: close: ${messageOf(error)}`));
  }

  async #loadCache(): Promise<void> {
    if (this.#cacheLoaded) return;
    this.#cacheLoaded = true;
    try {
      const stored = await this.#options.cache.read();
      if (stored?.version === 1) this.#cache = stored;
    } catch (error) {
      this.#log.warn(`tool list cache unreadable: ${messageOf(error)}`);
    }
  }

  async #saveCache(server: Server): Promise<void> {
    this.#cache.servers[server.name] = { fingerprint: server.fingerprint, tools: server.tools };
    await this.#options.cache.write(this.#cache).catch((error: unknown) => this.#log.warn(`tool list cache not saved: ${messageOf(error)}`));
  }
}

/** A call's own deadline and cancellation, stopped while the person answers its questions. */
function askingCall(timeoutMs: number, ask: AskPerson, outer: AbortSignal | undefined): { signal: AbortSignal; ask: AskPerson; deadline: Deadline } {
  const timedOut = new AbortController();
  const deadline = new Deadline(timeoutMs, () => timedOut.abort(new Error(`timed out after ${timeoutMs / 1000} s`)));
  return { signal: outer === undefined ? timedOut.signal : AbortSignal.any([outer, timedOut.signal]), ask: deadline.around(ask), deadline };
}

function visible(tool: RemoteTool, config: McpServerConfig): boolean {
  if (tool.execution?.taskSupport === 'required') return false; // IRIS does not run MCP tasks
  const allow = config.allow ?? [];
  if (allow.length > 0 && !allow.includes(tool.name)) return false;
  return !(config.deny ?? []).includes(tool.name);
}
