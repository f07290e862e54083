/**
 * A Wyoming satellite as IRIS meets wyoming-satellite 1.4.1 on a Raspberry Pi, written from the
 * protocol and that program's documented behaviour (shared/notes/wyoming.md §4; its
 * satellite.py read, not copied), on this project's own wire code (wyoming-wire.ts):
 *
 * - it listens; a brain connects and says `describe` (→ `info` with a `satellite` section) and
 *   `run-satellite`; the first connection to send anything else is its server, later ones are
 *   turned away while it lasts;
 * - its microphone streams from the start, 1,024-sample chunks at real-time pace: silence until
 *   the test says `go()`, then the recording once, then silence;
 * - three modes, as the real one picks them from its flags:
 *   - always streaming (no wake service, no VAD): `run-pipeline` from the wake stage with
 *     `restart_on_end`, then every chunk goes to the brain;
 *   - wake streaming (`wakePort`, its `--wake-uri`): chunks go to the wake service (`detect` +
 *     `audio-start` first, reconnecting every second while it is down); on its `detection` the
 *     satellite forwards it, sends `run-pipeline` from the asr stage and streams to the brain
 *     until a `transcript` or `error`, then goes back to the wake service;
 *   - VAD (`vad`, its `--vad`): waits for a loud chunk (RMS over 500, the stand-in the old kit
 *     used for silero), sends `run-pipeline` from the wake stage and the pre-roll, streams, and
 *     after `--vad-wake-word-timeout` seconds sends `audio-stop` and waits for speech again;
 * - its speaker takes `audio-start/-chunk/-stop` and answers `played` after each `audio-stop`;
 * - it answers `ping` with `pong`, and from the first ping on pings its server every 2 s;
 * - its event commands are a list: "transcript TEXT", "synthesize TEXT", "timer-started JSON",
 *   "timer-finished ID", "error TEXT"; its log lines are the real one's.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { eventBytes, SATELLITE_VERSION, WireReader, type PeerEvent } from './wyoming-wire.js';

/** Samples per microphone chunk, as wyoming-satellite reads them. */
const CHUNK = 1024;
const RATE = 16_000;
/** The snd format the satellite asks for (its defaults). */
const SND_FORMAT = { rate: 22_050, width: 2, channels: 1 };
/** Ping the server this long after each pong (s), and give up on a pong after this long (s). */
const PING_EVERY_MS = 2_000;
const PONG_TIMEOUT_MS = 5_000;
/** Reconnect to a wake service that is down after this long. */
const WAKE_RECONNECT_MS = 1_000;
/** Pre-roll kept for the VAD mode (s): --vad-buffer-seconds' default. */
const VAD_BUFFER_S = 2;
/** A chunk louder than this (RMS of 32768) is speech to the VAD stand-in. */
const VAD_LEVEL = 500;
/** A second detection of the same word within this long is ignored (--wake-refractory-seconds). */
const REFRACTORY_MS = 5_000;

export interface SatelliteOptions {
  /** --name */
  name: string;
  /** The microphone's recording (16 kHz mono), played once on go(). */
  speech: Int16Array;
  /** --wake-uri's port: a Wyoming wake service on loopback (wake-streaming mode). */
  wakePort?: number;
  /** --wake-word-name */
  wakeWordName?: string;
  /** --vad with --vad-wake-word-timeout (s). */
  vad?: { wakeWordTimeoutS: number };
  /** --mic-volume-multiplier */
  micVolume?: number;
  /** A port to listen on (0: any). */
  port?: number;
}

type Mode = 'always' | 'wake' | 'vad';

export class WyomingSatellite {
  readonly mode: Mode;
  readonly #server: Server;
  port = 0;
  /** What its event commands were given, in order. */
  readonly #events: string[] = [];
  /** Its log, one line a message. */
  readonly #log: string[] = [];
  #watchers: (() => void)[] = [];
  /** Speaker: every PCM chunk played, and the format they came in. */
  readonly #played: Buffer[] = [];
  sndFormat: { rate: number; width: number; channels: number } | undefined;
  readonly #sockets = new Set<Socket>();
  #brain: Socket | undefined;
  #streaming = false;
  #paused = false;
  #micTimer: NodeJS.Timeout | undefined;
  #speechQueue: Int16Array[] = [];
  #vadUntilMs: number | undefined;
  #vadBuffer: Buffer[] = [];
  #pinging: NodeJS.Timeout | undefined;
  #pongTimer: NodeJS.Timeout | undefined;
  #wake: Socket | undefined;
  #wakeTimer: NodeJS.Timeout | undefined;
  #refractoryUntilMs = 0;
  #stopped = false;
  /** Connections it turned away while another brain was its server. */
  refused = 0;
  /** Pings its server sent (each answered with a pong), and pongs it got back for its own pings. */
  pingsAnswered = 0;
  pongsReceived = 0;

