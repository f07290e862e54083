/** bench-room's early answers in the echo rooms (IRIS_BENCH_EARLY=1): one mode of scripts/bench-room.ts. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TurnResult } from '../../../src/conversation/engine.js';
import { prefixState } from '../../../src/intents/prefix.js';
import type { AudioChunk, AudioSink, AudioSource } from '../../../src/pipeline/audio.js';
import { EchoReference, YOUNG_CANCELLER_S } from '../../../src/pipeline/echo.js';
import { frontEnd, ownAudio } from '../../../src/pipeline/frontend.js';
import { StopWord } from '../../../src/pipeline/stopword.js';
import { createSileroVad } from '../../../src/pipeline/vad.js';
import { VoiceLoop, type VoiceRun } from '../../../src/pipeline/voice.js';
import { TAKE_BACK_NEAR_DB } from '../../../src/pipeline/early.js';
import { referenceSamples } from '../../../src/pipeline/resample.js';
import { decodeWav, encodeWav } from '../../../src/pipeline/wav.js';
import { createOpenWakeWord } from '../../../src/pipeline/wakeword.js';
import { random, round, writeResults } from '../bench.js';
import { earlyClips, earlyFigures, earlyLine, earlyParts, earlyRowOf, pacedSource, resumeS, timedSink, type EarlyRow, type PacedClock } from '../early-bench.js';
import { makeClip } from '../speech-set.js';
import { RATE, CACHE, PEOPLE, type Condition, CONDITIONS, type Room, echoOf, drawsOf, talkedBefore, room } from './room.js';
import type { RoomBenchOptions } from './options.js';
import { learnedBefore } from './front-end.js';

/**
 * Last word → first reply audio in these rooms, early answers on (IRIS_BENCH_EARLY=1; issue 24's
 * target: p95 ≤ 600 ms held-out, p50 ≤ 400 ms, 0 cut-offs). bench-voice's `--early` clips
 * (lib/early-bench.ts: whole commands, and "what time is it … in CITY" with a pause of 0.3, 0.5
 * or 0.8 s inside), said by this bench's people over IRIS in each room, heard in real time through
 * the daemon's front end (canceller, stop word) and the real voice loop with early answers, as the
 * daemon runs it. The room is closed: what the loop plays (an early answer, the answer) reaches the
 * microphone through the same room (delay, reverb, level; 0 dB where IRIS was silent), and the
 * reference holds it from where it started playing; the daemon's barge-in cuts IRIS's reply at the
 * wake word (+ IRIS_BENCH_CUT_S), and "stop" heard hushes the answer. Every room has IRIS's earlier
 * reply (the canceller has learned the room, as a running daemon's has); "quiet, IRIS done" is IRIS
 * silent from the person's command on, "clean" no room at all (bench-voice's microphone). The
 * earlier reply is handed to the loop at once, the rest in real time. Rows are judged at the
 * daemon's gate (over IRIS: `over_speech_confidence`, when IRIS sounded within the 2.5 s before the
 * wake word, as `overSpeechOf`). Per room and part: waits over the right answers (wall clock, and the
 * decision's place in the audio plus the processing after it: the wait when the loop keeps up),
 * cut-offs, answers taken back (in whole commands nothing followed: the echo or the noise did it),
 * "stop" heard (self-stops). IRIS_BENCH_PARTS (default dev), IRIS_BENCH_ONLY rooms, `--quick`: two
 * voices, the continued commands with the 0.5 s pause only. Writes scripts/results/room-early.json (or IRIS_BENCH_NAME).
 */
