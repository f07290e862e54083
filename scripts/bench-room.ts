/**
 * Hearing a person in a simulated room, over IRIS's own voice (issue 24). Each clip is a
 * recording a microphone would make while IRIS's speaker plays an earlier reply and then the
 * current one (espeak-ng), which a person (flite or festival) talks over: "hey jarvis,
 * <command>", or "stop". IRIS's audio reaches the microphone 40–200 ms late, through sox's
 * reverb, at an echo-to-speech ratio of −6…+18 dB, sometimes through a clipping speaker; the
 * person is reverberant too; some rooms add babble (pocketsphinx-testdata's LibriVox
 * recordings) and every room a little pink noise. What the speaker played is the reference.
 *
 * Every clip goes through the daemon's front end (pipeline/frontend.ts: speexdsp echo
 * cancellation with the measured delay, the stop word) and then the real voice loop
 * (openWakeWord, Silero, pocketsphinx with the grammar, the local conversation path); the same
 * clip without the front end is the baseline. Reported per condition, dev and held-out apart
 * (other person voices, other commands, other IRIS voice): wake word heard, command understood
 * (the right tool call), confidently wrong calls, "stop" heard, self-wakes and self-stops (IRIS
 * alone, saying "hey jarvis" and "stop" itself), ERLE, the front end's CPU per second of audio,
 * the latency it adds (it holds no audio back: its per-chunk processing time) and its memory.
 * False wakes over an hour of continuous speech: IRIS_BENCH_FALSE_WAKE_MIN (below). Last word →
 * first reply audio in these rooms with early answers, the answer's own echo included:
 * IRIS_BENCH_EARLY=1. Two sound cards' clocks drifting apart over a long reply: IRIS_BENCH_DRIFT.
 * Why the wake word is missed, path by path (the person alone, the raw microphone, canceller
 * settings): IRIS_BENCH_WAKE_PATHS (below). IRIS_BENCH_FILTER_MS tries another filter length in every mode,
 * IRIS_BENCH_CLIP_MODEL=0/1 the canceller without or with its clipping speaker's model (echo.ts `clipModel`).
 *
 * The canceller: `--echo webrtc` (or IRIS_BENCH_ECHO=webrtc) runs webrtc-audio-processing's AEC
 * instead of speexdsp (default: echo.ts `DEFAULT_ECHO_ENGINE`); IRIS_BENCH_WEBRTC='{"delayAgnostic":true}'
 * tries other webrtc settings (echo.ts `EchoCancellerOptions.webrtc`). A canceller that cannot
 * load fails the bench rather than falling back. The canceller's own CPU (without the stop word)
 * is reported apart: `canceller_cpu_s_per_s`.
 *
 * The daemon stops talking when it hears the wake word, so a command is mostly spoken over
 * silence: each command room is made twice, the second time with IRIS cut 0.2 s (IRIS_BENCH_CUT_S) after the
 * wake word the first pass heard (`--no-barge-in`: IRIS talks on, as in a plain recording).
 *
 * As the daemon, a command whose wake word came while IRIS sounded is "over speech" (the loop's
 * `overSpeech`: primed with 160 ms, the words over the echo (`echoTailS`, IRIS_BENCH_ECHO_TAIL_S)
 * scored on pocketsphinx's over-speech scale, acted on at `[stt] over_speech_confidence`). Every command
 * room counts toward the no-wrong rule (`summary.confident_wrong`, per part): echo, reverberant
 * rooms up to RT60 ~0.6 s, babble, babble in a reverberant room.
 *
 * Run: `taskset -c 1 npx tsx scripts/bench-room.ts [--quick] [--no-barge-in] [--part dev]
 * [--no-baseline] [--reuse-front] [--echo webrtc]` (IRIS_BENCH_ONLY names conditions, IRIS_BENCH_NAME the
 * results file); writes scripts/results/room.json. Tune on `--part dev` only.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/config/load.js';
import { Conversation, type TurnResult } from '../src/conversation/engine.js';
import { matchIntent, sameMeaning } from '../src/intents/match.js';
import { prefixState } from '../src/intents/prefix.js';
import { RIVALS } from '../src/intents/sentences.js';
import { silentLogger } from '../src/log.js';
import { SPEECH_FORMAT, type AudioChunk, type AudioSink, type AudioSource } from '../src/pipeline/audio.js';
import { samplesSource } from '../src/pipeline/capture.js';
import { DEFAULT_ECHO_ENGINE, ECHO_ENGINES, EchoCanceller, EchoReference, FILTER_MS, type EchoCancellerOptions, type EchoEngineName } from '../src/pipeline/echo.js';
import { createEspeak } from '../src/pipeline/espeak.js';
import { frontEnd, ownAudio } from '../src/pipeline/frontend.js';
import { CollectingSink } from '../src/pipeline/playback.js';
import { createPocketsphinx } from '../src/pipeline/pocketsphinx.js';
import { SpeexEcho } from '../src/pipeline/speexdsp.js';
import { DEFAULT_STOP_CHECK, StopWord, passesCheck, type StopCandidate, type StopCheck, type StopWordOptions } from '../src/pipeline/stopword.js';
import { createSileroVad } from '../src/pipeline/vad.js';
import { VoiceLoop, type VoiceRun } from '../src/pipeline/voice.js';
import { TAKE_BACK_NEAR_DB } from '../src/pipeline/early.js';
import { referenceSamples } from '../src/pipeline/resample.js';
import { decodeWav, encodeWav } from '../src/pipeline/wav.js';
import { createOpenWakeWord, OWN_VOICE_THRESHOLD, OwnVoiceVeto } from '../src/pipeline/wakeword.js';
import type { SpeechToText } from '../src/pipeline/stt.js';
import { nativeHost } from '../test/helpers/tools.js';
import { random, round, writeResults } from './lib/bench.js';
import { earlyClips, earlyFigures, earlyLine, earlyParts, earlyRowOf, pacedSource, resumeS, timedSink, type EarlyRow, type PacedClock } from './lib/early-bench.js';
import { makeClip, synthesize, type Voice } from './lib/speech-set.js';

const quick = process.argv.includes('--quick');
/** Model the daemon's barge-in: IRIS stops playing 0.2 s after the wake word is heard (`--no-barge-in`: it talks on, as a plain recording). */
const bargeIn = !process.argv.includes('--no-barge-in');
/** Only the conditions named (comma-separated, or ";" when a name holds a comma), e.g. IRIS_BENCH_ONLY="quiet,echo 0 dB". */
const only = process.env.IRIS_BENCH_ONLY?.split(process.env.IRIS_BENCH_ONLY.includes(';') ? ';' : ',');
/** The loop's pre-roll to try (seconds; the audio before the detection the recogniser gets), e.g. IRIS_BENCH_PREROLL_S=0.1. */
const preRollS = process.env.IRIS_BENCH_PREROLL_S === undefined ? undefined : Number(process.env.IRIS_BENCH_PREROLL_S);
/** As the daemon: a wake word heard while IRIS's audio sounded is over speech (voice.ts `overSpeech`); IRIS_BENCH_OVER_SPEECH=0 turns it off. */
const overSpeechOn = process.env.IRIS_BENCH_OVER_SPEECH !== '0';
/** Residual-echo suppression to try (dB, 0 = off, the default), e.g. IRIS_BENCH_SUPPRESS_DB=-40. */
const suppressDb = process.env.IRIS_BENCH_SUPPRESS_DB === undefined ? undefined : Number(process.env.IRIS_BENCH_SUPPRESS_DB);
/** How long IRIS's echo lasts after a wake word over it, to try instead of the loop's default (voice.ts `echoTailS`, seconds), e.g. IRIS_BENCH_ECHO_TAIL_S=0.4. */
const echoTailS = process.env.IRIS_BENCH_ECHO_TAIL_S === undefined ? undefined : Number(process.env.IRIS_BENCH_ECHO_TAIL_S);
/** `--part dev` (tuning: never the held-out part) or `--part heldout`; default both. */
const partArg = process.argv[process.argv.indexOf('--part') + 1];
const PARTS: ('dev' | 'heldout')[] = process.argv.includes('--part') ? [partArg === 'heldout' ? 'heldout' : 'dev'] : ['dev', 'heldout'];
/** `--no-baseline`: skip the raw microphone's run (half the time, while tuning the loop). */
const baselineOn = !process.argv.includes('--no-baseline');
/** `--reuse-front`: keep each room's front-end output (after the barge-in cut) in the cache and
 * reuse it, so a change to the loop or the recogniser is measured without the front end again.
 * Only while the front end's code and settings are unchanged. */
