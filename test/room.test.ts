/**
 * Hearing in a room: the echo canceller removes what IRIS played from the microphone, finds the
 * delay between the two, and the stop word is heard over IRIS while it plays — never from
 * IRIS's own voice, never while nothing plays. The room is simulated: IRIS's reply (espeak-ng)
 * reaches the microphone late, through sox's reverb; the person is a flite voice.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { probeEcho, stampArrivals } from '../src/daemon/room-ear.js';
import { VoiceService, overSpeechOf, type OverIrisCounts } from '../src/daemon/voice.js';
import { createLogger } from '../src/log.js';
import type { AudioChunk, AudioSink } from '../src/pipeline/audio.js';
import { PushedAudio, samplesSource } from '../src/pipeline/capture.js';
import { EchoCanceller, EchoReference, MAX_MIC_LAG_S, delaySteps, estimateDelay, liveClock, type EchoCancellerOptions } from '../src/pipeline/echo.js';
import { frontEnd, ownAudio } from '../src/pipeline/frontend.js';
import { Speaker } from '../src/pipeline/playback.js';
import { referenceSamples } from '../src/pipeline/resample.js';
import { DEFAULT_STOP_CHECK, ownWord, passesCheck, StopWord, type StopCandidate, type StopCheck, type StopWordOptions } from '../src/pipeline/stopword.js';
import type { SpeechToText } from '../src/pipeline/stt.js';
import { createSileroVad } from '../src/pipeline/vad.js';
import { VoiceLoop } from '../src/pipeline/voice.js';
import { createOpenWakeWord, OWN_VOICE_THRESHOLD, OwnVoiceVeto, type WakeWordDetector } from '../src/pipeline/wakeword.js';
import { createEspeak } from '../src/pipeline/espeak.js';
import { CollectingSink } from '../src/pipeline/playback.js';
import { decodeWav, encodeWav } from '../src/pipeline/wav.js';
import { iris } from './helpers/cli.js';
import { speakToWav } from '../scripts/lib/speech.js';
import { commandSamples, energy, speechSamples, twoReplies } from './helpers/speech.js';
import { tempDir } from './helpers/tmp.js';

const RATE = 16_000;

/**
 * IRIS's reply, as it reaches the microphone: `delayMs` late, through a small room's reverb
 * (unless `reverb` is false), at `gain`; with `ppm`, the speaker's clock that much faster than
 * the microphone's (sox's resampler).
 */
function echoOf(played: Int16Array, delayMs: number, gain = 0.7, reverb = true, ppm = 0): Int16Array {
  const dir = tempDir();
  writeFileSync(join(dir, 'played.wav'), encodeWav(played));
  execFileSync('sox', ['-D', join(dir, 'played.wav'), join(dir, 'echo.wav'), ...(reverb ? ['reverb', '40', '50', '30'] : []), 'vol', String(gain), ...(ppm ? ['speed', String(1 + ppm * 1e-6)] : [])]);
  const echo = decodeWav(readFileSync(join(dir, 'echo.wav')));
  const out = new Int16Array(played.length);
  out.set(echo.subarray(0, played.length - Math.round((delayMs * RATE) / 1000)), Math.round((delayMs * RATE) / 1000));
  return out;
}

/** `a` + `b` placed `atS` in (clipped to 16 bits). */
function mix(a: Int16Array, b: Int16Array, atS = 0): Int16Array {
  const out = Int16Array.from(a);
  const at = Math.round(atS * RATE);
  for (let i = 0; i < b.length && at + i < out.length; i++) out[at + i] = Math.max(-32768, Math.min(32767, (out[at + i] ?? 0) + (b[i] ?? 0)));
  return out;
}

const reply = twoReplies;

/** `mic` through a canceller on `reference`, in 80 ms chunks. */
async function cancelled(mic: Int16Array, reference: EchoReference, options?: Parameters<typeof EchoCanceller.create>[1]) {
  const canceller = await EchoCanceller.create(reference, options);
  const out = new Int16Array(mic.length);
  for (let at = 0; at + 1280 <= mic.length; at += 1280) out.set(canceller.process(mic.subarray(at, at + 1280), at), at);
  canceller.destroy();
  return { out, stats: canceller.stats };
}

