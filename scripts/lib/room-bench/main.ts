/** bench-room's main bench: every condition's rooms through the front end and the voice loop (the default mode of scripts/bench-room.ts). */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Conversation, type TurnResult } from '../../../src/conversation/engine.js';
import { matchIntent, sameMeaning } from '../../../src/intents/match.js';
import { prefixState } from '../../../src/intents/prefix.js';
import { RIVALS } from '../../../src/intents/sentences.js';
import { silentLogger } from '../../../src/log.js';
import { samplesSource } from '../../../src/pipeline/capture.js';
import { EchoReference, YOUNG_CANCELLER_S } from '../../../src/pipeline/echo.js';
import { createEspeak } from '../../../src/pipeline/espeak.js';
import { CollectingSink } from '../../../src/pipeline/playback.js';
import { createPocketsphinx } from '../../../src/pipeline/pocketsphinx.js';
import { StopWord } from '../../../src/pipeline/stopword.js';
import { createSileroVad } from '../../../src/pipeline/vad.js';
import { VoiceLoop } from '../../../src/pipeline/voice.js';
import { decodeWav, encodeWav } from '../../../src/pipeline/wav.js';
import { createOpenWakeWord, OWN_VOICE_THRESHOLD, OwnVoiceVeto, type Detection } from '../../../src/pipeline/wakeword.js';
import { nativeHost } from '../../../test/helpers/tools.js';
import { random, round, writeResults } from '../bench.js';
import { RATE, CACHE, type Part, PEOPLE, COMMANDS, NEW_HELDOUT, SELF, CONDITIONS, talkedBefore, type Room, drawsOf, room, commandClip, stopClip, answeredClip, benchConfig } from './room.js';
import type { RoomBenchOptions } from './options.js';
import { learnedBefore, recorded, type FrontEndResult } from './front-end.js';

/** A detection as a row keeps it. */
const wakeOf = (d: Detection) => ({ wakeAtS: d.atS, wakeScore: round(d.score, 3), ...(d.fit === undefined ? {} : { wakeFit: round(d.fit, 1) }), ...(d.nearDb === undefined ? {} : { wakeNearDb: d.nearDb }) });
/** Chunks as one stream, and back (`lengths`: each chunk's, -1 for none). */
const join16 = (chunks: (Int16Array | undefined)[]): Int16Array => {
  const out = new Int16Array(chunks.reduce((n, c) => n + (c?.length ?? 0), 0));
  let at = 0;
  for (const c of chunks) if (c) { out.set(c, at); at += c.length; }
  return out;
};
const unjoin = (samples: Int16Array, lengths: number[]): (Int16Array | undefined)[] => {
  let at = 0;
  return lengths.map((n) => { if (n < 0) return undefined; at += n; return samples.subarray(at - n, at); });
};
const key = (name: string, args: Record<string, unknown>) => `${name} ${JSON.stringify(args)}`;
async function expectedCall(command: string): Promise<string> {
  const m = await matchIntent(command);
  if (m?.intent.tool === undefined) throw new Error(`"${command}" matches no intent`);
  return key(m.intent.tool, m.args);
}

interface LoopResult { wake: boolean; wakeAtS?: number; wakeScore?: number; wakeFit?: number; wakeNearDb?: number; ownWakes?: OwnWake[]; made: string; confidence: number; transcript: string; details?: Record<string, unknown>; endS?: number; endState?: string; asked?: boolean; answerHeard?: string }

/** A detection the own-voice veto took for IRIS's (event `own-wake`): where, its score, and a look's fit and level over the residual. */
interface OwnWake { atS: number; score: number; fit?: number; nearDb?: number }

interface Row {
  part: Part; condition: string; person: string; says: string; expected: string; over: boolean; delayMs: number;
  measuredDelayMs?: number; erleDb?: number;
  /** A remembered room's verdict (IRIS_BENCH_PRIMED). */
  primed?: string;
  /** Where the person's clip starts and ends (seconds). */
  personS?: [number, number];
  cancelled: { wake: boolean; wakeAtS?: number; wakeScore?: number; wakeFit?: number; wakeNearDb?: number; ownWakes?: OwnWake[]; endS?: number; endState?: string; right: boolean; wrong: boolean; askedRight?: boolean; askedWrong?: boolean; asked?: boolean; afterNo?: boolean; answerHeard?: string; stop: boolean; stopsS?: number[]; selfStops: number; transcript: string; confidence: number; made: string; details?: Record<string, unknown> };
  baseline: { wake: boolean; right: boolean; wrong: boolean };
  audioS: number; cpuS: number; cancellerCpuS: number; chunkMsP95: number; chunkMsMax: number;
}

