/**
 * Train a "stop" model for openWakeWord's keyword slot: a small classifier over its speech
 * embeddings (the [16 × 96] window its wake-word models see), so "stop" is heard on the
 * features the wake word already computes instead of by a second recogniser.
 *
 *   npx tsx scripts/train-stop-word.ts [--rooms N] OUT.onnx
 *
 * The data is made here, from voices and texts that no benchmark measures with: the person
 * says "stop" (or a word like it, or something else, or nothing) in espeak-ng voices that are
 * in neither part of scripts/bench-room.ts nor scripts/lib/speech-set.ts's held-out set,
 * pitched and paced at random, over IRIS talking (espeak-ng reading sentences of this
 * repository's docs, not the bench's replies or licence texts) through a room (sox reverb, a
 * 40–200 ms delay, −10…+12 dB echo-to-speech, sometimes a clipping speaker, babble, noise),
 * and the real echo canceller (pipeline/echo.ts) runs over it. Windows whose last 0–0.4 s hold
 * the word's end are "stop"; windows without it are not; those in between are left out.
 * scripts/lib/train-classifier.py fits the classifier (numpy) and writes the ONNX.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EchoCanceller, EchoReference } from '../src/pipeline/echo.js';
import { decodeWav, encodeWav } from '../src/pipeline/wav.js';
import { createEmbeddingStream } from '../src/pipeline/wakeword.js';
import { random } from './lib/bench.js';

const RATE = 16_000;
const CHUNK = 1280;
const out = process.argv.at(-1);
if (out === undefined || !out.endsWith('.onnx')) throw new Error('usage: train-stop-word.ts [--rooms N] OUT.onnx');
const rooms = process.argv.includes('--rooms') ? Number(process.argv[process.argv.indexOf('--rooms') + 1]) : 240;
const CACHE = join(tmpdir(), 'iris-stop-train');
mkdirSync(CACHE, { recursive: true });

/** The person: espeak-ng variants no bench uses (bench-room's people are flite and festival; speech-set's held-out espeak voices are left out). */
const PEOPLE = ['en-us+m1', 'en-us+m2', 'en-us+m4', 'en-us+m5', 'en-us+m6', 'en-us+m7', 'en-us+f1', 'en-us+f2', 'en-us+f4', 'en-gb-x-gbclan', 'en-gb-x-gbcwmd', 'en-gb-x-gbclan+f2', 'en-gb-x-gbcwmd+m4', 'en-us+klatt', 'en-us+croak', 'en-us+whisper'];
/** IRIS: its default voice and two others, reading other text than the benches'. */
const IRIS = ['en-us', 'en-gb-x-gbclan', 'en-us+f5'];
/** Words like "stop", and other things a person says while IRIS talks. */
const OTHERS = ['top', 'shop', 'stock', 'spot', 'step', 'stuff', 'start', 'store', 'stay', 'drop', 'hop', 'cop', 'stomp', 'hey jarvis', 'what time is it', 'okay', 'thanks', 'no', 'stand', 'sport'];

const rand = random(7);
const pick = <T>(items: T[]): T => items[Math.floor(rand() * items.length)]!;
const between = (lo: number, hi: number): number => lo + rand() * (hi - lo);

function sox(samples: Int16Array, effects: string[]): Int16Array {
  const file = join(CACHE, `sox-${process.pid}`);
  writeFileSync(`${file}.in.wav`, encodeWav(samples));
  execFileSync('sox', ['-D', '-R', `${file}.in.wav`, `${file}.out.wav`, ...effects], { stdio: 'ignore' });
  return decodeWav(readFileSync(`${file}.out.wav`));
}

function speak(text: string, voice: string, wpm: number, pitch: number): Int16Array {
  const raw = join(CACHE, `raw-${process.pid}.wav`);
  execFileSync('espeak-ng', ['-v', voice, '-s', String(Math.round(wpm)), '-p', String(Math.round(pitch)), '-w', raw, '--', text]);
  return decodeWav(execFileSync('sox', ['-D', raw, '-r', '16000', '-c', '1', '-b', '16', '-t', 'wav', '-'], { stdio: ['ignore', 'pipe', 'ignore'] }));
}

