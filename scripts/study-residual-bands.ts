/**
 * Scratch study (session 17): does a PER-BAND prediction of the residual echo tell the person from
 * what the canceller leaves of IRIS's own voice better than today's broadband one (residual.ts
 * `ResidualEcho`, one gain)? The main bench's echo command rooms (IRIS talking over the whole
 * person, no barge-in cut), built with the person's part at the microphone, through the canceller;
 * per 80 ms chunk while IRIS's own audio sounds: PERSON (the person's part ≥ 1/10 of their speech
 * power) or ECHO-ONLY (under 1/1000), each scored from history before it only.
 *
 * `--part dev` (default): chooses each feature's threshold at 1 % and 5 % of ECHO-ONLY chunks and
 * writes scripts/results/study-residual-bands.json. `--part heldout`: the held-out rooms once, with
 * the thresholds read from that file (dev's), added to it.
 *
 * No FFT library is in node_modules: a 512-point radix-2 FFT is written here (`fft`).
 *
 * Run: OMP_NUM_THREADS=1 nice -n 5 taskset -c 1 npx tsx scripts/study-residual-bands.ts [--part heldout]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { meanPower, SPEECH_FORMAT } from '../src/pipeline/audio.js';
import { EchoReference } from '../src/pipeline/echo.js';
import { ownAudio } from '../src/pipeline/frontend.js';
import { median, OWN_LEAD_S, ResidualEcho } from '../src/pipeline/residual.js';
import { createSileroVad } from '../src/pipeline/vad.js';
import { random, round, writeResults } from './lib/bench.js';
import { roomBenchOptions } from './lib/room-bench/options.js';
import { COMMANDS, CONDITIONS, PEOPLE, RATE, commandClip, drawsOf, referenceOf, room, speechPower, type Part } from './lib/room-bench/room.js';

const CHUNK = 1280;
const LEAD = Math.round(OWN_LEAD_S * RATE);
/** As residual.ts: the room's tail (0.25 s), the history (4 s of IRIS sounding), chunks before the level is known. */
const ROOM_TAIL = RATE / 4;
const HISTORY_S = 4;
const HISTORY_CHUNKS = 12;

// ---- The spectrum: 512-sample Hann frames, hop 256, 16 mel-spaced bands 100 Hz – 7.5 kHz.
const N = 512;
const HOP = 256;
const BANDS = 16;
const HANN = Float64Array.from({ length: N }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / N));
const HANN_POWER = HANN.reduce((s, w) => s + w * w, 0);
const mel = (hz: number) => 2595 * Math.log10(1 + hz / 700);
const hz = (m: number) => 700 * (10 ** (m / 2595) - 1);
/** Each band's FFT bins [from, to). */
const BAND_BINS: [number, number][] = Array.from({ length: BANDS }, (_, k) => {
  const edge = (j: number) => Math.round((hz(mel(100) + ((mel(7500) - mel(100)) * j) / BANDS) * N) / RATE);
  return [edge(k), Math.max(edge(k) + 1, edge(k + 1))];
});
const BITS = Math.log2(N);
const REVERSED = Uint16Array.from({ length: N }, (_, i) => { let r = 0; for (let b = 0; b < BITS; b++) r |= ((i >> b) & 1) << (BITS - 1 - b); return r; });
const COS = Float64Array.from({ length: N / 2 }, (_, i) => Math.cos((2 * Math.PI * i) / N));
const SIN = Float64Array.from({ length: N / 2 }, (_, i) => -Math.sin((2 * Math.PI * i) / N));
const re = new Float64Array(N);
const im = new Float64Array(N);
/** In place, on `re`/`im`: iterative radix-2 decimation in time. */
function fft(): void {
  for (let i = 0; i < N; i++) {
    const j = REVERSED[i] ?? 0;
    if (j > i) { const t = re[i] ?? 0; re[i] = re[j] ?? 0; re[j] = t; const u = im[i] ?? 0; im[i] = im[j] ?? 0; im[j] = u; }
  }
  for (let size = 2; size <= N; size <<= 1) {
    const half = size >> 1;
    const step = N / size;
    for (let start = 0; start < N; start += size) {
      for (let k = 0; k < half; k++) {
        const c = COS[k * step] ?? 0;
        const s = SIN[k * step] ?? 0;
        const a = start + k;
        const b = a + half;
        const xr = (re[b] ?? 0) * c - (im[b] ?? 0) * s;
        const xi = (re[b] ?? 0) * s + (im[b] ?? 0) * c;
        re[b] = (re[a] ?? 0) - xr; im[b] = (im[a] ?? 0) - xi;
        re[a] = (re[a] ?? 0) + xr; im[a] = (im[a] ?? 0) + xi;
      }
    }
  }
}
/** Mean band power over the frames of `samples` (mean-square units: the bands sum to the power between 100 Hz and 7.5 kHz). */
function bandsOf(samples: Int16Array): Float64Array {
  const out = new Float64Array(BANDS);
  let frames = 0;
  for (let at = 0; at + N <= samples.length; at += HOP, frames++) {
    for (let i = 0; i < N; i++) { re[i] = (samples[at + i] ?? 0) * (HANN[i] ?? 0); im[i] = 0; }
    fft();
    for (let k = 0; k < BANDS; k++) {
      const [from, to] = BAND_BINS[k] ?? [0, 0];
      let sum = 0;
      for (let b = from; b < to; b++) sum += (re[b] ?? 0) ** 2 + (im[b] ?? 0) ** 2;
      out[k] = (out[k] ?? 0) + (2 * sum) / (N * HANN_POWER);
    }
  }
  for (let k = 0; k < BANDS; k++) out[k] = (out[k] ?? 0) / Math.max(1, frames);
  return out;
}

