/**
 * whisper.cpp as the speech-to-text engine, through its `whisper-server` example program: spawned
 * once (argument vector, no shell) on a free loopback port, so the model is loaded once per
 * daemon rather than once per utterance; each utterance is POSTed to it as a WAV. The only file
 * that knows whisper-server's command line and HTTP API (whisper.cpp 1.9.1, built by
 * scripts/build-whisper.sh). If the server dies, the next utterance starts it again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, openSync, readSync, closeSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { isAbortError, messageOf } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { retry } from '../supervise.js';
import { durationS } from './audio.js';
import { stopChild } from './child.js';
import { SttError, type SpeechToText, type Transcript } from './stt.js';
import { encodeWav } from './wav.js';

export interface WhisperOptions {
  /** Path of a legacy ggml whisper model, e.g. /var/lib/iris/models/ggml-base.en.bin. */
  model: string;
  /** CPU threads whisper-server computes with (`-t`); about the number of physical cores. */
  threads: number;
  /**
   * Encoder context in mel frames of 20 ms (`-ac`); 0 = the full 30 s window (1500 frames).
   * Smaller is much faster (tiny: 3.6× at 512) but covers only audioCtx × 20 ms of each
   * utterance (512 → 10.24 s); audio past that is not transcribed.
   */
  audioCtx: number;
  /** Path of whisper-server; default `findWhisperServer()`. */
  command?: string;
  /** How long whisper-server may take to load the model and answer, in ms; default 30 000. */
  startTimeoutMs?: number;
  /** Where the adapter logs (the caller names it, e.g. `log.child('whisper')`); whisper-server's own output goes to its `server` child at debug level. */
  log?: Logger;
}

/** Where the iris .deb installs the whisper-server it builds. */
export const INSTALLED_WHISPER_SERVER = '/usr/lib/iris/bin/whisper-server';

/** Default startup deadline (ms): base.en loads in ~1 s here; leave room for slow SD cards. */
const START_TIMEOUT_MS = 30_000;
/** How often the startup poll asks /health (ms). */
const POLL_MS = 50;
/** Deadline for one /health request (ms). */
const HEALTH_TIMEOUT_MS = 1_000;
/** Port races (another process takes the free port first) retried this often. */
const BIND_ATTEMPTS = 3;
/** How much of whisper-server's output is kept for error messages (characters). */
const OUTPUT_TAIL_CHARS = 2_000;
/** Whisper's mel frames are 10 ms, the encoder halves them: one audio_ctx step is 20 ms. */
const AUDIO_CTX_STEP_S = 0.02;
/** "ggml" as the little-endian int32 that starts a legacy whisper.cpp model. */
export const GGML_MAGIC = 0x67676d6c;
/**
 * Smaller files are refused (bytes): whisper.cpp runs a file that ends before the weights as an
 * "empty model for testing" and transcribes garbage; the smallest real model (tiny q5_1) is 31 MB.
 */
const MIN_MODEL_BYTES = 1 << 20;

/**
 * The whisper-server to run: `$IRIS_WHISPER_SERVER` (an override), else the installed one, else the first
 * executable `whisper-server` on PATH; undefined when there is none.
 */
export function findWhisperServer(env: NodeJS.ProcessEnv = process.env, installed = INSTALLED_WHISPER_SERVER): string | undefined {
  const candidates = [env.IRIS_WHISPER_SERVER, installed, ...(env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, 'whisper-server'))];
  return candidates.find((file) => file !== undefined && file !== '' && isExecutable(file));
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Refuse what whisper.cpp would fail on less clearly, or not at all: no file, an empty file,
 * not a ggml model, a file too short to hold any weights.
 */
export function checkModel(file: string): void {
  let bytes: number;
  try {
    bytes = statSync(file).size;
  } catch (error) {
    throw new SttError('stt_model_missing', `whisper model ${file} does not exist`, { cause: error });
  }
  if (bytes === 0) {
    throw new SttError('stt_model_missing', `whisper model ${file} is empty (0 bytes), the mark of a failed download (whisper.cpp's download-ggml-model.sh leaves one): delete it and download the model again`);
  }
  const head = Buffer.alloc(4);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, head, 0, 4, 0);
  } finally {
    closeSync(fd);
  }
  if (bytes < 4 || head.readUInt32LE(0) !== GGML_MAGIC) {
    throw new SttError('stt_model_invalid', `${file} is not a ggml whisper model (${bytes} bytes starting ${JSON.stringify(head.toString('latin1'))}); a download that saved an error page?`);
  }
  if (bytes < MIN_MODEL_BYTES) {
    throw new SttError('stt_model_invalid', `whisper model ${file} is too small to hold any weights (${bytes} bytes): a truncated download?`);
  }
}

/** Text with whisper's non-speech tags ([BLANK_AUDIO], [Music], (wind blowing)) removed, lower case. */
/**
 * whisper's confidence: the geometric mean of its token probabilities (exp of the segments'
 * mean `avg_logprob`), times the chance the audio held speech at all (1 − the largest
 * `no_speech_prob`). Unmeasured on real weights (none can be fetched here): a random-weight
 * model shows only that the numbers flow; `[stt] min_confidence` may need another value.
 */
