/** bench-room's false wakes over continuous speech (IRIS_BENCH_FALSE_WAKE_MIN): one mode of scripts/bench-room.ts. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SPEECH_FORMAT } from '../../../src/pipeline/audio.js';
import { EchoReference } from '../../../src/pipeline/echo.js';
import { StopWord, type StopCandidate } from '../../../src/pipeline/stopword.js';
import { decodeWav, encodeWav } from '../../../src/pipeline/wav.js';
import { ownAudio as ownAudioOf } from '../../../src/pipeline/frontend.js';
import { createOpenWakeWord, OWN_VOICE_THRESHOLD, OwnVoiceVeto, type Detection } from '../../../src/pipeline/wakeword.js';
import { random, round, writeResults } from '../bench.js';
import { synthesize, type Voice } from '../speech-set.js';
import { RATE, CACHE, PEOPLE, sox, espeak, addInto, toInt16, pink, licenceParagraphs, toMicLevel, benchConfig } from './room.js';
import type { RoomBenchOptions } from './options.js';

/**
 * False wakes over continuous speech (IRIS_BENCH_FALSE_WAKE_MIN, minutes; default off): a person
 * reading for that long (pocketsphinx-testdata's LibriVox recordings at three tempos and three
 * pitches, then flite and festival voices reading the licences in /usr/share/common-licenses,
 * back to back), through the front end (IRIS silent: the canceller passes it through, the
 * stop word is not armed) and the wake word. And IRIS's own voice (IRIS_BENCH_OWN_VOICE_MIN,
 * default the same): espeak-ng reading those texts from its speaker, loud at the microphone through a room,
 * one canceller kept throughout as the daemon keeps it, the wake word judged by the own-voice veto
 * as the daemon judges it (IRIS's own audio 0.2 s ahead of its echo; IRIS_BENCH_OWN_VETO=0: none): self-wakes and self-stops per hour,
 * and the raw microphone's wakes as the baseline. Writes scripts/results/room-false-wakes.json.
 */
