/**
 * The composition root's shared half: builds IRIS's parts from a config, for the daemon and
 * for the one-shot CLI commands alike. Constructors only store; `start()` arms background
 * work in order, `stop()` undoes it in reverse.
 */
import { loadTokenizer } from '../budget/tokenizer.js';
import type { Config } from '../config/schema.js';
import type { ChatBackend } from '../conversation/backend.js';
import { Conversation } from '../conversation/engine.js';
import { createOllamaBackend } from '../conversation/ollama.js';
import type { Logger } from '../log.js';
import type { Announcement, ToolSet } from '../toolhost/api.js';
import { ToolHost } from '../toolhost/host.js';
import { registerNativeTools } from '../toolhost/native.js';

export interface AssembleOptions {
  stateDir: string;
  log: Logger;
  /** Where timers and reminders are said; default: logged. */
  announce?: (announcement: Announcement) => void;
  now?: () => number;
  /** The model backend; default Ollama at `[ollama] url`. */
  backend?: ChatBackend;
}

export interface Iris {
  readonly host: ToolHost;
  /** A new conversation (its own memory) on this IRIS's tools and model. */
  conversation(): Conversation;
  /** Apply a re-read config's tool switches without a restart. */
  reconfigure(config: Config): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function assemble(config: Config, options: AssembleOptions): Iris {
  const log = options.log;
  const toggles = (c: Config) => (toggle: string) => (c.tools as Record<string, unknown>)[toggle] !== false;
  const host = new ToolHost({ timeoutMs: config.tools.timeout_s * 1000, isEnabled: toggles(config), log: log.child('tools') });
  const announce = options.announce ?? ((a: Announcement) => log.child('announce').info(`${a.kind} #${a.id}: ${a.text}`));
  const nativeOptions = { homeZone: config.assistant.timezone, stateDir: options.stateDir, log, announce };
  const sets: ToolSet[] = registerNativeTools(host, options.now ? { ...nativeOptions, now: options.now } : nativeOptions);
  const started: ToolSet[] = [];
  const backend = options.backend ?? createOllamaBackend(config.ollama.url);
  let current = config;
  return {
    host,
    conversation() {
      const base = { config: current, backend, host, tokenizer: loadTokenizer, log: log.child('conversation') };
      return new Conversation(options.now ? { ...base, now: options.now } : base);
    },
    reconfigure(next) {
      current = next;
      host.setEnabled(toggles(next));
    },
    async start() {
      for (const set of sets) {
        await set.start?.();
        started.push(set);
      }
    },
    async stop() {
      for (const set of started.reverse()) {
        try {
          await set.stop?.();
        } catch (error) {
          log.error(`stopping tools: ${String(error)}`);
        }
      }
      started.length = 0;
    },
  };
}