/** Sentences of the docs, 8–30 words each. */
const SENTENCES = readdirSync('docs').flatMap((f) => readFileSync(join('docs', f), 'utf8').replace(/`[^`]*`|\|[^\n]*|[#*_>[\]()]/g, ' ').split(/(?<=[.!?])\s+/))
  .map((s) => s.replace(/[^A-Za-z,.' ]/g, ' ').replace(/\s+/g, ' ').trim()).filter((s) => { const n = s.split(' ').length; return n >= 8 && n <= 30; });

function power(samples: Int16Array): number {
  let sum = 0;
  let n = 0;
  for (const v of samples) if (Math.abs(v) > 300) { sum += v * v; n++; }
  return n ? sum / n : 1;
}

function voiced(samples: Int16Array): [number, number] {
  const peak = samples.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  let from = 0;
  let to = samples.length;
  while (from < to && Math.abs(samples[from]!) <= peak * 0.02) from++;
  while (to > from && Math.abs(samples[to - 1]!) <= peak * 0.02) to--;
  return [from, to];
}

const babble = (() => {
  const dir = '/usr/share/pocketsphinx/test/data/librivox';
  const clips = readdirSync(dir).filter((f) => f.endsWith('.wav')).map((f) => decodeWav(readFileSync(join(dir, f))));
  const all = new Int16Array(clips.reduce((s, c) => s + c.length, 0));
  clips.reduce((at, c) => (all.set(c, at), at + c.length), 0);
  return all;
})();

const features = await createEmbeddingStream();
const windows: Float32Array[] = [];
const labels: number[] = [];
const groups: number[] = [];
let positives = 0;
for (let r = 0; r < rooms; r++) {
  const irisVoice = pick(IRIS);
  const reply = speak(`${pick(SENTENCES)} ${pick(SENTENCES)}`, irisVoice, between(150, 190), 50);
  const kind = rand();
  const says = kind < 0.55 ? 'stop' : kind < 0.85 ? pick(OTHERS) : '';
  const reverb = ['reverb', String(Math.round(between(10, 60))), '50', String(Math.round(between(40, 90)))];
  const person = says ? sox(speak(says, pick(PEOPLE), between(130, 220), between(25, 75)), reverb) : new Int16Array(0);
  const lead = Math.round(between(1.5, 4) * RATE);
  const personAt = lead + Math.round(between(0.5, Math.max(0.6, reply.length / RATE - 1.5)) * RATE);
  const length = Math.max(lead + reply.length, personAt + person.length) + RATE;
  const played = new Int16Array(length);
  played.set(reply, lead);
  const mix = new Float64Array(length);
  const personPower = says ? power(person) : power(reply) / 4;
  person.forEach((v, i) => (mix[personAt + i] = v));
  const clipping = rand() < 0.15;
  const driven = clipping ? Int16Array.from(played, (v) => Math.max(-16384, Math.min(16383, v * 2))) : played;
  const echo = sox(driven, reverb);
  const echoGain = Math.sqrt((personPower * 10 ** (between(-10, 12) / 10)) / power(echo));
  const delay = Math.round(between(0.04, 0.2) * RATE);
  echo.forEach((v, i) => { if (delay + i < length) mix[delay + i]! += v * echoGain; });
  if (rand() < 0.25) {
    const gain = Math.sqrt(personPower / 10 ** (between(8, 20) / 10) / power(babble));
    const offset = Math.floor(rand() * (babble.length - length));
    for (let i = 0; i < length; i++) mix[i]! += babble[offset + i]! * gain;
  }
  const floor = Math.sqrt(personPower / 10 ** (between(25, 45) / 10));
  for (let i = 0; i < length; i++) mix[i]! += (rand() + rand() + rand() - 1.5) * 2 * floor;
  const peak = mix.reduce((m, v) => Math.max(m, Math.abs(v)), 1);
  const mic = Int16Array.from(mix, (v) => Math.round((v * Math.min(1, 29_000 / peak))));

  const reference = new EchoReference(length / RATE + 2);
  reference.write(played, 0);
  const canceller = await EchoCanceller.create(reference);
  features.reset();
  const [from, to] = says ? voiced(person) : [0, 0];
  const wordEnd = (personAt + to) / RATE;
  const wordStart = (personAt + from) / RATE;
  for (let at = 0; at + CHUNK <= length; at += CHUNK) {
    const window = await features.push(canceller.process(mic.subarray(at, at + CHUNK), at));
    const t = (at + CHUNK) / RATE;
    if (t < lead / RATE - 0.5 || at < 6 * CHUNK) continue; // before IRIS talks (the stop word is armed only then), the warm-up
    const near = says !== '' && t > wordStart - 0.2 && t < wordEnd + 1.3; // the word's own windows, and hard negatives
    let label = 0;
    if (says === 'stop') {
      const d = t - wordEnd;
      if (d >= 0 && d <= 0.4 && t - wordStart <= 1.28) label = 1;
      else if (d > -0.3 && d < 1.28) continue; // part of the word, or its tail: neither
    }
    if (label === 0 && !near && rand() > 0.35) continue; // keep a third of the plain echo windows
    windows.push(window);
    labels.push(label);
    groups.push(r);
    positives += label;
  }
  canceller.destroy();
  if ((r + 1) % 20 === 0) console.error(`room ${r + 1}/${rooms}: ${windows.length} windows, ${positives} "stop"`);
}

const data = new Float32Array(windows.length * windows[0]!.length);
windows.forEach((w, i) => data.set(w, i * w.length));
const base = join(CACHE, 'data');
writeFileSync(`${base}.f32`, data);
writeFileSync(`${base}.labels`, Uint8Array.from(labels));
writeFileSync(`${base}.groups`, Int32Array.from(groups));
console.error(`${windows.length} windows (${positives} "stop") from ${rooms} rooms; training`);
execFileSync('/usr/bin/python3', ['scripts/lib/train-classifier.py', base, out], { stdio: 'inherit' });