export async function falseWakes(options: RoomBenchOptions, falseWakeMin: number): Promise<void> {
  const { makeCanceller, stopOptions, kwsDelay } = options;
  /** The stop word's `-kws_threshold` to try instead of its default, e.g. IRIS_BENCH_KWS_THRESHOLD=1e-10. */
  const stopThreshold = process.env.IRIS_BENCH_KWS_THRESHOLD === undefined ? undefined : Number(process.env.IRIS_BENCH_KWS_THRESHOLD);
  const config = benchConfig();
  const wake = await createOpenWakeWord({ model: 'hey_jarvis', check: options.wakeCheck });
  const ownMin = Number(process.env.IRIS_BENCH_OWN_VOICE_MIN ?? falseWakeMin);
  /** IRIS_BENCH_OWN_VOICE_FROM=k: IRIS reads from the k-th paragraph on, with its own delays (another hour: 0 is the one measured since session 14). */
  const ownFrom = Number(process.env.IRIS_BENCH_OWN_VOICE_FROM ?? 0);
  const paragraphs = licenceParagraphs();
  const speak = (text: string, voice: Voice): Int16Array => {
    const file = join(CACHE, `read-${voice.synth}-${voice.name}-${text.replace(/[^a-z]+/gi, '_').slice(0, 60)}-${text.length}.wav`);
    try { return decodeWav(readFileSync(file)); } catch { synthesize(text, voice, file); return decodeWav(readFileSync(file)); }
  };
  const readers: Voice[] = [...PEOPLE.dev, ...PEOPLE.heldout].filter((v) => v.synth === 'flite').concat([{ synth: 'festival', name: 'kal_diphone' }]);
  /** Up to `minutes` of `make(i)` back to back, handed on in 80 ms chunks; how much was heard. */
  async function stream(minutes: number, make: (i: number) => Int16Array | undefined, hear: (chunk: Int16Array, atS: number) => Promise<void>): Promise<number> {
    let atS = 0;
    for (let i = 0; atS < minutes * 60; i++) {
      const part = make(i);
      if (!part) break;
      for (let at = 0; at + 1280 <= part.length && atS < minutes * 60; at += 1280, atS += 0.08) await hear(part.subarray(at, at + 1280), atS);
    }
    return atS;
  }
  const librivox = ['0870', '0880', '0890', '0920', '0930'].map((n) => `/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-${n}.wav`);
  const variants = [0.9, 1, 1.1].flatMap((tempo) => [-200, 0, 200].map((cents) => ['tempo', String(tempo), 'pitch', String(cents)]));
  const person = (i: number): Int16Array | undefined => {
    const k = i - librivox.length * variants.length;
    if (k < 0) return sox(decodeWav(readFileSync(librivox[i % librivox.length] ?? '')), variants[Math.floor(i / librivox.length)] ?? []);
    const text = paragraphs[k % paragraphs.length];
    return text === undefined ? undefined : speak(text, readers[k % readers.length] ?? { synth: 'flite', name: 'rms' });
  };
  // A person reading, IRIS silent.
  wake.reset();
  let personWakes = 0;
  const personWakeAt: number[] = [];
  const personS = await stream(falseWakeMin, person, async (chunk, atS) => {
    const detection = await wake.process({ ...SPEECH_FORMAT, samples: chunk, atS });
    if (detection) { personWakes++; personWakeAt.push(round(atS, 1)); wake.reset(); }
  });
  process.stderr.write(`person reading: ${round(personS / 60, 1)} min, ${personWakes} wakes\n`);
  // IRIS reading from its speaker, one canceller throughout.
  const reference = new EchoReference(90);
  const canceller = await makeCanceller(reference);
  // Every candidate kept with its measures; a passed one (a self-stop) with where IRIS was in its reading.
  const candidates: StopCandidate[] = [];
  const stopWord = await StopWord.create({ ...stopOptions, ...(stopThreshold === undefined ? {} : { threshold: stopThreshold }), ...(kwsDelay === undefined ? {} : { kwsDelay }), onCandidate: (c) => candidates.push(c) });
  const rand = random(77 + ownFrom);
  let clock = 0;
  /** Where each paragraph starts on the stream (samples) and its text, to say what IRIS was reading at a self-stop. */
  const readings: { at: number; text: string; voice: string }[] = [];
  const own = { wakes: 0, baselineWakes: 0, stops: 0, wakeAt: [] as number[], stopAt: [] as number[], vetoed: [] as { atS: number; score: number; fit?: number; nearDb?: number }[] };
  const veto = options.ownVeto ? new OwnVoiceVeto(await createOpenWakeWord({ model: 'hey_jarvis', threshold: OWN_VOICE_THRESHOLD, check: false }), options.veto) : undefined;
  const ownForVeto = ownAudioOf((from, length) => reference.read(from, length), () => Math.round(((canceller.stats.delayMs ?? 0) * RATE) / 1000), RATE / 5);
  /** The stream kept (microphone, canceller output, IRIS's own audio as the stop word got it), to dump the audio around a self-stop. */
  const kept = { mic: [] as Int16Array[], out: [] as Int16Array[], own: [] as Int16Array[] };
  const rawWake = await createOpenWakeWord({ model: 'hey_jarvis', check: options.wakeCheck }); // the baseline: the raw microphone
  const ownS = await stream(ownMin, (i) => {
    const text = paragraphs[(i * 7 + ownFrom) % paragraphs.length];
    if (text === undefined) return undefined;
    const played = new Int16Array(espeak(text, i % 2 === 0 ? 'en-us' : 'en-gb').length + RATE); // a second's pause after each
    played.set(espeak(text, i % 2 === 0 ? 'en-us' : 'en-gb'));
    const delayMs = 60 + Math.round(rand() * 120);
    const echo = sox(played, ['reverb', '50', '50', '60']);
    const mix = new Float64Array(played.length);
    addInto(mix, echo, Math.round((delayMs * RATE) / 1000));
    addInto(mix, pink(played.length), 0, 0.3);
    toMicLevel(mix); // the microphone's gain: loud, not clipped
    reference.write(played, clock);
    readings.push({ at: clock, text, voice: i % 2 === 0 ? 'en-us' : 'en-gb' });
    return toInt16(mix);
  }, async (chunk, atS) => {
    const at = clock;
    clock += chunk.length;
    const out = canceller.process(chunk, at);
    const armed = reference.sounding(at - RATE / 4, at + chunk.length);
    const ownAudio = canceller.played(at, chunk.length, RATE / 5);
    kept.mic.push(chunk); kept.out.push(out); kept.own.push(ownAudio);
    // The wake word first: its score is the stop word's level route's (frontend.ts `wake`; the daemon's is a detector of its own).
    await veto?.hear({ ...SPEECH_FORMAT, samples: out, atS }, armed ? ownForVeto(at, chunk.length) : undefined);
    const detection = await wake.process({ ...SPEECH_FORMAT, samples: out, atS });
    const wakeScore = wake.lastPeak ?? 0;
    const judged: { heard?: Detection; own?: Detection } = veto ? veto.judge(detection, atS + chunk.length / RATE) : detection ? { heard: detection } : {};
    if (judged.own) { own.vetoed.push({ atS: round(judged.own.atS, 2), score: round(judged.own.score, 3), ...(judged.own.fit === undefined ? {} : { fit: round(judged.own.fit, 1) }), ...(judged.own.nearDb === undefined ? {} : { nearDb: judged.own.nearDb }) }); wake.reset(); }
    if (judged.heard) { own.wakes++; own.wakeAt.push(round(atS, 1)); wake.reset(); }
    // The stop word's stream seconds are the chunk's end (as the front end passes them).
    if (armed && stopWord.push(out, ownAudio, atS + chunk.length / RATE, chunk, wakeScore) !== undefined) { own.stops++; own.stopAt.push(round(atS, 1)); }
    if (await rawWake.process({ ...SPEECH_FORMAT, samples: chunk, atS })) { own.baselineWakes++; rawWake.reset(); }
  });
  canceller.destroy();
  stopWord.free();
  // Each self-stop: what IRIS was reading (the paragraph and how far into it), and ±3 s of audio dumped.
  const joined = (list: Int16Array[]) => { const all = new Int16Array(list.reduce((n, c) => n + c.length, 0)); let k = 0; for (const c of list) { all.set(c, k); k += c.length; } return all; };
  const streams = { mic: joined(kept.mic), out: joined(kept.out), own: joined(kept.own) };
  const selfStops = candidates.filter((c) => c.heard).map((c) => {
    const at = Math.round(c.toS * RATE);
    const reading = readings.filter((r) => r.at <= at).at(-1);
    const dump = join(CACHE, `soak-stop-${round(c.atS, 1)}`);
    for (const [name, samples] of Object.entries(streams)) writeFileSync(`${dump}-${name}.wav`, encodeWav(samples.subarray(Math.max(0, at - 3 * RATE), at + 3 * RATE)));
    return { ...c, reading: reading ? { voice: reading.voice, into_s: round((at - reading.at) / RATE, 2), text: reading.text } : undefined, dump };
  });
  const perHour = (n: number, s: number) => round((n * 3600) / Math.max(1, s), 2);
  const figures = {
    wake_threshold: config.assistant.wake_threshold,
    wake_check: options.wakeCheck, own_veto: options.ownVeto, look_near_db: options.veto.lookNearDb,
    stop_kws_threshold: stopThreshold ?? 'default',
    person_reading: { minutes: round(personS / 60, 1), wakes: personWakes, per_hour: perHour(personWakes, personS), at_s: personWakeAt },
    iris_own_voice: { minutes: round(ownS / 60, 1), echo: 'espeak-ng en-us/en-gb, 60-180 ms late, reverb 50 %, microphone peaks at 29,000 of 32,767', self_wakes: own.wakes, self_wakes_per_hour: perHour(own.wakes, ownS), vetoed: own.vetoed, self_stops: own.stops, self_stops_per_hour: perHour(own.stops, ownS), baseline_self_wakes: own.baselineWakes, wake_at_s: own.wakeAt, stop_at_s: own.stopAt, self_stops_examined: selfStops },
    stop_candidates: candidates,
    readings: readings.map((r) => ({ at_s: round(r.at / RATE, 2), voice: r.voice, text: r.text.slice(0, 80) })),
  };
  console.log(figures);
  writeResults(process.env.IRIS_BENCH_NAME ?? 'room-false-wakes', figures);
}