  constructor(readonly options: SatelliteOptions) {
    this.mode = options.wakePort !== undefined ? 'wake' : options.vad ? 'vad' : 'always';
    this.#server = createServer((socket) => this.#serve(socket));
  }

  /** Listen, start the microphone (and the wake service link), and say Ready. */
  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.options.port ?? 0, '127.0.0.1', resolve);
    });
    this.port = (this.#server.address() as { port: number }).port;
    this.#startMic();
    if (this.mode === 'wake') this.#connectWake();
    this.#say('Ready');
    return this;
  }

  /** The microphone plays its recording from the next chunk on. */
  go(): void {
    const volume = this.options.micVolume ?? 1;
    const { speech } = this.options;
    for (let i = 0; i < speech.length; i += CHUNK) {
      const chunk = new Int16Array(CHUNK);
      for (let j = 0; j < CHUNK && i + j < speech.length; j++) chunk[j] = Math.max(-32768, Math.min(32767, Math.round((speech[i + j] ?? 0) * volume)));
      this.#speechQueue.push(chunk);
    }
  }

  /** What its event commands were given, one "EVENT text" line each. */
  events(): string[] {
    return [...this.#events];
  }

  /** Whether the speaker played anything. */
  get playedAnything(): boolean {
    return this.#played.length > 0;
  }

  /** What its speaker played, as a WAV file at `path` (in the format the audio came in). */
  heard(path: string): string {
    const raw = `${path}.raw`;
    writeFileSync(raw, Buffer.concat(this.#played));
    const f = this.sndFormat ?? SND_FORMAT;
    execFileSync('sox', ['-t', 'raw', '-r', String(f.rate), '-e', 'signed', '-b', String(f.width * 8), '-c', String(f.channels), raw, path]);
    return path;
  }

  /** Resolves once it has logged a line matching `pattern` `times` times. */
  logged(pattern: RegExp, times = 1): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.#log.filter((l) => pattern.test(l)).length < times) return;
        this.#watchers = this.#watchers.filter((w) => w !== check);
        resolve();
      };
      this.#watchers.push(check);
      check();
    });
  }

  /** Everything stops at once, as a process killed with SIGKILL: connections cut, nothing more sent. */
  kill(): void {
    this.#stopped = true;
    clearTimeout(this.#micTimer);
    clearTimeout(this.#pinging);
    clearTimeout(this.#pongTimer);
    clearTimeout(this.#wakeTimer);
    this.#wake?.destroy();
    for (const s of this.#sockets) s.destroy();
    this.#server.close();
  }

  #say(line: string): void {
    this.#log.push(line);
    for (const w of [...this.#watchers]) w();
  }

  #serve(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on('error', () => undefined);
    const reader = new WireReader();
    socket.on('data', (chunk: Buffer) => {
      let events: PeerEvent[];
      try {
        events = reader.push(chunk);
      } catch {
        socket.destroy();
        return;
      }
      for (const event of events) this.#fromConnection(socket, event);
    });
    socket.on('close', () => {
      this.#sockets.delete(socket);
      if (this.#brain === socket) this.#clearServer();
    });
  }

  #send(socket: Socket | undefined, type: string, data: Record<string, unknown> = {}, payload?: Buffer): void {
    if (socket !== undefined && !socket.destroyed && !this.#stopped) socket.write(eventBytes({ type, data, ...(payload ? { payload } : {}) }, SATELLITE_VERSION));
  }

  #fromConnection(socket: Socket, event: PeerEvent): void {
    if (event.type === 'describe') {
      void this.#info().then((info) => this.#send(socket, 'info', info));
      return;
    }
    if (this.#brain === undefined) {
      this.#brain = socket;
      this.#say('Connected to server');
    } else if (this.#brain !== socket) {
      this.refused += 1;
      socket.destroy(); // "Connection cancelled": the server it has is kept
      return;
    }
    this.#fromServer(event);
  }

  #clearServer(): void {
    this.#brain = undefined;
    clearTimeout(this.#pinging);
    clearTimeout(this.#pongTimer);
    this.#pinging = undefined;
    this.#streaming = false;
    this.#say('Disconnected from server');
  }

  async #info(): Promise<Record<string, unknown>> {
    const satellite = { name: this.options.name, attribution: { name: '', url: '' }, installed: true, description: this.options.name, version: '1.4.1', area: null, snd_format: null };
    return { asr: [], tts: [], handle: [], intent: [], wake: await this.#wakeInfo(), satellite };
  }

  /** The wake service's own `wake` programs, asked for at each describe (2 s at most), as the real one does. */
  async #wakeInfo(): Promise<unknown[]> {
    const wake = this.#wake;
    if (this.mode !== 'wake' || wake === undefined || wake.destroyed) return [];
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#wakeInfoWaiter = undefined;
        resolve([]);
      }, 2_000);
      this.#wakeInfoWaiter = (info) => {
        clearTimeout(timer);
        resolve(Array.isArray(info.wake) ? info.wake : []);
      };
      this.#send(wake, 'describe');
    });
  }

  #wakeInfoWaiter: ((info: Record<string, unknown>) => void) | undefined;

  #fromServer(event: PeerEvent): void {
    const { type, data } = event;
    switch (type) {
      case 'ping':
        this.pingsAnswered += 1;
        this.#send(this.#brain, 'pong', typeof data.text === 'string' ? { text: data.text } : {});
        if (this.#pinging === undefined) this.#schedulePing();
        return;
      case 'pong':
        this.pongsReceived += 1;
        clearTimeout(this.#pongTimer);
        this.#schedulePing();
        return;
      case 'audio-start':
        this.sndFormat = { rate: Number(data.rate), width: Number(data.width), channels: Number(data.channels) };
        return;
      case 'audio-chunk':
        if (event.payload) this.#played.push(event.payload);
        return;
      case 'audio-stop':
        this.#send(this.#brain, 'played'); // the speaker's command finished this audio
        return;
      case 'detection':
        this.#say('Wake word detected');
        return;
      case 'transcript':
        this.#events.push(`transcript ${String(data.text)}`);
        break;
      case 'synthesize':
        this.#events.push(`synthesize ${String(data.text)}`);
        break;
      case 'error':
        this.#say(`Error: ${String(data.text)}`);
        this.#events.push(`error ${String(data.text)}`);
        break;
      case 'timer-started':
        this.#events.push(`timer-started ${JSON.stringify({ type, data })}`);
        break;
      case 'timer-finished':
        this.#events.push(`timer-finished ${String(data.id)}`);
        break;
      default:
        break;
    }
    this.#modeEvent(type);
  }

  /** What each mode does on run-satellite, pause-satellite, transcript and error. */
  #modeEvent(type: string): void {
    const ends = type === 'transcript' || type === 'error' || type === 'pause-satellite';
    if (type === 'run-satellite') this.#paused = false;
    if (type === 'pause-satellite') this.#paused = true;
    if (this.mode === 'always') {
      if (type === 'run-satellite') {
        this.#streaming = true;
        this.#say('Streaming audio');
        this.#runPipeline('wake', true);
      } else if (type === 'pause-satellite') {
        this.#streaming = false;
        this.#say('Satellite paused');
      } else if (type === 'transcript') this.#say('Streaming audio');
    } else if (this.mode === 'vad') {
      if (type === 'run-satellite') this.#say('Waiting for speech');
      else if (ends) this.#streaming = false;
    } else if (type === 'run-satellite' || ends) {
      this.#streaming = false;
      if (!this.#paused) {
        this.#sendWakeDetect();
        this.#say('Waiting for wake word');
      }
    }
  }

  #runPipeline(start: 'wake' | 'asr', restartOnEnd: boolean): void {
    // wyoming 1.5.4's form, as wyoming-satellite 1.4.1 sends it (name only when it has one).
    this.#send(this.#brain, 'run-pipeline', { start_stage: start, end_stage: 'tts', restart_on_end: restartOnEnd, snd_format: SND_FORMAT });
  }

  #schedulePing(): void {
    clearTimeout(this.#pinging);
    this.#pinging = setTimeout(() => {
      if (this.#brain === undefined) return;
      this.#send(this.#brain, 'ping');
      this.#pongTimer = setTimeout(() => {
        this.#say('Did not receive ping response within timeout');
        this.#brain?.destroy();
      }, PONG_TIMEOUT_MS);
    }, PING_EVERY_MS);
  }

  // Microphone ---------------------------------------------------------------------------------

  #startMic(): void {
    const startMs = performance.now();
    let sent = 0;
    const clockMs = Math.round(performance.now()) + 4_894_000; // monotonic, not zero-based
    const tick = () => {
      if (this.#stopped) return;
      const samples = this.#speechQueue.shift() ?? new Int16Array(CHUNK);
      const pcm = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
      this.#fromMic(pcm, clockMs + Math.round((sent * CHUNK * 1000) / RATE));
      sent += 1;
      this.#micTimer = setTimeout(tick, Math.max(0, startMs + (sent * CHUNK * 1000) / RATE - performance.now()));
    };
    tick();
  }

  #fromMic(pcm: Buffer, timestamp: number): void {
    if (this.#paused) return;
    const chunk = { rate: RATE, width: 2, channels: 1, timestamp };
    if (this.mode === 'always') {
      if (this.#streaming) this.#send(this.#brain, 'audio-chunk', chunk, pcm);
    } else if (this.mode === 'wake') {
      this.#send(this.#streaming ? this.#brain : this.#wake, 'audio-chunk', chunk, pcm);
    } else this.#vadChunk(pcm, chunk);
  }

  #vadChunk(pcm: Buffer, chunk: Record<string, unknown>): void {
    if (this.#streaming && this.#vadUntilMs !== undefined && performance.now() >= this.#vadUntilMs) {
      this.#streaming = false;
      this.#vadUntilMs = undefined;
      this.#send(this.#brain, 'audio-stop');
      this.#say('Waiting for speech');
    }
    if (!this.#streaming) {
      if (!loud(pcm)) {
        this.#vadBuffer.push(pcm);
        while (this.#vadBuffer.length * CHUNK > VAD_BUFFER_S * RATE) this.#vadBuffer.shift();
        return;
      }
      if (this.#brain === undefined) return;
      this.#streaming = true;
      this.#say('Streaming audio');
      this.#runPipeline('wake', false);
      this.#vadUntilMs = performance.now() + (this.options.vad?.wakeWordTimeoutS ?? 0) * 1000;
      const preRoll = Buffer.concat(this.#vadBuffer);
      this.#vadBuffer = [];
      if (preRoll.length > 0) this.#send(this.#brain, 'audio-chunk', { rate: RATE, width: 2, channels: 1 }, preRoll);
    }
    this.#send(this.#brain, 'audio-chunk', chunk, pcm);
  }

  // Wake service ---------------------------------------------------------------------------------

  #connectWake(): void {
    if (this.#stopped || this.options.wakePort === undefined) return;
    const socket = connect(this.options.wakePort, '127.0.0.1');
    const reader = new WireReader();
    let connected = false;
    socket.once('connect', () => {
      connected = true;
      this.#wake = socket;
      this.#say('Connected to wake service');
      this.#sendWakeDetect();
    });
    socket.on('data', (chunk: Buffer) => {
      for (const event of reader.push(chunk)) this.#fromWake(event);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.#wake === socket) this.#wake = undefined;
      if (connected) this.#say('Wake service disconnected');
      if (!this.#stopped) this.#wakeTimer = setTimeout(() => this.#connectWake(), WAKE_RECONNECT_MS);
    });
  }

  #sendWakeDetect(): void {
    const names = this.options.wakeWordName ? [this.options.wakeWordName] : undefined;
    this.#send(this.#wake, 'detect', names ? { names } : {});
    this.#send(this.#wake, 'audio-start', { rate: RATE, width: 2, channels: 1 });
  }

  #fromWake(event: PeerEvent): void {
    if (event.type === 'info') {
      this.#wakeInfoWaiter?.(event.data);
      this.#wakeInfoWaiter = undefined;
      return;
    }
    if (event.type !== 'detection' || this.#streaming || this.#brain === undefined) return;
    if (performance.now() < this.#refractoryUntilMs) return;
    this.#refractoryUntilMs = performance.now() + REFRACTORY_MS;
    this.#streaming = true;
    this.#say('Streaming audio');
    this.#send(this.#brain, 'detection', event.data);
    this.#runPipeline('asr', false);
  }
}

function loud(pcm: Buffer): boolean {
  const samples = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length >> 1);
  let sum = 0;
  for (const s of samples) sum += s * s;
  return samples.length > 0 && Math.sqrt(sum / samples.length) > VAD_LEVEL;
}