describe('echo cancellation', () => {
  it('finds the delay of a known echo and removes it by at least 15 dB once converged', async () => {
    const played = reply();
    const mic = echoOf(played, 120);
    const reference = new EchoReference(30);
    reference.write(played, 0);
    const { out, stats } = await cancelled(mic, reference);
    expect(stats.delayMs).toBeGreaterThanOrEqual(110);
    expect(stats.delayMs).toBeLessThanOrEqual(130);
    // The second reply, after the first taught the filter the room.
    const from = Math.round(mic.length / 2);
    const removedDb = 10 * Math.log10(energy(mic.subarray(from)) / energy(out.subarray(from)));
    expect(removedDb).toBeGreaterThanOrEqual(15);
  });

  // Live, an early answer began 1-2 s after the reminder stopped: the canceller, idle meanwhile,
  // had last run over the person's own voice, and its first frame when it ran again was that old
  // voice (+39 dB over a silent microphone); the VAD took it for the person going on.
  it('adds nothing of what it last heard to the next clip\'s start after a pause', async () => {
    const first = speechSamples('The weather today is sunny with a high of twenty two degrees. Tomorrow brings some clouds.', { padS: [0.3, 0] });
    const person = commandSamples('hey jarvis, what time is it', { padS: [0, 0] }).subarray(0, Math.round(0.5 * RATE));
    const second = speechSamples('It is ten past three.', { padS: [0, 0.3] });
    const gap = 2 * RATE; // nothing playing; the person talks in its first half second
    const played = new Int16Array(first.length + gap + second.length);
    played.set(first);
    played.set(second, first.length + gap);
    let seed = 1;
    const noise = Int16Array.from(played, () => ((seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff - 0.5) * 60);
    const mic = mix(mix(echoOf(played, 120, 0.7, false), noise), person, first.length / RATE + 0.3); // on past where the canceller stops running (0.63 s after the reference)
    const reference = new EchoReference(30);
    reference.write(first, 0);
    reference.write(second, first.length + gap);
    const { out } = await cancelled(mic, reference);
    // From a little before the second clip is played to where its echo arrives, the microphone hears only the room's noise.
    const from = first.length + gap - Math.round(0.2 * RATE);
    const to = first.length + gap + Math.round(0.12 * RATE);
    const addedDb = 10 * Math.log10(energy(out.subarray(from, to)) / energy(mic.subarray(from, to)));
    expect(addedDb).toBeLessThan(3);
  });

  it('keeps removing the echo when the speaker\'s and the microphone\'s clocks drift 300 ppm apart', async () => {
    // 40 s of IRIS talking; the echo's delay shrinks from 120 to 108 ms. The delay tracker follows
    // that, but a filter whose room keeps moving removed ~4 dB (15 dB with one clock).
    const played = Int16Array.from([...reply(), ...reply(), ...reply()]);
    const mic = echoOf(played, 120, 0.7, true, 300);
    const reference = new EchoReference(60);
    reference.write(played, 0);
    const { out } = await cancelled(mic, reference);
    const from = Math.round((mic.length * 2) / 3);
    const removedDb = 10 * Math.log10(energy(mic.subarray(from)) / energy(out.subarray(from)));
    expect(removedDb).toBeGreaterThanOrEqual(10);
  });

  it('adds nothing when it starts again after a pause in which the person talked', async () => {
    // IRIS's reply, then 1.5 s of silence in which the person speaks while the canceller's tail
    // runs out, then the next reply: the canceller played back the frames it last heard.
    const reply1 = speechSamples('The weather today is sunny with a high of twenty two degrees. Tomorrow brings some clouds.', { padS: [0.2, 0.2] });
    const person = speechSamples('what time is it', { padS: [0, 0] });
    const second = reply1.length + Math.round(1.5 * RATE);
    const played = new Int16Array(second + reply1.length);
    played.set(reply1);
    played.set(reply1, second);
    let mic = echoOf(played, 120, 0.7, false);
    mic = mix(mic, person, (reply1.length + Math.round(0.4 * RATE)) / RATE);
    const noise = Int16Array.from({ length: mic.length }, (_, i) => Math.round(Math.sin(i * 0.7) * 30));
    mic = mix(mic, noise);
    const reference = new EchoReference(30);
    reference.write(reply1, 0);
    reference.write(reply1, second);
    const { out } = await cancelled(mic, reference);
    for (let at = second - 1280; at < second + 0.3 * RATE; at += 320) { // 20 ms steps around the restart, before the echo arrives
      const keptDb = 10 * Math.log10((energy(out.subarray(at, at + 320)) + 1) / (energy(mic.subarray(at, at + 320)) + 1));
      expect(keptDb, `${(at - second) / 16} ms`).toBeLessThanOrEqual(1); // before: +22 dB
    }
  });

  // A living room's echo goes on after its first arrival: a reflection 200 ms after the direct
  // sound is outside a 128 ms filter, which left it (and the person's wake word under it) in.
  it('removes a reflection arriving 200 ms after the direct echo', async () => {
    const played = reply();
    const delay = Math.round(0.12 * RATE);
    const late = Math.round(0.2 * RATE);
    const mic = Int16Array.from(played, (_, i) => Math.round(0.6 * (played[i - delay] ?? 0) + 0.45 * (played[i - delay - late] ?? 0)));
    const reference = new EchoReference(30);
    reference.write(played, 0);
    const { out } = await cancelled(mic, reference);
    const from = Math.round(mic.length / 2);
    expect(10 * Math.log10(energy(mic.subarray(from)) / energy(out.subarray(from)))).toBeGreaterThanOrEqual(15);
  });

  // The preprocessor that once followed the filter applied no gain (speexdsp's denoiser was off):
  // it only made the output 16 ms late, and the audio jumped where the canceller started.
  it('adds no delay: the person comes out of the canceller where they went in', async () => {
    const played = reply();
    const person = speechSamples('hey jarvis, what time is it in tokyo', { padS: [0.2, 0.2] });
    const mic = mix(echoOf(played, 120, 0.5), person, 3);
    const reference = new EchoReference(30);
    reference.write(played, 0);
    const { out } = await cancelled(mic, reference);
    const lagOf = (lag: number) => { let dot = 0; for (let i = 0; i < person.length - 400; i++) dot += (person[i] ?? 0) * (out[3 * RATE + i + lag] ?? 0); return dot; };
    const lags = Array.from({ length: 400 }, (_, lag) => lagOf(lag));
    expect(lags.indexOf(Math.max(...lags))).toBe(0);
  });

  // speexdsp applies its preprocessor's gain only with the denoiser on: residual-echo suppression
  // asked for with noise suppression off did nothing (until session 12).
  it('suppresses the residual echo a linear filter leaves (a clipping speaker) when asked to', async () => {
    const played = reply();
    const clipped = Int16Array.from(played, (v) => Math.max(-8000, Math.min(8000, v * 4)));
    const mic = echoOf(clipped, 100, 1, false);
    const removed = async (echoSuppressDb: number) => {
      const reference = new EchoReference(30);
      reference.write(played, 0);
      const { out } = await cancelled(mic, reference, { echoSuppressDb, echoSuppressActiveDb: -15 });
      const from = Math.round(mic.length / 2);
      return 10 * Math.log10(energy(mic.subarray(from)) / energy(out.subarray(from)));
    };
    expect(await removed(-40) - await removed(0)).toBeGreaterThanOrEqual(2); // 3 dB measured; 0 without the gain
  });

  it('estimates a delay from the cross-correlation at 16 kHz resolution', () => {
    const played = speechSamples('hello there, how are you doing today', { padS: [0.1, 0.1] });
    const maxLag = 4000;
    const ref = played.subarray(0, 20_000);
    const mic = new Int16Array(ref.length);
    mic.set(ref.subarray(0, ref.length - 1234), 1234); // 77.1 ms late
    expect(estimateDelay(mic, ref, maxLag)?.delaySamples).toBe(1234);
  });

  it('spreads a delay estimate over steps, so the canceller never holds one chunk up for all of it', () => {
    const played = speechSamples('hello there, how are you doing today', { padS: [0.1, 0.1] });
    const maxLag = 8000; // 500 ms, the canceller's
    const ref = played.subarray(0, 32_000);
    const mic = new Int16Array(ref.length);
    mic.set(ref.subarray(0, ref.length - 1234), 1234);
    const steps = delaySteps(mic, ref, maxLag);
    let count = 0;
    let step = steps.next();
    for (; !step.done; step = steps.next()) count++;
    expect(step.value?.delaySamples).toBe(1234);
    expect(count).toBeGreaterThanOrEqual(8); // ~1 ms each: 1,000 coarse lags in slices of 128, the fine search in fours
  });
});

describe('the speaker path', () => {
  it('keeps what it played at the clock sample it was handed over, and cuts what a stop silenced', async () => {
    let clock = 1000;
    let release: () => void = () => undefined;
    const out = { play: (_wav: Buffer, signal: AbortSignal) => new Promise<void>((resolve) => { release = resolve; signal.addEventListener('abort', () => resolve()); }) };
    const speaker = new Speaker(out, new EchoReference(4), () => clock);
    const tone = Int16Array.from({ length: 8000 }, (_, i) => Math.round(Math.sin(i / 5) * 10_000));
    const playing = speaker.play(encodeWav(tone), new AbortController().signal);
    expect(speaker.playing).toBe(true);
    expect(Array.from(speaker.reference.read(1000, 4))).toEqual(Array.from(tone.subarray(0, 4)));
    expect(speaker.reference.sounding(1000, 1100)).toBe(true);
    clock = 5000;
    expect(speaker.stop()).toBe(true);
    await playing;
    expect(speaker.playing).toBe(false);
    expect(energy(speaker.reference.read(5000, 4000))).toBe(0); // never heard
    expect(energy(speaker.reference.read(1000, 4000))).toBeGreaterThan(0);
    release();
  });
  // A loaded machine's loop read the microphone 4-6 s behind while the speaker had handed on the
  // next sentences: with an 8 s reference the echo of what it read had been overwritten (silence),
  // so nothing was cancelled and the live barge-in missed the wake word.
  it('still holds what it played for a reader that lags the microphone by the most it may (MAX_MIC_LAG_S)', async () => {
    let clock = 0;
    const speaker = new Speaker({ play: () => Promise.resolve() }, undefined, () => clock);
    const sentence = Int16Array.from({ length: 7 * RATE }, (_, i) => Math.round(Math.sin(i / 7) * 8_000));
    for (let i = 0; i < 6; i++, clock += sentence.length) await speaker.play(encodeWav(sentence), new AbortController().signal); // 42 s back to back
    const lagged = clock - MAX_MIC_LAG_S * RATE; // what a reader that far behind needs now
    expect(energy(speaker.reference.read(lagged - RATE, RATE))).toBeGreaterThan(0);
  });
});

describe('IRIS\'s own audio for the own-voice checks', () => {
  it('is handed out ahead of its echo as one stream, from a clip\'s first sample, nothing twice when the delay grows', () => {
    const reference = new EchoReference(4);
    const clip = Int16Array.from({ length: RATE }, (_, i) => (i % 1000) + 1);
    reference.write(clip, RATE); // handed to the player at 1 s: silence before
    let delay = 0; // not measured yet, as over a fresh canceller
    const own = ownAudio((from, length) => reference.read(from, length), () => delay, RATE / 5);
    const parts: Int16Array[] = [];
    for (let at = RATE - 1280, k = 0; at < 2 * RATE; at += 1280, k++) {
      if (k === 4) delay = 1440; // the first estimate: 90 ms
      parts.push(own(at, 1280));
    }
    const heard = parts.flatMap((p) => Array.from(p)).filter((v) => v !== 0);
    // With the lead alone, the first 0.2 s of the clip (its first words) never reached the checks.
    expect(heard).toEqual(Array.from(clip.subarray(0, heard.length)));
    expect(heard.length).toBeGreaterThan(RATE * 0.8);
  });
});

describe('iris listen --playback', () => {
  it('reports the delay of the echo in the recording within 10 ms', async () => {
    const dir = tempDir();
    const played = reply();
    const delayMs = 150;
    writeFileSync(join(dir, 'ref.wav'), encodeWav(played));
    writeFileSync(join(dir, 'mic.wav'), encodeWav(echoOf(played, delayMs)));
    writeFileSync(join(dir, 'config'), '');
    const vars = { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 's') };
    const run = await iris(['listen', '--file', join(dir, 'mic.wav'), '--playback', join(dir, 'ref.wav'), '--end', 'wake', '--json'], vars);
    expect(run.stderr).toBe('');
    const report = JSON.parse(run.stdout) as { echo: { delay_ms: number; erle_db: number }; stop: { detected: boolean } };
    expect(Math.abs(report.echo.delay_ms - delayMs)).toBeLessThanOrEqual(10);
    expect(report.echo.erle_db).toBeGreaterThan(6);
    expect(report.stop).toEqual({ detected: false });
  }, 60_000);
});

