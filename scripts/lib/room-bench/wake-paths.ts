/** bench-room's wake word path by path (IRIS_BENCH_WAKE_PATHS=1): one mode of scripts/bench-room.ts. */
import { SPEECH_FORMAT } from '../../../src/pipeline/audio.js';
import type { EchoCancellerOptions } from '../../../src/pipeline/echo.js';
import { SpeexEcho } from '../../../src/pipeline/speexdsp.js';
import { createOpenWakeWord } from '../../../src/pipeline/wakeword.js';
import { random, round, writeResults } from '../bench.js';
import { RATE, type Part, PEOPLE, COMMANDS, CONDITIONS, drawsOf, room, commandClip, referenceOf } from './room.js';
import type { RoomBenchOptions } from './options.js';

/**
 * Why the wake word is missed (IRIS_BENCH_WAKE_PATHS=1): the command rooms of the conditions in
 * IRIS_BENCH_ONLY (the same rooms as the main bench's full run: the draws are taken in its order),
 * IRIS talking on (the first pass, before any barge-in cut), each heard through several paths,
 * and openWakeWord's highest score over the person (their clip's span + 0.5 s) on each: the raw
 * microphone (`mic`), the person alone with the room's noise (`person`: a perfect canceller),
 * and the canceller with each setting in IRIS_BENCH_WAKE_VARIANTS (JSON, name → EchoCancellerOptions;
 * default: today's, no residual suppression, gentler suppression, a 256 ms filter), plus
 * speexdsp's noise suppressor alone (`denoise`, babble). IRIS_BENCH_WAKE_REST (names) also scores
 * everything but the person through those settings over the whole room: how near IRIS's residual
 * echo comes to the threshold (a lower threshold's self-wakes). Writes scripts/results/room-wake-paths.json.
 */