export function whisperConfidence(text: string, segments: unknown): { confidence: number; details: Record<string, number> } {
  const list = Array.isArray(segments) ? (segments as { avg_logprob?: unknown; no_speech_prob?: unknown }[]) : [];
  const logprobs = list.map((s) => s.avg_logprob).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  const noSpeech = Math.max(0, ...list.map((s) => s.no_speech_prob).filter((v): v is number => typeof v === 'number' && Number.isFinite(v)));
  if (text === '' || logprobs.length === 0) return { confidence: 0, details: { no_speech: noSpeech } };
  const meanLogprob = logprobs.reduce((a, b) => a + b, 0) / logprobs.length;
  const confidence = Math.exp(meanLogprob) * (1 - noSpeech);
  return { confidence: Math.round(confidence * 1000) / 1000, details: { avg_logprob: Math.round(meanLogprob * 1000) / 1000, no_speech: noSpeech } };
}

export function cleanTranscript(text: string): string {
  return text
    .replace(/\[[^\]]*\]|\([^)]*\)/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
}

/** A loopback port nothing listens on now (there is a short race until the server binds it). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `promise`, or the signal's reason as soon as it aborts (the promise itself runs on). */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

interface Running {
  child: ChildProcess;
  url: string;
  /** Settles when the process has ended and its output has been read to the end. */
  closed: Promise<void>;
}

export class WhisperStt implements SpeechToText {
  readonly name = 'whisper.cpp';
  private readonly log: Logger;
  private running: Running | undefined;
  private starting: Promise<Running> | undefined;
  private stopping = false;
  private spawned = 0;
  private output = '';
  private lastExit: string | undefined;

  constructor(private readonly options: WhisperOptions) {
    this.log = options.log ?? silentLogger;
  }

  /** The running whisper-server's process id, if there is one. */
  get pid(): number | undefined {
    return this.running?.child.pid;
  }

  /** How many whisper-server processes this adapter has started (restarts included). */
  get starts(): number {
    return this.spawned;
  }

  /** Check the model and start whisper-server, so the first utterance does not wait for it. */
  async start(): Promise<void> {
    await this.server();
  }

  async transcribe(samples: Int16Array, signal?: AbortSignal): Promise<Transcript> {
    signal?.throwIfAborted();
    const { url } = await raceAbort(this.server(), signal);
    const seconds = durationS(samples.length);
    const covered = this.options.audioCtx * AUDIO_CTX_STEP_S;
    if (covered > 0 && seconds > covered) {
      this.log.warn(`utterance of ${seconds.toFixed(1)} s is longer than audio_ctx ${this.options.audioCtx} covers (${covered.toFixed(2)} s); its end is not transcribed`);
    }
    const form = new FormData();
    form.append('file', new Blob([encodeWav(samples)], { type: 'audio/wav' }), 'utterance.wav');
    form.append('response_format', 'verbose_json'); // segments with token probabilities
    form.append('temperature', '0');
    form.append('temperature_inc', '0'); // no fallback re-decoding at higher temperatures
    form.append('no_timestamps', 'true');
    const started = performance.now();
    let response: Response;
    let body: string;
    try {
      response = await fetch(`${url}/inference`, { method: 'POST', body: form, ...(signal ? { signal } : {}) });
      body = await response.text();
    } catch (error) {
      if (signal?.aborted || isAbortError(error)) throw error;
      throw new SttError('stt_failed', `whisper-server did not answer: ${messageOf(error)}${this.exitNote()}`, { cause: error });
    }
    if (!response.ok) {
      throw new SttError('stt_failed', `whisper-server answered ${response.status}: ${body.slice(0, 200)}`);
    }
    let reply: { text?: unknown; segments?: unknown };
    try {
      reply = JSON.parse(body) as typeof reply;
    } catch (error) {
      throw new SttError('stt_failed', `whisper-server sent no JSON: ${body.slice(0, 200)}`, { cause: error });
    }
    if (typeof reply.text !== 'string') throw new SttError('stt_failed', `whisper-server sent no text: ${body.slice(0, 200)}`);
    this.log.debug(`${seconds.toFixed(1)} s transcribed in ${Math.round(performance.now() - started)} ms`);
    const text = cleanTranscript(reply.text);
    return { text, ...whisperConfidence(text, reply.segments) };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const starting = this.starting;
    if (starting) await starting.catch(() => undefined);
    const running = this.running;
    this.running = undefined;
    if (running) {
      await stopChild(running.child);
      await running.closed;
    }
    this.lastExit = undefined;
    this.stopping = false;
  }

  /** The running server; starts it (once, however many callers wait) when there is none. */
  private server(): Promise<Running> {
    if (this.running && this.running.child.exitCode === null && this.running.child.signalCode === null) {
      return Promise.resolve(this.running);
    }
    if (!this.starting) {
      if (this.lastExit) this.log.warn(`whisper-server is not running (${this.lastExit}); restarting it`);
      this.starting = this.launch().finally(() => (this.starting = undefined));
    }
    return this.starting;
  }

