/** bench-room's own-voice veto of the wake word (IRIS_BENCH_OWN_WAKE=1): one mode of scripts/bench-room.ts. */
import { samplesSource } from '../../../src/pipeline/capture.js';
import { createEspeak } from '../../../src/pipeline/espeak.js';
import { ownAudio } from '../../../src/pipeline/frontend.js';
import { CollectingSink } from '../../../src/pipeline/playback.js';
import { createSileroVad } from '../../../src/pipeline/vad.js';
import { VoiceLoop } from '../../../src/pipeline/voice.js';
import { createOpenWakeWord, OWN_VOICE_THRESHOLD, OwnVoiceVeto } from '../../../src/pipeline/wakeword.js';
import type { SpeechToText } from '../../../src/pipeline/stt.js';
import { random, round, writeResults } from '../bench.js';
import { RATE, type Part, PEOPLE, COMMANDS, type Condition, drawsOf, room, commandClip, referenceOf } from './room.js';
import type { RoomBenchOptions } from './options.js';

/**
 * The wake word's own-voice veto (IRIS_BENCH_OWN_WAKE=1; voice.ts `ownVoice`): IRIS alone, both
 * its replies saying "hey jarvis" (its own words, other texts held out), at 0/+6/+12 dB and +18 dB through a clipping speaker, through
 * a fresh canceller (as at a daemon's first reply): self-wakes with and without the veto, over the
 * whole room and over the current reply only (the canceller warm). And the person's "hey jarvis,
 * <command>" over IRIS (echo 0/+6/+12 dB, IRIS talking on): wake word heard with and without it.
 * Through the canceller, then the voice loop to the wake word, with IRIS's own audio fed to the
 * second detector 0.2 s ahead of its echo as room-ear.ts feeds it; and with no canceller. IRIS_BENCH_PARTS (default
 * dev), IRIS_BENCH_OWN_ROOMS rooms per condition and voice (default 8),
 * IRIS_BENCH_OWN_THRESHOLD the second detector's threshold (default wakeword.ts `OWN_VOICE_THRESHOLD`),
 * IRIS_BENCH_LOOK_NEAR_DB the veto's level rule for a look's near miss (`LOOK_NEAR_DB`).
 * Writes scripts/results/room-own-wake.json (or IRIS_BENCH_NAME).
 */
