/**
 * Synthetic spoken-command recordings for the accuracy benchmark and tests: wake phrase and
 * command from three unrelated synthesizers (espeak-ng, flite, festival), run together or apart,
 * with pink or white noise at a set SNR and an optional small-room reverb. Voices are split into
 * dev and held-out sets, so tuning on one and scoring on the other measures generalization, not
 * memorized voices. Every clip comes with where its wake phrase and command start and end.
 *
 * Everything is 16 kHz mono 16-bit and deterministic: sox with dithering off (-D) and its random
 * generator seeded (-R), so the same spec gives the same bytes every run; clips are cached on disk
 * under the sha1 of their spec.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { concatSamples } from '../../src/pipeline/audio.js';
import { decodeWav, encodeWav } from '../../src/pipeline/wav.js';

export type Synth = 'espeak' | 'flite' | 'festival';

export interface Voice {
  synth: Synth;
  /** espeak-ng `-v`, flite `-voice`, or festival's `voice_NAME`. */
  name: string;
  /** Words per minute (espeak-ng `-s`; its default is 175). flite and festival ignore it. */
  wpm?: number;
}

/** Each part has all three synthesizers; no voice is in both. */
export const VOICES: { dev: Voice[]; heldout: Voice[] } = {
  dev: [
    { synth: 'espeak', name: 'en-us', wpm: 175 },
    { synth: 'espeak', name: 'en-gb', wpm: 160 },
    { synth: 'espeak', name: 'en-us+f3', wpm: 190 },
    { synth: 'flite', name: 'kal16' },
    { synth: 'flite', name: 'rms' },
    { synth: 'festival', name: 'kal_diphone' },
  ],
  heldout: [
    { synth: 'espeak', name: 'en-gb-x-rp', wpm: 170 },
    { synth: 'espeak', name: 'en-029', wpm: 175 },
    { synth: 'espeak', name: 'en-us+m3', wpm: 150 },
    { synth: 'espeak', name: 'en-gb-scotland', wpm: 185 },
    { synth: 'flite', name: 'slt' },
    { synth: 'flite', name: 'awb' },
    { synth: 'festival', name: 'cmu_us_slt_arctic_hts' },
  ],
};

export type Noise = 'clean' | 'pink20' | 'pink10' | 'white20' | 'white10';

export interface ClipSpec {
  wake: string;
  command: string;
  voice: Voice;
  /** 'one-breath': "wake, command" as one utterance; 'pause': wake, 0.8 s silence, command;
   * 'speech-before': an unrelated sentence, 0.6 s silence, then one-breath; 'hesitant':
   * one-breath up to the command's " … ", then 0.5 s silence, then the rest ("what time is
   * it … in tokyo"): a pause inside the command that must not end it. The part before the pause
   * is synthesized on its own, so it ends with a finished sentence's intonation (an afterthought,
   * as a person would add one). 'hesitant-whole': the same pause, but cut into the whole sentence
   * synthesized in one go, at the word boundary pocketsphinx's forced alignment finds, so the
   * words before it carry the continuation prosody of a person who goes on. */
  layout: 'one-breath' | 'pause' | 'speech-before' | 'hesitant' | 'hesitant-whole';
  /** The pause inside a 'hesitant-whole' command (seconds); default 0.5 (a 'hesitant' one's is 0.5). */
  pauseS?: number;
  /** Noise over the whole clip, at an SNR (dB) relative to the speech's power. */
  noise: Noise;
  /** Small-room reverb (sox `reverb 30 50 40`) on the speech, before the noise. */
  reverb?: boolean;
}

/** A built clip; times are seconds from the start of `wav`. */
export interface Clip {
  wav: string;
  /** Where the command begins: exact for 'pause'; otherwise the `wakeEndS` estimate. */
  commandStartS: number;
  /** Where the command's last word's energy ends (the reverb tail, if any, runs on). */
  lastWordEndS: number;
  /** Where the wake phrase ends: exact for 'pause'; otherwise an estimate (see `makeClip`). */
  wakeEndS: number;
  durationS: number;
}