const reuseFront = process.argv.includes('--reuse-front');
/** How long after the wake word the daemon cuts IRIS (seconds; default 0.2), e.g. IRIS_BENCH_CUT_S=0.36 with the own-voice veto's 160 ms hold. */
const bargeCutS = Number(process.env.IRIS_BENCH_CUT_S ?? 0.2);
/** `--front-only` (with `--reuse-front`): only fill the cache, no command is heard, so nothing is measured (the held-out rooms made ahead of the one run that measures them). */
const frontOnly = process.argv.includes('--front-only');
/** `--echo webrtc` / IRIS_BENCH_ECHO: the canceller measured. */
const echoArg = process.argv.includes('--echo') ? process.argv[process.argv.indexOf('--echo') + 1] : process.env.IRIS_BENCH_ECHO;
const echoEngine: EchoEngineName = ECHO_ENGINES.find((e) => e === echoArg) ?? DEFAULT_ECHO_ENGINE;
if (echoArg !== undefined && echoArg !== echoEngine) throw new Error(`--echo ${echoArg}: one of ${ECHO_ENGINES.join(', ')}`);
/** webrtc settings to try (JSON), e.g. IRIS_BENCH_WEBRTC='{"extendedFilter":false,"reportDelay":true}'. */
const webrtcSettings = process.env.IRIS_BENCH_WEBRTC === undefined ? undefined : (JSON.parse(process.env.IRIS_BENCH_WEBRTC) as EchoCancellerOptions['webrtc']);
/** The adaptive filter's length to try instead of echo.ts `FILTER_MS` (ms), e.g. IRIS_BENCH_FILTER_MS=128. */
const filterMs = Number(process.env.IRIS_BENCH_FILTER_MS ?? FILTER_MS);
/** The clipping speaker's model on (1) or off (0) instead of echo.ts's default (`clipModel`), e.g. IRIS_BENCH_CLIP_MODEL=0. */
const clipModel = process.env.IRIS_BENCH_CLIP_MODEL === undefined ? undefined : process.env.IRIS_BENCH_CLIP_MODEL === '1';
/** The canceller under test; one that cannot load fails the bench (a fallback would measure the other one). */
const makeCanceller = (reference: EchoReference, options: EchoCancellerOptions = {}): Promise<EchoCanceller> =>
  EchoCanceller.create(reference, { filterMs, ...(clipModel === undefined ? {} : { clipModel }), ...options, engine: echoEngine, ...(webrtcSettings ? { webrtc: webrtcSettings } : {}), onFallback: (reason) => { throw new Error(`the ${echoEngine} canceller did not load: ${reason}`); } });
/** The stop word's options to try instead of its defaults (JSON), e.g. IRIS_BENCH_STOP_OPTIONS='{"lookAgain":false}'. */
const stopOptions = JSON.parse(process.env.IRIS_BENCH_STOP_OPTIONS ?? '{}') as StopWordOptions;
const RATE = 16_000;
const CACHE = join(tmpdir(), 'iris-room-clips');
mkdirSync(CACHE, { recursive: true });

type Part = 'dev' | 'heldout';
/** The person: flite and festival voices (pocketsphinx hears them; espeak-ng is IRIS). */
const PEOPLE: Record<Part, Voice[]> = {
  dev: [{ synth: 'flite', name: 'kal16' }, { synth: 'festival', name: 'kal_diphone' }, { synth: 'flite', name: 'rms' }],
  heldout: [{ synth: 'flite', name: 'slt' }, { synth: 'festival', name: 'cmu_us_slt_arctic_hts' }, { synth: 'flite', name: 'awb' }],
};
const COMMANDS: Record<Part, string[]> = {
  dev: ['what time is it', 'set a timer for ten minutes', 'what is twelve times seven', 'what time is it in tokyo'],
  heldout: ['what time is it in berlin', 'set a timer for fifteen minutes', 'what is six times eight', 'what time is it'],
};
const IRIS_VOICE: Record<Part, string> = { dev: 'en-us', heldout: 'en-gb' };
const REPLIES = [
  'The weather today is sunny with a high of twenty two degrees. Tomorrow brings clouds and a chance of rain in the afternoon.',
  'Your timer for ten minutes is set. I will let you know when it is done. Is there anything else I can help you with?',
  'Here is the news. The city council met on Tuesday to discuss the new bus routes, and the library opens a new wing next month.',
  'It is a quarter past three in the afternoon. Your next meeting starts in forty minutes, and the traffic to the office is light.',
];
/** IRIS alone: its own voice saying the wake word and the stop word. */
const SELF = 'If you want me to listen, say hey jarvis. Say stop and I will stop. Hey jarvis is my name, and stop means stop.';

interface Condition {
  name: string;
  /** Echo-to-speech ratio (dB); undefined: IRIS silent. */
  esrDb?: number;
  clipping?: boolean;
  /** Babble SNR (dB). */
  babbleDb?: number;
  /** sox reverb reverberance (%) on both echo and person: 20 ≈ a dry room, 50 ≈ RT60 0.4 s, 80 ≈ RT60 0.6 s (nominal, sox does not state RT60). */
  reverb: number;
  /** What the person says: the command, "stop", or nothing (IRIS alone). */
  says: 'command' | 'stop' | 'nothing';
  /** What IRIS says instead: its earlier and its current reply. */
  irisSays?: [string, string];
}

const CONDITIONS: Condition[] = [
  { name: 'quiet', reverb: 20, says: 'command' },
  { name: 'echo -6 dB', esrDb: -6, reverb: 50, says: 'command' },
  { name: 'echo 0 dB', esrDb: 0, reverb: 50, says: 'command' },
  { name: 'echo +6 dB', esrDb: 6, reverb: 50, says: 'command' },
  { name: 'echo +12 dB', esrDb: 12, reverb: 50, says: 'command' },
  { name: 'echo +6 dB clipping', esrDb: 6, clipping: true, reverb: 50, says: 'command' },
  { name: 'echo 0 dB RT60 0.6', esrDb: 0, reverb: 80, says: 'command' },
  { name: 'babble 15 dB', babbleDb: 15, reverb: 20, says: 'command' },
  { name: 'babble 10 dB', babbleDb: 10, reverb: 20, says: 'command' },
  { name: 'RT60 0.6', reverb: 80, says: 'command' },
  { name: 'babble 10 dB RT60 0.4', babbleDb: 10, reverb: 50, says: 'command' },
  { name: 'stop over echo 0 dB', esrDb: 0, reverb: 50, says: 'stop' },
  { name: 'stop over echo +6 dB', esrDb: 6, reverb: 50, says: 'stop' },
  { name: 'IRIS alone +12 dB', esrDb: 12, reverb: 50, says: 'nothing' },
  { name: 'IRIS alone +18 dB clipping', esrDb: 18, clipping: true, reverb: 50, says: 'nothing' },
];