export async function roomBench(options: RoomBenchOptions): Promise<void> {
  const { quick, bargeIn, only, preRollS, overSpeechOn, suppressDb, echoTailS, PARTS, baselineOn, reuseFront, bargeCutS, frontOnly, echoEngine, webrtcSettings, filterMs, clipModel, makeCanceller, answer } = options;
  // The parts, loaded once, as bench-understanding.ts does.
  const config = benchConfig();
  const [wake, vad, ownWake] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis', check: options.wakeCheck }), createSileroVad(), createOpenWakeWord({ model: 'hey_jarvis', threshold: OWN_VOICE_THRESHOLD, check: false })]);
  const stt = createPocketsphinx({ wakePhrases: ['hey jarvis', 'jarvis'], agree: sameMeaning, rivals: RIVALS });
  await stt.start?.();
  await sameMeaning('one', 'two');
  const tts = createEspeak({ voice: 'en-us', rateWpm: 175 });
  const { host } = nativeHost(join(CACHE, `state-${process.pid}`));

  // The front end's memory: RSS before and after one canceller and stop word (with a GC between when exposed).
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const rssBefore = process.memoryUsage().rss;
  const probeCanceller = await makeCanceller(new EchoReference());
  gc?.();
  const cancellerMemoryMb = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
  const probe = { canceller: probeCanceller, stop: await StopWord.create() };
  gc?.();
  const frontEndMemoryMb = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
  probe.canceller.destroy();
  probe.stop.free();

  /** `distorted`: the canceller found the speaker clipping (the daemon's `echoDistorted`, room-ear.ts `RoomStats.clipping`). */
  /** `own`: IRIS's own audio for each chunk (the front end's), for the own-voice veto as the daemon runs it (none: no veto: the raw microphone's baseline, or IRIS_BENCH_OWN_VETO=0). */
  /** `ageS`: the canceller's seconds of IRIS after each chunk (the daemon's `echoYoung`; none: never young). */
  async function runLoop(samples: Int16Array, end: 'conversation' | 'wake' = 'conversation', overSpeech = false, distorted = false, own?: (Int16Array | undefined)[], ageS?: number[]): Promise<LoopResult> {
    const ownWakes: OwnWake[] = [];
    const conversation = new Conversation({
      config, host, log: silentLogger,
      backend: { chat: () => Promise.reject(new Error('no model in this benchmark')) } as never,
      tokenizer: () => Promise.reject(new Error('no model')),
    });
    // With an answer, the daemon's own gates and follow-up window: unsure words are asked about, and the yes (or no) heard after.
    const gates = answer === undefined || end === 'wake' ? undefined : { followUpS: config.assistant.follow_up_s, minConfidence: config.stt.min_confidence, overSpeechMinConfidence: config.stt.over_speech_confidence, clarifyFrom: config.stt.clarify_confidence };
    const loop = new VoiceLoop<TurnResult>({
      wake, vad, stt, tts, sink: new CollectingSink(), followUpS: 0, minConfidence: 0, ...gates, end: gates ? 'tts' : end, ...(preRollS === undefined ? {} : { preRollS }), ...(echoTailS === undefined ? {} : { echoTailS }), overSpeech: () => overSpeech, echoDistorted: () => distorted,
      ...(ageS ? { echoYoung: () => (ageS[Math.round((lastAtS * RATE) / 1280)] ?? Infinity) < YOUNG_CANCELLER_S } : {}),
      ...(own && options.ownVeto ? { ownVoice: { veto: new OwnVoiceVeto(ownWake, options.veto), audio: (chunk) => own[Math.round((chunk.atS * RATE) / 1280)] } } : {}),
      commandState: prefixState, completePauseS: config.audio.complete_pause_s, incompletePauseS: config.audio.incomplete_pause_s,
      respond: (text, signal, heard) => conversation.turn(text, signal, heard),
      onEvent: (event) => {
        if (event.type === 'stt-end' && event.data) {
          const { text: _t, raw: _r, ...rest } = event.data;
          details = rest;
        }
        if (event.type === 'own-wake') ownWakes.push({ atS: round(Number(event.data?.atS), 2), score: round(Number(event.data?.score), 3), ...(event.data?.fit === undefined ? {} : { fit: round(Number(event.data.fit), 1) }), ...(event.data?.nearDb === undefined ? {} : { nearDb: Number(event.data.nearDb) }) });
        if (event.type === 'end_of_speech-end') ended = { endS: round(Number(event.data?.atS), 2), endState: String(event.data?.state) };
      },
    });
    let details: Record<string, unknown> | undefined;
    let ended: { endS: number; endState: string } | undefined;
    wake.reset();
    // Where the loop is (the chunk it was given last): the canceller's age there.
    let lastAtS = 0;
    const source = samplesSource(samples);
    const watched = { ...source, frames: async function* (signal: AbortSignal) { for await (const c of source.frames(signal)) { lastAtS = c.atS; yield c; } } };
    const runs = await loop.run(watched, new AbortController().signal, gates === undefined);
    const run = runs[0];
    // The first tool call of any run: the command's, or its words' after the yes.
    const call = runs.flatMap((r) => (r.result?.route === 'local' ? r.result.tool_calls : []))[0];
    // Asked about the command's words (its first run): what was made came after the answer.
    const answerRun = runs[1];
    const asked = gates ? { asked: run?.result?.reply.startsWith('Did you say') === true, ...(answerRun?.transcript === undefined ? {} : { answerHeard: `${answerRun.transcript} ${round(answerRun.confidence ?? 0, 3)}` }) } : {};
    return { wake: run?.wake !== undefined, ...(run?.wake ? wakeOf(run.wake) : {}), ...(ownWakes.length ? { ownWakes } : {}), made: call ? key(call.name, call.arguments) : '', confidence: run?.confidence ?? 0, transcript: run?.transcript ?? '', ...(details ? { details } : {}), ...ended, ...asked };
  }

  /** Every detection in a room, the loop listening on after each (end 'wake'): with IRIS_BENCH_LOOKS=1 and a look that accepts every fit, each near miss the look takes. */
  async function allWakes(samples: Int16Array, own: (Int16Array | undefined)[]): Promise<{ heard: (ReturnType<typeof wakeOf> & { atS: number })[]; own: OwnWake[] }> {
    const heard: (ReturnType<typeof wakeOf> & { atS: number })[] = [];
    const vetoed: OwnWake[] = [];
    const loop = new VoiceLoop<TurnResult>({
      wake, vad, stt, tts, sink: new CollectingSink(), end: 'wake',
      respond: () => { throw new Error('not reached'); },
      ...(options.ownVeto ? { ownVoice: { veto: new OwnVoiceVeto(ownWake, options.veto), audio: (chunk) => own[Math.round((chunk.atS * RATE) / 1280)] } } : {}),
      onRun: (run) => { if (run.wake) heard.push({ ...wakeOf(run.wake), atS: round(run.wake.atS, 2) }); },
      onEvent: (event) => { if (event.type === 'own-wake') vetoed.push({ atS: round(Number(event.data?.atS), 2), score: round(Number(event.data?.score), 3), ...(event.data?.fit === undefined ? {} : { fit: round(Number(event.data.fit), 1) }), ...(event.data?.nearDb === undefined ? {} : { nearDb: Number(event.data.nearDb) }) }); },
    });
    wake.reset();
    await loop.run(samplesSource(samples), new AbortController().signal);
    return { heard, own: vetoed };
  }
  const looksMode = process.env.IRIS_BENCH_LOOKS === '1';

  const minConfidence = config.stt.min_confidence;
  const overSpeechMinConfidence = config.stt.over_speech_confidence;
  const rows: Row[] = [];
  const lookRows: Record<string, unknown>[] = [];
  const started = performance.now();
  for (const part of PARTS) {
    // A later held-out set (IRIS_BENCH_HELDOUT2/3/4=1): its own seed, commands, and maybe replies and people.
    const sets = Object.entries(NEW_HELDOUT).filter(([n]) => part === 'heldout' && process.env[`IRIS_BENCH_HELDOUT${n}`] === '1');
    if (sets.length > 1) throw new Error(`IRIS_BENCH_HELDOUT${sets.map(([n]) => n).join(', ')}: one held-out set a run`);
    const [setName, set] = sets[0] ?? [];
    const rand = random(set?.seed ?? (part === 'dev' ? 24 : 2024));
    const people = quick ? (set?.people ?? PEOPLE[part]).slice(0, 2) : (set?.people ?? PEOPLE[part]);
    const spoken = set?.commands ?? COMMANDS[part];
    const commands = quick ? spoken.slice(0, 2) : spoken;
    for (const condition of CONDITIONS) {
      // Every room's draws are taken, also those of conditions not run: a room is the same with IRIS_BENCH_ONLY as in a full run.
      const wanted = only === undefined || only.includes(condition.name);
      for (const voice of people) {
        const spoken = condition.says === 'command' ? commands : condition.says === 'stop' ? ['stop'] : [''];
        for (const command of spoken) {
          if (!wanted) {
            drawsOf(rand);
            if (condition.says === 'nothing') break;
            continue;
          }
          let person: Int16Array | undefined;
          if (condition.says === 'command') person = answer ? answeredClip(commandClip(command, voice), answer, voice) : commandClip(command, voice);
          if (condition.says === 'stop') person = stopClip(voice);
          const draws = drawsOf(rand);
          // Held-out 3 and 4: IRIS says their own replies (IRIS alone still says SELF, its wake and stop words).
          const replies = set?.replies ?? [];
          const saidBy = replies.length > 0 && condition.esrDb !== undefined ? { ...condition, irisSays: [replies[draws.pick % replies.length] ?? '', condition.says === 'nothing' ? SELF : (replies[(draws.pick + 1) % replies.length] ?? '')] as [string, string] } : condition;
          // IRIS_BENCH_FIRST: the person over IRIS's first reply since a start; IRIS_BENCH_PRIMED: its canceller from the room it learned before.
          const said = options.firstReply && condition.esrDb !== undefined ? { ...saidBy, firstReply: true } : saidBy;
          const roomOf = talkedBefore(said, options.steadyReplies, draws.pick, replies.length > 0 ? replies : undefined);
          const cached = join(CACHE, `front-${[part, condition.name, voice.synth, voice.name, command, bargeIn, suppressDb ?? 'd', quick ? 'quick' : 'full', echoEngine, JSON.stringify(webrtcSettings ?? {}), ...(bargeCutS === 0.2 ? [] : [`cut${bargeCutS}`]), `filter${filterMs}`, ...(clipModel === undefined ? [] : [`clip${Number(clipModel)}`]), ...(setName ? [`h${setName}`] : []), ...(answer ? [`ans-${answer}`] : []), ...(options.steadyReplies ? [`steady${options.steadyReplies}`] : []), ...(options.firstReply ? ['first'] : []), ...(options.primed ? [`primed${options.primed.elsewhere ? 'E' : ''}${options.primed.movedMs}`] : []), 'own'].join('_').replace(/[^a-z0-9+.-]+/gi, '_')}`);
          let r: Room;
          let front: FrontEndResult;
          try {
            if (!reuseFront) throw new Error('not reused');
            const meta = JSON.parse(readFileSync(`${cached}.json`, 'utf8')) as { room: Omit<Room, 'mic' | 'played'>; front: Omit<FrontEndResult, 'samples' | 'own'>; ownLengths: number[] };
            r = { ...meta.room, mic: decodeWav(readFileSync(`${cached}-mic.wav`)), played: new Int16Array(0) };
            front = { ...meta.front, samples: decodeWav(readFileSync(`${cached}-front.wav`)), own: unjoin(decodeWav(readFileSync(`${cached}-own.wav`)), meta.ownLengths) };
          } catch {
            const remembered = options.primed && condition.esrDb !== undefined ? await learnedBefore(options, said, part, person, draws, replies.length > 0 ? replies : undefined) : undefined;
            [r, front] = await recorded(room(roomOf, part, person, draws), options, remembered);
            if (bargeIn && condition.says === 'command' && condition.esrDb !== undefined) {
              // The daemon stops talking when it hears the wake word (barge-in, within 200 ms):
              // the recording it would make is the same room with IRIS cut there.
              const heard = await runLoop(front.samples, 'wake', false, false, front.own);
              if (heard.wakeAtS !== undefined) [r, front] = await recorded(room(roomOf, part, person, draws, (r.fromS ?? 0) + heard.wakeAtS + bargeCutS), options, remembered);
            }
            if (reuseFront) {
              const { mic: _m, played: _p, ...roomMeta } = r;
              const { samples: _s, own: ownChunks, ...frontMeta } = front;
              writeFileSync(`${cached}.json`, JSON.stringify({ room: roomMeta, front: frontMeta, ownLengths: ownChunks.map((c) => c?.length ?? -1) }));
              writeFileSync(`${cached}-own.wav`, encodeWav(join16(ownChunks)));
              writeFileSync(`${cached}-mic.wav`, encodeWav(r.mic));
              writeFileSync(`${cached}-front.wav`, encodeWav(front.samples));
            }
          }
          const expected = condition.says === 'command' ? await expectedCall(command) : '';
          // IRIS was talking when the person began: the loop's `overSpeech`, as the daemon sets it.
          const over = overSpeechOn && condition.esrDb !== undefined;
          // The loop's own gate (it runs with 0 here, so what it would have done is kept; with an answer it gates itself).
          const gate = answer ? 0 : over ? Math.max(minConfidence, overSpeechMinConfidence) : minConfidence;
          /** Words under the gate but at `clarify_confidence`: the daemon asks "Did you say …?" about them. */
          const unsure = (result: { confidence: number }) => answer === undefined && result.confidence < gate && result.confidence >= config.stt.clarify_confidence;
          // With an answer, a wrong call after a question is the person's yes to words they did not
          // say (the bench's person always gives `answer`): counted apart (`askedWrong`); the "no"
          // run says what a no does. Any call after a no is `afterNo`.
          const judge = (result: LoopResult) => ({
            wake: result.wake,
            right: expected !== '' && result.made === expected && result.confidence >= gate,
            wrong: result.made !== '' && result.made !== expected && result.confidence >= gate && result.asked !== true,
          });
          const askedOf = (result: LoopResult) => (answer
            ? { asked: result.asked === true, ...(result.answerHeard === undefined ? {} : { answerHeard: result.answerHeard }), askedWrong: result.asked === true && result.made !== '' && result.made !== expected, ...(answer === 'no' ? { afterNo: result.asked === true && result.made !== '' } : {}) }
            : { askedRight: unsure(result) && expected !== '' && result.made === expected, askedWrong: unsure(result) && result.made !== '' && result.made !== expected });
          const none: LoopResult = { wake: false, made: '', confidence: 0, transcript: '' };
          if (frontOnly) continue;
          if (looksMode) {
            const looks = await allWakes(front.samples, condition.esrDb === undefined ? [] : front.own);
            lookRows.push({ part, condition: condition.name, person: `${voice.synth}:${voice.name}`, says: command, ...(r.personS ? { personS: [round(r.personS[0], 2), round(r.personS[1], 2)] as [number, number] } : {}), ...looks });
            if (condition.says === 'nothing') break;
            continue;
          }
          // IRIS's own audio only where it plays (the bench's reference holds silence in the other rooms; the daemon's holds nothing there).
          const own = condition.esrDb === undefined ? undefined : front.own;
          const withFront = condition.says === 'command' || condition.says === 'nothing' ? await runLoop(front.samples, 'conversation', over, front.clipLevel !== undefined, own, front.ageS) : none;
          const without = baselineOn && (condition.says === 'command' || condition.says === 'nothing') ? await runLoop(r.mic, 'conversation', over) : none;
          const [from, to] = r.personS ?? [Infinity, Infinity];
          const stopHeard = front.stops.some((s) => s >= from && s <= to + 0.3);
          const selfStops = front.stops.filter((s) => !(s >= from && s <= to + 0.3)).length;
          const sorted = [...front.chunkMs].sort((a, b) => a - b);
          rows.push({
            part, condition: condition.name, person: `${voice.synth}:${voice.name}`, says: command, expected, over, delayMs: r.delayMs,
            ...(front.delayMs === undefined ? {} : { measuredDelayMs: round(front.delayMs, 1) }),
            ...(front.erleDb === undefined ? {} : { erleDb: round(front.erleDb, 1) }),
            ...(front.primed === undefined ? {} : { primed: front.primed }),
            ...(r.personS ? { personS: [round(r.personS[0], 2), round(r.personS[1], 2)] as [number, number] } : {}),
            cancelled: { ...judge(withFront), ...askedOf(withFront), ...(withFront.wakeAtS === undefined ? {} : { wakeAtS: round(withFront.wakeAtS, 2), wakeScore: withFront.wakeScore, wakeFit: withFront.wakeFit, wakeNearDb: withFront.wakeNearDb }), ...(withFront.ownWakes ? { ownWakes: withFront.ownWakes } : {}), ...(withFront.endS === undefined ? {} : { endS: withFront.endS, endState: withFront.endState }), stop: stopHeard, selfStops, ...(front.stops.length ? { stopsS: front.stops.map((s) => round(s, 2)) } : {}), transcript: withFront.transcript, confidence: withFront.confidence, made: withFront.made, ...(withFront.details ? { details: withFront.details } : {}) },
            baseline: judge(without),
            audioS: round(r.mic.length / RATE, 2), cpuS: round(front.cpuS, 3), cancellerCpuS: round(front.cancellerCpuS ?? 0, 4), chunkMsP95: round(sorted[Math.floor(sorted.length * 0.95)] ?? 0, 2), chunkMsMax: round(sorted.at(-1) ?? 0, 2),
          });
          if (condition.says === 'nothing') break; // IRIS alone: one per voice is enough
        }
        if (condition.says === 'nothing') break;
      }
      if (wanted) process.stderr.write(`${part} ${condition.name}: ${rows.length} rooms, ${round((performance.now() - started) / 1000, 0)} s\n`);
    }
  }

  if (looksMode) {
    writeResults(process.env.IRIS_BENCH_NAME ?? 'room-looks', { wake_check: options.wakeCheck, own_veto: options.ownVeto, look_near_db: options.veto.lookNearDb, rows: lookRows });
    return;
  }
  const pct = (n: number, d: number) => (d === 0 ? null : round((100 * n) / d, 0));
  const wokeBeforePerson = (r: Row): boolean => r.cancelled.wake && r.personS !== undefined && (r.cancelled.wakeAtS ?? Infinity) < r.personS[0];
  const table: Record<string, unknown>[] = [];
  for (const part of PARTS) {
    for (const condition of CONDITIONS) {
      const set = rows.filter((r) => r.part === part && r.condition === condition.name);
      if (set.length === 0) continue;
      const erles = set.map((r) => r.erleDb).filter((x): x is number => x !== undefined);
      const delayErrors = set.filter((r) => r.measuredDelayMs !== undefined).map((r) => Math.abs((r.measuredDelayMs ?? 0) - r.delayMs));
      table.push({
        part, condition: condition.name, n: set.length,
        ...(condition.says === 'command' ? {
          // A wake before the person began is IRIS's own echo (a self-wake), not the person heard:
          // counted apart, never as heard (session 12's tables counted it: docs/room.md).
          wake_pct: pct(set.filter((r) => r.cancelled.wake && !wokeBeforePerson(r)).length, set.length),
          wake_before_person: set.filter(wokeBeforePerson).length,
          understood_pct: pct(set.filter((r) => r.cancelled.right).length, set.length),
          wrong: set.filter((r) => r.cancelled.wrong).length,
          // Without an answer: the right words the daemon would ask about (a yes acts on them), and the wrong ones (a no: nothing).
          ...(answer ? { asked_pct: pct(set.filter((r) => r.cancelled.asked).length, set.length), asked_wrong: set.filter((r) => r.cancelled.askedWrong).length, ...(answer === 'no' ? { after_no: set.filter((r) => r.cancelled.afterNo).length } : {}) } : { asked_right_pct: pct(set.filter((r) => r.cancelled.askedRight).length, set.length), asked_wrong: set.filter((r) => r.cancelled.askedWrong).length }),
          baseline_wake_pct: pct(set.filter((r) => r.baseline.wake).length, set.length),
          baseline_understood_pct: pct(set.filter((r) => r.baseline.right).length, set.length),
          baseline_wrong: set.filter((r) => r.baseline.wrong).length,
        } : {}),
        ...(condition.says === 'stop' ? { stop_pct: pct(set.filter((r) => r.cancelled.stop).length, set.length) } : {}),
        ...(condition.says === 'nothing' ? { self_wakes: set.filter((r) => r.cancelled.wake).length, baseline_self_wakes: set.filter((r) => r.baseline.wake).length } : {}),
        self_stops: set.reduce((s, r) => s + r.cancelled.selfStops, 0),
        ...(erles.length ? { erle_db_mean: round(erles.reduce((a, b) => a + b, 0) / erles.length, 1) } : {}),
        ...(delayErrors.length ? { delay_error_ms_max: round(Math.max(...delayErrors), 1) } : {}),
        ...(options.primed && condition.esrDb !== undefined ? { primed_kept: set.filter((r) => r.primed === 'kept').length } : {}),
      });
    }
  }
  const audioS = rows.reduce((s, r) => s + r.audioS, 0);
  const cpuS = rows.reduce((s, r) => s + r.cpuS, 0);
  const chunkP95 = [...rows.map((r) => r.chunkMsP95)].sort((a, b) => a - b);
  const commandRows = (part: Part) => rows.filter((r) => r.part === part && r.expected !== '');
  const summary = {
    /** The no-wrong rule over every command room (echo, reverberation, babble): confident wrong calls. */
    confident_wrong: Object.fromEntries(PARTS.map((p) => [p, { rooms: commandRows(p).length, front_end: commandRows(p).filter((r) => r.cancelled.wrong).length, ...(baselineOn ? { baseline: commandRows(p).filter((r) => r.baseline.wrong).length } : {}) }])),
    echo_canceller: echoEngine,
    ...(webrtcSettings ? { webrtc_settings: webrtcSettings } : {}),
    front_end_cpu_s_per_s: round(cpuS / audioS, 4),
    /** The canceller alone (delay tracking included), over all audio, and over the rooms where IRIS played. */
    canceller_cpu_s_per_s: round(rows.reduce((s, r) => s + r.cancellerCpuS, 0) / audioS, 4),
    canceller_cpu_s_per_s_echo_rooms: (() => { const echo = rows.filter((r) => r.erleDb !== undefined); return round(echo.reduce((s, r) => s + r.cancellerCpuS, 0) / Math.max(1, echo.reduce((s, r) => s + r.audioS, 0)), 4); })(),
    canceller_memory_mb: round(cancellerMemoryMb, 1),
    front_end_chunk_ms_p95: chunkP95[Math.floor(chunkP95.length * 0.95)] ?? null,
    front_end_chunk_ms_max: Math.max(0, ...rows.map((r) => r.chunkMsMax)),
    front_end_added_latency_ms: 'no audio held back: output chunk = input chunk; the cost is the per-chunk processing time above',
    front_end_memory_mb: round(frontEndMemoryMb, 1),
    rooms: rows.length,
    audio_s: round(audioS, 0),
    not_measured: ['false wakes per hour of continuous speech: IRIS_BENCH_FALSE_WAKE_MIN=60 (results/room-false-wakes.json)', 'last word → first audio in these rooms: IRIS_BENCH_EARLY=1 (results/room-early.json)', 'two sound cards\' clock drift: IRIS_BENCH_DRIFT (results/room-drift.json)'],
  };
  console.table(table);
  console.log(summary);
  writeResults(process.env.IRIS_BENCH_NAME ?? 'room', { quick, echo_canceller: echoEngine, barge_in: bargeIn, barge_in_cut_s: bargeCutS, only: only ?? 'all', residual_echo_suppress_db: suppressDb ?? 'default', pre_roll_s: preRollS ?? 'default', echo_tail_s: echoTailS ?? 'default', over_speech: overSpeechOn, min_confidence: minConfidence, over_speech_confidence: overSpeechMinConfidence, clarify_confidence: config.stt.clarify_confidence, answer: answer ?? 'none', summary, table, rows });

}