export async function wakePaths(options: RoomBenchOptions): Promise<void> {
  const { quick, only, PARTS, makeCanceller } = options;
  const variants: Record<string, EchoCancellerOptions> = JSON.parse(process.env.IRIS_BENCH_WAKE_VARIANTS ?? JSON.stringify({
    default: {}, linear: { echoSuppressDb: 0 }, 'res-20': { echoSuppressDb: -20, echoSuppressActiveDb: -6 }, f256: { filterMs: 256 }, 'f256-linear': { filterMs: 256, echoSuppressDb: 0 },
  })) as Record<string, EchoCancellerOptions>;
  const restOf = (process.env.IRIS_BENCH_WAKE_REST ?? 'default,linear').split(',').filter((n) => n in variants);
  const detector = await createOpenWakeWord({ model: 'hey_jarvis', threshold: 0 });
  /** The highest score over [fromS, toS) and where, scored from `contextS` before `fromS` (a fresh detector: its context is the same by then). */
  const phases = Number(process.env.IRIS_BENCH_WAKE_PHASES ?? 1);
  /** `best` with the 80 ms frames' grid moved `shift` samples later. */
  const bestAt = async (samples: Int16Array, fromS: number, toS: number, contextS: number, shift: number): Promise<{ score: number; atS: number }> => {
    detector.reset();
    let top = { score: 0, atS: NaN };
    const start = Math.max(0, Math.floor(((fromS - contextS) * RATE) / 1280) * 1280) + shift;
    for (let at = start; at + 1280 <= Math.min(samples.length, Math.round(toS * RATE)); at += 1280) {
      const d = await detector.process({ ...SPEECH_FORMAT, samples: samples.subarray(at, at + 1280), atS: at / RATE });
      if (d && d.atS > fromS && d.score > top.score) top = { score: round(d.score, 3), atS: round(d.atS, 2) };
    }
    return top;
  };
  /** The highest score at the grid of the stream's start, and (IRIS_BENCH_WAKE_PHASES > 1) the highest over that many grids 1280/phases apart. */
  const best = async (samples: Int16Array, fromS: number, toS: number, contextS = 2.5): Promise<{ score: number; atS: number; phaseMax?: number }> => {
    const top = await bestAt(samples, fromS, toS, contextS, 0);
    if (phases <= 1) return top;
    let phaseMax = top.score;
    for (let k = 1; k < phases; k++) phaseMax = Math.max(phaseMax, (await bestAt(samples, fromS, toS, contextS, Math.round((k * 1280) / phases))).score);
    return { ...top, phaseMax };
  };
  const cancelAll = async (mic: Int16Array, played: Int16Array, options: EchoCancellerOptions) => {
    const reference = referenceOf(played);
    const canceller = await makeCanceller(reference, options);
    const out = new Int16Array(mic.length);
    for (let at = 0; at + 1280 <= mic.length; at += 1280) out.set(canceller.process(mic.subarray(at, at + 1280), at), at);
    const { delayMs, erleDb, handedOverS, clipLevel } = canceller.stats;
    canceller.destroy();
    return { out, delayMs, erleDb, handedOverS, clipLevel };
  };
  const denoise = async (mic: Int16Array): Promise<Int16Array> => {
    const ns = await SpeexEcho.create({ frameSamples: 256, filterSamples: 2048, rate: RATE, echoSuppressDb: 0, echoSuppressActiveDb: 0, noiseSuppressDb: -15 });
    const out = new Int16Array(mic.length);
    const zeros = new Int16Array(256);
    for (let at = 0; at + 256 <= mic.length; at += 256) out.set(ns.process(mic.subarray(at, at + 256), zeros), at);
    ns.destroy();
    return out;
  };
  type Scored = { score: number; atS: number; phaseMax?: number };
  const rows: { part: Part; condition: string; person: string; says: string; delayMs: number; measuredDelayMs?: number; erleDb?: number; personS: [number, number]; scores: Record<string, Scored>; rest: Record<string, Scored>; canceller: Record<string, { handedOverS?: number; clipLevel?: number }> }[] = [];
  for (const part of PARTS) {
    const rand = random(part === 'dev' ? 24 : 2024);
    const people = quick ? PEOPLE[part].slice(0, 2) : PEOPLE[part];
    const commands = quick ? COMMANDS[part].slice(0, 2) : COMMANDS[part];
    for (const condition of CONDITIONS) {
      const wanted = condition.says === 'command' && (only === undefined || only.includes(condition.name));
      for (const voice of people) {
        const spoken = condition.says === 'command' ? commands : condition.says === 'stop' ? ['stop'] : [''];
        for (const command of spoken) {
          const draws = drawsOf(rand); // taken as the main bench takes them, so the rooms are its rooms
          if (condition.says === 'nothing') break;
          if (!wanted) continue;
          const person = commandClip(command, voice);
          const r = room(condition, part, person, draws, undefined, true);
          const [fromS, toS] = r.personS ?? [0, 0];
          const scores: Record<string, Scored> = {};
          const rest: Record<string, Scored> = {};
          const canceller: Record<string, { handedOverS?: number; clipLevel?: number }> = {};
          scores.mic = await best(r.mic, fromS, toS + 0.5);
          scores.person = await best(r.parts?.person ?? r.mic, fromS, toS + 0.5);
          let stats: { delayMs?: number; erleDb?: number } = {};
          if (condition.esrDb === undefined) scores.denoise = await best(await denoise(r.mic), fromS, toS + 0.5);
          else {
            for (const [name, options] of Object.entries(variants)) {
              const { out, delayMs, erleDb, handedOverS, clipLevel } = await cancelAll(r.mic, r.played, options);
              canceller[name] = { ...(handedOverS === undefined ? {} : { handedOverS: round(handedOverS, 2) }), ...(clipLevel === undefined ? {} : { clipLevel }) };
              if (name === 'default') stats = { ...(delayMs === undefined ? {} : { delayMs }), ...(erleDb === undefined ? {} : { erleDb }) };
              scores[name] = await best(out, fromS, toS + 0.5);
              if (restOf.includes(name) && r.parts) rest[name] = await bestAt((await cancelAll(r.parts.rest, r.played, options)).out, 0.5, r.mic.length / RATE, 0.5, 0);
            }
          }
          rows.push({ part, condition: condition.name, person: `${voice.synth}:${voice.name}`, says: command, delayMs: r.delayMs, ...(stats.delayMs === undefined ? {} : { measuredDelayMs: round(stats.delayMs, 1) }), ...(stats.erleDb === undefined ? {} : { erleDb: round(stats.erleDb, 1) }), personS: [round(fromS, 2), round(toS, 2)], scores, rest, canceller });
          process.stderr.write(`${part} ${condition.name} ${voice.name} ${command}: ${Object.entries(scores).map(([k, v]) => `${k} ${v.score}${v.phaseMax === undefined ? '' : `/${v.phaseMax}`}`).join(', ')}${Object.keys(rest).length ? `; rest ${Object.entries(rest).map(([k, v]) => `${k} ${v.score}`).join(', ')}` : ''}; ${JSON.stringify(canceller)}\n`);
        }
        if (condition.says === 'nothing') break;
      }
    }
  }
  const thresholds = [0.5, 0.4, 0.3, 0.2];
  const table = PARTS.flatMap((part) => CONDITIONS.flatMap((condition) => {
    const set = rows.filter((r) => r.part === part && r.condition === condition.name);
    if (set.length === 0) return [];
    const names = Object.keys(set[0]?.scores ?? {});
    return names.map((name) => ({
      part, condition: condition.name, path: name, n: set.length,
      ...Object.fromEntries(thresholds.map((t) => [`heard_${t}`, Math.round((100 * set.filter((r) => (r.scores[name]?.score ?? 0) >= t).length) / set.length)])),
      ...(phases > 1 ? Object.fromEntries(thresholds.slice(0, 2).map((t) => [`phases_${t}`, Math.round((100 * set.filter((r) => (r.scores[name]?.phaseMax ?? 0) >= t).length) / set.length)])) : {}),
      median: round([...set.map((r) => r.scores[name]?.score ?? 0)].sort((a, b) => a - b)[Math.floor(set.length / 2)] ?? 0, 3),
      ...(set[0]?.rest[name] ? { rest_max: Math.max(...set.map((r) => r.rest[name]?.score ?? 0)) } : {}),
    }));
  }));
  console.table(table);
  writeResults(process.env.IRIS_BENCH_NAME ?? 'room-wake-paths', { variants, phases, table, rows });
}
