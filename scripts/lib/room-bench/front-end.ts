/** The daemon's front end (echo canceller, stop word) over one of bench-room's recordings, timed. */
import { samplesSource } from '../../../src/pipeline/capture.js';
import { EchoCanceller, type EchoCancellerOptions } from '../../../src/pipeline/echo.js';
import { frontEnd, ownAudio } from '../../../src/pipeline/frontend.js';
import { StopWord } from '../../../src/pipeline/stopword.js';
import type { RoomEcho } from '../../../src/pipeline/echo-memory.js';
import { RATE, type Condition, type Draws, type Part, type Room, referenceOf, room, talkedBefore } from './room.js';
import type { RoomBenchOptions } from './options.js';

/** The front end's chunk (samples): 80 ms. */
const CHUNK = 1280;

export interface FrontEndResult {
  samples: Int16Array; stops: number[];
  /** IRIS's own audio for each 80 ms chunk while it sounds, as room-ear.ts hands it to the wake word's own-voice veto (0.2 s ahead of its echo at the canceller's delay); undefined while silent. */
  own: (Int16Array | undefined)[];
  cpuS: number; cancellerCpuS: number; chunkMs: number[]; erleDb?: number; delayMs?: number; clipLevel?: number;
  /** A remembered room's verdict (`EchoCanceller.stats.primed`). */
  primed?: string;
  /** The canceller's age in seconds of IRIS after each 80 ms chunk (`stats.ageS`: room-ear.ts `RoomStats.ageS`). */
  ageS: number[] }

/** The daemon's front end over a recording (room-ear.ts's file wiring), timed. */
export async function throughFrontEnd(options: RoomBenchOptions, r: Room, watch: { options?: EchoCancellerOptions; onChunk?: (at: number, mic: Int16Array, out: Int16Array, canceller: EchoCanceller) => void } = {}): Promise<FrontEndResult> {
  const { suppressDb, makeCanceller } = options;
  const reference = referenceOf(r.played);
  const canceller = await makeCanceller(reference, { ...(suppressDb === undefined ? {} : { echoSuppressDb: suppressDb, echoSuppressActiveDb: Math.min(0, suppressDb) }), ...watch.options });
  // The canceller's own CPU, apart from the stop word's: its process() timed as the front end calls it.
  let cancellerCpuUs = 0;
  const cancelProcess = canceller.process.bind(canceller);
  const ownOf = ownAudio((from, length) => reference.read(from, length), () => Math.round(((canceller.stats.delayMs ?? 0) * RATE) / 1000), RATE / 5);
  const own: (Int16Array | undefined)[] = [];
  const ageS: number[] = [];
  canceller.process = (samples, at) => {
    const before = process.cpuUsage();
    const out = cancelProcess(samples, at);
    const used = process.cpuUsage(before);
    cancellerCpuUs += used.user + used.system;
    own.push(reference.sounding(at - RATE / 4, at + samples.length) ? ownOf(at, samples.length) : undefined); // as room-ear.ts: only while armed
    ageS.push(canceller.stats.ageS);
    watch.onChunk?.(at, samples, out, canceller);
    return out;
  };
  const stopWord = await StopWord.create();
  const stops: number[] = [];
  const source = frontEnd(samplesSource(r.mic), {
    canceller, stopWord,
    clockOf: (chunk) => Math.round(chunk.atS * RATE),
    own: (at, length) => canceller.played(at, length, RATE / 5),
    armed: (at, length) => reference.sounding(at - RATE / 4, at + length),
    onStop: (atS) => stops.push(atS),
  });
  const out: Int16Array[] = [];
  const chunkMs: number[] = [];
  const cpu0 = process.cpuUsage();
  let t = performance.now();
  for await (const chunk of source.frames(new AbortController().signal)) {
    chunkMs.push(performance.now() - t);
    out.push(chunk.samples);
    t = performance.now();
  }
  const cpu = process.cpuUsage(cpu0);
  const samples = new Int16Array(out.reduce((s, c) => s + c.length, 0));
  let at = 0;
  for (const c of out) { samples.set(c, at); at += c.length; }
  const { erleDb, delayMs, clipLevel, primed } = canceller.stats;
  canceller.destroy();
  stopWord.free();
  return { samples, stops, own, ageS, cpuS: (cpu.user + cpu.system) / 1e6, cancellerCpuS: cancellerCpuUs / 1e6, chunkMs, ...(erleDb === undefined ? {} : { erleDb }), ...(delayMs === undefined ? {} : { delayMs }), ...(clipLevel === undefined ? {} : { clipLevel }), ...(primed === undefined ? {} : { primed }) };
}

/**
 * What a canceller learned in the room of `condition` before this start (`options.primed`): the
 * same room (or, `elsewhere`, another), IRIS saying two more of `replies` and then its own two, the
 * person in it too; undefined if it learned too little to keep.
 */
export async function learnedBefore(options: RoomBenchOptions, condition: Condition, part: Part, person: Int16Array | undefined, draws: Draws, replies?: string[]): Promise<RoomEcho | undefined> {
  const { elsewhere = false, movedMs = 0 } = options.primed ?? {};
  const there: Condition = { ...condition, firstReply: false, ...(elsewhere ? { reverb: 80, esrDb: 12 } : {}) };
  const before = room(talkedBefore(there, 2, draws.pick, replies), part, person, { ...draws, delayMs: elsewhere ? 250 - draws.delayMs : draws.delayMs - movedMs });
  return learnedOver(options, before.mic, before.played);
}

/** What the bench's canceller learned over `mic`, IRIS having played `played` (`EchoCanceller.learned`); undefined if too little to keep. */
export async function learnedOver(options: RoomBenchOptions, mic: Int16Array, played: Int16Array): Promise<RoomEcho | undefined> {
  const canceller = await options.makeCanceller(referenceOf(played));
  for (let at = 0; at + CHUNK <= mic.length; at += CHUNK) canceller.process(mic.subarray(at, at + CHUNK), at);
  const learned = await canceller.learned();
  canceller.destroy();
  return learned;
}

/**
 * `r` through the front end, both from where its recording starts (`Room.fromS`): what IRIS
 * said before it only taught the canceller (IRIS_BENCH_STEADY). The room keeps `fromS`.
 * `remembered`: the canceller starts from it (IRIS_BENCH_PRIMED).
 */
export async function recorded(r: Room, options: RoomBenchOptions, remembered?: RoomEcho): Promise<[Room, FrontEndResult]> {
  const front = await throughFrontEnd(options, r, remembered ? { options: { remembered } } : {});
  const fromS = r.fromS;
  if (!fromS) return [r, front];
  const from = Math.round(fromS * RATE);
  const chunks = from / CHUNK;
  const shift = (s: number) => s - fromS;
  return [
    { ...r, mic: r.mic.subarray(from), played: r.played.subarray(from), ...(r.currentS === undefined ? {} : { currentS: shift(r.currentS) }), ...(r.personS ? { personS: [shift(r.personS[0]), shift(r.personS[1])] } : {}) },
    { ...front, samples: front.samples.subarray(from), own: front.own.slice(chunks), ageS: front.ageS.slice(chunks), chunkMs: front.chunkMs.slice(chunks), stops: front.stops.map(shift).filter((s) => s >= 0) },
  ];
}
