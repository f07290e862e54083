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
import { serveControl, socketPath } from './control.js';
import type { Command, ControlRequest, ControlResults, DaemonStatus } from './protocol.js';
import { Conversations } from './conversations.js';
import { serveWyoming } from '../wyoming/server.js';
import { irisServices } from '../wyoming/services.js';
import { createNotifier } from './notify.js';
import { VoiceService, type VoiceServiceOptions } from './voice.js';
import { Rooms } from './rooms.js';
import { Engines } from '../pipeline/engines.js';
import type { Conversation, TurnResult } from '../conversation/engine.js';

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
  /** First reconnect delay for satellites (ms); tests shorten it. */
  satelliteRetryMs?: number;
}

/**
 * Settings the voice is built from: a reload that changes one restarts the voice (models,
 * microphone, voices). Every other setting is read at use and applies at once, except these,
 * which act only when the daemon starts.
 */
const VOICE_SETTINGS = ['assistant.wake_word', 'assistant.wake_threshold', 'assistant.wake_check_from', 'assistant.follow_up_s', 'audio', 'stt', 'tts'];
const START_ONLY_SETTINGS = ['daemon.socket_group', 'mcp.preload', 'wyoming.listen'];

/** Which of `paths` (a section, or section.key) differ between two configs. */
export function changedKeys(before: Config, after: Config, paths: readonly string[]): string[] {
  const at = (config: Config, path: string): unknown => path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown>)[k], config);
  return paths.flatMap((path) => {
    const a = at(before, path);
    const b = at(after, path);
    if (a !== null && typeof a === 'object' && b !== null && typeof b === 'object') {
      return Object.keys({ ...a, ...b }).filter((k) => JSON.stringify((a as Record<string, unknown>)[k]) !== JSON.stringify((b as Record<string, unknown>)[k])).map((k) => `${path}.${k}`);
    }
    return JSON.stringify(a) === JSON.stringify(b) ? [] : [path];
  });
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
  // One set of engines for every voice: the microphone, the rooms and Wyoming's requests share
  // the recogniser pool, the voice and the wake-word models.
  const engines = new Engines(() => iris.config, log.child('voice')); // read only once used, after `iris` exists
  const voice = new VoiceService<TurnResult>({
    config: () => iris.config, // read only once started, after `iris` exists
    log: log.child('voice'),
    engines,
    respond: (text, signal, heard) => spoken.turn(text, signal, heard), // `spoken` exists before the voice starts
    answersEarly: (text) => spoken.answersEarly(text),
    onWake: () => spoken.warm(), // the model loads while the person speaks
    stateDir: options.stateDir,
    ...(options.voice ?? {}),
  });
  // Each room has its own conversation: its memory, follow-ups and pending questions, and its
  // place (timers set there are said there; the model hears the room's area).
  const roomConversations: Conversations = new Conversations((room): Conversation => iris.conversation({ room, area: (): string => rooms.area(room) }));
  const rooms: Rooms = new Rooms({
    config: () => iris.config,
    log: log.child('room'),
    engines,
    respond: (room) => (text, signal, heard) => roomConversations.open(room).conversation.turn(text, signal, heard),
    onWake: (room) => roomConversations.open(room).conversation.warm(),
    unsaid: (announcement) => voice.announce(announcement), // a room's satellite went away: said here too
    ...(options.satelliteRetryMs === undefined ? {} : { retryMs: options.satelliteRetryMs }),
  });
  // Timers can fire before the voice is up (missed ones, at start): the voice logs those. One
  // set in a room is said there (in every room and here when that room is gone), and its start
  // is told there.
  const iris: Iris = assemble(config, {
    stateDir: options.stateDir,
    log,
    announce: (announcement) => {
      if (!rooms.announce(announcement)) voice.announce(announcement);
    },
    notify: (notice) => rooms.notify(notice), // a timer started in a room: its satellite shows it
    signInByCode: true,
  });
  try {
    await iris.start();
  } catch (error) {
    await iris.stop();
    throw error;
  }
  const started = Date.now();
  // Each kind of client has a pool of its own: Home Assistant's (Wyoming) conversations, the
  // rooms' (above) and the `iris ask` clients'. Seventy transcripts from the LAN cannot drop a
  // person's pending question, and no client names a conversation of another kind.
  const conversations = new Conversations(() => iris.conversation()); // one per `iris ask` client
  const haConversations = new Conversations(() => iris.conversation()); // one per Home Assistant conversation_id
  const spoken = iris.conversation(); // and one for the microphone
  await voice.start();
  rooms.start();
  /** Re-read the config; a broken one is reported (and thrown) and the running one kept. */
  const reload = async (): Promise<void> => {
    let next: Config;
    try {
      next = await loadConfig(options.config);
    } catch (error) {
      const problems = error instanceof ConfigError ? error.problems : [messageOf(error)];
      for (const problem of problems) log.error(problem);
      log.error('config not applied; keeping the running one');
      throw error instanceof ConfigError ? error : new ConfigError(problems);
    }
    const before = iris.config;
    await iris.reconfigure(next); // in force for every part from here on
    const voiceKeys = changedKeys(before, next, VOICE_SETTINGS);
    const startOnly = changedKeys(before, next, START_ONLY_SETTINGS);
    log.info(`config re-read${voiceKeys.length > 0 ? `; restarting the voice for ${voiceKeys.join(', ')}` : ''}`);
    if (startOnly.length > 0) log.warn(`${startOnly.join(', ')} changed: this applies at the next restart (systemctl restart iris)`);
    rooms.reconfigure(); // rooms added, removed or moved
    if (voiceKeys.length > 0) await Promise.all([voice.restart(), rooms.restartVoices()]);
  };
  const onHangup = (): void => void reload().catch(() => undefined);
  const status = async (): Promise<DaemonStatus> => {
    const timers = (await iris.host.call('list_timers', {})).structuredContent?.timers as unknown[] | undefined;
    return {
      pid: process.pid,
      uptime_s: Math.round((Date.now() - started) / 1000),
      config: configPath,
      state_dir: options.stateDir,
      home_zone: iris.config.assistant.timezone,
      ollama: { url: iris.config.ollama.url, model: iris.config.ollama.model, loaded: await spoken.modelLoaded() },
      timers: timers?.length ?? 0,
      mcp: iris.mcp.servers.status(),
      voice: voice.status,
      rooms: rooms.status(),
    };
  };
  /** One control request; `signal` aborts when the daemon stops. */
  const control = async (request: ControlRequest, signal: AbortSignal): Promise<ControlResults[Command]> => {
    switch (request.cmd) {
      case 'reload':
        await reload();
        return { reloaded: configPath };
      case 'config': // which config answers: CLI commands the daemon answers say so
        return { path: configPath };
      case 'status':
        return status();
      case 'ask': {
        if (request.conversation?.startsWith('ha:') === true) throw new Error(`"${request.conversation}" is Home Assistant's conversation; iris ask has its own`);
        const { id, conversation } = conversations.open(request.conversation);
        return { ...(await conversation.turn(request.text, signal).result), conversation: id };
      }
      case 'tools.call': // `iris tools call`, `iris timers cancel`: the person's own command
        return iris.host.call(request.name, request.arguments, { origin: 'typed', signal });
      case 'mcp.reconnect': // `iris mcp login` / `logout` changed the server's sign-in
        return iris.mcp.servers.reconnect(request.name);
    }
  };
  const path = options.socket ?? socketPath();
  let closeControl: () => Promise<void> = () => Promise.resolve();
  try {
    closeControl = await serveControl(path, control, log.child('control'), { group: iris.config.daemon.socket_group });
  } catch (error) {
    log.error(`no control socket at ${path} (${messageOf(error)}); iris status and iris ask cannot reach this daemon`);
  }
  let closeWyoming: () => Promise<void> = () => Promise.resolve();
  if (iris.config.wyoming.listen !== '') {
    try {
      closeWyoming = (await serveWyoming(iris.config.wyoming.listen, irisServices(() => iris.config, haConversations, log.child('wyoming'), engines), log.child('wyoming'))).close;
    } catch (error) {
      log.error(`no Wyoming server at ${iris.config.wyoming.listen} (${messageOf(error)}); Home Assistant cannot reach IRIS`);
    }
  }
  const notifier = createNotifier(process.env, log);
  log.info(`ready: home zone ${iris.config.assistant.timezone}, state in ${options.stateDir}`);
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
    await closeWyoming();
    for (const a of await rooms.stop()) log.info(`${a.kind} #${a.id} not said in room ${a.room ?? ''}: stopping`);
    await voice.stop();
    await engines.stop();
    await iris.stop();
  } finally {
    clearTimeout(deadline);
    clearInterval(keepAlive);
    process.off('SIGHUP', onHangup);
  }
  log.info('stopped');
  return 0;
}