describe('the stop word', () => {
  /** The sound held and let go by the last `stops` run (frontend.ts `onHold`), and where (stream seconds). */
  const holds: { held: boolean; atS: number }[] = [];

  /**
   * Run the front end over `mic` with `played` as what IRIS played, its wake word heard by a
   * detector of its own as the daemon's (the level route needs its scores); where "stop" was heard.
   */
  async function stops(mic: Int16Array, played: Int16Array, cancel: boolean | EchoCancellerOptions = true, options: StopWordOptions = {}, clips: [Int16Array, number][] = [[played, 0]]): Promise<number[]> {
    const reference = new EchoReference(played.length / RATE + 2);
    for (const [clip, at] of clips) reference.write(clip, at); // where IRIS's speaker path placed each clip
    const canceller = cancel ? await EchoCanceller.create(reference, cancel === true ? {} : cancel) : undefined;
    const stopWord = await StopWord.create(options);
    const heard: number[] = [];
    holds.length = 0;
    let readS = 0;
    const source = frontEnd(samplesSource(mic), {
      ...(canceller ? { canceller } : {}), stopWord,
      wake: await createOpenWakeWord({ model: 'hey_jarvis', check: false }),
      own: (at, length) => reference.read(at + RATE / 5, length),
      clockOf: (chunk) => Math.round(chunk.atS * RATE),
      armed: (at, length) => reference.sounding(at - RATE / 4, at + length),
      onStop: (atS) => heard.push(atS),
      onHold: (held) => holds.push({ held, atS: readS + 0.08 }), // the end of the chunk being judged
    });
    for await (const chunk of source.frames(new AbortController().signal)) readS = chunk.atS + chunk.samples.length / RATE;
    canceller?.destroy();
    stopWord.free();
    return heard;
  }

  /**
   * A canceller that has neither rehearsed IRIS's first seconds nor learned the room's response:
   * the residual the next two tests were made on. With either, the spotter alone hears both words
   * as well (sessions 18, 22).
   */
  const YOUNG: EchoCancellerOptions = { rehearsal: false, learnAfterS: Infinity };

  const ownStop = (): Int16Array => {
    const said = speechSamples('Please stop the music. I said stop. The bus stop is on the corner.', { padS: [0.3, 0.5] });
    const both = new Int16Array(said.length + reply().length);
    both.set(said);
    both.set(reply(), said.length);
    return both; // said first: before the canceller has converged
  };

  it('hears the person say "stop" over IRIS while it plays, within 300 ms of the word', async () => {
    const played = reply();
    const stop = commandSamples('stop', { padS: [0, 0] });
    const atS = 9;
    const mic = mix(echoOf(played, 100), stop, atS);
    const heard = await stops(mic, played);
    expect(heard.length).toBeGreaterThanOrEqual(1);
    const wordEndS = atS + stop.length / RATE;
    expect(heard[0]).toBeGreaterThan(atS);
    expect((heard[0] ?? 0) - wordEndS).toBeLessThanOrEqual(0.3);
  }, 60_000);

  // pocketsphinx's own -kws_delay (10 frames) put 3 of 24 dev detections 360-414 ms after the word
  // (scripts/bench-room.ts); the stop word's 5 reports the same words a chunk sooner.
  it('reports "stop" a chunk sooner than pocketsphinx\'s own keyword delay would', async () => {
    const played = reply();
    const mic = mix(echoOf(played, 100), commandSamples('stop', { padS: [0, 0] }), 9);
    const [ours] = await stops(mic, played);
    const [pocketsphinxs] = await stops(mic, played, true, { kwsDelay: 10 });
    expect(ours).toBeDefined();
    expect((pocketsphinxs ?? Infinity) - (ours ?? 0)).toBeGreaterThanOrEqual(0.08);
  }, 60_000);

  it('is not stopped by IRIS saying "stop" itself, nor armed when nothing plays', async () => {
    const played = ownStop();
    const mic = echoOf(played, 100, 1, false); // a dry room: the speaker beside the microphone
    expect(await stops(mic, played)).toEqual([]);
    // Not even with no canceller (speexdsp missing), where IRIS's "stop" reaches the spotter whole.
    expect(await stops(mic, played, false)).toEqual([]);
    // The person's "stop" with IRIS silent: not armed.
    const silence = new Int16Array(RATE * 4);
    expect(await stops(mix(silence, commandSamples('stop', { padS: [0, 0] }), 1), new Int16Array(0))).toEqual([]);
  }, 60_000);

  // The spotter often reports "stop" at its p's closure, before the word has ended; the window
  // decoded for the check then ended 120 ms before the audio fed, cut the word, and it no longer
  // decoded as "stop" (dev +6 dB: 2 of the 5 missed words). It ends at the audio fed now.
  it('hears a "stop" the spotter reports before the word has ended, over IRIS\'s louder echo', async () => {
    const played = reply();
    const stop = commandSamples('stop', { padS: [0, 0] });
    const atS = 10.5;
    const mic = mix(echoOf(played, 100, 1.4), stop, atS);
    expect(await stops(mic, played, YOUNG, { decodeTo: 'word', levelRoute: false })).toEqual([]); // as before (the spotter alone)
    const heard = await stops(mic, played, YOUNG);
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeGreaterThan(atS);
    expect((heard[0] ?? 0) - (atS + stop.length / RATE)).toBeLessThanOrEqual(0.3);
  }, 60_000);

  // Over an echo twice the person's, pocketsphinx's spotter never reports this "stop" (held-out
  // +6 dB: 5 of 6 misses were such words). The level route makes it a candidate anyway: a
  // word-long burst above the residual echo IRIS's own audio predicts, then quiet; it is decoded
  // with the window's own cepstral mean, passes the same check, and the wake word is not being said.
  it('hears a "stop" the spotter never reports, from its level over IRIS\'s residual echo', async () => {
    const played = reply();
    const stop = commandSamples('stop', { padS: [0, 0] });
    const atS = 9;
    const mic = mix(echoOf(played, 100, 2), stop, atS);
    expect(await stops(mic, played, YOUNG, { levelRoute: false })).toEqual([]); // the spotter alone
    const heard = await stops(mic, played, YOUNG, { levelRoute: {} });
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeGreaterThan(atS);
    expect((heard[0] ?? 0) - (atS + stop.length / RATE)).toBeLessThanOrEqual(0.3);
    // The sound was held while the candidate waited for the wake word's scores, and let go with the stop.
    expect(holds.map((h) => h.held)).toEqual([true, false]);
    expect(holds[0]?.atS).toBeLessThan(heard[0] ?? 0);
    expect(holds[1]?.atS).toBeCloseTo(heard[0] ?? 0, 5);
    expect((holds[0]?.atS ?? 0) - (atS + stop.length / RATE)).toBeLessThanOrEqual(0.25);
  }, 60_000);

  // A clip placed a sample or two off the one before it (a per-clip sink's stamp; a new speaker
  // stream) leaves −0…−15 dB of its echo for ~0.5 s while the filter learns the shift, and its
  // first word reads as a person's: in the live daemon test IRIS's own "Hey jarvis, your timer is
  // done", said again after a pause, stopped it (session 14). The stop word now waits, after each
  // pause, until the canceller has shown it cancels IRIS again (a chunk at the residual).
  it('is not stopped by the first word of its own clip placed two samples off, and still hears the person once the canceller has caught up', async () => {
    const first = speechSamples('Here is a long answer. It goes on for a while, sentence after sentence, so that it is still playing when the person speaks again.', { padS: [0.2, 0.2] });
    const again = speechSamples('Hey jarvis, your timer for the laundry is done.', { padS: [0.2, 0.2] });
    const [second, third] = [first.length + 2 * RATE, first.length + 4 * RATE + again.length];
    const played = new Int16Array(third + again.length + RATE);
    played.set(first);
    played.set(again, second);
    played.set(again, third);
    const mic = echoOf(played, 100, 1.4, false);
    const clips: [Int16Array, number][] = [[first, 0], [again, second + 2], [again, third - 2]];
    const unsettled = await stops(mic, played, true, { levelRoute: {}, check: { ...DEFAULT_STOP_CHECK, settled: false } }, clips);
    expect(unsettled).toHaveLength(1); // the third clip's "hey", 4 samples from where the filter learnt the second
    expect(unsettled[0]).toBeGreaterThan(third / RATE);
    expect(unsettled[0]).toBeLessThan(third / RATE + 1.2);
    expect(await stops(mic, played, true, { levelRoute: {} }, clips)).toEqual([]);
    const stop = commandSamples('stop', { padS: [0, 0] });
    // 2.2 s into the shifted clip. Earlier the word is marginal with or without the rehearsal (a
    // filter that has heard more re-learns a 4-sample shift no faster): 1.3 s heard without it only,
    // 1.6 s with it only, 1.9 s with neither (session 18).
    const saidS = third / RATE + 2.2;
    const heard = await stops(mix(mic, stop, saidS), played, true, { levelRoute: {} }, clips);
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeGreaterThan(saidS);
  }, 60_000);

  // IRIS's own spotter hears "stop" in "shopping"; a person's "stop" under a second later was
  // turned down as IRIS's own word (held-out 2: 4 of 4 misses at 0 dB). Where the canceller was
  // taking IRIS down to its residual just before the word, IRIS's own word would be at the
  // residual too (the levels turn it down), so the veto is set aside there (`trustCanceller`).
  it('hears the person\'s "stop" just after IRIS said a word like it, where the canceller is cancelling IRIS', async () => {
    const before = reply();
    const shopping = speechSamples('Your shopping list has milk, eggs and bread on it. I added coffee as you asked.', { padS: [0.2, 0.5] });
    const played = new Int16Array(before.length + shopping.length);
    played.set(before);
    played.set(shopping, before.length);
    const echo = echoOf(played, 100);
    const saidS = before.length / RATE + 0.9;
    const mic = mix(echo, commandSamples('stop', { padS: [0, 0] }), saidS);
    expect(await stops(mic, played, true, { check: { ...DEFAULT_STOP_CHECK, trustCanceller: false } })).toEqual([]); // vetoed as IRIS's own
    const heard = await stops(mic, played);
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeGreaterThan(saidS);
    expect(await stops(echo, played)).toEqual([]); // IRIS alone: its "shopping" is at the residual
  }, 60_000);

  // IRIS reading for an hour was stopped once by its own word 0.56 s after its own spotter heard it
  // (session 16): the canceller had been at the residual just before, but took 12 dB from that word.
  it('keeps IRIS\'s own spotter\'s veto where the canceller took more than 10 dB from the word', () => {
    const candidate: StopCandidate = { route: 'level', atS: 481.84, fromS: 481.36, toS: 481.52, own: true, ownGapS: 0.56, fit: 9, share: 1, nearDb: 9.2, riseDb: 9.4, keptDb: -12, settled: true, cancelling: true, irisS: 480, wake: 0, heldS: NaN, heard: true };
    expect(passesCheck(candidate, DEFAULT_STOP_CHECK)).toBe(true); // the levels alone let it through
    expect(ownWord(candidate, DEFAULT_STOP_CHECK)).toBe(true);
    expect(ownWord(candidate, { ...DEFAULT_STOP_CHECK, trustMinKeptDb: -Infinity })).toBe(false); // before
    expect(ownWord({ ...candidate, keptDb: -4 }, DEFAULT_STOP_CHECK)).toBe(false); // a person's word keeps most of itself
    expect(ownWord({ ...candidate, cancelling: false, keptDb: -4 }, DEFAULT_STOP_CHECK)).toBe(true);
  });

  // The stop bench's held-out 5 and 7 (session 18): IRIS's own words 3.1 and 1.9 s into its first
  // reply, a canceller that young taking little from them (keptDb −0.3, −4), 5.4 and 5.9 dB over the
  // residual: taken as the person's (the first one's own-spotter veto set aside for the canceller).
  it('judges a word in IRIS\'s first seconds, while the canceller is young, without trusting it', () => {
    const vetoed: StopCandidate = { route: 'spotter', atS: 3.12, fromS: 2.69, toS: 3, own: true, ownGapS: 0.12, fit: 20.1, share: NaN, nearDb: 5.4, riseDb: 7.1, keptDb: -0.3, settled: true, cancelling: true, irisS: 3.1, wake: NaN, heldS: NaN, heard: true };
    const unheard: StopCandidate = { ...vetoed, atS: 2.16, fromS: 1.9, toS: 2.04, own: false, fit: 19.6, nearDb: 5.9, riseDb: 7.7, keptDb: -4, irisS: 1.92 };
    const { young: _young, ...before } = DEFAULT_STOP_CHECK;
    expect(ownWord(vetoed, DEFAULT_STOP_CHECK)).toBe(true);
    expect(ownWord(vetoed, before)).toBe(false);
    expect(passesCheck(unheard, DEFAULT_STOP_CHECK)).toBe(false);
    expect(passesCheck(unheard, before)).toBe(true);
    // Far over the residual, or once IRIS has sounded 6 s, judged as before.
    expect(passesCheck({ ...unheard, nearDb: 12 }, DEFAULT_STOP_CHECK)).toBe(true);
    expect(passesCheck({ ...unheard, irisS: 6 }, DEFAULT_STOP_CHECK)).toBe(true);
    expect(ownWord({ ...vetoed, irisS: 7 }, DEFAULT_STOP_CHECK)).toBe(false);
  });

  // IRIS 12 dB louder in its second reply, with the rehearsal (session 18): the person's "stop" lost
  // 11 dB in the canceller (the echo was most of it) and stood 15.8 dB over the residual, and IRIS's
  // own spotter had just heard a word of IRIS's: the veto stood, as the canceller took more than 10 dB.
  it('sets IRIS\'s own spotter\'s veto aside for a word far over the residual that lost more than 10 dB (IRIS much louder)', () => {
    const person: StopCandidate = { route: 'spotter', atS: 8.8, fromS: 8.44, toS: 8.72, own: true, ownGapS: 0.3, fit: 12, share: NaN, nearDb: 15.8, riseDb: 16.5, keptDb: -11, settled: true, cancelling: true, irisS: 9, wake: NaN, heldS: NaN, heard: true };
    expect(ownWord(person, DEFAULT_STOP_CHECK)).toBe(false);
    const { farOver: _far, ...before } = DEFAULT_STOP_CHECK;
    expect(ownWord(person, before)).toBe(true); // the −10 dB limit alone
    expect(ownWord({ ...person, nearDb: 9.9 }, DEFAULT_STOP_CHECK)).toBe(true); // not far enough over
    expect(ownWord({ ...person, keptDb: -18.5 }, DEFAULT_STOP_CHECK)).toBe(true);
  });

  // Session 19, the second reply at +12 dB: most of the person's words missed stood 10–12 dB over the
  // residual (held-out 7: 10.7 dB, rising 13.9 over the stream before it); IRIS's own candidates that
  // far over and that little kept rose at most 11.6 dB (an hour of its reading, IRIS talking on: 10.7 dB
  // over, rising 10.9; 11.1 over, rising 7.7).
  it('takes a word 10 dB over the residual for far over only where it also rises 12 dB over the stream before it', () => {
    const person: StopCandidate = { route: 'spotter', atS: 8.2, fromS: 7.8, toS: 8.1, own: false, ownGapS: 3, fit: 14, share: NaN, nearDb: 10.7, riseDb: 13.9, keptDb: -14, settled: true, cancelling: true, irisS: 7.4, wake: NaN, heldS: NaN, heard: true };
    expect(passesCheck(person, DEFAULT_STOP_CHECK)).toBe(true);
    expect(passesCheck(person, { ...DEFAULT_STOP_CHECK, farOver: { nearDb: 12, riseDb: -Infinity, minKeptDb: -18 } })).toBe(false); // session 18's
    expect(passesCheck({ ...person, riseDb: 10.9 }, DEFAULT_STOP_CHECK)).toBe(false); // IRIS's own
    expect(passesCheck({ ...person, nearDb: 11.1, riseDb: 7.7, keptDb: -15 }, DEFAULT_STOP_CHECK)).toBe(false);
    expect(ownWord({ ...person, own: true }, DEFAULT_STOP_CHECK)).toBe(false);
    expect(ownWord({ ...person, own: true, riseDb: 10.9 }, DEFAULT_STOP_CHECK)).toBe(true);
  });

  // IRIS 12 dB louder than the person, after a minute of its speech (session 17): the canceller takes
  // ~30 dB from IRIS, so the person's "stop" stands far over the residual but keeps only about −14 dB
  // of the raw microphone, which the echo was most of; IRIS's own candidates there stood ≤ 10.3 dB
  // over the residual and kept about −23 dB.
  it('hears a word far over the residual echo that lost more than 12 dB in the canceller (IRIS much louder)', () => {
    const person: StopCandidate = { route: 'level', atS: 64.08, fromS: 63.66, toS: 64.03, own: false, ownGapS: 24.4, fit: 6, share: 1, nearDb: 17.3, riseDb: 21.6, keptDb: -14, settled: true, cancelling: true, irisS: 63, wake: 0, heldS: NaN, heard: true };
    expect(passesCheck(person, DEFAULT_STOP_CHECK)).toBe(true);
    const { farOver: _far, ...before } = DEFAULT_STOP_CHECK;
    expect(passesCheck(person, before)).toBe(false); // the fixed −12 dB limit alone
    expect(passesCheck({ ...person, nearDb: 10.3, keptDb: -23.3 }, DEFAULT_STOP_CHECK)).toBe(false); // IRIS's own, steady
    expect(passesCheck({ ...person, nearDb: 9.9 }, DEFAULT_STOP_CHECK)).toBe(false); // not far enough over
    expect(passesCheck({ ...person, keptDb: -18.5 }, DEFAULT_STOP_CHECK)).toBe(false);
  });

  // A person talking over IRIS mostly says the wake word, and its "hey" can be a "stop"-long
  // burst above the residual echo that decodes as "stop" (held-out, session 14: festival slt's
  // "hey jarvis", fit 6.9). This one (flite slt, under an echo 1.4 times its level) fits 24.1, so
  // the route's fit limit is loosened to the spotter's (30) to let it through: with no wake-word
  // look it stops IRIS; the wake word's score rising in the 0.32 s after the burst (0.93, as the
  // daemon's detector of its own hears the same cancelled stream) turns it down.
  it('does not take the wake word\'s first word, said over IRIS, for "stop"', async () => {
    const played = reply();
    const person = commandSamples('hey jarvis, what time is it', { voice: 'slt', padS: [0, 0] });
    const atS = 9;
    const mic = mix(echoOf(played, 100, 1.4), person, atS);
    const unlooked = await stops(mic, played, true, { levelRoute: { maxFit: 30, maxWakeScore: Infinity } });
    expect(unlooked).toHaveLength(1); // without the look: IRIS stopped inside the phrase
    expect(unlooked[0]).toBeLessThan(atS + person.length / RATE);
    expect(await stops(mic, played, true, { levelRoute: { maxFit: 30 } })).toEqual([]);
    // Held while it waited for the scores, and let go when they rose (the wake word's barge-in takes over from there).
    expect(holds.map((h) => h.held)).toEqual([true, false]);
    expect((holds[1]?.atS ?? 0) - (holds[0]?.atS ?? 0)).toBeLessThanOrEqual(0.33);
  }, 60_000);

  // IRIS reading on (32 s, espeak-ng): 30 s in, what is left of its echo after the canceller is
  // taken for "stop" by the spotter, and IRIS's own audio has no "stop" there to veto it. The
  // spotter alone (as before the check, at its old threshold 1e-10) stops IRIS; the check, which
  // finds the word no louder than IRIS's own voice predicts its residual echo, does not. The
  // person's "stop" 5 s earlier in the same reading is still heard, within 300 ms of its end.
  it('is not stopped by its own echo that the spotter takes for "stop", and still hears the person there', async () => {
    const dir = tempDir();
    speakToWav('To convey a work means any kind of propagation that enables other parties to make or receive copies. Mere interaction with a user through a computer network, with no transfer of a copy, is not conveying. An interactive user interface displays Appropriate Legal Notices to the extent that it includes a convenient and prominently visible feature that 1 displays an appropriate copyright notice, and 2 tells the user that there is no warranty for the work except to the extent that warranties are provided, that licensees may convey the work under this License, and how to view a copy of this License.',
      join(dir, 'iris.wav'), join(dir, 'raw.wav'), { padS: [0, 0] });
    const played = decodeWav(readFileSync(join(dir, 'iris.wav')));
    const mic = echoOf(played, 100, 1);
    const before = await stops(mic, played, true, { threshold: 1e-10, check: false });
    expect(before.length).toBeGreaterThanOrEqual(1);
    expect(await stops(mic, played)).toEqual([]);
    const stop = commandSamples('stop', { padS: [0, 0] });
    // 5 s before IRIS's echo sounded like "stop" (the first such place after 6 s: the person's word
    // itself needs a second of history; with a 384 ms filter the fresh canceller's first such place
    // is 5.4 s in): the same canceller, the same reading.
    const atS = (before.find((s) => s >= 6) ?? 30) - 5;
    const heard = await stops(mix(mic, stop, atS), played);
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeGreaterThan(atS);
    expect((heard[0] ?? 0) - (atS + stop.length / RATE)).toBeLessThanOrEqual(0.3);
  }, 120_000);

  // The 30 min soak of IRIS reading on (scripts/bench-room.ts, IRIS_BENCH_OWN_VOICE_MIN) had one
  // self-stop at 1,088.6 s: in a pause of IRIS's reading the canceller's output was 2.9 dB louder
  // than the microphone (it subtracted an echo that was no longer there: the delay had moved), and
  // the spotter took it for "stop" (near 69.8 dB: IRIS's own audio silent). The bench had handed
  // the stop word the cancelled stream as the raw one, so `maxKeptDb` never saw it; the daemon
  // hands it the microphone, and a word louder after the canceller than before is turned down.
  /** A stop word made with `options`, fed the cancelled and raw microphone and IRIS's own audio in 80 ms chunks, as the front end feeds it: where it heard the word. */
  async function pushed(options: StopWordOptions, out: Int16Array, own: Int16Array, raw: Int16Array): Promise<number[]> {
    const stopWord = await StopWord.create(options);
    const at: number[] = [];
    for (let i = 0; i + 1280 <= out.length; i += 1280) {
      const s = stopWord.push(out.subarray(i, i + 1280), own.subarray(i, i + 1280), (i + 1280) / RATE, raw.subarray(i, i + 1280));
      if (s !== undefined) at.push(s);
    }
    stopWord.free();
    return at;
  }

  // IRIS reading for an hour (session 19, a new hour) was stopped once by its own word 0.3 s after
  // speex had thrown its filter away mid-paragraph: two chunks came out louder than the microphone
  // had them (+5.4, +2.7 dB), and the word, still "settled" by the chunks at the residual before, kept
  // −0.4 dB. A chunk the canceller made louder now unsettles the stop word until the next chunk at the residual.
  it('waits, after a chunk the canceller made louder, for a chunk at the residual again; judges youth by the canceller\'s seconds of IRIS where given', async () => {
    const ownSpeech = reply();
    const word = commandSamples('stop', { padS: [0, 0] });
    const wordAt = 8 * RATE; // IRIS has talked 8 s, and talks on: the canceller is no longer young
    const length = Math.max(ownSpeech.length, wordAt + word.length + RATE);
    const own = new Int16Array(length);
    own.set(ownSpeech.subarray(0, length));
    const heard = async (misplacedS: number | undefined, options: StopWordOptions = {}): Promise<number[]> => {
      const raw = new Int16Array(length);
      const out = new Int16Array(length);
      const misplaced = misplacedS === undefined ? -1 : wordAt - Math.round(misplacedS * RATE);
      for (let i = 0; i < length; i++) {
        const echo = (own[i - RATE / 5] ?? 0) * 0.7; // its echo at the microphone, 0.2 s later
        const w = i >= wordAt ? (word[i - wordAt] ?? 0) : 0;
        raw[i] = Math.max(-32768, Math.min(32767, Math.round(echo + w)));
        // 30 dB of the echo removed; over two chunks, the echo made 3.5 dB louder instead
        out[i] = i >= misplaced && i < misplaced + 2560 ? Math.round(echo * 1.5) : Math.round(echo * 0.03 + w * 0.9);
      }
      return pushed({ levelRoute: false, onCandidate: (c) => c.heard && ages.push(c.irisS), ...options }, out, own, raw);
    };
    const ages: number[] = [];
    expect(await heard(undefined)).toHaveLength(1);
    // Youth is the canceller's when it says (the daemon's: its stop word is made again after each idle pause).
    expect(ages.at(-1)).toBeGreaterThan(6);
    expect(ages.at(-1)).toBeLessThan(9);
    expect(await heard(undefined, { heardS: () => 600 })).toHaveLength(1);
    expect(ages.at(-1)).toBe(600);
    expect(await heard(0.16)).toEqual([]); // right before the word: not settled again
    expect(await heard(1.6)).toHaveLength(1); // chunks at the residual since
  }, 30_000);

  it('is not stopped by a word the canceller made louder than the microphone had it', async () => {
    const ownSpeech = speechSamples('The weather today is sunny with a high of twenty two degrees. Tomorrow brings some clouds.', { padS: [0.2, 0.2] });
    const word = commandSamples('stop', { padS: [0, 0] });
    const wordAt = ownSpeech.length + RATE / 2; // in the pause after IRIS's sentence
    const length = wordAt + word.length + RATE;
    const own = new Int16Array(length);
    own.set(ownSpeech); // IRIS's audio as the stop word gets it (ahead of its echo)
    const raw = new Int16Array(length);
    const out = new Int16Array(length);
    for (let i = 0; i < length; i++) {
      const echo = (own[i - RATE / 5] ?? 0) * 0.7; // its echo at the microphone, 0.2 s later
      const w = i >= wordAt ? (word[i - wordAt] ?? 0) : 0;
      raw[i] = Math.round(echo + w * 0.5);
      out[i] = Math.round(echo * 0.1 + w * 0.7); // 20 dB of the echo removed; the word 2.9 dB louder than it came in
    }
    const heard = (check: StopCheck): Promise<number[]> => pushed({ check }, out, own, raw);
    const { maxKeptDb: _gain, ...withoutGain } = DEFAULT_STOP_CHECK;
    expect(await heard(withoutGain)).toHaveLength(1); // every other limit passes it
    expect(await heard(DEFAULT_STOP_CHECK)).toEqual([]);
  }, 30_000);
});