/** Bump to invalidate cached clips when the way they are made changes. */
const VERSION = 1;
const RATE = 16_000;
const LEAD_S = 0.5;
const TAIL_S = 1.5;
/** Silence kept either side of the speech when trimming (seconds). */
const MARGIN_S = 0.03;
/** A 10 ms frame is speech if its power is within this of the utterance's loudest frame (dB):
 * below every final fricative measured, above flite's and festival's noise floors (-45 to -60). */
const SPEECH_DB = -40;
/** Quieter than this (dBFS, loudest frame) is no speech at all: a broken voice. */
const SILENT_DBFS = -60;
const NOISE_MASTER_S = 60;
const SENTENCES = [
  'I think the soup needs more salt.',
  'We should leave early tomorrow.',
  'The train was late again this morning.',
  'She painted the fence a pale shade of green.',
  'Nobody remembered to water the plants.',
];

const samples = (seconds: number): number => Math.round(seconds * RATE);
const silence = (seconds: number): Int16Array => new Int16Array(samples(seconds));
const sha1 = (value: unknown): string => createHash('sha1').update(JSON.stringify(value)).digest('hex');

/** Write `data` to `path` whole or not at all (parallel test workers share the cache). */
function writeAtomic(path: string, data: Buffer | string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/** Run `work` with a scratch directory, removed afterwards. */
function withScratch<T>(work: (scratch: string) => T): T {
  const scratch = mkdtempSync(join(tmpdir(), 'iris-speech-set-'));
  try {
    return work(scratch);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const run = (command: string, args: string[], input?: string): void => {
  execFileSync(command, args, { stdio: 'pipe', ...(input === undefined ? {} : { input }) });
};

/** Trimmed speech: `samples` with up to MARGIN_S of silence either side of [start, end). */
interface Utterance {
  samples: Int16Array;
  start: number;
  end: number;
}

const memo = new Map<string, Utterance>();
let fliteVoices: string[] | undefined;

/** `name`, if flite has it: given an unknown voice, flite quietly speaks in its default one. */
function fliteVoice(name: string): string {
  fliteVoices ??= execFileSync('flite', ['-lv'], { encoding: 'utf8' }).replace(/^.*:/, '').trim().split(/\s+/);
  if (!fliteVoices.includes(name)) throw new Error(`flite has no voice ${name} (it has ${fliteVoices.join(', ')})`);
  return name;
}

/** `text` in `voice`, 16 kHz, trimmed to its speech (memoized per process). */
function utter(text: string, voice: Voice): Utterance {
  const key = JSON.stringify([text, voice.synth, voice.name, voice.wpm]);
  const cached = memo.get(key);
  if (cached) return cached;
  const pcm = withScratch((scratch) => {
    const raw = join(scratch, 'raw.wav');
    const wav = join(scratch, '16k.wav');
    if (voice.synth === 'espeak') run('espeak-ng', ['-v', voice.name, '-s', String(voice.wpm ?? 175), '-w', raw, '--', text]);
    else if (voice.synth === 'flite') run('flite', ['-voice', fliteVoice(voice.name), '-t', text, '-o', raw]);
    else run('text2wave', ['-eval', `(voice_${voice.name})`, '-o', raw], text);
    // text2wave reports an unknown voice ("SIOD ERROR") but exits 0, writing nothing.
    if (!existsSync(raw)) throw new Error(`${voice.synth} ${voice.name} wrote no audio for ${JSON.stringify(text)}`);
    // espeak-ng is 22.05 kHz and festival's HTS voice 32 kHz; -G guards the resampler's overshoot.
    run('sox', ['-D', '-G', raw, '-r', String(RATE), '-c', '1', '-b', '16', wav]);
    return decodeWav(readFileSync(wav));
  });
  const frame = samples(0.01);
  const power: number[] = [];
  for (let at = 0; at + frame <= pcm.length; at += frame) {
    let sum = 0;
    for (let i = at; i < at + frame; i++) sum += (pcm[i] ?? 0) ** 2;
    power.push(sum / frame);
  }
  const loudest = Math.max(0, ...power);
  if (10 * Math.log10(loudest / 32768 ** 2 + 1e-12) < SILENT_DBFS) {
    throw new Error(`${voice.synth} ${voice.name} made no speech for ${JSON.stringify(text)}`);
  }
  const floor = loudest * 10 ** (SPEECH_DB / 10);
  const first = power.findIndex((p) => p >= floor);
  const last = power.length - 1 - [...power].reverse().findIndex((p) => p >= floor);
  const from = Math.max(0, first * frame - samples(MARGIN_S));
  const to = Math.min(pcm.length, (last + 1) * frame + samples(MARGIN_S));
  const utterance = { samples: pcm.slice(from, to), start: first * frame - from, end: (last + 1) * frame - from };
  memo.set(key, utterance);
  return utterance;
}

/** Write `text`, spoken in `voice`, to `out`: a 16 kHz mono 16-bit WAV of just the speech, with
 * at most 30 ms of silence either side. Speech is the 10 ms frames within 40 dB of the loudest
 * (not sox's `silence`, so the bounds are known exactly and a quiet final consonant is kept). */
export function synthesize(text: string, voice: Voice, out: string): void {
  writeAtomic(out, encodeWav(utter(text, voice).samples));
}

/** The words of `text` as pocketsphinx's dictionary spells them. */
const words = (text: string): string[] => text.toLowerCase().replace(/[^a-z' ]/g, ' ').split(/\s+/).filter(Boolean);

/**
 * Where in `utterance` the words `after` begin, `before` being all the words ahead of them:
 * pocketsphinx (`-time yes`) forced to the sentence by a one-sentence JSGF grammar; the cut is where the
 * last word of `before` ends (10 ms frames). Throws if the alignment is not the sentence.
 */
function wordBoundary(utterance: Utterance, before: string, after: string): number {
  const expected = [...words(before), ...words(after)];
  const aligned = withScratch((scratch) => {
    const wav = join(scratch, 'align.wav');
    const gram = join(scratch, 'align.gram');
    writeFileSync(wav, encodeWav(utterance.samples));
    writeFileSync(gram, `#JSGF V1.0;\ngrammar align;\npublic <s> = ${expected.join(' ')};\n`);
    return execFileSync('pocketsphinx_continuous', [
      '-infile', wav, '-jsgf', gram, '-time', 'yes', '-logfn', '/dev/null',
      // No pruning: with the default beams the search loses the one path in some espeak voices.
      '-beam', '1e-200', '-wbeam', '1e-200', '-pbeam', '1e-200', '-maxhmmpf', '-1', '-maxwpf', '-1',
    ], { encoding: 'utf8' });
  });
  // "word start end confidence" per line; fillers (<s>, <sil>, [NOISE]) and the hypothesis line
  // are skipped, and "jarvis(2)" is pronunciation 2 of "jarvis".
  const found = aligned.split('\n').map((line) => line.trim().split(/\s+/)).filter((f) => f.length === 4 && /^[a-z']+(\(\d+\))?$/.test(f[0] ?? ''))
    .map(([word = '', , end = '']) => ({ word: word.replace(/\(\d+\)$/, ''), endS: Number(end) }));
  if (found.map((f) => f.word).join(' ') !== expected.join(' ')) {
    throw new Error(`pocketsphinx aligned ${JSON.stringify(found.map((f) => f.word).join(' '))}, not ${JSON.stringify(expected.join(' '))}`);
  }
  const last = found[words(before).length - 1];
  if (!last) throw new Error(`no word before the pause in ${JSON.stringify(before)}`);
  return samples(last.endS + 0.01);
}

/** A 5 ms linear fade at the start ('in') or end ('out') of `utterance`, so a cut inside running
 * speech does not click. */
function fade(utterance: Utterance, where: 'in' | 'out'): Utterance {
  const out = utterance.samples.slice();
  const n = Math.min(out.length, samples(0.005));
  for (let i = 0; i < n; i++) {
    const at = where === 'in' ? i : out.length - 1 - i;
    out[at] = Math.round((out[at] ?? 0) * (i / n));
  }
  return { ...utterance, samples: out };
}

const noiseMasters = new Map<string, Int16Array>();

/** NOISE_MASTER_S of seeded (-R) pink or white noise, cached in `dir`. */
function noiseMaster(color: 'pink' | 'white', dir: string): Int16Array {
  const path = join(dir, `noise-${color}-v${VERSION}.wav`);
  if (!existsSync(path)) {
    const tmp = `${path}.${process.pid}.tmp.wav`;
    run('sox', ['-R', '-D', '-n', '-r', String(RATE), '-c', '1', '-b', '16', tmp, 'synth', String(NOISE_MASTER_S), `${color}noise`]);
    renameSync(tmp, path);
  }
  let master = noiseMasters.get(path);
  if (!master) noiseMasters.set(path, (master = decodeWav(readFileSync(path))));
  return master;
}

/** `clean` with noise over all of it, at `snrDb` below the power of its `speech` ranges. The noise
 * is a stretch of the master at an offset from `seed`, so clips do not all share the same noise. */
function addNoise(clean: Int16Array, speech: [number, number][], noise: Noise, seed: string, dir: string): Int16Array {
  if (noise === 'clean') return clean;
  const color = noise.startsWith('pink') ? 'pink' : 'white';
  const snrDb = Number(noise.replace(/^\D+/, ''));
  const master = noiseMaster(color, dir);
  if (clean.length > master.length) throw new Error(`clip longer than ${NOISE_MASTER_S} s of noise`);
  const offset = parseInt(seed.slice(0, 8), 16) % (master.length - clean.length + 1);
  const stretch = master.subarray(offset, offset + clean.length);
  let speechSum = 0;
  let speechCount = 0;
  for (const [from, to] of speech) {
    for (let i = from; i < to; i++) speechSum += (clean[i] ?? 0) ** 2;
    speechCount += to - from;
  }
  const noisePower = stretch.reduce((sum, x) => sum + x * x, 0) / stretch.length;
  const scale = Math.sqrt(speechSum / speechCount / noisePower / 10 ** (snrDb / 10));
  const mixed = Float64Array.from(clean, (x, i) => x + scale * (stretch[i] ?? 0));
  // Clip-safe: if the sum would overflow 16 bits, bring the whole mix (speech and noise alike,
  // so the SNR holds) down to -1 dBFS.
  const peak = mixed.reduce((max, x) => Math.max(max, Math.abs(x)), 0);
  const gain = peak > 32767 ? (32767 * 10 ** (-1 / 20)) / peak : 1;
  return Int16Array.from(mixed, (x) => Math.round(x * gain));
}

/** `pcm` through sox's small-room reverb (wet and dry; same length, the tail running into the
 * trailing silence; -G guards against clipping). */
function reverberate(pcm: Int16Array): Int16Array {
  return withScratch((scratch) => {
    const dry = join(scratch, 'dry.wav');
    const wet = join(scratch, 'wet.wav');
    writeFileSync(dry, encodeWav(pcm));
    run('sox', ['-D', '-G', dry, wet, 'reverb', '30', '50', '40']);
    return decodeWav(readFileSync(wet));
  });
}

/**
 * Build the clip `spec` describes in `dir` (cached under the sha1 of the spec, with its times in a
 * .json beside it): 0.5 s silence, the speech, 1.5 s silence.
 *
 * For 'pause' every time is exact. For 'one-breath' and 'speech-before' the wake phrase and command
 * are one utterance with no marked boundary, so `wakeEndS` is an estimate: where the utterance's
 * speech starts plus the speech length of the wake phrase synthesized alone in the same voice
 * (alone it ends phrase-finally, so slightly long), and `commandStartS` is that same estimate.
 */
export function makeClip(spec: ClipSpec, dir: string): Clip {
  const canonical = {
    version: VERSION,
    wake: spec.wake,
    command: spec.command,
    voice: { synth: spec.voice.synth, name: spec.voice.name, wpm: spec.voice.wpm ?? null },
    layout: spec.layout,
    noise: spec.noise,
    reverb: spec.reverb === true,
    // Only where it applies, so the other layouts' clips keep their hashes (and caches).
    ...(spec.layout === 'hesitant-whole' ? { pauseS: spec.pauseS ?? 0.5 } : {}),
  };
  const hash = sha1(canonical);
  const wav = join(dir, `clip-${hash}.wav`);
  const sidecar = join(dir, `clip-${hash}.json`);
  if (existsSync(sidecar) && existsSync(wav)) return { wav, ...(JSON.parse(readFileSync(sidecar, 'utf8')) as Omit<Clip, 'wav'>) };
  mkdirSync(dir, { recursive: true });

  const parts: Int16Array[] = [silence(LEAD_S)];
  let at = parts[0]?.length ?? 0;
  /** Append `utterance`; returns its speech range in the clip. */
  const say = (utterance: Utterance): [number, number] => {
    parts.push(utterance.samples);
    const range: [number, number] = [at + utterance.start, at + utterance.end];
    at += utterance.samples.length;
    return range;
  };
  const pause = (seconds: number): void => {
    parts.push(silence(seconds));
    at += samples(seconds);
  };
  const speech: [number, number][] = [];
  let wakeEnd: number;
  let commandStart: number;
  let lastWordEnd: number;
  if (spec.layout === 'hesitant') {
    const [first = '', rest = ''] = spec.command.split(' … ');
    const head = say(utter(`${spec.wake}, ${first}`, spec.voice));
    pause(0.5);
    const tail = say(utter(rest, spec.voice));
    const wakeAlone = utter(spec.wake, spec.voice);
    speech.push(head, tail);
    wakeEnd = Math.min(head[1], head[0] + wakeAlone.end - wakeAlone.start);
    [commandStart, lastWordEnd] = [wakeEnd, tail[1]];
  } else if (spec.layout === 'hesitant-whole') {
    const [first = '', rest = ''] = spec.command.split(' … ');
    const whole = utter(`${spec.wake}, ${first} ${rest}`, spec.voice);
    const cut = wordBoundary(whole, `${spec.wake} ${first}`, rest);
    const head = say(fade({ samples: whole.samples.slice(0, cut), start: whole.start, end: cut }, 'out'));
    pause(spec.pauseS ?? 0.5);
    const tail = say(fade({ samples: whole.samples.slice(cut), start: 0, end: whole.end - cut }, 'in'));
    const wakeAlone = utter(spec.wake, spec.voice);
    speech.push(head, tail);
    wakeEnd = Math.min(head[1], head[0] + wakeAlone.end - wakeAlone.start);
    [commandStart, lastWordEnd] = [wakeEnd, tail[1]];
  } else if (spec.layout === 'pause') {
    const wake = say(utter(spec.wake, spec.voice));
    pause(0.8);
    const command = say(utter(spec.command, spec.voice));
    speech.push(wake, command);
    [wakeEnd, commandStart, lastWordEnd] = [wake[1], command[0], command[1]];
  } else {
    if (spec.layout === 'speech-before') {
      // Chosen by the speech alone, so a spec's noise and reverb variants say the same words.
      const pick = sha1([canonical.wake, canonical.command, canonical.voice]);
      const sentence = SENTENCES[parseInt(pick.slice(0, 8), 16) % SENTENCES.length] ?? '';
      speech.push(say(utter(sentence, spec.voice)));
      pause(0.6);
    }
    const both = say(utter(`${spec.wake}, ${spec.command}`, spec.voice));
    const wakeAlone = utter(spec.wake, spec.voice);
    speech.push(both);
    wakeEnd = Math.min(both[1], both[0] + wakeAlone.end - wakeAlone.start);
    [commandStart, lastWordEnd] = [wakeEnd, both[1]];
  }
  pause(TAIL_S);

  let pcm = concatSamples(parts);
  if (spec.reverb === true) pcm = reverberate(pcm);
  pcm = addNoise(pcm, speech, spec.noise, hash, dir);
  const times = { commandStartS: commandStart / RATE, lastWordEndS: lastWordEnd / RATE, wakeEndS: wakeEnd / RATE, durationS: pcm.length / RATE };
  writeAtomic(wav, encodeWav(pcm));
  writeAtomic(sidecar, `${JSON.stringify(times)}\n`);
  return { wav, ...times };
}

const DATA = '/usr/share/pocketsphinx/test/data';

/** Real human speech that is not a command (pocketsphinx-testdata: five librivox sentences, five
 * spoken card names, "go forward"), as 16 kHz mono WAVs in `dir` with 0.5 s silence before and
 * 1.5 s after. */
export function humanNegatives(dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const librivox = ['0870', '0880', '0890', '0920', '0930'].map((n) => `${DATA}/librivox/sense_and_sensibility_01_austen_64kb-${n}.wav`);
  const cards = [1, 2, 3, 4, 5].map((n) => `${DATA}/cards/00${n}.wav`);
  const raw = ['-t', 'raw', '-r', String(RATE), '-e', 'signed', '-b', '16', '-c', '1', `${DATA}/goforward.raw`];
  const sources: [string, string[]][] = [
    ...librivox.map((path): [string, string[]] => [`librivox-${basename(path, '.wav').slice(-4)}`, [path]]),
    ...cards.map((path): [string, string[]] => [`cards-${basename(path, '.wav')}`, [path]]),
    ['goforward', raw],
  ];
  return sources.map(([name, input]) => {
    const out = join(dir, `human-${name}.wav`);
    if (!existsSync(out)) {
      const tmp = `${out}.${process.pid}.tmp.wav`;
      run('sox', ['-D', ...input, '-r', String(RATE), '-c', '1', '-b', '16', tmp, 'pad', String(LEAD_S), String(TAIL_S)]);
      renameSync(tmp, out);
    }
    return out;
  });
}

/**
 * "hey jarvis" in `voice` (after 0.5 s of silence), 0.3 s of silence, then the human recording
 * `humanWav` and 1.5 s of silence: the wake word followed by speech that is not a command, which
 * the assistant must not act on. Digital silence at either end of `humanWav` (such as
 * `humanNegatives`' padding) is dropped first, so the gap is 0.3 s plus the recording's own
 * lead-in. Returns the WAV's path in `dir` (cached by voice and the recording's content).
 */
export function wakeThenHuman(voice: Voice, humanWav: string, dir: string): string {
  const bytes = readFileSync(humanWav);
  const human = createHash('sha1').update(bytes).digest('hex');
  const out = join(dir, `wake-human-${sha1({ version: VERSION, voice: [voice.synth, voice.name, voice.wpm ?? null], human })}.wav`);
  if (existsSync(out)) return out;
  mkdirSync(dir, { recursive: true });
  const pcm = decodeWav(bytes, humanWav);
  const first = pcm.findIndex((x) => x !== 0);
  let last = pcm.length - 1;
  while (last > first && pcm[last] === 0) last--;
  const wake = utter('hey jarvis', voice).samples;
  writeAtomic(out, encodeWav(concatSamples([silence(LEAD_S), wake, silence(0.3), pcm.slice(Math.max(0, first), last + 1), silence(TAIL_S)])));
  return out;
}