/** `samples` through sox effects (dithering off). */
function sox(samples: Int16Array, effects: string[]): Int16Array {
  const dir = join(CACHE, `sox-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'in.wav'), encodeWav(samples));
  execFileSync('sox', ['-D', join(dir, 'in.wav'), join(dir, 'out.wav'), ...effects], { stdio: ['ignore', 'ignore', 'ignore'] });
  return decodeWav(readFileSync(join(dir, 'out.wav')));
}

const espeak = (text: string, voice: string): Int16Array => {
  const file = join(CACHE, `iris-${voice}-${text.replace(/[^a-z]+/gi, '_').slice(0, 80)}.wav`);
  try {
    return decodeWav(readFileSync(file));
  } catch {
    const raw = join(CACHE, `raw-${process.pid}.wav`);
    execFileSync('espeak-ng', ['-v', voice, '-w', raw, '--', text]);
    execFileSync('sox', ['-D', raw, '-r', '16000', '-c', '1', '-b', '16', file]);
    return decodeWav(readFileSync(file));
  }
};

/** Mean power of the 10 ms frames within 30 dB of the loudest: speech power, not silence. */
function speechPower(samples: Int16Array): number {
  const frames: number[] = [];
  for (let i = 0; i + 160 <= samples.length; i += 160) {
    let sum = 0;
    for (let k = 0; k < 160; k++) sum += (samples[i + k] ?? 0) ** 2;
    frames.push(sum / 160);
  }
  const loudest = Math.max(...frames, 1);
  const speech = frames.filter((p) => p > loudest / 1000);
  return speech.reduce((a, b) => a + b, 0) / Math.max(1, speech.length);
}

function scaled(samples: Int16Array, gain: number): Int16Array {
  return Int16Array.from(samples, (v) => Math.max(-32768, Math.min(32767, Math.round(v * gain))));
}

function addInto(out: Float64Array, samples: Int16Array, at: number, gain = 1): void {
  for (let i = 0; i < samples.length && at + i < out.length; i++) if (at + i >= 0) out[at + i] = (out[at + i] ?? 0) + (samples[i] ?? 0) * gain;
}

const toInt16 = (x: Float64Array): Int16Array => Int16Array.from(x, (v) => Math.max(-32768, Math.min(32767, Math.round(v))));

let babbleSource: Int16Array | undefined;
function babble(length: number, offset: number): Int16Array {
  babbleSource ??= (() => {
    const data = '/usr/share/pocketsphinx/test/data/librivox';
    const clips = ['0870', '0880', '0890', '0920', '0930'].map((n) => decodeWav(readFileSync(`${data}/sense_and_sensibility_01_austen_64kb-${n}.wav`)));
    // Two readers at once, offset: babble rather than one clear voice.
    const one = new Int16Array(clips.reduce((s, c) => s + c.length, 0));
    let at = 0;
    for (const c of clips) { one.set(c, at); at += c.length; }
    const two = new Int16Array(one.length);
    const shift = Math.floor(one.length / 2);
    for (let i = 0; i < one.length; i++) two[i] = Math.round(((one[i] ?? 0) + (one[(i + shift) % one.length] ?? 0)) / 2);
    return two;
  })();
  const out = new Int16Array(length);
  for (let i = 0; i < length; i++) out[i] = babbleSource[(offset + i) % babbleSource.length] ?? 0;
  return out;
}

const pink = (() => {
  let cached: Int16Array | undefined;
  return (length: number): Int16Array => {
    cached ??= (() => {
      const file = join(CACHE, 'pink.wav');
      // -R: sox's noise generator seeded the same each time. Without it every run made new noise, and the
      // same room scored differently from run to run (one dev room's person alone 0.99 in one run, 0.39 in the next).
      execFileSync('sox', ['-R', '-D', '-n', '-r', '16000', '-c', '1', '-b', '16', file, 'synth', '60', 'pinknoise', 'vol', '0.05']);
      return decodeWav(readFileSync(file));
    })();
    return cached.subarray(0, length);
  };
})();

interface Room {
  mic: Int16Array;
  played: Int16Array;
  /** Where the person starts and ends (seconds), if they speak. */
  personS?: [number, number];
  delayMs: number;
  /** Where IRIS's current reply starts (seconds): before it, the earlier reply the canceller learns the room on. */
  currentS?: number;
  /**
   * How more of IRIS's audio reaches this microphone (`echoOf`: an answer played later, the part
   * of a reply cut): the echo's gain (none where IRIS was silent: then as loud as the person),
   * the person's speech power, the microphone's gain, the room.
   */
  echo?: { gain?: number; personPower: number; scale: number; reverb: string[]; clipping: boolean };
  /** With `withParts`: the microphone's parts at its gain, the person (with the room's noise) and everything but the person. */
  parts?: { person: Int16Array; rest: Int16Array };
}

/** What `played` (16 kHz) adds to room `r`'s microphone from where it starts playing on (the delay included). */
function echoOf(r: Room, played: Int16Array): Float64Array {
  const delay = Math.round((r.delayMs * RATE) / 1000);
  const out = new Float64Array(played.length + delay);
  if (!r.echo) return out;
  const driven = r.echo.clipping ? scaled(scaled(played, 4), 0.5) : played;
  const echo = sox(driven, r.echo.reverb);
  const gain = r.echo.gain ?? Math.sqrt(r.echo.personPower / speechPower(echo)) * r.echo.scale;
  addInto(out, echo, delay, gain);
  return out;
}

interface Draws { pick: number; personOffsetS: number; delayMs: number; babbleOffset: number }

const drawsOf = (rand: () => number): Draws => ({ pick: Math.floor(rand() * REPLIES.length), personOffsetS: 0.8 + rand(), delayMs: Math.round(40 + rand() * 160), babbleOffset: Math.floor(rand() * 200_000) });

/**
 * One recording: IRIS's earlier and current reply, the person over the current one. With
 * `cutS`, IRIS stops playing there, as the daemon's barge-in stops it when the wake word is heard.
 */
function room(condition: Condition, part: Part, person: Int16Array | undefined, draws: Draws, cutS?: number, withParts = false): Room {
  const voice = IRIS_VOICE[part];
  const { pick } = draws;
  const [earlierText, currentText] = condition.irisSays ?? [REPLIES[pick] ?? '', condition.says === 'nothing' ? SELF : (REPLIES[(pick + 1) % REPLIES.length] ?? '')];
  const earlier = espeak(earlierText, voice);
  const current = espeak(currentText, voice);
  const gap = Math.round(0.4 * RATE);
  const personAt = earlier.length + gap + Math.round(draws.personOffsetS * RATE);
  const length = Math.max(earlier.length + gap + current.length, personAt + (person?.length ?? 0)) + Math.round(1.5 * RATE);
  const played = new Int16Array(length);
  if (condition.esrDb !== undefined) {
    played.set(earlier, 0);
    played.set(current, earlier.length + gap);
    if (cutS !== undefined) played.fill(0, Math.round(cutS * RATE));
  }
  const { delayMs } = draws;
  const mix = new Float64Array(length);
  const reverb = ['reverb', String(condition.reverb), '50', '60'];
  const personPower = person ? speechPower(person) : speechPower(current);
  let echoGain: number | undefined;
  const heard = person ? sox(person, reverb) : undefined;
  if (heard) addInto(mix, heard, personAt);
  const personPart = withParts ? new Float64Array(length) : undefined;
  if (personPart && heard) addInto(personPart, heard, personAt);
  if (condition.esrDb !== undefined) {
    // The speaker: loud and clipped, or clean; then the room.
    const driven = condition.clipping ? scaled(scaled(played, 4), 0.5) : played;
    const echo = sox(driven, reverb);
    const gain = Math.sqrt((personPower * 10 ** (condition.esrDb / 10)) / speechPower(echo));
    addInto(mix, echo, Math.round((delayMs * RATE) / 1000), gain);
    echoGain = gain;
  }
  if (condition.babbleDb !== undefined) {
    const b = babble(length, draws.babbleOffset);
    addInto(mix, b, 0, Math.sqrt((personPower / 10 ** (condition.babbleDb / 10)) / speechPower(b)));
  }
  const noise = pink(length);
  const noiseGain = Math.sqrt((personPower / 10 ** (35 / 10)) / speechPower(noise));
  addInto(mix, noise, 0, noiseGain); // a quiet room's floor, 35 dB down
  if (personPart) addInto(personPart, noise, 0, noiseGain);
  // The microphone's gain set so the loudest moment does not clip its converter: louder echo
  // means a quieter person, not a clipped recording (the clipping speaker is the clipping here).
  const peak = mix.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const scale = peak > 29_000 ? 29_000 / peak : 1;
  const parts = personPart ? { person: toInt16(personPart.map((v) => v * scale)), rest: toInt16(mix.map((v, i) => (v - (personPart[i] ?? 0) + (noise[i] ?? 0) * noiseGain) * scale)) } : undefined;
  if (scale < 1) for (let i = 0; i < mix.length; i++) mix[i] = (mix[i] ?? 0) * scale;
  return {
    ...(parts ? { parts } : {}),
    mic: toInt16(mix), played,
    ...(person ? { personS: [personAt / RATE, (personAt + person.length) / RATE] as [number, number] } : {}),
    delayMs, currentS: (earlier.length + gap) / RATE,
    echo: { ...(echoGain === undefined ? {} : { gain: echoGain * scale }), personPower, scale, reverb, clipping: condition.clipping === true },
  };
}

/** The licence texts in /usr/share/common-licenses, in ~40 s paragraphs (about 100 words): speech to read on and on. */
function licenceParagraphs(): string[] {
  const texts = ['GPL-3', 'Apache-2.0', 'MPL-2.0', 'LGPL-2.1', 'GFDL-1.3', 'Artistic'].flatMap((name) =>
    readFileSync(`/usr/share/common-licenses/${name}`, 'utf8').replace(/\s+/g, ' ').split(/(?<=[.;:]) /).filter((t) => /[a-z]{3}/i.test(t)));
  const paragraphs: string[] = [];
  for (let i = 0, words = 0, current: string[] = []; i < texts.length; i++) {
    const sentence = (texts[i] ?? '').replace(/[^A-Za-z0-9,.;:'\- ]/g, ' ').slice(0, 600);
    current.push(sentence);
    words += sentence.split(' ').length;
    if (words >= 100) { paragraphs.push(current.join(' ')); current = []; words = 0; }
  }
  return paragraphs;
}

/** Where `samples` sound: the first and last sample above 2 % of the peak. */
function voiced(samples: Int16Array): [number, number] {
  const peak = samples.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const loud = (i: number) => Math.abs(samples[i] ?? 0) > peak * 0.02;
  let from = 0;
  let to = samples.length;
  while (from < to && !loud(from)) from++;
  while (to > from && !loud(to - 1)) to--;
  return [from, to];
}

/**
 * The stop word alone (IRIS_BENCH_KWS="1e-10,1e-15,…", the mic spotter's `-kws_threshold`s to
 * compare): only the "stop" and IRIS-alone rooms, IRIS_BENCH_STOP_ROOMS of them per person voice
 * (default 4), of the parts in IRIS_BENCH_PARTS (default dev: tune there, measure held-out once
 * at the end). The canceller runs once per room; each threshold's StopWord then hears its output
 * as the front end feeds it (the cancelled and raw microphone, IRIS's own audio 0.2 s ahead) and
 * reports every candidate with its measures (stopword.ts `StopCandidate`). Each check in
 * IRIS_BENCH_STOP_CHECKS (a JSON array of `StopCheck`s; default: none, and the wired default) is
 * judged on those candidates: "stop" heard (a passing candidate from the word's first voiced
 * sample to 0.5 s after its last), the lag from the word's end (the 300 ms target), and self-stops (over the whole room, and over the
 * current reply only: a warm canceller, as a running daemon's).
 *
 * With IRIS_BENCH_STOP_ALONE_MIN (minutes per level and part), IRIS's own voice talking on and
 * on instead: espeak-ng (dev en-us, held-out en-gb, each reading its own half of the licence
 * texts) from its speaker through a room (a new 60–180 ms delay per paragraph, reverb 50 %), at
 * IRIS_BENCH_STOP_ALONE_DB echo-to-speech levels (default 0,6,12: the room's noise floor 35 dB
 * under a person that much softer than the echo), one canceller kept throughout: false stops
 * per hour for each check. Writes scripts/results/room-stop.json (or IRIS_BENCH_NAME).
 */
const kwsSweep = process.env.IRIS_BENCH_KWS?.split(',').map(Number);
if (kwsSweep) {
  const parts = (process.env.IRIS_BENCH_PARTS ?? 'dev').split(',') as Part[];
  const perVoice = Number(process.env.IRIS_BENCH_STOP_ROOMS ?? 4);
  const aloneMin = Number(process.env.IRIS_BENCH_STOP_ALONE_MIN ?? 0);
  const aloneDb = (process.env.IRIS_BENCH_STOP_ALONE_DB ?? '0,6,12').split(',').map(Number);
  /** The spotters' utterance restart to try instead of the default (seconds; Infinity = never), e.g. IRIS_BENCH_STOP_RESTART_S=Infinity. */
  const restartS = process.env.IRIS_BENCH_STOP_RESTART_S === undefined ? undefined : Number(process.env.IRIS_BENCH_STOP_RESTART_S);
  /** The spotters' `-kws_delay` to try instead of the default (frames), e.g. IRIS_BENCH_KWS_DELAY=5. */
  const kwsDelay = process.env.IRIS_BENCH_KWS_DELAY === undefined ? undefined : Number(process.env.IRIS_BENCH_KWS_DELAY);
  /**
   * IRIS_BENCH_STOP_LIVE=1: the StopWord runs with the default check itself, as the daemon's (a
   * candidate turned down is looked at again a chunk later, its tail fed again), instead of
   * reporting every candidate unchecked; judge it with the check "default" only.
   */
  const live = process.env.IRIS_BENCH_STOP_LIVE === '1';
  const checks: { name: string; check: StopCheck | false }[] = [
    { name: 'none', check: false },
    { name: 'default', check: DEFAULT_STOP_CHECK },
    ...(JSON.parse(process.env.IRIS_BENCH_STOP_CHECKS ?? '[]') as StopCheck[]).map((check) => ({ name: JSON.stringify(check), check })),
  ];
  /** A candidate this long after the word's last voiced sample is the word heard (late, if over 300 ms: `lag_ms`); elsewhere a self-stop. */
  const HEARD_WITHIN_S = 0.5;
  interface Heard { part: Part; condition: string; says: Condition['says']; person: string; threshold: number; seconds: number; wordS?: [number, number]; currentS: number; candidates: StopCandidate[] }
  const heard: Heard[] = [];
  /** A StopWord over cancelled, raw and own audio in 80 ms chunks (only where `armed`), every candidate kept. */
  const spot = async (threshold: number, out: Int16Array, raw: Int16Array, own: Int16Array, armed: (at: number) => boolean): Promise<StopCandidate[]> => {
    const candidates: StopCandidate[] = [];
    const stopWord = await StopWord.create({ threshold, ...stopOptions, ...(live ? {} : { check: false }), onCandidate: (c) => candidates.push(c), ...(restartS === undefined ? {} : { restartS }), ...(kwsDelay === undefined ? {} : { kwsDelay }) });
    let wasArmed = false;
    for (let at = 0; at + 1280 <= out.length; at += 1280) {
      const on = armed(at);
      if (on) stopWord.push(out.subarray(at, at + 1280), own.subarray(at, at + 1280), (at + 1280) / RATE, raw.subarray(at, at + 1280));
      else if (wasArmed) stopWord.reset();
      wasArmed = on;
    }
    stopWord.free();
    return candidates;
  };
  /**
   * IRIS_BENCH_STOP_MODEL=FILE.onnx (scripts/train-stop-word.ts): an openWakeWord keyword model
   * for "stop" instead of the spotter, IRIS_BENCH_KWS its score thresholds; its own-voice veto
   * is a second detector on IRIS's audio (as the wake word's). One candidate per second at most;
   * no measures (judge it with the check "none").
   */
  const stopModel = process.env.IRIS_BENCH_STOP_MODEL;
  const spotModel = async (model: string, threshold: number, out: Int16Array, own: Int16Array, armed: (at: number) => boolean): Promise<StopCandidate[]> => {
    const candidates: StopCandidate[] = [];
    const detector = await createOpenWakeWord({ model, threshold });
    const veto = new OwnVoiceVeto(await createOpenWakeWord({ model, threshold: Number(process.env.IRIS_BENCH_STOP_OWN ?? threshold / 2) }), 1, 0);
    let wasArmed = false;
    for (let at = 0; at + 1280 <= out.length; at += 1280) {
      const chunk = { samples: out.subarray(at, at + 1280), atS: at / RATE, rate: RATE, width: 2, channels: 1 };
      const on = armed(at);
      await veto.hear(chunk, on ? own.subarray(at, at + 1280) : undefined);
      if (on) {
        const { heard, own: vetoed } = veto.judge(await detector.process(chunk), (at + 1280) / RATE);
        const d = heard ?? vetoed;
        if (d !== undefined && !(d.atS - (candidates.at(-1)?.atS ?? -Infinity) < 1)) candidates.push({ atS: d.atS, fromS: d.atS, toS: d.atS, own: vetoed !== undefined, fit: NaN, nearDb: NaN, riseDb: NaN, keptDb: NaN, heard: true });
      } else if (wasArmed) detector.reset();
      wasArmed = on;
    }
    return candidates;
  };
  /** The canceller once over `mic`: its output and IRIS's own audio as the front end hands them on. */
  const cancel = async (mic: Int16Array, reference: EchoReference): Promise<{ out: Int16Array; own: Int16Array }> => {
    const canceller = await makeCanceller(reference);
    const out = new Int16Array(mic.length);
    const own = new Int16Array(mic.length);
    for (let at = 0; at + 1280 <= mic.length; at += 1280) {
      out.set(canceller.process(mic.subarray(at, at + 1280), at), at);
      own.set(canceller.played(at, 1280, RATE / 5), at);
    }
    canceller.destroy();
    return { out, own };
  };
  for (const part of parts) {
    const rand = random(part === 'dev' ? 124 : 2124);
    // The stop rooms, IRIS alone, then the person saying a command (not "stop") over IRIS at 0 dB,
    // one room per voice and command, drawn apart (the stop rooms stay those measured before).
    const commandRand = random(part === 'dev' ? 324 : 2324);
    // "stop" at +12 dB (a speaker beside the microphone) last, so the rooms drawn before it stay those measured before.
    const sweepConditions = CONDITIONS.filter((c) => c.says !== 'command').concat(CONDITIONS.filter((c) => c.name === 'echo 0 dB'), [{ name: 'stop over echo +12 dB', esrDb: 12, reverb: 50, says: 'stop' }]);
    for (const condition of aloneMin > 0 ? [] : sweepConditions.filter((c) => only === undefined || only.includes(c.name))) {
      for (const voice of condition.says === 'nothing' ? PEOPLE[part].slice(0, 1) : PEOPLE[part]) {
        for (const [k, command] of (condition.says === 'command' ? COMMANDS[part] : Array.from({ length: perVoice }, () => 'stop')).entries()) {
          let person: Int16Array | undefined;
          if (condition.says === 'stop') {
            const file = join(CACHE, `stop-${voice.synth}-${voice.name}.wav`);
            synthesize('stop', voice, file);
            person = decodeWav(readFileSync(file));
          }
          if (condition.says === 'command') person = decodeWav(readFileSync(makeClip({ wake: 'hey jarvis', command, voice, layout: 'one-breath', noise: 'clean' }, CACHE).wav)).subarray(Math.round(0.4 * RATE));
          if (k >= perVoice && condition.says !== 'command') break;
          const r = room(condition, part, person, drawsOf(condition.says === 'command' ? commandRand : rand));
          const reference = new EchoReference(r.played.length / RATE + 2);
          reference.write(r.played, 0);
          const { out, own } = await cancel(r.mic, reference);
          // The word itself, without the synthesiser's silence around it.
          const spoken = person ? voiced(person) : undefined;
          const wordS: [number, number] | undefined = r.personS && spoken ? [r.personS[0] + spoken[0] / RATE, r.personS[0] + spoken[1] / RATE] : undefined;
          for (const threshold of kwsSweep) {
            const armed = (at: number): boolean => reference.sounding(at - RATE / 4, at + 1280);
            const candidates = stopModel ? await spotModel(stopModel, threshold, out, own, armed) : await spot(threshold, out, r.mic, own, armed);
            heard.push({ part, condition: condition.says === 'command' ? 'a command over echo 0 dB' : condition.name, says: condition.says, person: `${voice.synth}:${voice.name}`, threshold, seconds: r.mic.length / RATE, ...(wordS ? { wordS } : {}), currentS: r.currentS ?? 0, candidates });
          }
        }
      }
      process.stderr.write(`${part} ${condition.name}: ${heard.length} rooms\n`);
    }
    if (aloneMin > 0) {
      const paragraphs = licenceParagraphs().filter((_p, i) => i % 2 === (part === 'dev' ? 0 : 1));
      for (const esrDb of aloneDb) {
        // One stream per level: paragraphs back to back, a second's pause after each.
        const pieces: Int16Array[] = [];
        const delays: number[] = [];
        for (let i = 0, s = 0; s < aloneMin * 60; i++) {
          const text = paragraphs[(i * 7 + esrDb) % paragraphs.length] ?? '';
          const speech = espeak(text, IRIS_VOICE[part]);
          const played = new Int16Array(speech.length + RATE);
          played.set(speech);
          pieces.push(played);
          delays.push(60 + Math.round(rand() * 120));
          s += played.length / RATE;
        }
        const length = pieces.reduce((n, p) => n + p.length, 0);
        const played = new Int16Array(length);
        const mix = new Float64Array(length + RATE);
        let at = 0;
        pieces.forEach((p, i) => {
          played.set(p, at);
          addInto(mix, sox(p, ['reverb', '50', '50', '60']), at + Math.round(((delays[i] ?? 100) * RATE) / 1000));
          at += p.length;
        });
        const echoPower = speechPower(toInt16(mix.subarray(0, 60 * RATE))); // the first minute: its spread of frames fits Math.max's arguments
        const noise = pink(Math.min(length, 60 * RATE));
        const noiseGain = Math.sqrt(echoPower / 10 ** ((35 + esrDb) / 10) / speechPower(noise));
        for (let k = 0; k < length; k += noise.length) addInto(mix, noise, k, noiseGain);
        const peak = mix.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
        for (let k = 0; k < mix.length; k++) mix[k] = (mix[k] ?? 0) * (29_000 / Math.max(1, peak));
        const mic = toInt16(mix).subarray(0, length);
        const reference = new EchoReference(length / RATE + 2);
        reference.write(played, 0);
        const { out, own } = await cancel(mic, reference);
        for (const threshold of kwsSweep) {
          const candidates = stopModel ? await spotModel(stopModel, threshold, out, own, () => true) : await spot(threshold, out, mic, own, () => true);
          heard.push({ part, says: 'nothing', condition: `IRIS talking on, ${esrDb >= 0 ? '+' : ''}${esrDb} dB`, person: `espeak:${IRIS_VOICE[part]}`, threshold, seconds: length / RATE, currentS: 0, candidates });
        }
        process.stderr.write(`${part} IRIS alone ${esrDb} dB: ${round(length / RATE / 60, 1)} min\n`);
      }
    }
  }
  const conditions = [...new Set(heard.map((h) => h.condition))];
  const sweep = kwsSweep.flatMap((threshold) => checks.flatMap(({ name, check }) => parts.flatMap((part) => conditions.flatMap((condition) => {
    const set = heard.filter((h) => h.part === part && h.condition === condition && h.threshold === threshold);
    if (set.length === 0) return [];
    const judged = set.map((h) => {
      const passed = h.candidates.filter((c) => !c.own && passesCheck(c, check)).map((c) => c.atS);
      const [from, to] = h.wordS ?? [Infinity, Infinity];
      const mine = passed.filter((t) => t >= from && t <= to + HEARD_WITHIN_S);
      const self = passed.filter((t) => !(t >= from && t <= to + HEARD_WITHIN_S));
      return { heard: mine.length > 0, lagMs: mine.length > 0 ? ((mine[0] ?? 0) - to) * 1000 : undefined, self: self.length, warm: self.filter((t) => t >= h.currentS).length };
    });
    const hours = set.reduce((s, h) => s + h.seconds, 0) / 3600;
    const lags = judged.flatMap((j) => (j.lagMs === undefined ? [] : [j.lagMs])).sort((a, b) => a - b);
    const says = set[0]?.says === 'stop';
    return [{
      threshold, check: name, part, condition, n: set.length,
      ...(set[0]?.says === 'command' ? { stopped_by_the_command: judged.filter((j) => j.heard).length } : {}),
      ...(says ? {
        stop_pct: Math.round((100 * judged.filter((j) => j.heard).length) / set.length),
        lag_ms_p50: lags.length ? round(lags[Math.floor(lags.length / 2)] ?? 0, 0) : null,
        lag_ms_max: lags.length ? round(lags.at(-1) ?? 0, 0) : null,
        over_300_ms: lags.filter((l) => l > 300).length,
      } : {}),
      self_stops: judged.reduce((s, j) => s + j.self, 0), self_stops_current_reply: judged.reduce((s, j) => s + j.warm, 0),
      ...(set[0]?.says === 'nothing' ? { minutes: round(hours * 60, 1), self_stops_per_hour: round(judged.reduce((s, j) => s + j.self, 0) / hours, 1) } : {}),
    }];
  }))));
  console.table(sweep);
  writeResults(process.env.IRIS_BENCH_NAME ?? 'room-stop', { parts, rooms_per_voice: perVoice, alone_min: aloneMin, thresholds: kwsSweep, checks, restart_s: restartS ?? 'default', sweep, heard });
  process.exit(0);
}

/**
 * The wake word's own-voice veto (IRIS_BENCH_OWN_WAKE=1; voice.ts `ownVoice`): IRIS alone, both
 * its replies saying "hey jarvis" (its own words, other texts held out), at 0/+6/+12 dB and +18 dB through a clipping speaker, through
 * a fresh canceller (as at a daemon's first reply): self-wakes with and without the veto, over the
 * whole room and over the current reply only (the canceller warm). And the person's "hey jarvis,
 * <command>" over IRIS (echo 0/+6/+12 dB, IRIS talking on): wake word heard with and without it.
 * Through the canceller, then the voice loop to the wake word, with IRIS's own audio fed to the
 * second detector 0.2 s ahead of its echo as room-ear.ts feeds it; and with no canceller. IRIS_BENCH_PARTS (default
 * dev), IRIS_BENCH_OWN_ROOMS rooms per condition and voice (default 8),
 * IRIS_BENCH_OWN_THRESHOLD the second detector's threshold (default wakeword.ts `OWN_VOICE_THRESHOLD`).
 * Writes scripts/results/room-own-wake.json (or IRIS_BENCH_NAME).
 */
if (process.env.IRIS_BENCH_OWN_WAKE === '1') {
  const parts = (process.env.IRIS_BENCH_PARTS ?? 'dev').split(',') as Part[];
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
  const mic = await createOpenWakeWord({ model: 'hey_jarvis' });
  const vadOwn = await createSileroVad();
  const noStt: SpeechToText = { name: 'none', transcribe: () => Promise.reject(new Error('not in this benchmark')) };
  const tts = createEspeak({ voice: 'en-us', rateWpm: 175 });
  const rows: { part: Part; condition: string; voice: string; delayMs: number; currentS: number; personS?: [number, number]; on: number[]; off: number[]; vetoed: number[]; rawOn: number[]; rawOff: number[]; onActed: number[]; offActed: number[] }[] = [];
  /** Wake detections (stream seconds) over `heard`, with `own[i]` IRIS's audio for chunk i; with the veto or without. */
  const wakes = async (heard: Int16Array, own: (Int16Array | undefined)[], veto: boolean) => {
    mic.reset();
    const at: number[] = [];
    const vetoed: number[] = [];
    const ownVeto = new OwnVoiceVeto(await createOpenWakeWord({ model: 'hey_jarvis', threshold: ownThreshold }));
    const acted: number[] = []; // where the loop acted on each (the end of the chunk it was in: later when the veto held it)
    let endS = 0;
    const source = samplesSource(heard);
    const loop = new VoiceLoop<string>({
      wake: mic, vad: vadOwn, stt: noStt, tts, sink: new CollectingSink(), end: 'wake',
      respond: () => { throw new Error('not reached'); },
      ...(veto ? { ownVoice: { veto: ownVeto, audio: (chunk) => own[Math.round((chunk.atS * RATE) / 1280)] } } : {}),
      onRun: (run) => { if (run.wake) { at.push(round(run.wake.atS, 2)); acted.push(round(endS, 2)); } },
      onEvent: (event) => { if (event.type === 'own-wake') vetoed.push(round(Number(event.data?.atS ?? 0), 2)); },
    });
    await loop.run({ async *frames(signal) { for await (const chunk of source.frames(signal)) { endS = chunk.atS + chunk.samples.length / RATE; yield chunk; } } }, new AbortController().signal);
    return { at, vetoed, acted };
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
          const person = condition.says === 'command' ? decodeWav(readFileSync(makeClip({ wake: 'hey jarvis', command, voice, layout: 'one-breath', noise: 'clean' }, CACHE).wav)).subarray(Math.round(0.4 * RATE)) : undefined;
          const r = room(says, part, person, draws);
          const reference = new EchoReference(r.played.length / RATE + 2);
          reference.write(r.played, 0);
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
          rows.push({ part, condition: condition.name, voice: `${voice.synth}:${voice.name}`, delayMs: r.delayMs, currentS: round(r.currentS ?? 0, 2), ...(r.personS ? { personS: r.personS.map((x) => round(x, 2)) as [number, number] } : {}), on: on.at, off: off.at, vetoed: on.vetoed, rawOn: rawOn.at, rawOff: rawOff.at, onActed: on.acted, offActed: off.acted });
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
  process.exit(0);
}

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
if (process.env.IRIS_BENCH_EARLY === '1') {
  const parts = (process.env.IRIS_BENCH_PARTS ?? 'dev').split(',') as Part[];
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
  const [wakeEarly, vadEarly] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis' }), createSileroVad()]);
  const shared = await earlyParts(join(CACHE, `state-early-${process.pid}`));
  const { config: earlyConfig } = shared;
  const gateOf = (over: boolean) => (over ? Math.max(earlyConfig.stt.min_confidence, earlyConfig.stt.over_speech_confidence) : earlyConfig.stt.min_confidence);
  const rows: (EarlyRow & { over: boolean; selfStops: number; echoChunks: number; echoAt: number[][]; echoMaxDb?: number; takeBackDb?: number; delayMs?: number; erleDb?: number; lateEchoSamples: number; roomDelayMs: number })[] = [];
  /** A WAV as 16 kHz mono (sox's resampler: what the speaker sounds; the reference is the Speaker's own quick one). */
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
          const built = condition.clean ? undefined : room(condition, part, person, draws);
          const r: Room = built && condition.irisDone ? room(condition, part, person, draws, built.currentS) : (built ?? { mic: whole, played: new Int16Array(whole.length), personS: [0, whole.length / RATE], delayMs: 0 });
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
          const canceller = condition.clean ? undefined : await makeCanceller(reference);
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
  process.exit(0);
}

/**
 * Two sound cards' clocks (IRIS_BENCH_DRIFT="-300,-100,-50,0,50,100,300": the speaker's clock
 * against the microphone's, ppm; positive: the speaker runs fast, so the echo's delay shrinks).
 * A USB microphone and an onboard speaker each count samples by their own crystal (tens of ppm
 * off nominal, a few hundred at worst): the echo path is resampled by that much (sox `speed`,
 * after the room's reverb), over a long stretch of IRIS talking: an earlier reply, 2 s of
 * silence, then IRIS reading on for IRIS_BENCH_DRIFT_S (default 70 s; licence texts, as the stop
 * word's "talking on" mode) at IRIS_BENCH_DRIFT_DB echo-to-speech (default 0). Near its end the
 * person says "stop" (12 s before) and "hey jarvis, <command>" (6 s before). One canceller
 * throughout, as the daemon keeps it. Per 5 s: the delay the canceller uses against the echo's
 * true one, and ERLE (IRIS alone: the person's words left out). Per room: the person's "stop"
 * and wake word heard, self-stops and self-wakes, the delay changes the canceller took.
 * IRIS_BENCH_ECHO_OPTS (JSON `EchoCancellerOptions`) tries tracker settings. IRIS_BENCH_PARTS
 * (default dev); `--quick`: one voice. Writes scripts/results/room-drift.json (or IRIS_BENCH_NAME).
 */
if (process.env.IRIS_BENCH_DRIFT !== undefined) {
  const ppms = process.env.IRIS_BENCH_DRIFT.split(',').map(Number);
  const parts = (process.env.IRIS_BENCH_PARTS ?? 'dev').split(',') as Part[];
  const longS = Number(process.env.IRIS_BENCH_DRIFT_S ?? 70);
  const esrDb = Number(process.env.IRIS_BENCH_DRIFT_DB ?? 0);
  const echoOptions = JSON.parse(process.env.IRIS_BENCH_ECHO_OPTS ?? '{}') as EchoCancellerOptions;
  const WINDOW_S = 5;
  const wakeDrift = await createOpenWakeWord({ model: 'hey_jarvis' });
  const paragraphsAll = licenceParagraphs();
  const rows: Record<string, unknown>[] = [];
  const table: Record<string, unknown>[] = [];
  for (const part of parts) {
    const rand = random(part === 'dev' ? 524 : 2524);
    const paragraphs = paragraphsAll.filter((_p, i) => i % 2 === (part === 'dev' ? 0 : 1));
    const voices = quick ? PEOPLE[part].slice(0, 1) : PEOPLE[part];
    for (const [v, voice] of voices.entries()) {
      // The same IRIS and person for every ppm: only the clocks differ.
      const earlier = espeak(REPLIES[v % REPLIES.length] ?? '', IRIS_VOICE[part]);
      const pieces: Int16Array[] = [];
      for (let i = 0, s = 0; s < longS; i++) {
        const speech = espeak(paragraphs[(v * 3 + i) % paragraphs.length] ?? '', IRIS_VOICE[part]);
        pieces.push(speech);
        s += speech.length / RATE;
      }
      const long = new Int16Array(Math.round(longS * RATE));
      for (let at = 0, i = 0; at < long.length; at += pieces[i]?.length ?? 0, i++) long.set((pieces[i] ?? new Int16Array(0)).subarray(0, long.length - at), at);
      const longAt = earlier.length + 2 * RATE;
      const length = longAt + long.length + 2 * RATE;
      const played = new Int16Array(length);
      played.set(earlier, 0);
      played.set(long, longAt);
      const command = COMMANDS[part][v % COMMANDS[part].length] ?? '';
      const wakeClip = decodeWav(readFileSync(makeClip({ wake: 'hey jarvis', command, voice, layout: 'one-breath', noise: 'clean' }, CACHE).wav)).subarray(Math.round(0.4 * RATE));
      const stopFile = join(CACHE, `stop-${voice.synth}-${voice.name}.wav`);
      synthesize('stop', voice, stopFile);
      const stopClip = decodeWav(readFileSync(stopFile));
      const stopAt = longAt + long.length - 12 * RATE;
      const wakeAt = longAt + long.length - 6 * RATE;
      const [stopFrom, stopTo] = voiced(stopClip);
      const delay0 = Math.round(((40 + rand() * 160) * RATE) / 1000);
      const reverb = ['reverb', '50', '50', '60'];
      const personPower = speechPower(wakeClip);
      const people = new Float64Array(length);
      addInto(people, sox(stopClip, reverb), stopAt);
      addInto(people, sox(wakeClip, reverb), wakeAt);
      const personS: [number, number][] = [[(stopAt + stopFrom) / RATE, (stopAt + stopTo) / RATE], [wakeAt / RATE, (wakeAt + wakeClip.length) / RATE]];
      for (const ppm of ppms) {
        // The echo: the room's reverb, then the two clocks (sox's resampler), `delay0` late at the start.
        const echo = sox(played, [...reverb, ...(ppm === 0 ? [] : ['speed', String(1 + ppm * 1e-6)])]);
        const mix = Float64Array.from(people);
        addInto(mix, echo, delay0, Math.sqrt((personPower * 10 ** (esrDb / 10)) / speechPower(echo.subarray(longAt, longAt + 30 * RATE))));
        const noise = pink(Math.min(length, 60 * RATE));
        const noiseGain = Math.sqrt(personPower / 10 ** (35 / 10) / speechPower(noise));
        for (let k = 0; k < length; k += noise.length) addInto(mix, noise, k, noiseGain);
        const peak = mix.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
        for (let k = 0; k < mix.length; k++) mix[k] = (mix[k] ?? 0) * (29_000 / Math.max(1, peak));
        const r: Room = { mic: toInt16(mix), played, delayMs: (delay0 * 1000) / RATE };
        /** The echo's true delay at microphone sample `at` (ms): played sample k sounds at delay0 + k / (1 + ppm). */
        const trueMs = (at: number) => ((at - (at - delay0) * (1 + ppm * 1e-6)) * 1000) / RATE;
        const inPerson = (at: number, slackS = 0.5) => personS.some(([a, b]) => at / RATE >= a - 0.2 && at / RATE <= b + slackS);
        const windows: { t: number; trueMs: number; usedMs: number | null; erleDb: number | null; mic: number; out: number }[] = [];
        const changes: { t: number; ms: number }[] = [];
        let lastAt = 0;
        const front = await throughFrontEnd(r, {
          // The tracker's steps (the drift's rate moves the delay in between: `used` per window).
          options: { ...echoOptions, onDelay: (ms) => changes.push({ t: round(lastAt / RATE, 1), ms: round(ms, 1) }) },
          onChunk: (at, micIn, out, canceller) => {
            lastAt = at;
            const w = Math.floor(at / (WINDOW_S * RATE));
            while (windows.length <= w) windows.push({ t: windows.length * WINDOW_S, trueMs: round(trueMs((windows.length + 0.5) * WINDOW_S * RATE), 2), usedMs: null, erleDb: null, mic: 0, out: 0 });
            const win = windows[w];
            if (!win) return;
            win.usedMs = canceller.stats.delayMs === undefined ? null : round(canceller.stats.delayMs, 2);
            if (inPerson(at) || played.subarray(Math.max(0, at - delay0 - RATE / 4), at).every((x) => x === 0)) return; // IRIS alone, sounding
            for (let i = 0; i < micIn.length; i++) { win.mic += (micIn[i] ?? 0) ** 2; win.out += (out[i] ?? 0) ** 2; }
          },
        });
        for (const w of windows) w.erleDb = w.mic > 0 && w.out > 0 ? round(10 * Math.log10(w.mic / w.out), 1) : null;
        // The wake word over the cancelled stream, as the loop hears it.
        wakeDrift.reset();
        const wakes: number[] = [];
        for (let at = 0; at + 1280 <= front.samples.length; at += 1280) {
          const detection = await wakeDrift.process({ ...SPEECH_FORMAT, samples: front.samples.subarray(at, at + 1280), atS: at / RATE });
          if (detection) { wakes.push(round(detection.atS, 2)); wakeDrift.reset(); }
        }
        const heardIn = (times: number[], [a, b]: [number, number]) => times.some((t) => t >= a && t <= b + 0.5);
        const stopHeard = heardIn(front.stops, personS[0] ?? [0, 0]);
        const wakeHeard = heardIn(wakes, personS[1] ?? [0, 0]);
        const selfStops = front.stops.filter((t) => !personS.some((p) => heardIn([t], p))).length;
        const selfWakes = wakes.filter((t) => !personS.some((p) => heardIn([t], p))).length;
        const longFrom = Math.ceil(longAt / RATE / WINDOW_S);
        const longTo = Math.floor((longAt + long.length - 12 * RATE) / RATE / WINDOW_S); // before the person
        const inLong = windows.slice(longFrom, longTo).filter((w) => w.erleDb !== null);
        const errors = windows.filter((w) => w.usedMs !== null && w.t >= 5).map((w) => Math.abs((w.usedMs ?? 0) - w.trueMs));
        const row = {
          part, ppm, voice: `${voice.synth}:${voice.name}`, command, delay0Ms: round((delay0 * 1000) / RATE, 1),
          delayEndMs: round(trueMs(length), 1), stopHeard, wakeHeard, selfStops, selfWakes, stops: front.stops.map((t) => round(t, 2)), wakes,
          delayErrorMaxMs: round(Math.max(0, ...errors), 1), delayErrorEndMs: round(errors.at(-1) ?? NaN, 1),
          erleLongFirstDb: inLong[0]?.erleDb ?? null, erleLongLastDb: inLong.at(-1)?.erleDb ?? null,
          erleLongMinDb: inLong.length ? Math.min(...inLong.map((w) => w.erleDb ?? 0)) : null,
          erleLongMeanDb: inLong.length ? round(inLong.reduce((a, w) => a + (w.erleDb ?? 0), 0) / inLong.length, 1) : null,
          changes, windows: windows.map(({ mic: _m, out: _o, ...w }) => w),
        };
        rows.push(row);
        process.stderr.write(`${part} ${row.voice} ${ppm} ppm: delay ${row.delay0Ms} → ${row.delayEndMs} ms, used error max ${row.delayErrorMaxMs} ms (end ${row.delayErrorEndMs}), ${changes.length} changes; ERLE over the long reply first/last/min/mean ${row.erleLongFirstDb}/${row.erleLongLastDb}/${row.erleLongMinDb}/${row.erleLongMeanDb} dB; stop ${stopHeard ? 'heard' : 'missed'}, wake ${wakeHeard ? 'heard' : 'missed'}, self-stops ${selfStops}, self-wakes ${selfWakes}\n`);
      }
    }
    for (const ppm of ppms) {
      const set = rows.filter((r) => r.part === part && r.ppm === ppm) as { stopHeard: boolean; wakeHeard: boolean; selfStops: number; selfWakes: number; delayErrorMaxMs: number; erleLongFirstDb: number | null; erleLongLastDb: number | null; erleLongMinDb: number | null; erleLongMeanDb: number | null; changes: unknown[] }[];
      const mean = (xs: (number | null)[]) => { const ys = xs.filter((x): x is number => x !== null); return ys.length ? round(ys.reduce((a, b) => a + b, 0) / ys.length, 1) : null; };
      table.push({
        part, ppm, n: set.length, delay_error_max_ms: Math.max(...set.map((r) => r.delayErrorMaxMs)), changes: set.reduce((n, r) => n + r.changes.length, 0),
        erle_first_db: mean(set.map((r) => r.erleLongFirstDb)), erle_last_db: mean(set.map((r) => r.erleLongLastDb)), erle_min_db: mean(set.map((r) => r.erleLongMinDb)), erle_mean_db: mean(set.map((r) => r.erleLongMeanDb)),
        stop_heard: set.filter((r) => r.stopHeard).length, wake_heard: set.filter((r) => r.wakeHeard).length, self_stops: set.reduce((n, r) => n + r.selfStops, 0), self_wakes: set.reduce((n, r) => n + r.selfWakes, 0),
      });
    }
  }
  console.table(table);
  writeResults(process.env.IRIS_BENCH_NAME ?? 'room-drift', { parts, ppms, long_s: longS, esr_db: esrDb, echo_options: echoOptions, window_s: WINDOW_S, table, rows });
  process.exit(0);
}

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
if (process.env.IRIS_BENCH_WAKE_PATHS === '1') {
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
    const reference = new EchoReference(played.length / RATE + 2);
    reference.write(played, 0);
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
          const person = decodeWav(readFileSync(makeClip({ wake: 'hey jarvis', command, voice, layout: 'one-breath', noise: 'clean' }, CACHE).wav)).subarray(Math.round(0.4 * RATE));
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
  process.exit(0);
}

// The parts, loaded once, as bench-understanding.ts does.
const config = parseConfig('[assistant]\ntimezone = "Europe/Berlin"\n', 'bench');
const [wake, vad] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis' }), createSileroVad()]);
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

/**
 * False wakes over continuous speech (IRIS_BENCH_FALSE_WAKE_MIN, minutes; default off): a person
 * reading for that long (pocketsphinx-testdata's LibriVox recordings at three tempos and three
 * pitches, then flite and festival voices reading the licences in /usr/share/common-licenses,
 * back to back), through the front end (IRIS silent: the canceller passes it through, the
 * stop word is not armed) and the wake word. And IRIS's own voice (IRIS_BENCH_OWN_VOICE_MIN,
 * default the same): espeak-ng reading those texts from its speaker, loud at the microphone through a room,
 * one canceller kept throughout as the daemon keeps it: self-wakes and self-stops per hour,
 * and the raw microphone's wakes as the baseline. Writes scripts/results/room-false-wakes.json.
 */
const falseWakeMin = Number(process.env.IRIS_BENCH_FALSE_WAKE_MIN ?? 0);
/** The stop word's `-kws_threshold` to try instead of its default, e.g. IRIS_BENCH_KWS_THRESHOLD=1e-10. */
const stopThreshold = process.env.IRIS_BENCH_KWS_THRESHOLD === undefined ? undefined : Number(process.env.IRIS_BENCH_KWS_THRESHOLD);
if (falseWakeMin > 0) {
  const ownMin = Number(process.env.IRIS_BENCH_OWN_VOICE_MIN ?? falseWakeMin);
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
  const kwsDelay = process.env.IRIS_BENCH_KWS_DELAY === undefined ? undefined : Number(process.env.IRIS_BENCH_KWS_DELAY);
  const stopWord = await StopWord.create({ ...stopOptions, ...(stopThreshold === undefined ? {} : { threshold: stopThreshold }), ...(kwsDelay === undefined ? {} : { kwsDelay }), onCandidate: (c) => candidates.push(c) });
  const rand = random(77);
  let clock = 0;
  /** Where each paragraph starts on the stream (samples) and its text, to say what IRIS was reading at a self-stop. */
  const readings: { at: number; text: string; voice: string }[] = [];
  const own = { wakes: 0, baselineWakes: 0, stops: 0, wakeAt: [] as number[], stopAt: [] as number[] };
  /** The stream kept (microphone, canceller output, IRIS's own audio as the stop word got it), to dump the audio around a self-stop. */
  const kept = { mic: [] as Int16Array[], out: [] as Int16Array[], own: [] as Int16Array[] };
  const rawWake = await createOpenWakeWord({ model: 'hey_jarvis' }); // the baseline: the raw microphone
  const ownS = await stream(ownMin, (i) => {
    const text = paragraphs[(i * 7) % paragraphs.length];
    if (text === undefined) return undefined;
    const played = new Int16Array(espeak(text, i % 2 === 0 ? 'en-us' : 'en-gb').length + RATE); // a second's pause after each
    played.set(espeak(text, i % 2 === 0 ? 'en-us' : 'en-gb'));
    const delayMs = 60 + Math.round(rand() * 120);
    const echo = sox(played, ['reverb', '50', '50', '60']);
    const mix = new Float64Array(played.length);
    addInto(mix, echo, Math.round((delayMs * RATE) / 1000));
    addInto(mix, pink(played.length), 0, 0.3);
    const peak = mix.reduce((m, v) => Math.max(m, Math.abs(v)), 0); // the microphone's gain: loud, not clipped
    for (let k = 0; k < mix.length; k++) mix[k] = (mix[k] ?? 0) * (29_000 / Math.max(1, peak));
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
    // The stop word's stream seconds are the chunk's end (as the front end passes them).
    if (armed && stopWord.push(out, ownAudio, atS + chunk.length / RATE, chunk) !== undefined) { own.stops++; own.stopAt.push(round(atS, 1)); }
    if (await wake.process({ ...SPEECH_FORMAT, samples: out, atS })) { own.wakes++; own.wakeAt.push(round(atS, 1)); wake.reset(); }
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
    stop_kws_threshold: stopThreshold ?? 'default',
    person_reading: { minutes: round(personS / 60, 1), wakes: personWakes, per_hour: perHour(personWakes, personS), at_s: personWakeAt },
    iris_own_voice: { minutes: round(ownS / 60, 1), echo: 'espeak-ng en-us/en-gb, 60-180 ms late, reverb 50 %, microphone peaks at 29,000 of 32,767', self_wakes: own.wakes, self_wakes_per_hour: perHour(own.wakes, ownS), self_stops: own.stops, self_stops_per_hour: perHour(own.stops, ownS), baseline_self_wakes: own.baselineWakes, wake_at_s: own.wakeAt, stop_at_s: own.stopAt, self_stops_examined: selfStops },
    stop_candidates: candidates,
    readings: readings.map((r) => ({ at_s: round(r.at / RATE, 2), voice: r.voice, text: r.text.slice(0, 80) })),
  };
  console.log(figures);
  writeResults(process.env.IRIS_BENCH_NAME ?? 'room-false-wakes', figures);
  process.exit(0);
}

const key = (name: string, args: Record<string, unknown>) => `${name} ${JSON.stringify(args)}`;
async function expectedCall(command: string): Promise<string> {
  const m = await matchIntent(command);
  if (m?.intent.tool === undefined) throw new Error(`"${command}" matches no intent`);
  return key(m.intent.tool, m.args);
}

interface FrontEndResult { samples: Int16Array; stops: number[]; cpuS: number; cancellerCpuS: number; chunkMs: number[]; erleDb?: number; delayMs?: number; clipLevel?: number }

/** The daemon's front end over a recording (room-ear.ts's file wiring), timed. */
async function throughFrontEnd(r: Room, watch: { options?: EchoCancellerOptions; onChunk?: (at: number, mic: Int16Array, out: Int16Array, canceller: EchoCanceller) => void } = {}): Promise<FrontEndResult> {
  const reference = new EchoReference(r.played.length / RATE + 2);
  reference.write(r.played, 0);
  const canceller = await makeCanceller(reference, { ...(suppressDb === undefined ? {} : { echoSuppressDb: suppressDb, echoSuppressActiveDb: Math.min(0, suppressDb) }), ...watch.options });
  // The canceller's own CPU, apart from the stop word's: its process() timed as the front end calls it.
  let cancellerCpuUs = 0;
  const cancelProcess = canceller.process.bind(canceller);
  canceller.process = (samples, at) => {
    const before = process.cpuUsage();
    const out = cancelProcess(samples, at);
    const used = process.cpuUsage(before);
    cancellerCpuUs += used.user + used.system;
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
  const { erleDb, delayMs, clipLevel } = canceller.stats;
  canceller.destroy();
  stopWord.free();
  return { samples, stops, cpuS: (cpu.user + cpu.system) / 1e6, cancellerCpuS: cancellerCpuUs / 1e6, chunkMs, ...(erleDb === undefined ? {} : { erleDb }), ...(delayMs === undefined ? {} : { delayMs }), ...(clipLevel === undefined ? {} : { clipLevel }) };
}

interface LoopResult { wake: boolean; wakeAtS?: number; made: string; confidence: number; transcript: string; details?: Record<string, unknown>; endS?: number; endState?: string }

/** `distorted`: the canceller found the speaker clipping (the daemon's `echoDistorted`, room-ear.ts `RoomStats.clipping`). */
async function runLoop(samples: Int16Array, end: 'conversation' | 'wake' = 'conversation', overSpeech = false, distorted = false): Promise<LoopResult> {
  const conversation = new Conversation({
    config, host, log: silentLogger,
    backend: { chat: () => Promise.reject(new Error('no model in this benchmark')) } as never,
    tokenizer: () => Promise.reject(new Error('no model')),
  });
  const loop = new VoiceLoop<TurnResult>({
    wake, vad, stt, tts, sink: new CollectingSink(), followUpS: 0, minConfidence: 0, end, ...(preRollS === undefined ? {} : { preRollS }), ...(echoTailS === undefined ? {} : { echoTailS }), overSpeech: () => overSpeech, echoDistorted: () => distorted,
    commandState: prefixState, completePauseS: config.audio.complete_pause_s, incompletePauseS: config.audio.incomplete_pause_s,
    respond: (text, signal, heard) => conversation.turn(text, signal, heard),
    onEvent: (event) => {
      if (event.type === 'stt-end' && event.data) {
        const { text: _t, raw: _r, ...rest } = event.data;
        details = rest;
      }
      if (event.type === 'end_of_speech-end') ended = { endS: round(Number(event.data?.atS), 2), endState: String(event.data?.state) };
    },
  });
  let details: Record<string, unknown> | undefined;
  let ended: { endS: number; endState: string } | undefined;
  wake.reset();
  const [run] = await loop.run(samplesSource(samples), new AbortController().signal, true) as [VoiceRun<TurnResult> | undefined];
  const call = run?.result?.route === 'local' ? run.result.tool_calls[0] : undefined;
  return { wake: run?.wake !== undefined, ...(run?.wake ? { wakeAtS: run.wake.atS } : {}), made: call ? key(call.name, call.arguments) : '', confidence: run?.confidence ?? 0, transcript: run?.transcript ?? '', ...(details ? { details } : {}), ...ended };
}

interface Row {
  part: Part; condition: string; person: string; says: string; expected: string; over: boolean; delayMs: number;
  measuredDelayMs?: number; erleDb?: number;
  /** Where the person's clip starts and ends (seconds). */
  personS?: [number, number];
  cancelled: { wake: boolean; wakeAtS?: number; endS?: number; endState?: string; right: boolean; wrong: boolean; stop: boolean; selfStops: number; transcript: string; confidence: number; made: string; details?: Record<string, unknown> };
  baseline: { wake: boolean; right: boolean; wrong: boolean };
  audioS: number; cpuS: number; cancellerCpuS: number; chunkMsP95: number; chunkMsMax: number;
}

const minConfidence = config.stt.min_confidence;
const overSpeechMinConfidence = config.stt.over_speech_confidence;
const rows: Row[] = [];
const started = performance.now();
for (const part of PARTS) {
  const rand = random(part === 'dev' ? 24 : 2024);
  const people = quick ? PEOPLE[part].slice(0, 2) : PEOPLE[part];
  const commands = quick ? COMMANDS[part].slice(0, 2) : COMMANDS[part];
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
        if (condition.says === 'command') person = decodeWav(readFileSync(makeClip({ wake: 'hey jarvis', command, voice, layout: 'one-breath', noise: 'clean' }, CACHE).wav)).subarray(Math.round(0.4 * RATE));
        if (condition.says === 'stop') {
          const file = join(CACHE, `stop-${voice.synth}-${voice.name}.wav`);
          synthesize('stop', voice, file);
          person = decodeWav(readFileSync(file));
        }
        const draws = drawsOf(rand);
        const cached = join(CACHE, `front-${[part, condition.name, voice.synth, voice.name, command, bargeIn, suppressDb ?? 'd', quick ? 'quick' : 'full', echoEngine, JSON.stringify(webrtcSettings ?? {}), ...(bargeCutS === 0.2 ? [] : [`cut${bargeCutS}`]), `filter${filterMs}`, ...(clipModel === undefined ? [] : [`clip${Number(clipModel)}`])].join('_').replace(/[^a-z0-9+.-]+/gi, '_')}`);
        let r: Room;
        let front: FrontEndResult;
        try {
          if (!reuseFront) throw new Error('not reused');
          const meta = JSON.parse(readFileSync(`${cached}.json`, 'utf8')) as { room: Omit<Room, 'mic' | 'played'>; front: Omit<FrontEndResult, 'samples'> };
          r = { ...meta.room, mic: decodeWav(readFileSync(`${cached}-mic.wav`)), played: new Int16Array(0) };
          front = { ...meta.front, samples: decodeWav(readFileSync(`${cached}-front.wav`)) };
        } catch {
          r = room(condition, part, person, draws);
          front = await throughFrontEnd(r);
          if (bargeIn && condition.says === 'command' && condition.esrDb !== undefined) {
            // The daemon stops talking when it hears the wake word (barge-in, within 200 ms):
            // the recording it would make is the same room with IRIS cut there.
            const heard = await runLoop(front.samples, 'wake');
            if (heard.wakeAtS !== undefined) {
              r = room(condition, part, person, draws, heard.wakeAtS + bargeCutS);
              front = await throughFrontEnd(r);
            }
          }
          if (reuseFront) {
            const { mic: _m, played: _p, ...roomMeta } = r;
            const { samples: _s, ...frontMeta } = front;
            writeFileSync(`${cached}.json`, JSON.stringify({ room: roomMeta, front: frontMeta }));
            writeFileSync(`${cached}-mic.wav`, encodeWav(r.mic));
            writeFileSync(`${cached}-front.wav`, encodeWav(front.samples));
          }
        }
        const expected = condition.says === 'command' ? await expectedCall(command) : '';
        // IRIS was talking when the person began: the loop's `overSpeech`, as the daemon sets it.
        const over = overSpeechOn && condition.esrDb !== undefined;
        // The loop's own gate (it runs with 0 here, so what it would have done is kept).
        const gate = over ? Math.max(minConfidence, overSpeechMinConfidence) : minConfidence;
        const judge = (result: { wake: boolean; made: string; confidence: number }) => ({
          wake: result.wake,
          right: expected !== '' && result.made === expected && result.confidence >= gate,
          wrong: result.made !== '' && result.made !== expected && result.confidence >= gate,
        });
        const none: LoopResult = { wake: false, made: '', confidence: 0, transcript: '' };
        if (frontOnly) continue;
        const withFront = condition.says === 'command' || condition.says === 'nothing' ? await runLoop(front.samples, 'conversation', over, front.clipLevel !== undefined) : none;
        const without = baselineOn && (condition.says === 'command' || condition.says === 'nothing') ? await runLoop(r.mic, 'conversation', over) : none;
        const [from, to] = r.personS ?? [Infinity, Infinity];
        const stopHeard = front.stops.some((s) => s >= from && s <= to + 0.3);
        const selfStops = front.stops.filter((s) => !(s >= from && s <= to + 0.3)).length;
        const sorted = [...front.chunkMs].sort((a, b) => a - b);
        rows.push({
          part, condition: condition.name, person: `${voice.synth}:${voice.name}`, says: command, expected, over, delayMs: r.delayMs,
          ...(front.delayMs === undefined ? {} : { measuredDelayMs: round(front.delayMs, 1) }),
          ...(front.erleDb === undefined ? {} : { erleDb: round(front.erleDb, 1) }),
          ...(r.personS ? { personS: [round(r.personS[0], 2), round(r.personS[1], 2)] as [number, number] } : {}),
          cancelled: { ...judge(withFront), ...(withFront.wakeAtS === undefined ? {} : { wakeAtS: round(withFront.wakeAtS, 2) }), ...(withFront.endS === undefined ? {} : { endS: withFront.endS, endState: withFront.endState }), stop: stopHeard, selfStops, transcript: withFront.transcript, confidence: withFront.confidence, made: withFront.made, ...(withFront.details ? { details: withFront.details } : {}) },
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
        baseline_wake_pct: pct(set.filter((r) => r.baseline.wake).length, set.length),
        baseline_understood_pct: pct(set.filter((r) => r.baseline.right).length, set.length),
        baseline_wrong: set.filter((r) => r.baseline.wrong).length,
      } : {}),
      ...(condition.says === 'stop' ? { stop_pct: pct(set.filter((r) => r.cancelled.stop).length, set.length) } : {}),
      ...(condition.says === 'nothing' ? { self_wakes: set.filter((r) => r.cancelled.wake).length, baseline_self_wakes: set.filter((r) => r.baseline.wake).length } : {}),
      self_stops: set.reduce((s, r) => s + r.cancelled.selfStops, 0),
      ...(erles.length ? { erle_db_mean: round(erles.reduce((a, b) => a + b, 0) / erles.length, 1) } : {}),
      ...(delayErrors.length ? { delay_error_ms_max: round(Math.max(...delayErrors), 1) } : {}),
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
writeResults(process.env.IRIS_BENCH_NAME ?? 'room', { quick, echo_canceller: echoEngine, barge_in: bargeIn, barge_in_cut_s: bargeCutS, only: only ?? 'all', residual_echo_suppress_db: suppressDb ?? 'default', pre_roll_s: preRollS ?? 'default', echo_tail_s: echoTailS ?? 'default', over_speech: overSpeechOn, min_confidence: minConfidence, over_speech_confidence: overSpeechMinConfidence, summary, table, rows });
