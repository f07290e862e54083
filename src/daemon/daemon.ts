/**
 * `iris daemon`: the long-running service. It loads the config (exit 78 when it is broken),
 * starts the parts in order, re-reads the config on SIGHUP (a broken file is reported and
 * the running config kept), and on SIGTERM/SIGINT stops the parts in reverse within a hard
 * deadline.
 */
import { resolve } from 'node:path';
import { loadConfig, type ConfigFile } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { ConfigError, messageOf } from '../errors.js';
import { createLogger, type LogLevel, type Logger } from '../log.js';
import { assemble, type Iris } from './assemble.js';
import { serveControl, socketPath, type ControlRequest } from './control.js';
import { Conversations } from './conversations.js';
import { createNotifier } from './notify.js';
import { VoiceService, type VoiceServiceOptions } from './voice.js';
import type { TurnResult } from '../conversation/engine.js';

export interface DaemonOptions {
  /** The config file: re-read on SIGHUP and `iris reload`, named to `iris status` and CLI commands. */
  config: ConfigFile;
  stateDir: string;
  /** The control socket's path; default from `socketPath()`. */
  socket?: string;
  logLevel?: LogLevel;
  log?: Logger;
  /** Audio source and sink instead of arecord and aplay (tests). */
  voice?: Pick<VoiceServiceOptions<TurnResult>, 'source' | 'sink' | 'retryMs'>;
  /** Resolves when the daemon should stop; default: SIGTERM or SIGINT. */
  stopSignal?: Promise<string>;
}

/** How long stopping may take before the process exits anyway (ms); systemd allows 15 s. */
const STOP_DEADLINE_MS = 10_000;

/** Run until told to stop; resolves with the exit code. */
export async function runDaemon(options: DaemonOptions): Promise<number> {
  const log = options.log ?? createLogger('iris', { level: options.logLevel ?? 'info' });
  // Handlers first, so a SIGTERM during start-up still stops cleanly. `on`, not `once`:
  // write-file-atomic's signal-exit re-raises a signal when its own handler is the last one
  // left, which would kill the process before stop() has saved anything.
  let onStop: (signal: NodeJS.Signals) => void = () => undefined;
  const stopSignal = options.stopSignal ?? new Promise<string>((resolve) => (onStop = resolve));
  process.on('SIGTERM', onStop);
  process.on('SIGINT', onStop);
  try {
    return await serve(options, log, stopSignal);
  } finally {
    process.off('SIGTERM', onStop);
    process.off('SIGINT', onStop);
  }
}

async function serve(options: DaemonOptions, log: Logger, stopSignal: Promise<string>): Promise<number> {
  // Absolute, as the daemon's answers name it: a CLI elsewhere compares it with its own.
  const configPath = resolve(options.config.path);
  let config: Config;
  try {
    config = await loadConfig(options.config);
  } catch (error) {
    if (error instanceof ConfigError) {
      for (const problem of error.problems) log.error(problem);
      return 78;
    }
    throw error;
  }
  const voice = new VoiceService<TurnResult>({
    config: () => config,
    log: log.child('voice'),
    respond: (text, signal, heard) => spoken.turn(text, signal, heard), // `spoken` exists before the voice starts
    onWake: () => spoken.warm(), // the model loads while the person speaks
    ...(options.voice ?? {}),
  });
  // Timers can fire before the voice is up (missed ones, at start): the voice logs those.
  const iris: Iris = assemble(config, { stateDir: options.stateDir, log, announce: (announcement) => voice.announce(announcement) });
  try {
    await iris.start();
  } catch (error) {
    await iris.stop();
    throw error;
  }
  const started = Date.now();
  const conversations = new Conversations(() => iris.conversation()); // one per `iris ask` client
  const spoken = iris.conversation(); // and one for the microphone
  await voice.start();
  /** Re-read the config; a broken one is reported (and thrown) and the running one kept. */
  const reload = async (): Promise<void> => {
    try {
      const next = await loadConfig(options.config);
      await iris.reconfigure(next);
      config = next;
      log.info('config re-read');
    } catch (error) {
      const problems = error instanceof ConfigError ? error.problems : [messageOf(error)];
      for (const problem of problems) log.error(problem);
      log.error('config not applied; keeping the running one');
      throw error instanceof ConfigError ? error : new ConfigError(problems);
    }
  };
  const onHangup = (): void => void reload().catch(() => undefined);
  const control = async (request: ControlRequest): Promise<unknown> => {
    switch (request.cmd) {
      case 'reload':
        await reload();
        return { reloaded: configPath };
      case 'config': // which config answers: CLI commands the daemon answers say so
        return { path: configPath };
      case 'status': {
        const timers = (await iris.host.call('list_timers', {})).structuredContent?.timers as unknown[] | undefined;
        return {
          pid: process.pid,
          uptime_s: Math.round((Date.now() - started) / 1000),
          config: configPath,
          state_dir: options.stateDir,
          home_zone: config.assistant.timezone,
          ollama: { url: config.ollama.url, model: config.ollama.model, loaded: await spoken.modelLoaded() },
          timers: timers?.length ?? 0,
          mcp: iris.mcp.servers.status(),
          voice: voice.status,
        };
      }
      case 'ask': {
        if (typeof request.text !== 'string' || request.text.trim() === '') throw new Error('"ask" needs a "text"');
        const { id, conversation } = conversations.open(request.conversation);
        return { ...(await conversation.turn(request.text).result), conversation: id };
      }
      case 'tools.call':
        if (typeof request.name !== 'string') throw new Error('"tools.call" needs a "name"');
        return iris.host.call(request.name, request.arguments ?? {}, { origin: 'typed' }); // `iris tools call`, `iris timers cancel`
      default:
        throw new Error(`unknown command "${request.cmd}"`);
    }
  };
  const path = options.socket ?? socketPath();
  let closeControl: () => Promise<void> = () => Promise.resolve();
  try {
    closeControl = await serveControl(path, (request) => control(request), log.child('control'), config.daemon.socket_group);
  } catch (error) {
    log.error(`no control socket at ${path} (${messageOf(error)}); iris status and iris ask cannot reach this daemon`);
  }
  const notifier = createNotifier(process.env, log);
  log.info(`ready: home zone ${config.assistant.timezone}, state in ${options.stateDir}`);
  const heard = voice.status;
  log.info(heard.state === 'listening' ? `listening for "${heard.wake_word ?? ''}"` : `voice: ${heard.detail}; serving text turns, timers and MCP tools`);
  notifier.ready(heard.state === 'listening' ? 'listening' : 'serving text turns, timers and tools');

  process.on('SIGHUP', onHangup);
  // Keep the event loop alive while idle; every other handle may be unref'd.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  const why = await stopSignal;
  log.info(`${why}: stopping`);
  notifier.stopping();
  notifier.close();
  const deadline = setTimeout(() => {
    log.error(`could not stop within ${STOP_DEADLINE_MS / 1000} s; exiting anyway`);
    process.exit(1);
  }, STOP_DEADLINE_MS);
  deadline.unref();
  try {
    await closeControl();
    await voice.stop();
    await iris.stop();
  } finally {
    clearTimeout(deadline);
    clearInterval(keepAlive);
    process.off('SIGHUP', onHangup);
  }
  log.info('stopped');
  return 0;
}