/**
 * A room in real time: what the daemon's speaker plays reaches its microphone `delayMs` later
 * at `gain`, with the person's words mixed in where they are said. The microphone is pushed
 * every 80 ms, as arecord delivers it.
 */
class LiveRoom {
  readonly microphone = new PushedAudio();
  readonly #speaker = new Float64Array(RATE * 60);
  readonly #person = new Float64Array(RATE * 60);
  readonly #startMs = performance.now();
  #pushed = 0;
  readonly #timer: NodeJS.Timeout;
  /** When playback was last cut short (performance.now()). */
  stoppedAtMs: number | undefined;
  playing = 0;

  constructor(readonly delayMs: number, readonly gain: number) {
    this.#timer = setInterval(() => this.#tick(), 80);
  }

  now(): number {
    return Math.round(((performance.now() - this.#startMs) * RATE) / 1000);
  }

  /** The speaker: sounds for the clip's length, or until stopped. */
  readonly sink: AudioSink = {
    play: (wav, signal) => new Promise<void>((resolve) => {
      const samples = Float64Array.from(referenceSamples(wav) ?? new Int16Array(0)); // the reference's band-limited resampler, ~5 ms a second: decodeWav's would delay the sound
      // It sounds once the call's synchronous part is over, as aplay once spawned (AudioSink):
      // copying a long reply took ms the Speaker's stamp, taken after, would count as delay.
      const at = this.now();
      this.#speaker.set(samples, at);
      this.playing += 1;
      const done = (): void => {
        clearTimeout(timer);
        this.playing -= 1;
        if (signal.aborted) {
          this.stoppedAtMs = performance.now();
          this.#speaker.fill(0, this.now(), at + samples.length); // the rest is never heard
        }
        resolve();
      };
      const timer = setTimeout(done, (samples.length * 1000) / RATE);
      signal.addEventListener('abort', done, { once: true });
    }),
  };

  /** The person says `samples` now; returns when the word ends (performance.now() ms). */
  say(samples: Int16Array): number {
    this.#person.set(Float64Array.from(samples), this.now() + 800); // just ahead of what was pushed
    return performance.now() + 800 + (samples.length * 1000) / RATE;
  }

  #tick(): void {
    const to = this.now();
    const delay = Math.round((this.delayMs * RATE) / 1000);
    const chunk = new Int16Array(to - this.#pushed);
    for (let i = 0; i < chunk.length; i++) {
      const t = this.#pushed + i;
      chunk[i] = Math.max(-32768, Math.min(32767, Math.round((this.#speaker[t - delay] ?? 0) * this.gain + (this.#person[t] ?? 0))));
    }
    this.#pushed = to;
    this.microphone.push(chunk);
  }

  close(): void {
    clearInterval(this.#timer);
    this.microphone.end();
  }
}

describe('the daemon in a room (real time)', () => {
  const long = 'Here is a long answer. It goes on for a while, sentence after sentence, so that it is still playing when the person speaks again. The weather will be sunny, then cloudy, then sunny again, and the wind will come from the west at twenty kilometres an hour.';

  /** The daemon's voice over `room`, replying `long` to everything; what it was asked. */
  async function daemonIn(room: LiveRoom, echoCancel: boolean) {
    const lines: string[] = [];
    const asked: string[] = [];
    const config = parseConfig(`[assistant]\nfollow_up_s = 0\n[audio]\nearcon = false\necho_cancel = ${echoCancel}\nannounce_every_s = 2\n`, 'test');
    const voice = new VoiceService({
      config: () => config,
      log: createLogger('iris', { write: (line) => lines.push(line) }),
      source: room.microphone,
      sink: room.sink,
      respond: (text, signal) => {
        asked.push(text);
        return {
          sentences: (async function* () {
            for (const sentence of [long, long, long].join(' ').split(/(?<=\.) /)) { // ~45 s: still playing however far a busy machine lags
              await new Promise(setImmediate); // streamed, as a model writes
              if (signal.aborted) return;
              yield sentence;
            }
          })(),
          result: Promise.resolve({ reply: long }),
        };
      },
    });
    await voice.start();
    return { voice, asked, lines };
  }

  const until = async (check: () => boolean, timeoutMs: number): Promise<boolean> => {
    const end = performance.now() + timeoutMs;
    while (!check() && performance.now() < end) await new Promise((r) => setTimeout(r, 50));
    return check();
  };

  async function bargeIn(echoCancel: boolean): Promise<{ asked: string[]; lines: string[]; stopped: boolean; overIris: OverIrisCounts | undefined }> {
    const room = new LiveRoom(90, 1.5); // IRIS louder at the microphone than the person
    const { voice, asked, lines } = await daemonIn(room, echoCancel);
    try {
      room.say(commandSamples('hey jarvis, what time is it', { padS: [0, 0.3] }));
      await until(() => room.playing > 0, 15_000);
      await new Promise((r) => setTimeout(r, 5_000)); // IRIS has talked a while: the canceller has converged
      room.say(commandSamples('hey jarvis, cancel all timers', { padS: [0, 0.3] }));
      // Taken: asked (understood), or its turn ended (not understood). Real time: a starved loop lags.
      await until(() => asked.length >= 2 || lines.some((line) => /turn 2: .*wake/.test(line)), 40_000);
      return { asked, lines, stopped: room.stoppedAtMs !== undefined, overIris: voice.status.over_iris };
    } finally {
      room.close();
      await voice.stop();
    }
  }

  /**
   * A timer rings from the daemon's speaker, IRIS itself saying "stop" in it
   * (echo `gain` × the person's level, 90 ms late); after `afterMs` the person says "stop".
   * What happened before the person spoke, and how long after the word ended playback stopped.
   */
  async function stopOver(gain: number, afterMs: number) {
    const room = new LiveRoom(90, gain);
    const { voice, lines, asked } = await daemonIn(room, true);
    try {
      // Not "hey jarvis": over a canceller that has not converged yet (the daemon's first words)
      // IRIS's own wake phrase can still wake it (docs/room.md, Left).
      const text = 'Your timer for ten minutes is done. Say stop, and I will stop. Or ask me something else, I am listening. The ten minutes are up.';
      voice.announce({ kind: 'timer', id: '7', due: new Date().toISOString(), text });
      await until(() => room.playing > 0, 15_000);
      await new Promise((r) => setTimeout(r, afterMs)); // IRIS's own "stop" has sounded
      const before = { stopped: room.stoppedAtMs !== undefined, heard: lines.filter((line) => /heard "stop"|acknowledged|wake/.test(line)), asked: [...asked] };
      const wordEndMs = room.say(commandSamples('stop', { padS: [0, 0] }));
      await until(() => room.stoppedAtMs !== undefined && lines.some((line) => line.includes('acknowledged: #7')), 20_000);
      return { before, lagMs: room.stoppedAtMs === undefined ? undefined : room.stoppedAtMs - wordEndMs, lines, overIris: voice.status.over_iris };
    } finally {
      room.close();
      await voice.stop();
    }
  }

  // Real time, a single word over an echo as loud as the person: the spotter hears it about two
  // times in three (docs/room.md), so it is tried up to three times; no stop word fails all three.
  it('"stop" over a ringing timer stops it within 300 ms and acknowledges it; IRIS saying "stop" itself does not', { retry: 2, timeout: 90_000 }, async () => {
    const { before, lagMs, lines, overIris } = await stopOver(1, 7_000);
    expect(before).toEqual({ stopped: false, heard: [], asked: [] });
    expect(overIris).toMatchObject({ stop_words: 1, barge_ins: 0 }); // iris status counts it
    expect(lines.some((line) => line.includes('acknowledged: #7'))).toBe(true);
    expect(lagMs).toBeDefined();
    expect(lagMs).toBeLessThanOrEqual(300);
  });

  // The command after the wake word is taken; whether it is understood over the last of IRIS's
  // words (the reply stops within 200 ms of the detection, later on a busy machine) is the
  // benchmark's to measure (scripts/bench-room.ts), not a pass/fail here. Real time over a
  // louder echo 5 s into a fresh canceller: the wake word's score over the person's phrase
  // spreads 0.15-0.99 from run to run. With the 128 ms filter 2 runs in 28 missed; with the
  // 384 ms one, its warm filter handed over at the first moment the long one was ahead, about 1
  // try in 3 (3 of 4 in one run); handed over once the long one has been ahead for 2 s, 4 of 4
  // first tries passed (docs/room.md, Left 5b). So it is tried up to three times; a broken
  // barge-in fails all three.
  it('barge-in: the wake word over IRIS\'s own louder voice stops the reply and takes a new command', { retry: 2, timeout: 90_000 }, async () => {
    const { asked, lines, stopped, overIris } = await bargeIn(true);
    expect(asked[0]).toBe('what time is it');
    expect(stopped).toBe(true);
    expect(overIris?.barge_ins).toBe(1); // iris status counts it
    expect(asked.length >= 2 || lines.some((line) => /turn 2: .*wake \d/.test(line)), lines.join('\n')).toBe(true);
  });

  // IRIS's own wake phrase in its first words, through a canceller that has not measured the
  // delay yet (the echo reaches the wake word almost whole, as loud as the person): without the
  // own-voice veto it wakes IRIS (docs/room.md). The person's "hey jarvis" after it still wakes
  // it: said once the announcement is over (the person's wake word over a fresh canceller is
  // the barge-in test's; here it was missed in about half the runs, docs/room.md Left 5b). The
  // veto, looking only backwards, let IRIS's own phrase through in 2 of 10 runs; holding the
  // detection, in none of 30, of which 2 failed otherwise on a loaded machine (docs/room.md,
  // "IRIS's own wake word"): tried twice; a veto that is not wired fails both (it woke IRIS in 3 of 3 runs).
  it('an announcement that says "hey jarvis" does not wake IRIS; the person saying it then does', { retry: 1, timeout: 90_000 }, async () => {
    const room = new LiveRoom(90, 1);
    const { voice, lines, asked } = await daemonIn(room, true);
    try {
      const text = 'Hey jarvis, your timer is done. The ten minutes are up, and the cake can come out of the oven now.';
      voice.announce({ kind: 'timer', id: '8', due: new Date().toISOString(), text });
      await until(() => lines.some((line) => line.includes('said timer #8 (3 of 3)')), 45_000);
      await until(() => room.playing === 0, 10_000);
      const before = lines.filter((line) => /acknowledged|turn \d+:/.test(line));
      const ignored = lines.filter((line) => line.includes('own wake word ignored'));
      room.say(commandSamples('hey jarvis, what time is it', { padS: [0, 0.3] }));
      // Taken: asked (understood; the reply then plays on), or its turn ended (not understood).
      const taken = () => asked.length > 0 || lines.some((line) => /turn \d+:/.test(line));
      await until(taken, 40_000);
      expect(before, lines.join('\n')).toEqual([]);
      expect(ignored.length, lines.join('\n')).toBeGreaterThanOrEqual(1);
      expect(voice.status.over_iris?.own_wakes_ignored).toBeGreaterThanOrEqual(ignored.length); // iris status counts them
      expect(taken(), lines.join('\n')).toBe(true);
    } finally {
      room.close();
      await voice.stop();
    }
  });
});

describe('the live microphone\'s clock', () => {
  it('stamps each chunk when it arrived, not when a busy loop got round to reading it', async () => {
    const microphone = new PushedAudio();
    const arrived = new WeakMap<AudioChunk, number>();
    const source = stampArrivals(microphone, arrived);
    const pushedMs: number[] = [];
    const frames = source.frames(new AbortController().signal)[Symbol.asyncIterator]();
    const first = frames.next(); // reading starts; the pump takes chunks as they come
    for (let i = 0; i < 5; i++) {
      pushedMs.push(performance.now());
      microphone.push(new Int16Array(1280));
      await new Promise((r) => setTimeout(r, 60));
    }
    await new Promise((r) => setTimeout(r, 300)); // the loop is busy (models loading)
    const chunks = [(await first).value as AudioChunk];
    for (let i = 1; i < 5; i++) chunks.push((await frames.next()).value as AudioChunk);
    const readMs = performance.now();
    microphone.end();
    await frames.return?.();
    chunks.forEach((chunk, i) => {
      const at = arrived.get(chunk);
      expect(at).toBeDefined();
      expect(Math.abs((at ?? 0) - (pushedMs[i] ?? 0))).toBeLessThan(40);
      expect(readMs - (at ?? 0)).toBeGreaterThan(250);
    });
  });
  it('follows a microphone whose crystal runs slower or faster than the system clock, and a late stretch does not move it', () => {
    // An hour of 80 ms chunks from a microphone `ppm` off the system clock, each stamped 60 ms
    // after its capture plus 0–20 ms of jitter, 20 s of them 50 ms later still (a loaded machine).
    for (const ppm of [-300, -100, 0, 100, 300]) {
      let now = 0;
      const clock = liveClock(() => now);
      const jitter = (i: number) => ((((Math.sin(i * 12.9898) * 43758.5453) % 1) + 1) % 1) * 320; // 0–20 ms, the same every run
      let worst = 0;
      for (let i = 0; i < 45_000; i++) {
        const position = i * 1280;
        const captured = position / (1 + ppm * 1e-6); // its first sample, in system clock samples
        now = captured + 1280 / (1 + ppm * 1e-6) + 960 + jitter(i) + (i >= 10_000 && i < 10_250 ? 800 : 0);
        const at = clock({ rate: RATE, width: 2, channels: 1, samples: new Int16Array(1280), atS: position / RATE });
        // A constant offset is the room's delay to the canceller; what must stay small is how far it moves.
        if (i >= 100) worst = Math.max(worst, Math.abs(at - captured - 960));
      }
      // 40 ms: the jitter, the anchor's 10 ms step and 30 s of drift; with the anchor held, a slow microphone was 0.36 s (100 ppm) off after the hour.
      expect(worst, `${ppm} ppm`).toBeLessThanOrEqual(640);
    }
  });

  it('loses nothing when the source is faster than real time: past 30 s ahead it is read only as the reader takes chunks', async () => {
    const microphone = new PushedAudio(60); // it keeps 60 s unread itself
    for (let i = 0; i < 500; i++) microphone.push(Int16Array.from({ length: 1280 }, () => i)); // 40 s, at once
    microphone.end();
    const seen: number[] = [];
    for await (const chunk of stampArrivals(microphone, new WeakMap()).frames(new AbortController().signal)) {
      seen.push(chunk.samples[0] ?? -1);
      await new Promise((r) => setImmediate(r)); // a reader slower than the source
    }
    expect(seen).toEqual(Array.from({ length: 500 }, (_, i) => i));
  });
});

describe('iris doctor\'s echo probe', () => {
  // Real time: the live clock's stamps jitter with the machine's load (36 ms off once in a fresh-clone run), so it is tried up to three times.
  it('plays speech through the daemon\'s speaker path and measures the room\'s delay to the microphone', { retry: 2, timeout: 60_000 }, async () => {
    const room = new LiveRoom(120, 0.8);
    try {
      const wav = encodeWav(speechSamples('Testing the echo canceller: one, two, three, four, five, six.', { padS: [0.1, 0.1] }));
      const stats = await probeEcho(parseConfig('', 'test'), createLogger('iris', { write: () => undefined }), { source: room.microphone, sink: room.sink, wav });
      expect(stats.canceller).toBe('speexdsp');
      expect(stats.delayMs).toBeDefined();
      expect(Math.abs((stats.delayMs ?? 0) - 120)).toBeLessThanOrEqual(30); // the live clock's stamps: a chunk read late moves it a little
    } finally {
      room.close();
    }
  });
});

describe('a wake word heard over IRIS', () => {
  /** What the recogniser got after "hey jarvis, what time is it" (it hears the words at confidence 0.7): the audio it was primed with, the audio it decoded, and the run's outcome. */
  async function heard(overSpeech: boolean, overSpeechMinConfidence?: number, echoYoung = false): Promise<{ primeS: number; decodedS: number; outcome: string }> {
    const [wake, vad] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis' }), createSileroVad()]);
    let prime = -1;
    let decoded = 0;
    const stt: SpeechToText = {
      name: 'recording',
      transcribe: () => Promise.resolve({ text: '', confidence: 0 }),
      stream: (audio) => {
        prime = audio?.length ?? 0;
        return Promise.resolve({ push: (samples) => void (decoded += samples.length), partial: () => '', end: () => Promise.resolve({ text: 'hey jarvis what time is it', confidence: 0.7 }), cancel: () => undefined });
      },
    };
    const loop = new VoiceLoop({
      wake, vad, stt, tts: createEspeak({ voice: 'en-us', rateWpm: 175 }), sink: new CollectingSink(), end: 'stt', minConfidence: 0.6,
      respond: () => { throw new Error('not reached'); },
      overSpeech: () => overSpeech,
      echoYoung: () => echoYoung,
      ...(overSpeechMinConfidence === undefined ? {} : { overSpeechMinConfidence }),
    });
    const [run] = await loop.run(samplesSource(commandSamples('hey jarvis, what time is it')), new AbortController().signal, true);
    return { primeS: prime / RATE, decodedS: decoded / RATE, outcome: run?.outcome ?? 'none' };
  }

  // Measured on scripts/bench-room.ts (dev, 72 echo rooms): decoding the wake phrase spoken over
  // IRIS (primed with 160 ms only) got the words exactly right in 17 rooms, without it 45 (docs/room.md).
  it('neither primes nor feeds the recogniser with the wake phrase spoken over IRIS\'s voice, only the last 160 ms', async () => {
    const quiet = await heard(false);
    expect(quiet.primeS).toBeGreaterThan(0.5); // the wake phrase, to adapt to the voice
    const over = await heard(true);
    expect(over.primeS).toBeLessThanOrEqual(0.16);
    expect(over.decodedS).toBeLessThan(quiet.decodedS - 0.5);
  }, 60_000);

  it('acts on a command heard over IRIS only at overSpeechMinConfidence: uncertain input asks again', async () => {
    expect((await heard(false, 0.8)).outcome).toBe('answered'); // 0.7 ≥ min_confidence 0.6: a quiet room acts
    expect((await heard(true, 0.8)).outcome).toBe('not_understood'); // over IRIS 0.7 is not sure enough
    expect((await heard(true, 0.65)).outcome).toBe('answered');
  }, 60_000);

  // IRIS's first reply after a start, the canceller primed from a remembered room (session 21's main
  // bench): "set a timer for ten minutes" said over it was heard as "two second timer" at 0.70 and acted on.
  it('acts at once on nothing heard over IRIS while the canceller is young: uncertain input asks again', async () => {
    expect((await heard(true, 0.65, true)).outcome).toBe('not_understood'); // at 0.7, over the 0.65 gate: not acted on
    expect((await heard(true, 0.65, false)).outcome).toBe('answered');
    expect((await heard(false, 0.65, true)).outcome).toBe('answered'); // a quiet room's command: the canceller's age does not matter
  }, 60_000);

  it('the daemon counts a wake word as over IRIS while its speaker plays and for the pre-roll after', async () => {
    let now = 0;
    const speaker = new Speaker(new CollectingSink(), new EchoReference(), () => now);
    const over = overSpeechOf(speaker, () => now);
    expect(over()).toBe(false); // nothing played yet
    await speaker.play(encodeWav(new Int16Array(RATE).fill(1000)), new AbortController().signal); // 1 s of IRIS at clock 0
    now = 2 * RATE;
    expect(over()).toBe(true); // ended 1 s ago: its echo is in the 2.5 s pre-roll
    now = 4 * RATE;
    expect(over()).toBe(false);
  });
});

describe('IRIS\'s own wake word', () => {
  /**
   * The voice loop (to the wake word only) over a microphone where what IRIS played (`played`)
   * arrives 100 ms late at `gain`, the person's `person` mixed in at `personAtS`; with the veto,
   * IRIS's own audio reaches the second detector 0.2 s ahead of its echo, as room-ear.ts feeds it.
   * Where the loop woke, and where it ignored IRIS's own wake word (seconds).
   */
  async function wakes(played: Int16Array, gain: number, person: Int16Array, personAtS: number, veto: boolean): Promise<{ woke: number[]; ignored: number[] }> {
    const lateS = 0.1;
    const leadS = 0.2;
    const mic = mix(echoOf(played, lateS * 1000, gain, false), person, personAtS);
    const [wake, own, vad] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis' }), createOpenWakeWord({ model: 'hey_jarvis', threshold: OWN_VOICE_THRESHOLD }), createSileroVad()]);
    const woke: number[] = [];
    const ignored: number[] = [];
    const loop = new VoiceLoop({
      wake, vad, stt: { name: 'none', transcribe: () => Promise.reject(new Error('not reached')) }, tts: createEspeak({ voice: 'en-us', rateWpm: 175 }), sink: new CollectingSink(), end: 'wake',
      respond: () => { throw new Error('not reached'); },
      ...(veto ? {
        ownVoice: {
          veto: new OwnVoiceVeto(own),
          audio: (chunk: AudioChunk) => {
            const from = Math.round((chunk.atS - lateS + leadS) * RATE);
            return from < played.length ? played.slice(Math.max(0, from), from + chunk.samples.length) : undefined; // nothing plays after its end
          },
        },
      } : {}),
      onRun: (run) => { if (run.wake) woke.push(run.wake.atS); },
      onEvent: (event) => { if (event.type === 'own-wake') ignored.push(Number(event.data?.atS)); },
    });
    await loop.run(samplesSource(mic), new AbortController().signal);
    return { woke, ignored };
  }

  // IRIS's announcement says "hey jarvis" (a flite voice here: the detector hears it every time),
  // louder at the microphone than the person, with no canceller to soften it; 3 s later, while
  // IRIS talks on more softly, the person says it.
  const announcement = (): Int16Array => {
    const says = commandSamples('hey jarvis, the timer is done', { padS: [0.5, 0] });
    const more = speechSamples('The ten minutes are up. Say stop and I will stop. Or ask me something else.', { padS: [0.2, 0.5] });
    const out = new Int16Array(says.length + more.length);
    out.set(says);
    out.set(scaled(more, 0.1), says.length);
    return out;
  };
  const scaled = (samples: Int16Array, gain: number): Int16Array => Int16Array.from(samples, (v) => Math.round(v * gain));

  // Live, the own detector crossed its threshold up to two chunks after the microphone's (IRIS's
  // clean voice and its echo score differently): a detection waits while IRIS plays.
  it('holds a microphone detection while IRIS plays until the own detector has heard past it', async () => {
    const ownAt = new Set([1.2]); // the own detector hears the word in the chunk ending at 1.2 s
    const own: WakeWordDetector = {
      word: 'hey_jarvis', reset: () => undefined, prime: () => Promise.resolve(),
      process: (chunk) => Promise.resolve(ownAt.has(Math.round((chunk.atS + 0.08) * 100) / 100) ? { word: 'hey_jarvis', score: 0.9, atS: chunk.atS + 0.08 } : undefined),
    };
    const veto = new OwnVoiceVeto(own);
    const chunk = (atS: number): AudioChunk => ({ rate: RATE, width: 2, channels: 1, samples: new Int16Array(1280), atS });
    const mic = { word: 'hey_jarvis', score: 0.8, atS: 1.04 };
    const judged: unknown[] = [];
    for (const atS of [0.96, 1.04, 1.12, 1.2]) {
      await veto.hear(chunk(atS - 0.08), new Int16Array(1280));
      judged.push(veto.judge(atS === 1.04 ? mic : undefined, atS));
    }
    expect(judged).toEqual([{}, {}, {}, { own: mic }]); // held from 1.04, IRIS's at 1.2
    // Nothing playing: no hold, the person's at once.
    await veto.hear(chunk(2), undefined);
    expect(veto.judge({ ...mic, atS: 5 }, 5)).toEqual({ heard: { ...mic, atS: 5 } });
    // Playing, and the own detector hears nothing: the person's, two chunks later.
    const later: unknown[] = [];
    for (const atS of [8.08, 8.16, 8.24]) {
      await veto.hear(chunk(atS - 0.08), new Int16Array(1280));
      later.push(veto.judge(atS === 8.08 ? { ...mic, atS } : undefined, atS));
    }
    expect(later).toEqual([{}, {}, { heard: expect.objectContaining({ ...mic, atS: 8.08 }) as unknown }]);
  });

  it('IRIS saying "hey jarvis" does not wake it; the person saying it over IRIS still does', async () => {
    const played = announcement();
    const person = commandSamples('hey jarvis, what time is it', { padS: [0, 0.3] });
    const personAtS = 4.5;
    const off = await wakes(played, 1.5, person, personAtS, false);
    expect(off.woke.some((s) => s < 3)).toBe(true); // without the veto, IRIS's own words wake it
    const on = await wakes(played, 1.5, person, personAtS, true);
    expect(on.ignored.length).toBeGreaterThanOrEqual(1);
    expect(on.ignored.every((s) => s < 3)).toBe(true);
    expect(on.woke.filter((s) => s < 3)).toEqual([]);
    expect(on.woke.some((s) => s > personAtS && s < personAtS + person.length / RATE + 0.5)).toBe(true);
  }, 60_000);
});