export async function earlyRooms(options: RoomBenchOptions): Promise<void> {
  const { quick, only, bargeCutS, makeCanceller, envParts } = options;
  const parts = envParts;
  /** Only these clips (their words, " … " for the pause), e.g. IRIS_BENCH_EARLY_CLIPS="what time is it". */
  const onlyClips = process.env.IRIS_BENCH_EARLY_CLIPS?.split(',');
  /** IRIS_BENCH_DUMP=DIR: each room's microphone (as heard, the answer's echo in it) and the front end's output, with the run's events, to look at. */
  const dump = process.env.IRIS_BENCH_DUMP;
  type EarlyRoom = Condition & { irisDone?: boolean; clean?: boolean };
  const rooms: EarlyRoom[] = ([
    { name: 'clean', reverb: 0, says: 'command', clean: true },
    { name: 'quiet, IRIS done', esrDb: 0, reverb: 50, says: 'command', irisDone: true },
    ...CONDITIONS.filter((c) => c.says === 'command' && c.esrDb !== undefined),
    { name: 'babble 15 dB, IRIS done', esrDb: 0, babbleDb: 15, reverb: 50, says: 'command', irisDone: true },
  ] satisfies EarlyRoom[]).filter((c) => only === undefined || only.includes(c.name));
  const takeBackDb = process.env.IRIS_BENCH_TAKE_BACK_DB === 'off' ? undefined : Number(process.env.IRIS_BENCH_TAKE_BACK_DB ?? TAKE_BACK_NEAR_DB);
  const [wakeEarly, vadEarly] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis', check: options.wakeCheck }), createSileroVad()]);
  const shared = await earlyParts(join(CACHE, `state-early-${process.pid}`));
  const { config: earlyConfig } = shared;
  const gateOf = (over: boolean) => (over ? Math.max(earlyConfig.stt.min_confidence, earlyConfig.stt.over_speech_confidence) : earlyConfig.stt.min_confidence);
  const rows: (EarlyRow & { over: boolean; selfStops: number; echoChunks: number; echoAt: number[][]; echoMaxDb?: number; takeBackDb?: number; delayMs?: number; erleDb?: number; lateEchoSamples: number; roomDelayMs: number })[] = [];
  /** A WAV as 16 kHz mono (sox's resampler: what the speaker sounds; the reference is the Speaker's own, band-limited as sox's within 0.1 dB of what the canceller takes). */
  const wav16 = (wav: Buffer): Int16Array => {
    const dir = join(CACHE, `sox-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'answer.wav'), wav);
    execFileSync('sox', ['-D', join(dir, 'answer.wav'), '-r', '16000', '-c', '1', '-b', '16', join(dir, 'answer16.wav')]);
    return decodeWav(readFileSync(join(dir, 'answer16.wav')));
  };
  /** Adds `echo` to `mic` from clock sample `at` (sign −1 takes it away), only where the loop has not heard yet. */
  const mixInto = (mic: Int16Array, echo: Float64Array, at: number, from: number, sign = 1): number => {
    let late = 0;
    for (let i = 0; i < echo.length && at + i < mic.length; i++) {
      if (at + i < from) { if ((echo[i] ?? 0) !== 0) late++; continue; }
      mic[at + i] = Math.max(-32768, Math.min(32767, Math.round((mic[at + i] ?? 0) + sign * (echo[i] ?? 0))));
    }
    return late;
  };
  for (const part of parts) {
    const rand = random(part === 'dev' ? 424 : 2424);
    const voices = quick ? PEOPLE[part].slice(0, 2) : PEOPLE[part];
    const clips = (quick ? earlyClips(part).filter((c) => c.pauseS === undefined || c.pauseS === 0.5) : earlyClips(part)).filter((c) => onlyClips === undefined || onlyClips.includes(c.spoken));
    for (const condition of rooms) {
      for (const voice of voices) {
        for (const { spoken, layout, pauseS } of clips) {
          const clip = makeClip({ wake: 'hey jarvis', command: spoken, voice, layout, noise: 'clean', ...(pauseS === undefined ? {} : { pauseS }) }, CACHE);
          const whole = decodeWav(readFileSync(clip.wav));
          const trim = condition.clean ? 0 : Math.round(0.4 * RATE); // the synthesiser's lead silence, as in the other rooms
          const person = whole.subarray(trim);
          const draws = drawsOf(rand);
          // IRIS_BENCH_STEADY: IRIS talked in this room before (handed to the loop at once, with the earlier reply).
          const said = talkedBefore(condition, options.steadyReplies, draws.pick);
          const built = condition.clean ? undefined : room(said, part, person, draws);
          const r: Room = built && condition.irisDone ? room(said, part, person, draws, built.currentS) : (built ?? { mic: whole, played: new Int16Array(whole.length), personS: [0, whole.length / RATE], delayMs: 0 });
          const personAtS = r.personS?.[0] ?? 0;
          const lastWordEndS = personAtS + clip.lastWordEndS - trim / RATE;
          const resume = pauseS === undefined ? undefined : personAtS + resumeS(whole, clip.commandStartS, clip.lastWordEndS) - trim / RATE;
          // Room for the answer's echo after the person: 6 s more.
          const mic = new Int16Array(r.mic.length + 6 * RATE);
          mic.set(r.mic);
          const reference = new EchoReference(mic.length / RATE + 10);
          // What sounded, as the Speaker writes it: its clips, not the silence after the last (the canceller and the stop word run only while something sounds).
          let soundEnd = r.played.length;
          while (soundEnd > 0 && r.played[soundEnd - 1] === 0) soundEnd--;
          if (soundEnd > 0) reference.write(r.played.subarray(0, soundEnd), 0);
          const clock: PacedClock = { t0: 0, yieldedTo: 0 };
          const nowAt = () => Math.max(clock.yieldedTo, Math.round(((performance.now() - clock.t0) * RATE) / 1000));
          let lateSamples = 0;
          const timed = timedSink();
          // The speaker in this room: what it plays is the reference from the sample it starts, and reaches the microphone as the room's echo.
          const sink: AudioSink = {
            play: async (wav, signal) => {
              const at = nowAt();
              const ref = referenceSamples(wav) ?? new Int16Array(0);
              const sound = condition.clean ? undefined : wav16(wav);
              if (sound) {
                reference.write(ref, at);
                lateSamples += mixInto(mic, echoOf(r, sound), at, clock.yieldedTo);
              }
              try {
                await timed.play(wav, signal);
              } finally {
                if (sound && signal?.aborted) {
                  // Stopped: nothing after this sounded, and its echo does not come.
                  const stopAt = nowAt();
                  reference.truncate(stopAt);
                  const rest = Int16Array.from(sound);
                  rest.fill(0, 0, Math.max(0, stopAt - at));
                  mixInto(mic, echoOf(r, rest), at, clock.yieldedTo, -1);
                }
              }
            },
          };
          // IRIS_BENCH_PRIMED: the daemon started again in this room, what it learned there before remembered.
          const remembered = options.primed && !condition.clean ? await learnedBefore(options, said, part, person, draws) : undefined;
          const canceller = condition.clean ? undefined : await makeCanceller(reference, remembered ? { remembered } : {});
          const stopWord = condition.clean ? undefined : await StopWord.create();
          const conversation = shared.conversation();
          let over = false;
          let selfStops = 0;
          let cut = false;
          const loop: VoiceLoop<TurnResult> = new VoiceLoop<TurnResult>({
            wake: wakeEarly, vad: vadEarly, stt: shared.stt, tts: shared.tts, sink, followUpS: 0,
            minConfidence: earlyConfig.stt.min_confidence, overSpeechMinConfidence: earlyConfig.stt.over_speech_confidence,
            endpoint: { silenceS: earlyConfig.audio.silence_s, maxS: earlyConfig.audio.max_command_s, noSpeechS: earlyConfig.audio.no_speech_s },
            commandState: prefixState, completePauseS: earlyConfig.audio.complete_pause_s, incompletePauseS: earlyConfig.audio.incomplete_pause_s,
            // As the daemon's `overSpeechOf`: IRIS sounded within the pre-roll before the wake word.
            overSpeech: () => (over = reference.sounding(nowAt() - Math.round(2.5 * RATE), nowAt())),
            echoYoung: () => (canceller?.stats.ageS ?? Infinity) < YOUNG_CANCELLER_S,
            // As the daemon's (room-ear.ts `RoomStats.clipping`): nothing forgiven over a clipping speaker's echo.
            echoDistorted: () => canceller?.stats.clipLevel !== undefined,
            respond: (text, signal, heard) => conversation.turn(text, signal, heard),
            earlyAnswer: (text: string) => conversation.answersEarly(text), takeBackS: earlyConfig.audio.take_back_s,
            // As the daemon: the answer's own echo does not take it back (IRIS_BENCH_TAKE_BACK_DB: the level over its residual, 'off': any speech).
            ...(takeBackDb === undefined ? {} : { echoResidual: { audio: (chunk: AudioChunk) => ownOf.get(chunk), minNearDb: takeBackDb } }),
            onEvent: (event) => {
              if (event.type !== 'wake-end' || cut || condition.clean) return;
              // The daemon's barge-in: IRIS's reply stops (IRIS_BENCH_CUT_S after the wake word), its echo with it.
              cut = true;
              const cutAt = Math.max(nowAt(), Math.round((Number(event.data?.atS ?? 0) + bargeCutS) * RATE));
              if (!reference.sounding(cutAt, soundEnd)) return;
              reference.truncate(cutAt);
              const rest = Int16Array.from(r.played);
              rest.fill(0, 0, cutAt);
              lateSamples += mixInto(mic, echoOf(r, rest), 0, clock.yieldedTo, -1);
            },
          });
          const ownOf = new WeakMap<AudioChunk, Int16Array>();
          const source = frontEnd(pacedSource(mic, clock, Math.max(0, personAtS - 1)), {
            ...(canceller ? { canceller } : {}), ...(stopWord ? { stopWord } : {}), ownOf,
            clockOf: (chunk) => Math.round(chunk.atS * RATE),
            // As the daemon's front end (room-ear.ts): IRIS's own audio 0.2 s ahead of its echo, a clip's first chunk from its echo's own time.
            own: ownAudio((from, length) => reference.read(from, length), () => Math.round(((canceller?.stats.delayMs ?? 0) * RATE) / 1000), RATE / 5),
            armed: (at, length) => reference.sounding(at - RATE / 4, at + length),
            onStop: (atS) => { if (loop.hush(atS)) selfStops++; },
          });
          wakeEarly.reset();
          const heardOut: Int16Array[] = [];
          const kept: AudioSource = { async *frames(signal) { for await (const chunk of source.frames(signal)) { if (dump) heardOut.push(chunk.samples); yield chunk; } } };
          const [run] = await loop.run(kept, new AbortController().signal, true) as [VoiceRun<TurnResult> | undefined];
          if (dump) {
            const name = join(dump, `${rows.length}`);
            mkdirSync(dump, { recursive: true });
            writeFileSync(`${name}-mic.wav`, encodeWav(mic.subarray(0, clock.yieldedTo)));
            writeFileSync(`${name}-front.wav`, encodeWav(Int16Array.from(heardOut.flatMap((c) => [...c]))));
            writeFileSync(`${name}.json`, JSON.stringify({ room: condition.name, spoken, lastWordEndS, resume, personS: r.personS, delayMs: r.delayMs, events: run?.events.map((e) => ({ type: e.type, atMs: round(e.atMs - clock.t0, 0), ...e.data })) }));
          }
          const stats = canceller?.stats;
          canceller?.destroy();
          stopWord?.free();
          const row = earlyRowOf(run, { part, room: condition.name, voice: `${voice.synth}:${voice.name}`, spoken, ...(pauseS === undefined ? {} : { pauseS }), expected: await shared.expectedOf(spoken), lastWordEndS, ...(resume === undefined ? {} : { resumeAtS: resume }), clock, stops: timed.stops });
          // The gate the daemon acts at for this command (the loop ran with it).
          // The answer's echo not taken for the person (its chunks' level over the residual), and what took it back.
          const echoDb = run?.events.filter((e) => e.type === 'answer-echo').map((e) => Number(e.data?.nearDb)) ?? [];
          const backDb = run?.events.find((e) => e.type === 'answer-taken-back')?.data?.nearDb;
          const echoAt = run?.events.filter((e) => e.type === 'answer-echo').map((e) => [round(Number(e.data?.atS) - (resume ?? lastWordEndS), 2), Number(e.data?.nearDb)]) ?? [];
          rows.push({ ...row, over, selfStops, echoChunks: echoDb.length, echoAt, ...(echoDb.length > 0 ? { echoMaxDb: Math.max(...echoDb) } : {}), ...(typeof backDb === 'number' ? { takeBackDb: backDb } : {}), lateEchoSamples: lateSamples, roomDelayMs: r.delayMs, ...(stats?.delayMs === undefined ? {} : { delayMs: round(stats.delayMs, 1) }), ...(stats?.erleDb === undefined ? {} : { erleDb: round(stats.erleDb, 1) }) });
          process.stderr.write(`${earlyLine(row, run?.outcome)}${over ? ' [over IRIS]' : ''}${echoDb.length ? ` echo ignored ×${echoDb.length} (max ${Math.max(...echoDb)} dB)` : ''}${typeof backDb === 'number' ? ` back at ${backDb} dB` : ''}${selfStops ? ` ${selfStops} stop` : ''}${lateSamples ? ` (${lateSamples} echo samples late)` : ''}\n`);
        }
      }
    }
  }
  await shared.stt.stop?.();
  const table = parts.flatMap((part) => rooms.flatMap((condition) => {
    const set = rows.filter((r) => r.part === part && r.room === condition.name);
    if (set.length === 0) return [];
    const f = earlyFigures(set, (row) => gateOf((row as (typeof rows)[number]).over));
    return [{ part, room: condition.name, n: set.length, right: f.right, wrong: f.wrong, wait_p50: f.last_word_to_first_audio_ms.p50, wait_p95: f.last_word_to_first_audio_ms.p95, decided_p50: f.decision_plus_processing_ms.p50, decided_p95: f.decision_plus_processing_ms.p95, cut_offs: f.cut_offs, early: f.answered_early, taken_back: f.taken_back, taken_back_whole: f.taken_back_whole, continued_back: set.filter((r) => r.pauseS !== undefined && r.takenBack > 0).length, continued: f.continued, self_stops: set.reduce((n, r) => n + r.selfStops, 0), figures: f }];
  }));
  console.table(table.map(({ figures: _f, ...row }) => row));
  writeResults(process.env.IRIS_BENCH_NAME ?? 'room-early', { parts, quick, barge_in_cut_s: bargeCutS, take_back_db: takeBackDb ?? 'off', table, rows });
}
