/**
 * What the voice loop tells the recogniser when it opens a stream for "hey jarvis, what time is
 * it" (real wake word and VAD; a recording stands in for the recogniser and hands back the words).
 */
import { expect } from 'vitest';
import { samplesSource } from '../../src/pipeline/capture.js';
import { createEspeak } from '../../src/pipeline/espeak.js';
import { CollectingSink } from '../../src/pipeline/playback.js';
import type { SpeechToText, StreamOptions } from '../../src/pipeline/stt.js';
import { createSileroVad } from '../../src/pipeline/vad.js';
import { VoiceLoop, type VoiceLoopOptions } from '../../src/pipeline/voice.js';
import { createOpenWakeWord } from '../../src/pipeline/wakeword.js';
import { commandSamples } from './speech.js';

/** The options the recogniser's stream was opened with (undefined: none given). */
export async function toldRecogniser(loopOptions: Partial<VoiceLoopOptions<never>>): Promise<StreamOptions | undefined> {
  const [wake, vad] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis' }), createSileroVad()]);
  let options: StreamOptions | undefined = { echoS: -1 };
  const stt: SpeechToText = {
    name: 'recording',
    transcribe: () => Promise.resolve({ text: '', confidence: 0 }),
    stream: (_prime, given) => {
      options = given;
      return Promise.resolve({ push: () => undefined, partial: () => '', end: () => Promise.resolve({ text: 'what time is it', confidence: 0.9 }), cancel: () => undefined });
    },
  };
  const loop = new VoiceLoop<never>({
    wake, vad, stt, tts: createEspeak({ voice: 'en-us', rateWpm: 175 }), sink: new CollectingSink(), end: 'stt', minConfidence: 0.6,
    respond: () => { throw new Error('not reached'); },
    ...loopOptions,
  });
  const [run] = await loop.run(samplesSource(commandSamples('hey jarvis, what time is it')), new AbortController().signal, true);
  expect(run?.wake).toBeDefined();
  return options;
}