export async function ownWake(options: RoomBenchOptions): Promise<void> {
  const { only, makeCanceller, envParts } = options;
  const parts = envParts;
  const perVoice = Number(process.env.IRIS_BENCH_OWN_ROOMS ?? 8);
  const ownThreshold = Number(process.env.IRIS_BENCH_OWN_THRESHOLD ?? OWN_VOICE_THRESHOLD);
  const SAYS_WAKE: Record<Part, string[]> = {
    dev: [
      'Hey jarvis is my name. Say it, then your question, and I will answer.',
      'You called me hey jarvis twice. Hey jarvis is my wake word, and I am listening now.',
      'Hey jarvis, the timer is done. Hey jarvis, stop the timer, is one way to silence it.',
      'The lights are off. Next time just say hey jarvis, lights on. Hey jarvis can also dim them.',
    ],
    heldout: [
      'Hey jarvis, set a timer, would start one. Say hey jarvis before each request.',
      'I heard hey jarvis, but nothing after it. Try again: hey jarvis, then the command.',
      'Hey jarvis is how to reach me. The reminder is set, and hey jarvis cancels it later.',
      'Good morning. If the alarm is too loud, say hey jarvis, quieter. Hey jarvis, snooze, works too.',
    ],
  };
  const mic = await createOpenWakeWord({ model: 'hey_jarvis', check: options.wakeCheck });
  const vadOwn = await createSileroVad();
  const noStt: SpeechToText = { name: 'none', transcribe: () => Promise.reject(new Error('not in this benchmark')) };
  const tts = createEspeak({ voice: 'en-us', rateWpm: 175 });
  const rows: { part: Part; condition: string; voice: string; delayMs: number; currentS: number; personS?: [number, number]; on: number[]; off: number[]; vetoed: number[]; details: { atS: number; score: number; fit?: number; nearDb?: number; own: boolean }[]; rawOn: number[]; rawOff: number[]; onActed: number[]; offActed: number[] }[] = [];
  /** Wake detections (stream seconds) over `heard`, with `own[i]` IRIS's audio for chunk i; with the veto or without. */
  const wakes = async (heard: Int16Array, own: (Int16Array | undefined)[], veto: boolean) => {
    mic.reset();
    const at: number[] = [];
    const vetoed: number[] = [];
    const ownVeto = new OwnVoiceVeto(await createOpenWakeWord({ model: 'hey_jarvis', threshold: ownThreshold }), options.veto);
    /** Each detection the loop acted on and each the veto took: score, and a look's fit and level over the residual. */
    const details: { atS: number; score: number; fit?: number; nearDb?: number; own: boolean }[] = [];
    const acted: number[] = []; // where the loop acted on each (the end of the chunk it was in: later when the veto held it)
    let endS = 0;
    const source = samplesSource(heard);
    const loop = new VoiceLoop<string>({
      wake: mic, vad: vadOwn, stt: noStt, tts, sink: new CollectingSink(), end: 'wake',
      respond: () => { throw new Error('not reached'); },
      ...(veto ? { ownVoice: { veto: ownVeto, audio: (chunk) => own[Math.round((chunk.atS * RATE) / 1280)] } } : {}),
      onRun: (run) => {
        if (!run.wake) return;
        at.push(round(run.wake.atS, 2));
        acted.push(round(endS, 2));
        details.push({ atS: round(run.wake.atS, 2), score: round(run.wake.score, 3), ...(run.wake.fit === undefined ? {} : { fit: round(run.wake.fit, 1) }), ...(run.wake.nearDb === undefined ? {} : { nearDb: run.wake.nearDb }), own: false });
      },
      onEvent: (event) => {
        if (event.type !== 'own-wake') return;
        vetoed.push(round(Number(event.data?.atS ?? 0), 2));
        details.push({ atS: round(Number(event.data?.atS ?? 0), 2), score: round(Number(event.data?.score ?? 0), 3), ...(event.data?.fit === undefined ? {} : { fit: round(Number(event.data.fit), 1) }), ...(event.data?.nearDb === undefined ? {} : { nearDb: Number(event.data.nearDb) }), own: true });
      },
    });
    await loop.run({ async *frames(signal) { for await (const chunk of source.frames(signal)) { endS = chunk.atS + chunk.samples.length / RATE; yield chunk; } } }, new AbortController().signal);
    return { at, vetoed, acted, details };
  };
  const conditions: Condition[] = [0, 6, 12].flatMap((esrDb): Condition[] => [
    { name: `IRIS says hey jarvis ${esrDb >= 0 ? '+' : ''}${esrDb} dB`, esrDb, reverb: 50, says: 'nothing' as const },
    { name: `person over IRIS ${esrDb >= 0 ? '+' : ''}${esrDb} dB`, esrDb, reverb: 50, says: 'command' as const },
  ]).concat([{ name: 'IRIS says hey jarvis +18 dB clipping', esrDb: 18, clipping: true, reverb: 50, says: 'nothing' }]); // the clipping speaker's model (echo.ts `clipModel`) leaves IRIS's own voice, not its distortion
  for (const part of parts) {
    const rand = random(part === 'dev' ? 324 : 2324);
    for (const condition of conditions.filter((c) => only === undefined || only.includes(c.name))) {
      const voices = condition.says === 'command' ? PEOPLE[part] : PEOPLE[part].slice(0, 1);
      for (const voice of voices) {
        for (let k = 0; k < perVoice; k++) {
          const draws = drawsOf(rand);
          const texts = SAYS_WAKE[part];
          const says = condition.says === 'nothing' ? { ...condition, irisSays: [texts[k % texts.length] ?? '', texts[(k + 1) % texts.length] ?? ''] as [string, string] } : condition;
          const command = COMMANDS[part][k % COMMANDS[part].length] ?? '';
          const person = condition.says === 'command' ? commandClip(command, voice) : undefined;
          const r = room(says, part, person, draws);
          const reference = referenceOf(r.played);
          const canceller = await makeCanceller(reference);
          const out = new Int16Array(r.mic.length);
          const own: (Int16Array | undefined)[] = [];
          const read = (from: number, length: number) => reference.read(from, length);
          const ownOf = ownAudio(read, () => Math.round(((canceller.stats.delayMs ?? 0) * RATE) / 1000), RATE / 5);
          for (let at = 0; at + 1280 <= r.mic.length; at += 1280) {
            out.set(canceller.process(r.mic.subarray(at, at + 1280), at), at);
            own.push(reference.sounding(at - RATE / 4, at + 1280) ? ownOf(at, 1280) : undefined); // as room-ear.ts: only while armed
          }
          canceller.destroy();
          const on = await wakes(out, own, true);
          const off = await wakes(out, own, false);
          // No canceller (`echo_cancel = false`, or speexdsp missing): IRIS's audio read at the clock, 0.2 s ahead of the microphone (room-ear.ts).
          const rawOf = ownAudio(read, () => 0, RATE / 5);
          const rawOwn = own.map((_, i) => (reference.sounding(i * 1280 - RATE / 4, (i + 1) * 1280) ? rawOf(i * 1280, 1280) : undefined));
          const rawOn = await wakes(r.mic, rawOwn, true);
          const rawOff = await wakes(r.mic, rawOwn, false);
          rows.push({ part, condition: condition.name, voice: `${voice.synth}:${voice.name}`, delayMs: r.delayMs, currentS: round(r.currentS ?? 0, 2), ...(r.personS ? { personS: r.personS.map((x) => round(x, 2)) as [number, number] } : {}), on: on.at, off: off.at, vetoed: on.vetoed, details: on.details, rawOn: rawOn.at, rawOff: rawOff.at, onActed: on.acted, offActed: off.acted });
        }
      }
      process.stderr.write(`${part} ${condition.name}: ${rows.length} rooms\n`);
    }
  }
  /** How much later the loop acted on the person's wake word with the veto than without (its hold), ms: p50 and max over rooms heard both ways. */
  const lateness = (set: typeof rows) => {
    const late = set.flatMap((r) => {
      const on = r.onActed.find((_, i) => inPerson(r.on[i] ?? -1, r));
      const off = r.offActed.find((_, i) => inPerson(r.off[i] ?? -1, r));
      return on === undefined || off === undefined ? [] : [Math.round((on - off) * 1000)];
    }).sort((a, b) => a - b);
    return { later_ms_p50: late[Math.floor(late.length / 2)] ?? null, later_ms_max: late.at(-1) ?? null };
  };
  const inPerson = (t: number, r: (typeof rows)[number]) => r.personS !== undefined && t >= r.personS[0] && t <= r.personS[1] + 0.5;
  const table = parts.flatMap((part) => conditions.flatMap((condition): Record<string, unknown>[] => {
    const set = rows.filter((r) => r.part === part && r.condition === condition.name);
    if (set.length === 0) return [];
    if (condition.says === 'nothing') {
      const count = (key: 'on' | 'off' | 'rawOn' | 'rawOff', warm = false) => set.reduce((n, r) => n + r[key].filter((t) => !warm || t >= r.currentS).length, 0);
      return [{ part, condition: condition.name, n: set.length, self_wakes_veto: count('on'), self_wakes_no_veto: count('off'), current_reply_veto: count('on', true), current_reply_no_veto: count('off', true), no_canceller_veto: count('rawOn'), no_canceller_no_veto: count('rawOff') }];
    }
    return [{ part, condition: condition.name, n: set.length, wake_pct_veto: Math.round((100 * set.filter((r) => r.on.some((t) => inPerson(t, r))).length) / set.length), wake_pct_no_veto: Math.round((100 * set.filter((r) => r.off.some((t) => inPerson(t, r))).length) / set.length), person_vetoed: set.filter((r) => r.vetoed.some((t) => inPerson(t, r))).length, no_canceller_wake_pct_veto: Math.round((100 * set.filter((r) => r.rawOn.some((t) => inPerson(t, r))).length) / set.length), no_canceller_wake_pct_no_veto: Math.round((100 * set.filter((r) => r.rawOff.some((t) => inPerson(t, r))).length) / set.length), other_wakes_veto: set.reduce((n, r) => n + r.on.filter((t) => !inPerson(t, r)).length, 0), other_wakes_no_veto: set.reduce((n, r) => n + r.off.filter((t) => !inPerson(t, r)).length, 0), ...lateness(set) }];
  }));
  console.table(table);
  writeResults(process.env.IRIS_BENCH_NAME ?? 'room-own-wake', { parts, rooms_per_voice: perVoice, own_threshold: ownThreshold, table, rows });
}
