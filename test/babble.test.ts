/**
 * A command said over a person reading aloud in the background (LibriVox, pocketsphinx-testdata),
 * on the real wake word, VAD and recogniser. Silero hears the background as speech too: the
 * command must still end where the person stops, and the recogniser must hear the person's
 * words, not the reading before and after them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { samplesSource } from '../src/pipeline/capture.js';
import { createEspeak } from '../src/pipeline/espeak.js';
import type { VoiceEvent } from '../src/pipeline/events.js';
import { CollectingSink } from '../src/pipeline/playback.js';
import { createPocketsphinx } from '../src/pipeline/pocketsphinx.js';
import { createSileroVad, voiceFloorDb, type VadFrame, type VoiceActivity } from '../src/pipeline/vad.js';
import { VoiceLoop } from '../src/pipeline/voice.js';
import { createOpenWakeWord, type WakeWordDetector } from '../src/pipeline/wakeword.js';
import { sameMeaning } from '../src/intents/match.js';
import { prefixState } from '../src/intents/prefix.js';
import { RIVALS } from '../src/intents/sentences.js';
import { commandSamples, withBabble } from './helpers/speech.js';

describe('a command over a person reading aloud', () => {
  let wake: WakeWordDetector;
  let vad: VoiceActivity;
  beforeAll(async () => {
    [wake, vad] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis' }), createSileroVad()]);
  });

  it('ends where the person stops, 15 dB over the reading, and the words are heard', async () => {
    const person = commandSamples('hey jarvis, what time is it in tokyo', { padS: [2, 3] });
    // The last word: the padding after it is 3 s.
    const lastWordS = person.length / 16_000 - 3;
    const events: VoiceEvent[] = [];
    const stt = createPocketsphinx({ wakePhrases: ['hey jarvis', 'jarvis'], agree: sameMeaning, rivals: RIVALS });
    const loop = new VoiceLoop({
      wake, vad, stt, tts: createEspeak({ voice: 'en-us', rateWpm: 175 }), sink: new CollectingSink(), end: 'stt', commandState: prefixState,
      respond: () => { throw new Error('ends at the words'); },
      onEvent: (e) => events.push(e),
    });
    const [run] = await loop.run(samplesSource(withBabble(person, 15)), new AbortController().signal, true);
    await stt.stop?.();
    const end = events.find((e) => e.type === 'end_of_speech-end')?.data;
    // Before: the reading went on, so the command ran to the end of the audio (or max_command_s
    // live), and the recogniser, fed the reading around the command, heard a sum or a timer.
    expect(end?.state).not.toBe('end_of_audio');
    expect(Number(end?.atS)).toBeLessThan(lastWordS + 1.5);
    expect(run?.transcript).toBe('what time is it in tokyo');
  });

  it('a follow-up over the reading hears no command in it: the window closes (before, it took the reading for one)', async () => {
    // The reading goes on for 20 s after the command; the follow-up window is 3 s.
    const person = commandSamples('hey jarvis, what time is it in tokyo', { padS: [2, 20] });
    const stt = createPocketsphinx({ wakePhrases: ['hey jarvis', 'jarvis'], agree: sameMeaning, rivals: RIVALS });
    const loop = new VoiceLoop({
      wake, vad, stt, tts: createEspeak({ voice: 'en-us', rateWpm: 175 }), sink: new CollectingSink(), followUpS: 3,
      respond: () => ({ sentences: (async function* () { yield await Promise.resolve('It is noon.'); })(), result: Promise.resolve(undefined) }),
    });
    const runs = await loop.run(samplesSource(withBabble(person, 15)), new AbortController().signal);
    await stt.stop?.();
    expect(runs.map((r) => [r.followUp, r.outcome])).toEqual([[false, 'answered'], [true, 'no_speech']]);
  });

  it('tells the wake phrase from the background by level, and gives up when it does not stand out', () => {
    const frame = (levelDb: number): VadFrame => ({ seconds: 0.032, isSpeech: true, probability: 0.9, levelDb });
    // 1.6 s of background at −40 dB, then the wake phrase at −20 dB: half way.
    const preRoll = [...Array.from({ length: 50 }, () => frame(-40)), ...Array.from({ length: 30 }, () => frame(-20))];
    expect(voiceFloorDb(preRoll)).toBeCloseTo(-30);
    expect(voiceFloorDb(preRoll.map((f) => ({ ...f, levelDb: -25 })))).toBeUndefined(); // no louder voice
    expect(voiceFloorDb(preRoll.slice(-5))).toBeUndefined(); // 160 ms: too short to tell
  });
});
