/**
 * Benchmark of whisper.cpp speech-to-text through the real adapter (src/pipeline/whisper.ts) and
 * whisper-server: a 3 s spoken command (espeak-ng), random-weight models of the real tiny and
 * base shapes (scripts/make-whisper-model.ts), audio_ctx 0 (full 30 s window) and 512, 2
 * threads. Per shape and audio_ctx: model load (spawn to ready), per-utterance latency (p50 of 5
 * after a warm-up), peak RSS (VmHWM), and whisper.cpp's own encode / per-token decode timings.
 *
 * Random weights never emit end-of-text, so every run decodes whisper's maximum (~220 tokens)
 * where a real 3 s command takes ~10: the latency is an upper bound, and `est_10_tokens_ms`
 * subtracts the surplus tokens at the measured per-token cost. Prints figures and writes
 * scripts/results/stt.json. Run: `npx tsx scripts/bench-stt.ts` (builds whisper-server into
 * .cache/whisper first if needed). Other processes skew the figures: the 1-minute load average
 * before and after is recorded with them, and CPU time per request, which load barely changes.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../src/log.js';
import { SPEECH_FORMAT } from '../src/pipeline/audio.js';
import { decodeWav } from '../src/pipeline/wav.js';
import { WhisperStt } from '../src/pipeline/whisper.js';
import { writeWhisperModel, type WhisperShape } from './make-whisper-model.js';
import { ROOT, round, timeMs, writeResults } from './lib/bench.js';
import { speakToWav } from './lib/speech.js';

const THREADS = 2;
const RUNS = 5;
const COMMAND_S = 3;
/** Tokens in a real ~3 s command ("set a timer for ten minutes please" + punctuation). */
const REAL_TOKENS = 10;

const server = join(ROOT, '.cache/whisper/bin/whisper-server');
execFileSync('bash', [join(ROOT, 'scripts/build-whisper.sh'), join(ROOT, '.cache/whisper')], { stdio: 'inherit' });

const dir = mkdtempSync(join(tmpdir(), 'iris-bench-stt-'));

/** The spoken command, padded with silence (or cut) to exactly COMMAND_S seconds. */
function spokenCommand(): Int16Array {
  const raw = join(dir, 'f.wav');
  const wav = join(dir, 'g.wav');
  speakToWav('set a timer for ten minutes please', wav, raw, { padS: [0, 0] });
  const speech = decodeWav(readFileSync(wav));
  const out = new Int16Array(COMMAND_S * SPEECH_FORMAT.rate);
  out.set(speech.subarray(0, out.length));
  console.log(`command: ${(speech.length / SPEECH_FORMAT.rate).toFixed(2)} s of espeak-ng speech in a ${COMMAND_S} s window`);
  return out;
}

/** Peak resident set size of a process, in MB (/proc/PID/status VmHWM). */
function peakRssMb(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return round(Number(kb) / 1024, 0);
}

/** CPU time a process has used, in ms (/proc/PID/stat utime + stime, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime: fields 14 and 15 of stat(5)
}

/** whisper.cpp's cumulative timings, printed by whisper-server when it exits. */
function timings(lines: string[]): { encode_ms_per_run: number; decode_ms_per_token: number; sample_ms_per_token: number; tokens_per_request: number } {
  const find = (what: string) => {
    const m = new RegExp(`${what} time =\\s+([\\d.]+) ms /\\s+(\\d+) runs`).exec(lines.join('\n'));
    return { ms: Number(m?.[1] ?? NaN), runs: Number(m?.[2] ?? NaN) };
  };
  const encode = find('encode');
  const decode = find('decode');
  const sample = find('sample');
  return {
    encode_ms_per_run: round(encode.ms / encode.runs, 1),
    decode_ms_per_token: round(decode.ms / decode.runs, 2),
    sample_ms_per_token: round(sample.ms / decode.runs, 2),
    tokens_per_request: round(decode.runs / encode.runs, 0),
  };
}

async function measure(shape: WhisperShape, model: string, audioCtx: number, samples: Int16Array) {
  const lines: string[] = [];
  const log = createLogger('bench', { level: 'debug', write: (line) => lines.push(line) });
  const stt = new WhisperStt({ model, threads: THREADS, audioCtx, command: server, log });
  const started = performance.now();
  await stt.start();
  const loadMs = Math.round(performance.now() - started);
  let text = '';
  await stt.transcribe(samples); // warm-up, outside the CPU count too
  const cpuBefore = cpuMs(stt.pid ?? 0);
  const { p50 } = await timeMs(RUNS, async () => (text = (await stt.transcribe(samples)).text), 0);
  const cpuPerRun = Math.round((cpuMs(stt.pid ?? 0) - cpuBefore) / RUNS);
  const rss = peakRssMb(stt.pid ?? 0);
  await stt.stop();
  const t = timings(lines);
  const perToken = t.decode_ms_per_token + t.sample_ms_per_token;
  const figures = {
    load_ms: loadMs,
    p50_ms: Math.round(p50),
    cpu_ms_per_request: cpuPerRun,
    ...t,
    est_10_tokens_ms: Math.round(p50 - Math.max(0, t.tokens_per_request - REAL_TOKENS) * perToken),
    peak_rss_mb: rss,
    transcript_chars: text.length,
  };
  console.log(`${shape.padEnd(5)} audio_ctx ${String(audioCtx).padStart(4)}: load ${figures.load_ms} ms, p50 ${figures.p50_ms} ms ` +
    `(encode ${t.encode_ms_per_run} ms + ${t.tokens_per_request} tokens × ${round(perToken, 2)} ms), ` +
    `≈${figures.est_10_tokens_ms} ms for ${REAL_TOKENS} tokens, CPU ${cpuPerRun} ms/request, peak RSS ${rss} MB`);
  return figures;
}

const samples = spokenCommand();
const loadBefore = round(loadavg()[0] ?? NaN, 2);
const results: Record<string, Record<string, Awaited<ReturnType<typeof measure>>>> = {};
for (const shape of ['tiny', 'base'] as const) {
  const model = join(dir, `ggml-${shape}-random.bin`);
  const made = performance.now();
  const { bytes } = writeWhisperModel(shape, model, 1);
  console.log(`${shape}: random model ${(bytes / 1e6).toFixed(1)} MB written in ${Math.round(performance.now() - made)} ms`);
  const byCtx: (typeof results)[string] = {};
  for (const audioCtx of [0, 512]) byCtx[`audio_ctx_${audioCtx}`] = await measure(shape, model, audioCtx, samples);
  results[shape] = byCtx;
  rmSync(model);
}
rmSync(dir, { recursive: true, force: true });

const build = readFileSync(join(ROOT, '.cache/whisper/bin/whisper-server.stamp'), 'utf8').trim();
writeResults('stt', {
  whisper_server: build,
  threads: THREADS,
  omp_wait_policy: process.env.OMP_WAIT_POLICY ?? 'PASSIVE (adapter default)',
  load_average_1min: { before: loadBefore, after: round(loadavg()[0] ?? NaN, 2) },
  command_s: COMMAND_S,
  runs: RUNS,
  note: `random-weight models decode ~220 tokens per request; est_10_tokens_ms removes the tokens beyond ${REAL_TOKENS} at the measured per-token cost`,
  results,
});
