/**
 * Benchmark of the voice path on real models: wake-word and VAD CPU per second of audio (one
 * thread), pocketsphinx latency for a command, end of speech → first reply audio with an
 * instant model (pocketsphinx + espeak-ng), barge-in stop time of a real aplay, the memory of
 * the bundled daemon while it listens (no whisper; ready, peak, after a full GC), and last word
 * → first reply audio with early answers in real time, dev and held-out apart
 * (lib/early-bench.ts). Prints figures and writes scripts/results/voice.json. Run: `npx tsx
 * scripts/bench-voice.ts` (part of `npm run bench`); `--early [--full] [--no-early] [--part dev|heldout]` runs only
 * the early-answer part (one voice per synthesizer unless --full; --no-early: the same clips
 * with early answers off) and writes scripts/results/voice-early[-off].json; `--memory` only
 * the daemon's memory ($IRIS_BENCH_RUNS runs), to scripts/results/voice-memory.json.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FRAME_SAMPLES, SPEECH_FORMAT } from '../src/pipeline/audio.js';
import { createEspeak } from '../src/pipeline/espeak.js';
import { CollectingSink } from '../src/pipeline/playback.js';
import { createPocketsphinx } from '../src/pipeline/pocketsphinx.js';
import { createSileroVad } from '../src/pipeline/vad.js';
import { samplesSource } from '../src/pipeline/capture.js';
import { VoiceLoop } from '../src/pipeline/voice.js';
import { decodeWav } from '../src/pipeline/wav.js';
import { createOpenWakeWord } from '../src/pipeline/wakeword.js';
import { request as ask } from '../src/daemon/control.js';
import { OllamaDouble } from '../test/helpers/ollama-double.js';
import { heapProbe, ROOT, round, unitEnvironment, unitNodeFlags, writeResults } from './lib/bench.js';
import { benchEarlyAnswers, type EarlyRow } from './lib/early-bench.js';
import { speakToWav } from './lib/speech.js';

const EARLY_CACHE = join(tmpdir(), 'iris-understanding-clips'); // the understanding bench's clips, shared
type EarlyFigures = Awaited<ReturnType<typeof benchEarlyAnswers>>;
function printEarly(figures: EarlyFigures): void {
  for (const part of ['dev', 'heldout'] as const) {
    const f = figures[part];
    if (f.clips === 0) continue;
    console.log(`last word → first reply audio, early answers ${figures.early ? 'on' : 'off'}, ${part}: p50 ${f.last_word_to_first_audio_ms.p50} ms, p95 ${f.last_word_to_first_audio_ms.p95} ms (n ${f.last_word_to_first_audio_ms.n} right of ${f.clips}; ${f.wrong} wrong; whole commands p50 ${f.whole_ms.p50} / p95 ${f.whole_ms.p95}, continued p50 ${f.continued_ms.p50} / p95 ${f.continued_ms.p95}); decision in the audio + processing after it p50 ${f.decision_plus_processing_ms.p50} ms, p95 ${f.decision_plus_processing_ms.p95} ms (decision p50 ${f.decision_ms.p50}, p95 ${f.decision_ms.p95}); cut-offs ${f.cut_offs}; answered early ${f.answered_early}, taken back ${f.taken_back} (${f.taken_back_while_sounding} while sounding, stopped p50 ${f.stop_after_voice_ms.p50} ms / max ${f.stop_after_voice_ms.max} ms after the voice came back, heard p50 ${f.stop_heard_after_ms.p50} ms in)`);
  }
}
if (process.argv.includes('--early')) {
  const early = !process.argv.includes('--no-early');
  const [wakeModel, vadModel] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis' }), createSileroVad()]);
  const state = mkdtempSync(join(tmpdir(), 'iris-bench-early-'));
  // `--part dev|heldout`: one part only (tuning on dev; results named after it).
  const only = process.argv.includes('--part') ? (process.argv[process.argv.indexOf('--part') + 1] === 'heldout' ? 'heldout' : 'dev') : undefined;
  const figures = await benchEarlyAnswers({ wake: wakeModel, vad: vadModel, cacheDir: EARLY_CACHE, stateDir: state, quick: !process.argv.includes('--full'), early, ...(only ? { only } : {}), log: (line) => process.stderr.write(`${line}\n`) });
  rmSync(state, { recursive: true, force: true });
  printEarly(figures);
  writeResults(process.env.IRIS_BENCH_NAME ?? `${early ? 'voice-early' : 'voice-early-off'}${only ? `-${only}` : ''}`, figures);
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), 'iris-bench-voice-'));
function speech(text: string, pad: [number, number] = [0.5, 1.5]): Int16Array {
  const out = join(work, 'speech.wav');
  speakToWav(text, out, join(work, 'raw.wav'), { padS: pad });
  return decodeWav(readFileSync(out));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

// 4. (run after 3, below; `--memory` runs only this) The bundled daemon's memory while it
// listens, no whisper, with the Node flags the systemd unit starts it with and a microphone
// that delivers in real time (scripts/lib/paced-mic.cjs in arecord's place; ALSA's file plugin
// delivers as fast as it is read): RSS once it listens (models loaded), the peak up to the end
// of its first turn (wake word, command decoded and scored, reply played), RSS after a full GC
// (scripts/lib/heap-probe.cjs: what is live), then the peak after three model turns (the
// tokenizer loaded) through the control socket, against the Ollama double.
// $IRIS_BENCH_DAEMON: another checkout's root (its dist/ and systemd unit), for before/after.
const daemonRoot = process.env.IRIS_BENCH_DAEMON ?? ROOT;
const nodeFlags = unitNodeFlags(join(daemonRoot, 'systemd/iris.service'));
const unitEnv = unitEnvironment(join(daemonRoot, 'systemd/iris.service'));
interface DaemonMemory {
  /** RSS 2 s after the daemon logged that it listens, before anything is said (MB). */
  ready: number;
  /** Peak RSS (VmHWM) up to the end of the first turn. */
  listening: number;
  /** RSS after a full GC, after the first turn. */
  afterGc: number;
  afterModelTurns: number;
}
async function daemonMemoryMb(): Promise<DaemonMemory> {
  const home = mkdtempSync(join(tmpdir(), 'iris-bench-daemon-'));
  const ollama = await new OllamaDouble().start();
  for (let i = 0; i < 3; i++) ollama.script({ content: ['Why did the chicken cross the road? ', 'To get to the other side.'] });
  const pcm = speech('hey jarvis, what time is it', [4, 1.5]); // 4 s of quiet first: "ready" is read before the wake word
  writeFileSync(join(home, 'mic.raw'), Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
  writeFileSync(join(home, 'arecord'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'scripts/lib/paced-mic.cjs')}"\n`, { mode: 0o755 });
  writeFileSync(join(home, '.asoundrc'), `pcm.tofile { type file; slave.pcm "null"; file "${home}/speaker.raw"; format "raw" }\n`);
  writeFileSync(join(home, 'config'), `[ollama]\nurl = "${ollama.url}"\n[assistant]\nfollow_up_s = 0\n[audio]\ninput = "paced"\noutput = "tofile"\n`);
  const probe = ['--expose-gc', '--require', join(ROOT, 'scripts/lib/heap-probe.cjs')];
  const child = spawn(process.execPath, [...nodeFlags, ...probe, join(daemonRoot, 'dist/iris.mjs'), 'daemon', '--log-level', 'info'], {
    env: { ...process.env, ...unitEnv, HOME: home, PATH: `${home}:${process.env.PATH ?? ''}`, IRIS_BENCH_MIC: join(home, 'mic.raw'), IRIS_CONFIG: join(home, 'config'), IRIS_STATE_DIR: join(home, 'state'), IRIS_SOCKET: join(home, 's') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const statusMb = (key: 'VmHWM' | 'VmRSS') => round(Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024, 0);
  let seen = '';
  const logged = (line: RegExp) => new Promise<void>((resolve, reject) => {
    const onData = () => {
      if (!line.test(seen)) return;
      child.stderr.off('data', onData);
      resolve();
    };
    child.stderr.on('data', onData);
    child.once('exit', () => reject(new Error(`daemon exited: ${seen}`)));
  });
  child.stderr.on('data', (c: Buffer) => (seen += c.toString()));
  try {
    await logged(/listening for/);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const ready = statusMb('VmRSS');
    await logged(/turn 1: (?:answered|not_understood)/); // a whole turn ran: speech decoded, reply played
    const listening = statusMb('VmHWM');
    await heapProbe(child);
    const afterGc = statusMb('VmRSS');
    for (let i = 0; i < 3; i++) await ask(join(home, 's'), { cmd: 'ask', text: `tell me joke number ${i + 1}` });
    return { ready, listening, afterGc, afterModelTurns: statusMb('VmHWM') };
  } finally {
    child.kill('SIGTERM');
    await ollama.close();
    rmSync(home, { recursive: true, force: true });
  }
}
function printMemory(m: DaemonMemory): void {
  console.log(`daemon while listening, no whisper (node ${nodeFlags.join(' ')}, ${Object.entries(unitEnv).map(([k, v]) => `${k}=${v}`).join(' ')}, microphone in real time): ${m.ready} MB ready, peak ${m.listening} MB to the end of the first turn (target ≤ 200), ${m.afterGc} MB after a full GC; peak after three model turns: ${m.afterModelTurns} MB`);
}
if (process.argv.includes('--memory')) {
  const runs: DaemonMemory[] = [];
  for (let i = 0; i < Number(process.env.IRIS_BENCH_RUNS ?? 1); i++) {
    runs.push(await daemonMemoryMb());
    printMemory(runs.at(-1) as DaemonMemory);
  }
  writeResults('voice-memory', { node_flags: nodeFlags, environment: unitEnv, runs });
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

// 1. Wake word and VAD: CPU ms per second of audio, over 60 s of mixed speech and silence.
const clip = speech('hey jarvis, set a timer for ten minutes and tell me the weather', [1, 3]);
const minute = new Int16Array(SPEECH_FORMAT.rate * 60);
for (let i = 0; i < minute.length; i += clip.length) minute.set(clip.subarray(0, Math.min(clip.length, minute.length - i)), i);
async function cpuPerSecond(process1: (chunk: { samples: Int16Array; atS: number }) => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < minute.length; i += FRAME_SAMPLES) await process1({ samples: minute.subarray(i, i + FRAME_SAMPLES), atS: i / 16_000 });
  const used = process.cpuUsage(start);
  return round((used.user + used.system) / 1000 / 60, 1);
}
const loadStart = performance.now();
const wake = await createOpenWakeWord({ model: 'hey_jarvis' });
const wakeLoadMs = round(performance.now() - loadStart, 0);
const wakeMsPerS = await cpuPerSecond((c) => wake.process({ ...SPEECH_FORMAT, ...c }));
const vad = await createSileroVad();
const vadMsPerS = await cpuPerSecond((c) => vad.process({ ...SPEECH_FORMAT, ...c }));

// 2. pocketsphinx on a 3 s command, and 3. end of speech → first audio with an instant reply.
const stt = createPocketsphinx({ wakePhrases: ['hey jarvis', 'jarvis'] });
const command = speech('set a timer for twenty minutes', [0.5, 0.5]);
const sttMs: number[] = [];
for (let i = 0; i < 6; i++) {
  const t = performance.now();
  await stt.transcribe(command);
  if (i > 0) sttMs.push(performance.now() - t);
}
const tts = createEspeak({ voice: 'en-us', rateWpm: 175 });
const request = speech('hey jarvis, what time is it in tokyo');
const firstAudio: number[] = [];
for (let i = 0; i < 6; i++) {
  const loop = new VoiceLoop({
    wake, vad, stt, tts, sink: new CollectingSink(),
    respond: () => ({ sentences: ['It is three PM in Tokyo.'], result: Promise.resolve({}) }) as never,
  });
  const [run] = await loop.run(samplesSource(request), new AbortController().signal, true);
  if (i > 0 && run?.outcome === 'answered') firstAudio.push(run.timings.first_audio);
}
await stt.stop?.();

const rss = await daemonMemoryMb();

// 5. Last word → first reply audio with early answers, in real time (one voice per synthesizer).
const earlyState = mkdtempSync(join(tmpdir(), 'iris-bench-early-'));
const early = await benchEarlyAnswers({ wake, vad, cacheDir: EARLY_CACHE, stateDir: earlyState, quick: true });
rmSync(earlyState, { recursive: true, force: true });
const { rows: earlyRows, ...earlyFigures } = early;

const figures = {
  wake_word: { cpu_ms_per_s: wakeMsPerS, cpu_s_per_s: round(wakeMsPerS / 1000, 3), target_s_per_s: 0.08, load_ms: wakeLoadMs },
  vad: { cpu_ms_per_s: vadMsPerS },
  pocketsphinx: { command_s: round(command.length / 16_000, 2), p50_ms: round(median(sttMs), 0) },
  end_of_speech_to_first_audio: { p50_ms: round(median(firstAudio), 0), target_ms: 300, runs: firstAudio.length },
  daemon_listening_peak_rss_mb: { value: rss.listening, target: 200, node_flags: nodeFlags, environment: unitEnv, paced_microphone: true },
  daemon_ready_rss_mb: { value: rss.ready },
  daemon_rss_after_gc_mb: { value: rss.afterGc },
  daemon_peak_rss_after_model_turns_mb: { value: rss.afterModelTurns },
  early_answer: { ...earlyFigures, targets: { heldout_p95_ms: 600, p50_ms: 400, cut_offs: 0, stop_ms: 150 }, rows: earlyRows satisfies EarlyRow[] },
};
console.log(`wake word: ${wakeMsPerS} ms CPU per second of audio (${figures.wake_word.cpu_s_per_s} s/s; target ≤ 0.08), load ${wakeLoadMs} ms`);
console.log(`VAD: ${vadMsPerS} ms CPU per second of audio`);
console.log(`pocketsphinx: ${figures.pocketsphinx.p50_ms} ms for a ${figures.pocketsphinx.command_s} s command (p50)`);
console.log(`end of speech → first audio (pocketsphinx + espeak-ng, instant reply): ${figures.end_of_speech_to_first_audio.p50_ms} ms p50 (target ≤ 300)`);
printMemory(rss);
printEarly(early);
rmSync(work, { recursive: true, force: true });
writeResults('voice', figures);