/** The per-band analogue of `ResidualEcho` with `{ chunks: true }`: a gain per band, the median over the last 4 s of IRIS sounding. */
class BandResidual {
  readonly #heard = new EchoReference(HISTORY_S);
  readonly #own = new EchoReference(HISTORY_S);
  #history: { at: number; end: number; gains: (number | undefined)[] | undefined }[] = [];
  #tracked = 0;
  /** The last chunk tracked's own and heard bands: `levels` over the same stretch reuses them. */
  #last: { from: number; to: number; own: Float64Array; heard: Float64Array } | undefined;

  track(cancelled: Int16Array, own: Int16Array, resumed: boolean): number {
    const at = this.#tracked;
    this.#heard.write(cancelled, at);
    if (resumed) this.#own.write(new Int16Array(LEAD + ROOM_TAIL), at - LEAD - ROOM_TAIL);
    this.#own.write(own, at + cancelled.length - own.length);
    this.#tracked += cancelled.length;
    const heard = bandsOf(cancelled);
    const ownBands = this.#ownBands(at, at + cancelled.length);
    this.#last = { from: at, to: at + cancelled.length, own: ownBands, heard };
    const sounding = ownBands.some((p) => p > 0);
    this.#history.push({ at, end: at + cancelled.length, gains: sounding ? Array.from(ownBands, (p, k) => (p > 0 ? (heard[k] ?? 0) / p : undefined)) : undefined });
    while ((this.#history[0]?.at ?? at) < at - HISTORY_S * RATE) this.#history.shift();
    return at;
  }

  /** [from, to)'s band powers and the residual predicted per band (undefined: not known yet). */
  levels(from: number, to: number): { heard: Float64Array; residual: Float64Array } | undefined {
    const before = this.#history.filter((h) => h.end <= from && h.gains !== undefined);
    if (before.length < HISTORY_CHUNKS) return undefined;
    const last = this.#last?.from === from && this.#last.to === to ? this.#last : undefined;
    const own = last?.own ?? this.#ownBands(from, to);
    const residual = Float64Array.from(own, (p, k) => {
      const gains = before.flatMap((h) => { const g = h.gains?.[k]; return g === undefined ? [] : [g]; });
      // A band IRIS never sounded in: nothing of its echo predicted there (the floor below).
      return Math.max(1 / BANDS, (gains.length >= HISTORY_CHUNKS ? median(gains) : 0) * p);
    });
    return { heard: last?.heard ?? bandsOf(this.#heard.read(from, to - from)), residual };
  }

  /** As `#ownPower` per band: the higher of the mean with the room's tail and over the stretch alone. */
  #ownBands(from: number, to: number): Float64Array {
    const withTail = bandsOf(this.#own.read(from - LEAD - ROOM_TAIL, to - from + ROOM_TAIL));
    const alone = bandsOf(this.#own.read(from - LEAD, to - from));
    return Float64Array.from(withTail, (p, k) => Math.max(p, alone[k] ?? 0));
  }
}

const dbOf = (ratio: number) => (ratio > 0 ? 10 * Math.log10(ratio) : -99);
const FEATURES = ['broadband nearDb', 'max band excess dB', 'bands >= 6 dB', 'summed excess dB', 'band-predicted broadband dB'] as const;
type Feature = (typeof FEATURES)[number];
function bandFeatures(b: { heard: Float64Array; residual: Float64Array }): Omit<Record<Feature, number>, 'broadband nearDb'> {
  let max = -99;
  let over6 = 0;
  let excess = 0;
  let sumR = 0;
  let sumP = 0;
  for (let k = 0; k < BANDS; k++) {
    const p = b.heard[k] ?? 0;
    const r = b.residual[k] ?? 1;
    const d = dbOf(p / r);
    max = Math.max(max, d);
    if (d >= 6) over6++;
    excess += Math.max(0, p - r);
    sumR += r;
    sumP += p;
  }
  return { 'max band excess dB': max, 'bands >= 6 dB': over6, 'summed excess dB': dbOf(excess / sumR), 'band-predicted broadband dB': dbOf(sumP / sumR) };
}

interface Chunk { room: number; condition: string; k: number; label: 'person' | 'echo'; voiced: boolean; trueDb?: number; onset?: boolean; scores: Record<Feature, number>; next?: Record<Feature, number>; current: boolean }

const argv = process.argv;
const part: Part = argv.includes('--part') && argv[argv.indexOf('--part') + 1] === 'heldout' ? 'heldout' : 'dev';
const options = roomBenchOptions([], process.env);
const chunks: Chunk[] = [];
const vad = await createSileroVad();
let bandCpuUs = 0;
let broadCpuUs = 0;
let trackedS = 0;
const started = performance.now();
const rand = random(part === 'dev' ? 24 : 2024);
let roomIndex = 0;
for (const condition of CONDITIONS) {
  for (const voice of PEOPLE[part]) {
    const spoken = condition.says === 'command' ? COMMANDS[part] : condition.says === 'stop' ? ['stop'] : [''];
    for (const command of spoken) {
      // Every room's draws, as the main bench takes them: the same rooms.
      const draws = drawsOf(rand);
      if (condition.says === 'nothing') break;
      if (condition.says !== 'command' || condition.esrDb === undefined) continue;
      const r = room(condition, part, commandClip(command, voice), draws, undefined, true);
      const person = r.parts?.person;
      if (!person) throw new Error('no parts');
      const speech = speechPower(person);
      const reference = referenceOf(r.played);
      const canceller = await options.makeCanceller(reference);
      const ownOf = ownAudio((from, length) => reference.read(from, length), () => Math.round(((canceller.stats.delayMs ?? 0) * RATE) / 1000), LEAD);
      const broad = new ResidualEcho(LEAD, { chunks: true });
      const bands = new BandResidual();
      const roomChunks: (Chunk | undefined)[] = [];
      const scoresAt: (Record<Feature, number> | undefined)[] = [];
      const quietRun: number[] = [];
      let armedBefore = false;
      vad.reset();
      for (let at = 0, k = 0; at + CHUNK <= r.mic.length; at += CHUNK, k++) {
        const cancelled = canceller.process(r.mic.subarray(at, at + CHUNK), at);
        // What the take-back judges: chunks the VAD calls speech (voice.ts `#hear`, without the pre-roll's floor).
        const voiced = (await vad.process({ ...SPEECH_FORMAT, samples: cancelled, atS: at / RATE })).some((f) => f.isSpeech);
        const personPower = meanPower(person.subarray(at, at + CHUNK));
        quietRun[k] = personPower < speech / 1000 ? (quietRun[k - 1] ?? 0) + 1 : 0;
        const armed = reference.sounding(at - RATE / 4, at + CHUNK);
        if (!armed) { armedBefore = false; continue; }
        const own = ownOf(at, CHUNK);
        const resumed = !armedBefore;
        armedBefore = true;
        let t = process.cpuUsage();
        const from = broad.track(cancelled, own, resumed);
        const level = broad.levels(from, from + CHUNK);
        let used = process.cpuUsage(t);
        broadCpuUs += used.user + used.system;
        t = process.cpuUsage();
        bands.track(cancelled, own, resumed);
        const b = bands.levels(from, from + CHUNK);
        const bandScores = b && bandFeatures(b);
        used = process.cpuUsage(t);
        bandCpuUs += used.user + used.system;
        trackedS += CHUNK / RATE;
        if (!level.known || !bandScores) continue;
        const scores = { 'broadband nearDb': level.nearDb, ...bandScores };
        scoresAt[k] = scores;
        const label = personPower >= speech / 10 ? 'person' : personPower < speech / 1000 ? 'echo' : undefined;
        if (label === undefined) continue;
        const cancelledPower = meanPower(cancelled);
        roomChunks[k] = {
          room: roomIndex, condition: condition.name, k, label, voiced, scores, current: at / RATE >= (r.currentS ?? 0),
          ...(label === 'person' ? { trueDb: dbOf(personPower / Math.max(1, cancelledPower - personPower)), onset: (quietRun[k - 1] ?? 0) * CHUNK >= 0.3 * RATE } : {}),
        };
      }
      canceller.destroy();
      roomChunks.forEach((c, k) => { if (c) { const next = scoresAt[k + 1]; chunks.push(next ? { ...c, next } : c); } });
      roomIndex++;
    }
  }
  process.stderr.write(`${part} ${condition.name}: ${roomIndex} rooms, ${chunks.length} chunks, ${round((performance.now() - started) / 1000, 0)} s\n`);
}

// ---- Thresholds (dev) and what they keep, over two sets of chunks: every labelled chunk while
// IRIS sounds ('all'), those the VAD calls speech ('voiced': what the take-back judges; a chunk
// of the room's floor in a pause of IRIS's is not judged there), and of those the ones in IRIS's
// current reply ('voiced, current reply': the canceller has had the earlier reply to learn the room,
// as under an early answer; the person speaks only there).
const FILE = join(process.cwd(), 'scripts/results/study-residual-bands.json');
type Thresholds = Record<string, Record<Feature, number>>;
const SETS = { all: (_c: Chunk) => true, voiced: (c: Chunk) => c.voiced, 'voiced, current reply': (c: Chunk) => c.voiced && c.current } as const;
type SetName = keyof typeof SETS;
const BINS: [string, number, number][] = [['< -6', -Infinity, -6], ['-6..0', -6, 0], ['0..6', 0, 6], ['>= 6', 6, Infinity]];
const inBin = (lo: number, hi: number) => (c: Chunk) => (c.trueDb ?? 0) >= lo && (c.trueDb ?? 0) < hi;
const pct = (n: number, d: number) => (d === 0 ? null : round((100 * n) / d, 1));
/** The lowest threshold `t` (detected: score > t) whose share of `echo` over it is at most `rate`. */
function thresholdAt(echo: Chunk[], feature: Feature, rate: number): number {
  const sorted = echo.map((c) => c.scores[feature]).sort((a, b) => b - a);
  const allowed = Math.floor(rate * sorted.length);
  let t = sorted[allowed] ?? -99;
  // Ties at the allowed count: raised until no more than that stand above it.
  while (sorted.filter((s) => s > t).length > allowed) t += 0.01;
  return round(t, 2);
}
const quantile = (values: number[], q: number) => { const s = [...values].sort((a, b) => a - b); return s.length === 0 ? null : round(s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0, 1); };
const previous = (() => { try { return JSON.parse(readFileSync(FILE, 'utf8')) as { dev?: unknown; thresholds?: Record<SetName, Thresholds> }; } catch { return {}; } })();
const conditions = [...new Set(chunks.map((c) => c.condition))];
const thresholds = {} as Record<SetName, Thresholds>;
const evaluation = Object.fromEntries((Object.keys(SETS) as SetName[]).map((setName) => {
  const inSet = SETS[setName];
  const echo = chunks.filter((c) => c.label === 'echo' && inSet(c));
  const persons = chunks.filter((c) => c.label === 'person' && inSet(c));
  const chosen: Thresholds = part === 'dev'
    ? { 'fpr 1%': Object.fromEntries(FEATURES.map((f) => [f, thresholdAt(echo, f, 0.01)])) as Record<Feature, number>, 'fpr 5%': Object.fromEntries(FEATURES.map((f) => [f, thresholdAt(echo, f, 0.05)])) as Record<Feature, number> }
    : (previous.thresholds?.[setName] ?? (() => { throw new Error('run --part dev first: no dev thresholds'); })());
  thresholds[setName] = chosen;
  // Today's take-back threshold (voice.ts, the stop word's `minNearDb`): 5 dB over the broadband residual.
  const points: { point: string; feature: Feature; threshold: number }[] = [
    { point: 'today > 5 dB', feature: 'broadband nearDb', threshold: 5 },
    ...Object.entries(chosen).flatMap(([point, byFeature]) => FEATURES.map((feature) => ({ point, feature, threshold: byFeature[feature] }))),
  ];
  const onsets = chunks.filter((c) => c.label === 'person' && c.onset);
  const table = points.map(({ point, feature, threshold }) => {
    const over = (s: Record<Feature, number> | undefined) => s !== undefined && s[feature] > threshold;
    return {
      point, feature, threshold,
      echo_fpr_pct: pct(echo.filter((c) => over(c.scores)).length, echo.length),
      person_pct: pct(persons.filter((c) => over(c.scores)).length, persons.length),
      ...Object.fromEntries(BINS.map(([bin, lo, hi]) => { const set = persons.filter(inBin(lo, hi)); return [`person ${bin}`, pct(set.filter((c) => over(c.scores)).length, set.length)]; })),
      // The onset chunk or the next over the threshold (for 'voiced', the onset chunk heard by the VAD too).
      onset_2chunks_pct: pct(onsets.filter((c) => (inSet(c) && over(c.scores)) || over(c.next)).length, onsets.length),
      by_condition: Object.fromEntries(conditions.map((name) => {
        const e = echo.filter((c) => c.condition === name);
        const p = persons.filter((c) => c.condition === name);
        return [name, `${pct(e.filter((c) => over(c.scores)).length, e.length)}/${pct(p.filter((c) => over(c.scores)).length, p.length)}`];
      })),
    };
  });
  // Each feature's spread: p10 / p50 / p90 / p99 of ECHO-ONLY chunks, and p10 / p50 of PERSON chunks per true-level bin.
  const spread = Object.fromEntries(FEATURES.map((f) => [f, {
    echo: [0.1, 0.5, 0.9, 0.99].map((q) => quantile(echo.map((c) => c.scores[f]), q)).join(' / '),
    ...Object.fromEntries(BINS.map(([bin, lo, hi]) => { const v = persons.filter(inBin(lo, hi)).map((c) => c.scores[f]); return [`person ${bin}`, v.length ? [0.1, 0.5].map((q) => quantile(v, q)).join(' / ') : '-']; })),
  }]));
  const counts = { echo_chunks: echo.length, echo_in_first_reply: echo.filter((c) => !c.current).length, person_chunks: persons.length, person_by_bin: Object.fromEntries(BINS.map(([bin, lo, hi]) => [bin, persons.filter(inBin(lo, hi)).length])), onsets: onsets.length };
  return [setName, { counts, spread, table }];
}));
const cpu = { band_cpu_s_per_s: round(bandCpuUs / 1e6 / trackedS, 4), broadband_cpu_s_per_s: round(broadCpuUs / 1e6 / trackedS, 4), tracked_audio_s: round(trackedS, 0), fft_frames_per_chunk: 4 + 19 + 4 };
for (const [setName, e] of Object.entries(evaluation)) {
  console.log(`\n== ${part}, ${setName} chunks`, JSON.stringify(e.counts));
  console.table(e.table.map(({ by_condition: _b, ...row }) => row));
  console.table(Object.fromEntries(e.table.filter((t) => t.point !== 'fpr 5%').map((t) => [`${t.point} ${t.feature}`, t.by_condition])));
  console.table(e.spread);
}
console.log(cpu);
writeResults('study-residual-bands', {
  bands_hz: BAND_BINS.map(([a, b]) => [round((a * RATE) / N, 0), round((b * RATE) / N, 0)]), thresholds_from: 'dev', thresholds,
  ...(part === 'heldout' ? { dev: previous.dev } : {}),
  [part]: { rooms: roomIndex, cpu, ...evaluation },
});