  private async launch(): Promise<Running> {
    checkModel(this.options.model);
    const command = this.options.command ?? findWhisperServer();
    if (!command) {
      throw new SttError('stt_missing', `whisper-server not found (looked at ${INSTALLED_WHISPER_SERVER}, $IRIS_WHISPER_SERVER and PATH); build it with scripts/build-whisper.sh`);
    }
    return retry(() => this.launchOnce(command), {
      attempts: BIND_ATTEMPTS,
      retryIf: (error) => error instanceof SttError && /couldn't bind/.test(error.message),
      onRetry: (_error, attempt) => this.log.debug(`port taken before whisper-server bound it; retrying (${attempt}/${BIND_ATTEMPTS})`),
    });
  }

  private async launchOnce(command: string): Promise<Running> {
    const port = await freePort();
    const args = ['-m', this.options.model, '-t', String(this.options.threads), '-ac', String(this.options.audioCtx), '--host', '127.0.0.1', '--port', String(port)];
    const started = performance.now();
    this.output = '';
    this.lastExit = undefined;
    // OpenMP threads sleep at barriers instead of spinning: with a core busy elsewhere (wake
    // word, another daemon) spinning made a micro-model utterance take 15 s instead of 1 s.
    const env = { ...process.env, OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'PASSIVE' };
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    this.spawned++;
    // whisper-server's own lines (system info, per-request and exit timings) go to the debug log;
    // the last few are kept for error messages.
    const serverLog = this.log.child('server');
    const forward = () => {
      let partial = '';
      return (chunk: Buffer) => {
        const text = partial + chunk.toString();
        this.output = (this.output + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
        const lines = text.split('\n');
        partial = (lines.pop() ?? '').slice(-OUTPUT_TAIL_CHARS); // bounded, even without newlines
        for (const line of lines) if (line.trim()) serverLog.debug(line.trimEnd());
      };
    };
    child.stdout.on('data', forward());
    child.stderr.on('data', forward());
    let ended = false;
    const exited = new Promise<never>((_, reject) => {
      child.once('error', (error: NodeJS.ErrnoException) => {
        ended = true;
        reject(error.code === 'ENOENT' || error.code === 'EACCES'
          ? new SttError('stt_missing', `cannot run whisper-server ${command}: ${error.code}`, { cause: error })
          : new SttError('stt_failed', `whisper-server failed to start: ${error.message}`, { cause: error }));
      });
      // 'close' rather than 'exit': by then the output (the reason it ended) has been read.
      child.once('close', (code, signal) => {
        ended = true;
        this.lastExit = signal ? `killed by ${signal}` : `exit ${code}`;
        if (this.running?.child === child) this.running = undefined;
        if (!this.stopping) this.log.warn(`whisper-server (pid ${child.pid}) ended: ${this.lastExit}`);
        reject(new SttError('stt_failed', `whisper-server ended while loading ${this.options.model} (${this.lastExit}): ${this.tail()}`));
      });
    });
    exited.catch(() => undefined); // after startup, 'close' is handled above; the rejection is only for the race below
    const closed = exited.then(() => undefined, () => undefined);
    const url = `http://127.0.0.1:${port}`;
    const deadline = started + (this.options.startTimeoutMs ?? START_TIMEOUT_MS);
    try {
      await Promise.race([exited, this.waitReady(url, deadline, () => ended)]);
    } catch (error) {
      if (!ended && child.pid !== undefined) await stopChild(child);
      throw error;
    }
    const running = { child, url, closed };
    if (this.stopping) {
      await stopChild(child);
      throw new SttError('stt_failed', 'whisper-server was stopped while it started');
    }
    this.running = running;
    this.log.info(`whisper-server (pid ${child.pid}) ready in ${Math.round(performance.now() - started)} ms: ${this.options.model}, ${this.options.threads} threads, audio_ctx ${this.options.audioCtx}`);
    return running;
  }

  /** Poll /health until it answers 200 (whisper-server binds its port only after loading). */
  private async waitReady(url: string, deadline: number, ended: () => boolean): Promise<void> {
    while (!ended()) {
      try {
        const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
        await response.arrayBuffer();
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      if (performance.now() > deadline) {
        throw new SttError('stt_failed', `whisper-server did not become ready within ${this.options.startTimeoutMs ?? START_TIMEOUT_MS} ms: ${this.tail()}`);
      }
      await delay(POLL_MS);
    }
  }

  private tail(): string {
    const lines = this.output.trim().split('\n').filter((line) => /error|fail|couldn't|invalid/i.test(line));
    return (lines.length > 0 ? lines.slice(-3) : this.output.trim().split('\n').slice(-3)).join(' | ') || 'no output';
  }

  private exitNote(): string {
    return this.lastExit ? ` (whisper-server ${this.lastExit}; the next utterance restarts it)` : '';
  }
}

export const createWhisper = (options: WhisperOptions): WhisperStt => new WhisperStt(options);
