/**
 * webrtc-audio-processing (Debian libwebrtc-audio-processing1 0.3: WebRTC's AEC of 2016, not
 * AEC3) through koffi, as the second echo canceller beside speexdsp.ts. Its API is C++, so
 * IRIS builds a small C shim over it (native/webrtc-aec.cc, scripts/build-webrtc-aec.sh): the
 * .deb installs it in /usr/lib/iris/lib, a checkout builds it into .cache/webrtc-aec. The one
 * file that knows the shim's C API; echo.ts decides what to feed it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNative } from './ffi.js';
import { EchoError } from './speexdsp.js';

const SHIM = 'libiris-webrtc-aec.so';
/** Where the iris .deb installs the shim. */
export const INSTALLED_WEBRTC_AEC = `/usr/lib/iris/lib/${SHIM}`;
const MISSING = 'the webrtc echo canceller is not installed (apt install libwebrtc-audio-processing1; in a checkout: scripts/build-webrtc-aec.sh .cache/webrtc-aec, which needs libwebrtc-audio-processing-dev and g++)';

/**
 * The shim to load: `$IRIS_WEBRTC_AEC` (an override), else the installed one, else a checkout's
 * `.cache/webrtc-aec` (from src/pipeline/, dist/ or dist/chunks/); undefined when there is none.
 */
export function findWebrtcAec(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.IRIS_WEBRTC_AEC !== undefined) return env.IRIS_WEBRTC_AEC === '' ? undefined : env.IRIS_WEBRTC_AEC;
  const here = path.dirname(fileURLToPath(import.meta.url));
  const built = (up: string) => path.join(here, up, '.cache', 'webrtc-aec', 'lib', SHIM);
  return [INSTALLED_WEBRTC_AEC, built('..'), built('../..')].find((file) => existsSync(file));
}

type Fn = (...args: unknown[]) => unknown;

interface Api {
  create: Fn;
  reverse: Fn;
  capture: Fn;
  stats: Fn;
  destroy: Fn;
}

/** The loaded shims, by file. */
const apis = new Map<string, Promise<Api>>();

function load(): Promise<Api> {
  const file = findWebrtcAec();
  if (file === undefined) return Promise.reject(new EchoError('echo_missing', MISSING));
  let api = apis.get(file);
  if (api) return api;
  api = loadNative([file], (message, cause) => new EchoError('echo_missing', message, { cause }), `${MISSING}: ${file} does not load`).then(({ libs: [lib] }) => {
    if (!lib) throw new EchoError('echo_missing', MISSING);
    return {
      create: lib.func('void *iris_aec_create(int rate, int mode, int suppression, int extended, int delay_agnostic, int noise, int high_pass)'),
      reverse: lib.func('int iris_aec_reverse(void *st, const int16_t *samples, int count)'),
      capture: lib.func('int iris_aec_capture(void *st, _Inout_ int16_t *samples, int count, int delay_ms)'),
      stats: lib.func('int iris_aec_stats(void *st, _Out_ int *out)'),
      destroy: lib.func('void iris_aec_destroy(void *st)'),
    };
  });
  apis.set(file, api);
  api.catch(() => apis.delete(file)); // a later call may find it installed
  return api;
}

export interface WebrtcEchoOptions {
  /** Samples per second (8000, 16000 or 32000). */
  rate: number;
  /** `aec`: the full canceller (a frequency-domain filter and non-linear suppression); `aecm`: the mobile one (cheaper, cruder). */
  mode: 'aec' | 'aecm';
  /** AEC: 0 low, 1 moderate, 2 high suppression of the residual echo; AECM: routing mode 0–4 (quiet earpiece … loud speakerphone). */
  suppression: number;
  /** The AEC's extended filter (128 ms of echo tail instead of 48, more robust to a moving delay). */
  extendedFilter: boolean;
  /** The AEC estimates the delay itself (the delay passed per frame is then ignored). */
  delayAgnostic: boolean;
  /** Noise suppression level 0–3; undefined: off. */
  noiseLevel?: number;
  /** The APM's high-pass filter (cuts below ~80 Hz). */
  highPass: boolean;
}

export interface WebrtcEchoStats {
  /** The AEC's own ERLE estimate (dB), instant and averaged; its delay estimate (ms, delay-agnostic only). */
  erleDb: number;
  erleAverageDb: number;
  delayMedianMs: number;
  delayStdMs: number;
}

/** One webrtc audio processor: 10 ms frames in, cleaned frames out. Keeps what it learned until `destroy()`. */
export class WebrtcEcho {
  readonly name = 'webrtc' as const;
  readonly #api: Api;
  readonly #state: unknown;
  readonly #mode: WebrtcEchoOptions['mode'];
  /** 10 ms: the only frame the APM takes. */
  readonly frameSamples: number;
  /** How late the echo arrives after the reference handed in with a frame (ms). */
  delayMs = 0;

  private constructor(api: Api, options: WebrtcEchoOptions) {
    this.#api = api;
    this.#mode = options.mode;
    this.frameSamples = options.rate / 100;
    this.#state = api.create(options.rate, options.mode === 'aecm' ? 1 : 0, options.suppression, options.extendedFilter ? 1 : 0,
      options.delayAgnostic ? 1 : 0, options.noiseLevel ?? -1, options.highPass ? 1 : 0);
    if (!this.#state) throw new EchoError('echo_failed', 'webrtc AudioProcessing could not be set up (iris_aec_create failed)');
  }

  static async create(options: WebrtcEchoOptions): Promise<WebrtcEcho> {
    return new WebrtcEcho(await load(), options);
  }

  /** `mic` with the echo of `ref` removed (both `frameSamples` long, `ref` as it will reach the microphone `delayMs` later); a new array. */
  process(mic: Int16Array, ref: Int16Array): Int16Array {
    const reverse = this.#api.reverse(this.#state, ref, ref.length) as number;
    if (reverse !== 0) throw new EchoError('echo_failed', `webrtc ProcessReverseStream failed (${reverse})`);
    const out = mic.slice();
    const error = this.#api.capture(this.#state, out, out.length, this.delayMs) as number;
    // -13 (kBadStreamParameterWarning): processed all the same.
    if (error !== 0 && error !== -13) throw new EchoError('echo_failed', `webrtc ProcessStream failed (${error})`);
    return out;
  }

  /** The AEC's own metrics (undefined for AECM). */
  stats(): WebrtcEchoStats | undefined {
    if (this.#mode === 'aecm') return undefined;
    const out = new Int32Array(4);
    if ((this.#api.stats(this.#state, out) as number) !== 0) return undefined;
    return { erleDb: out[0] ?? 0, erleAverageDb: out[1] ?? 0, delayMedianMs: out[2] ?? 0, delayStdMs: out[3] ?? 0 };
  }

  destroy(): void {
    this.#api.destroy(this.#state);
  }
}
