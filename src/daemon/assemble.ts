/**
 * The composition root's shared half: builds IRIS's parts from a config, for the daemon and
 * for the one-shot CLI commands alike. Constructors only store; `init()` reads what the parts
 * need (the MCP server list and its cached tool lists), `start()` arms background work in
 * order (timers, MCP pre-warm), `stop()` undoes it in reverse.
 */
import { loadTokenizer } from '../budget/tokenizer.js';
import type { Config } from '../config/schema.js';
import type { ChatBackend } from '../conversation/backend.js';
import { Conversation, type ConversationOptions } from '../conversation/engine.js';
import type { Place } from '../conversation/types.js';
import { createOllamaBackend } from '../conversation/ollama.js';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { Announcement, Notice, ToolSet } from '../toolhost/api.js';
import { ToolHost } from '../toolhost/host.js';
import { McpProxy, shownDefinitions } from '../toolhost/mcp/proxy.js';
import { startDeviceSignIn } from '../toolhost/mcp/auth/device.js';
import { httpAuth } from '../toolhost/mcp/auth/http.js';
import { McpServers } from '../toolhost/mcp/servers.js';
import { openThesaurus } from '../toolhost/mcp/thesaurus.js';
import { openWordVectors } from '../toolhost/mcp/word-vectors.js';
import { registerNativeTools } from '../toolhost/native.js';
import { createJsonStore } from '../toolhost/store.js';

export interface AssembleOptions {
  stateDir: string;
  log: Logger;
  /** Where timers and reminders are said; default: logged. */
  announce?: (announcement: Announcement) => void;
  /** Where tools' notices go (a timer started in a room); default: nowhere. */
  notify?: (notice: Notice) => void;
  now?: () => number;
  /** The model backend; default Ollama at `[ollama] url`. */
  backend?: ChatBackend;
  /** First MCP restart delay (ms); tests shorten it. */
  mcpBackoffMs?: number;
  /**
   * The daemon: a server that needs sign-in may offer a code to enter on any device (RFC 8628),
   * polled in the background. One-shot commands exit before it could finish.
   */
  signInByCode?: boolean;
}

