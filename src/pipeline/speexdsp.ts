/**
 * speexdsp (Debian libspeexdsp1) through koffi: its echo canceller (MDF, a frequency-domain
 * adaptive filter) and its preprocessor (noise and residual-echo suppression). The one file
 * that knows the C API; echo.ts decides what to feed it.
 */
import { IrisError } from '../errors.js';
import { loadNative } from './ffi.js';

export class EchoError extends IrisError {
  override name = 'EchoError' as const;
}

const LIBRARY = 'libspeexdsp.so.1';
const MISSING = 'speexdsp is not installed (apt install libspeexdsp1)';

// speex_echo.h / speex_preprocess.h request codes.
const ECHO_SET_SAMPLING_RATE = 24;
const ECHO_GET_IMPULSE_RESPONSE_SIZE = 27;
const ECHO_GET_IMPULSE_RESPONSE = 29;
const PREPROCESS_SET_DENOISE = 0;
const PREPROCESS_SET_NOISE_SUPPRESS = 18;
const PREPROCESS_SET_ECHO_SUPPRESS = 20;
const PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE = 22;
const PREPROCESS_SET_ECHO_STATE = 24;

type Fn = (...args: unknown[]) => unknown;

interface Api {
  echoInit: Fn;
  echoDestroy: Fn;
  echoCancel: Fn;
  echoCtl: Fn;
  echoCtlBuffer: Fn;
  ppInit: Fn;
  ppDestroy: Fn;
  ppRun: Fn;
  ppCtlInt: Fn;
  ppCtlPtr: Fn;
}

let api: Promise<Api> | undefined;

function load(): Promise<Api> {
  api ??= loadNative([LIBRARY], (message, cause) => new EchoError('echo_missing', message, { cause }), MISSING).then(({ koffi, libs: [lib] }) => {
    if (!lib) throw new EchoError('echo_missing', MISSING);
    return {
      echoInit: lib.func('void *speex_echo_state_init(int frame_size, int filter_length)'),
      echoDestroy: lib.func('void speex_echo_state_destroy(void *st)'),
      echoCancel: lib.func('void speex_echo_cancellation(void *st, const int16_t *rec, const int16_t *play, _Out_ int16_t *out)'),
      echoCtl: lib.func('int speex_echo_ctl(void *st, int request, _Inout_ int *value)'),
      echoCtlBuffer: lib.func('speex_echo_ctl', 'int', ['void *', 'int', 'void *']),
      ppInit: lib.func('void *speex_preprocess_state_init(int frame_size, int sampling_rate)'),
      ppDestroy: lib.func('void speex_preprocess_state_destroy(void *st)'),
      ppRun: lib.func('int speex_preprocess_run(void *st, _Inout_ int16_t *x)'),
      ppCtlInt: lib.func('speex_preprocess_ctl', 'int', ['void *', 'int', koffi.inout(koffi.pointer('int'))]),
      ppCtlPtr: lib.func('speex_preprocess_ctl', 'int', ['void *', 'int', 'void *']),
    };
  });
  api.catch(() => (api = undefined)); // a later call may find it installed
  return api;
}

export interface SpeexEchoOptions {
  /** Samples per call (a power of two is fastest); 256 = 16 ms at 16 kHz. */
  frameSamples: number;
  /** The adaptive filter's length in samples: the echo path's tail it can model. */
  filterSamples: number;
  /** Samples per second. */
  rate: number;
  /**
   * Residual-echo suppression after the linear filter, in dB (negative); 0 = off. It turns the
   * preprocessor's gain on with a 0 dB noise floor: speexdsp applies no gain at all while its
   * denoiser is off (preprocess.c: "If noise suppression is off, don't apply the gain"), so echo
   * suppression set with the denoiser off (IRIS until session 12) only delayed the output a frame.
   */
  echoSuppressDb: number;
  /** The same while the person talks too (double talk), in dB (negative). */
  echoSuppressActiveDb: number;
  /** Noise suppression in dB (negative); 0 = off. */
  noiseSuppressDb: number;
}

/** One speexdsp echo canceller (and preprocessor): frames in, cleaned frames out. Keeps its filter until `destroy()`. */
export class SpeexEcho {
  readonly name = 'speexdsp' as const;
  readonly #api: Api;
  readonly #echo: unknown;
  readonly #pp: unknown;
  readonly #out: Int16Array;
  readonly #options: SpeexEchoOptions;
  readonly frameSamples: number;

  private constructor(api: Api, options: SpeexEchoOptions) {
    this.#api = api;
    this.#options = options;
    this.frameSamples = options.frameSamples;
    this.#out = new Int16Array(options.frameSamples);
    this.#echo = api.echoInit(options.frameSamples, options.filterSamples);
    if (!this.#echo) throw new EchoError('echo_failed', 'speex_echo_state_init failed');
    api.echoCtl(this.#echo, ECHO_SET_SAMPLING_RATE, [options.rate]);
    const suppress = options.echoSuppressDb < 0 || options.noiseSuppressDb < 0;
    this.#pp = suppress ? api.ppInit(options.frameSamples, options.rate) : null;
    if (this.#pp) {
      api.ppCtlInt(this.#pp, PREPROCESS_SET_DENOISE, [1]); // the gain is applied only with it on
      api.ppCtlInt(this.#pp, PREPROCESS_SET_NOISE_SUPPRESS, [options.noiseSuppressDb]); // 0: a 0 dB floor, nothing taken from noise
      if (options.echoSuppressDb < 0) {
        api.ppCtlPtr(this.#pp, PREPROCESS_SET_ECHO_STATE, this.#echo);
        api.ppCtlInt(this.#pp, PREPROCESS_SET_ECHO_SUPPRESS, [options.echoSuppressDb]);
        api.ppCtlInt(this.#pp, PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, [options.echoSuppressActiveDb]);
      }
    }
  }

  static async create(options: SpeexEchoOptions): Promise<SpeexEcho> {
    return new SpeexEcho(await load(), options);
  }

  /** A new canceller with the same settings, its filter fresh. */
  fresh(): SpeexEcho {
    return new SpeexEcho(this.#api, this.#options);
  }

  /** `mic` with the echo of `ref` removed (both `frameSamples` long); the result is a new array. */
  process(mic: Int16Array, ref: Int16Array): Int16Array {
    this.#api.echoCancel(this.#echo, mic, ref, this.#out);
    if (this.#pp) this.#api.ppRun(this.#pp, this.#out);
    return this.#out.slice();
  }

  /**
   * The filter's impulse response as it stands: one tap per sample of `filterSamples`, 1 = the
   * reference passed as it is. speexdsp's float build hands a tap of 1 out as 32767 · 2·frame (its
   * FFT's scale; measured on known paths: 0.5 read 0.49 with 256-sample frames).
   */
  impulseResponse(): Float32Array {
    const size = [0];
    this.#api.echoCtl(this.#echo, ECHO_GET_IMPULSE_RESPONSE_SIZE, size);
    const taps = new Int32Array(size[0] ?? 0);
    this.#api.echoCtlBuffer(this.#echo, ECHO_GET_IMPULSE_RESPONSE, taps);
    return Float32Array.from(taps, (t) => t / (32767 * 2 * this.frameSamples));
  }

  destroy(): void {
    if (this.#pp) this.#api.ppDestroy(this.#pp);
    this.#api.echoDestroy(this.#echo);
  }
}
