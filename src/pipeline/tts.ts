/**
 * The `TextToSpeech` seam: text in, WAV audio out, cancellable. Only the adapters know their
 * engine (espeak.ts spawns espeak-ng, piper.ts runs a Piper voice); `createTextToSpeech` is the
 * one place an engine is chosen, and every engine is given text written for the ear (ear.ts).
 */
import { dirname } from 'node:path';
import type { Config } from '../config/schema.js';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { forTheEar } from './ear.js';
import { createEspeak } from './espeak.js';
import { createPiper } from './piper.js';
import { piperVoicePath } from './voices.js';

export interface TextToSpeech {
  /** A complete WAV file (RIFF header with its format) for `text`. */
  synthesize(text: string, signal?: AbortSignal): Promise<Buffer>;
  /** Which voice speaks, for logs, `iris say` and `iris doctor`. */
  readonly describe?: () => Promise<string>;
}

/**
 * The configured voice. A Piper voice that cannot be loaded falls back to espeak-ng (said once
 * in the log); what either is given to say is rewritten for the ear first.
 */
export function createTextToSpeech(config: Pick<Config, 'tts'> & Partial<Pick<Config, 'stt'>>, log?: Logger): TextToSpeech {
  // A voice fetched by name (`iris models fetch piper:NAME`) sits in the models dir, beside [stt] model.
  const model = piperVoicePath(config.tts.voice, dirname(config.stt?.model ?? '/var/lib/iris/models/none'));
  const espeak = createEspeak({ voice: config.tts.engine === 'piper' ? 'en-us' : config.tts.voice, rateWpm: config.tts.rate_wpm });
  const piper = config.tts.engine !== 'piper'
    ? Promise.resolve(undefined)
    : createPiper({ model, speaker: config.tts.speaker, rateWpm: config.tts.rate_wpm }).catch((error: unknown) => {
      log?.warn(`Piper voice unavailable (${messageOf(error)}); speaking with espeak-ng`);
      return undefined;
    });
  return {
    async synthesize(text, signal) {
      const engine = (await piper) ?? espeak;
      return engine.synthesize(forTheEar(text), signal);
    },
    describe: async () => ((await piper) === undefined ? `espeak-ng ${config.tts.engine === 'piper' ? 'en-us (the Piper voice could not be loaded)' : config.tts.voice}` : `Piper ${config.tts.voice}`),
  };
}