export interface Iris {
  /** The config in force: every long-lived part reads it here, at use, so a reload reaches all. */
  readonly config: Config;
  readonly host: ToolHost;
  readonly mcp: { servers: McpServers; proxy: McpProxy };
  /** A new conversation (its own memory) on this IRIS's tools and model; a room's knows its `place`. */
  conversation(place?: Place): Conversation;
  /** Read the MCP server list and cached tool lists; servers start lazily after this. */
  init(): Promise<void>;
  /** Put a re-read config in force: read at use from then on; MCP servers reconfigured. */
  reconfigure(config: Config): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The proxy's own limit; each server enforces its `timeout_s` inside it (ms). */
const PROXY_TIMEOUT_MS = 300_000;

export function assemble(config: Config, options: AssembleOptions): Iris {
  const log = options.log;
  let current = config;
  // loadConfig has put the servers of `[mcp] servers_file` into `mcp.servers`.
  const hasServers = (c: Config) => Object.values(c.mcp.servers).some((s) => s.enabled !== false);
  const toggles = (c: Config) => (toggle: string) =>
    toggle === 'mcp' ? hasServers(c) : (c.tools as Record<string, unknown>)[toggle] !== false;
  const host = new ToolHost({
    timeoutMs: () => current.tools.timeout_s * 1000,
    isEnabled: (toggle) => toggles(current)(toggle),
    log: log.child('tools'),
    confirmTimeoutMs: () => current.assistant.confirm_timeout_s * 1000,
    ...(options.now ? { now: options.now } : {}),
  });
  const announce = options.announce ?? ((a: Announcement) => log.child('announce').info(`${a.kind} #${a.id}: ${a.text}`));
  const nativeOptions = { homeZone: () => current.assistant.timezone, stateDir: options.stateDir, log, announce, ...(options.notify ? { notify: options.notify } : {}) };
  const sets: ToolSet[] = registerNativeTools(host, options.now ? { ...nativeOptions, now: options.now } : nativeOptions);
  const mcpLog = log.child('mcp');
  const servers = new McpServers({
    log: mcpLog,
    cache: createJsonStore(options.stateDir, 'mcp-tools', mcpLog, 1),
    connectTimeoutMs: config.mcp.connect_timeout_s * 1000,
    idleStopMs: () => current.mcp.idle_stop_s * 1000,
    ...(options.mcpBackoffMs === undefined ? {} : { backoffMs: options.mcpBackoffMs }),
    auth: (name, server) => httpAuth(name, server, { stateDir: options.stateDir, log: mcpLog, timeoutMs: current.mcp.connect_timeout_s * 1000 }),
    ...(options.signInByCode === true
      ? { signInByCode: (name, server, signal) => startDeviceSignIn(name, server, { stateDir: options.stateDir, log: mcpLog, timeoutMs: current.mcp.connect_timeout_s * 1000, signal }) }
      : {}),
  });
  const vectors = openedOnce(openWordVectors, 'word vectors', 'by shared words alone', mcpLog);
  const thesaurus = openedOnce(openThesaurus, 'thesaurus', "without WordNet's related words", mcpLog);
  const proxy = new McpProxy(servers, vectors.get, thesaurus.get);
  const registerMetaTools = (): void => {
    for (const tool of proxy.metaTools()) {
      host.unregister(tool.name);
      host.register(tool, { source: 'mcp', toggle: 'mcp', timeoutMs: PROXY_TIMEOUT_MS });
    }
  };
  servers.onChange = () => {
    proxy.invalidate();
    registerMetaTools(); // the category names in the description follow the servers
  };
  registerMetaTools();
  const started: ToolSet[] = [];
  let backend = options.backend ?? createOllamaBackend(config.ollama.url);
  const configureServers = (c: Config): Promise<void> => servers.configure(c.mcp.servers);
  /** Set by start(): only the daemon learns tool lists in the background. */
  let running = false;
  const learnTools = (): void => {
    // Tool lists not cached yet are learnt in the background: ranking never waits for a start.
    servers.learnTools().catch((error: unknown) => mcpLog.error(`learning tool lists: ${messageOf(error)}`));
  };

  return {
    get config() {
      return current;
    },
    host,
    mcp: { servers, proxy },
    conversation(place) {
      // Getters, not copies: a long-lived conversation (the daemon's) follows a reloaded config.
      const settings: ConversationOptions = {
        get config() {
          return current;
        },
        get backend() {
          return backend;
        },
        host,
        likelyTools: (words, recent) => shownDefinitions(proxy.likely(words, recent, current.tools.expose_max)),
        tokenizer: loadTokenizer,
        log: log.child('conversation'),
      };
      if (options.now) settings.now = options.now;
      if (place) settings.place = place;
      return new Conversation(settings);
    },
    init: () => configureServers(current),
    async reconfigure(next) {
      if (options.backend === undefined && next.ollama.url !== current.ollama.url) backend = createOllamaBackend(next.ollama.url);
      current = next;
      await configureServers(next);
      if (running && !next.mcp.preload) learnTools();
    },
    async start() {
      for (const set of sets) {
        await set.start?.();
        started.push(set);
      }
      await configureServers(current);
      servers.startHealthChecks(() => current.mcp.health_interval_s * 1000);
      if (current.mcp.preload) {
        // Pre-warm in the background: a slow server must not delay readiness.
        servers.startAll().catch((error: unknown) => mcpLog.error(`pre-warm: ${messageOf(error)}`));
      } else learnTools();
      running = true;
    },
    async stop() {
      running = false;
      try {
        await servers.stop();
      } catch (error) {
        log.error(`stopping MCP servers: ${messageOf(error)}`);
      }
      for (const set of started.reverse()) {
        try {
          await set.stop?.();
        } catch (error) {
          log.error(`stopping tools: ${messageOf(error)}`);
        }
      }
      started.length = 0;
      vectors.close();
      thesaurus.close();
    },
  };
}

/** A ranking file opened on first use, once; undefined (and logged) when this installation has none or it cannot be read. */
function openedOnce<T extends { close(): void }>(open: () => T | undefined, name: string, without: string, log: Logger): { get: () => T | undefined; close: () => void } {
  let file: T | undefined | null = null; // null: not opened yet
  return {
    get: () => {
      if (file !== null) return file;
      try {
        file = open();
        if (file === undefined) log.info(`no ${name} in this installation: remote tools are ranked ${without}`);
      } catch (error) {
        file = undefined;
        log.warn(`${name} unreadable, remote tools are ranked ${without}: ${messageOf(error)}`);
      }
      return file;
    },
    close: () => file?.close(),
  };
}
