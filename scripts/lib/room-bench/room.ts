/**
 * What bench-room's modes share (scripts/bench-room.ts and its modes in this folder): the
 * simulated rooms (people, commands, IRIS's replies, the conditions), how one recording is made
 * (sox's reverb, espeak-ng, babble, pink noise, the speaker's echo at its level and delay), and
 * the clips the person says.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../../src/config/load.js';
import { EchoReference } from '../../../src/pipeline/echo.js';
import { concatSamples } from '../../../src/pipeline/audio.js';
import { decodeWav, encodeWav } from '../../../src/pipeline/wav.js';
import { makeClip, synthesize, type Voice } from '../speech-set.js';

export const RATE = 16_000;
export const CACHE = join(tmpdir(), 'iris-room-clips');
mkdirSync(CACHE, { recursive: true });

export type Part = 'dev' | 'heldout';
/** The person: flite and festival voices (pocketsphinx hears them; espeak-ng is IRIS). */
export const PEOPLE: Record<Part, Voice[]> = {
  dev: [{ synth: 'flite', name: 'kal16' }, { synth: 'festival', name: 'kal_diphone' }, { synth: 'flite', name: 'rms' }],
  heldout: [{ synth: 'flite', name: 'slt' }, { synth: 'festival', name: 'cmu_us_slt_arctic_hts' }, { synth: 'flite', name: 'awb' }],
};
export const COMMANDS: Record<Part, string[]> = {
  dev: ['what time is it', 'set a timer for ten minutes', 'what is twelve times seven', 'what time is it in tokyo'],
  heldout: ['what time is it in berlin', 'set a timer for fifteen minutes', 'what is six times eight', 'what time is it'],
};
/** A held-out set made after the ones before had been seen (IRIS_BENCH_HELDOUT<N>=1, the main bench, `--part heldout`): measured once. */
export interface HeldOutSet { commands: string[]; seed: number; replies?: string[]; people?: Voice[] }
/** Held-out 4 to 7's people: festival's ked_diphone (`apt install festvox-kdlpc16k`), a voice no earlier bench used, beside flite slt and awb. */
const NEW_VOICES: Voice[] = [{ synth: 'festival', name: 'ked_diphone' }, { synth: 'flite', name: 'slt' }, { synth: 'flite', name: 'awb' }];
export const NEW_HELDOUT: Record<string, HeldOutSet> = {
  /** Session 14, after held-out 1 was seen while choosing the wake word's second look: the held-out voices saying other commands, rooms from another seed. */
  2: { commands: ['what is nine times four', 'set a timer for twenty minutes', 'what time is it in paris', 'what time is it in sydney'], seed: 4242 },
  /** Session 15, after held-out 2 was seen while choosing the look from a lower score: other commands and phrasings, over other replies of IRIS's. */
  3: {
    commands: ['what is seven times nine', 'start a timer for thirty minutes', 'what is the time in rome', 'tell me the time'],
    replies: [
      'The train to the airport leaves at ten past six from platform four. It takes about forty minutes, and tickets are cheaper before seven.',
      'Your shopping list has eggs, milk, bread and two kinds of cheese. I added coffee as you asked, and took the apples off it.',
      'Tonight the sky should be clear, so you may see the moon rise over the hills. The wind will drop after sunset and stay calm.',
      'The song you asked about was recorded in nineteen seventy nine. The band toured Europe that summer and played forty concerts.',
    ],
    seed: 5353,
  },
  /**
   * Session 16, after held-out 2 and 3 had been seen (the recogniser's confidences looked at while
   * choosing `[stt] clarify_confidence`): a voice no bench had used (festival's ked_diphone,
   * `apt install festvox-kdlpc16k`) beside flite slt and awb, other commands and replies, another seed.
   */
  4: {
    commands: ['what is twenty plus seven', 'set a timer for forty five minutes', 'what time is it in madrid', 'what is the time in london'],
    replies: [
      'The bakery on the corner opens at seven and closes at noon on Sundays. Their rye bread sells out early, so go before nine.',
      'Your package was handed to the courier this morning. It should arrive on Thursday between ten and two, and someone must sign for it.',
      'The museum has a new exhibition about old maps of the coast. Entry is free on the first Monday of every month, and guided tours run at three.',
      'The recipe needs two cups of flour, one egg and a pinch of salt. Let the dough rest for half an hour before you roll it out thin.',
    ],
    people: NEW_VOICES,
    seed: 6464,
  },
  /** Session 16, made before the wake word's look from 0.03 was measured on anything but dev and held-out 1: other commands and replies, another seed. */
  5: {
    commands: ['what is fifty minus eight', 'set a timer for twelve minutes', 'what time is it in dublin', 'what is the time in chicago'],
    replies: [
      'The garden center has tulip bulbs on sale this week. Plant them before the first frost, about a hand deep, with the pointed end up.',
      'Your dentist appointment is on the eleventh at half past nine. Bring your insurance card, and arrive ten minutes early to fill in the form.',
      'The river path is closed between the two bridges while they repair the wall. Take the road by the school instead, it adds five minutes.',
      'The concert starts at eight, and the doors open an hour before. Your seats are in row twelve, near the middle, so you will see the stage well.',
    ],
    people: NEW_VOICES,
    seed: 7575,
  },
  /** Session 16, made before the own-voice veto's level sign on plain detections was measured on it: other commands and replies, another seed. */
  6: {
    commands: ['what is sixty divided by five', 'set a timer for eight minutes', 'what time is it in oslo', 'what is the time in toronto'],
    replies: [
      'The library has the book you reserved. It will keep it for you until Friday, and you can pick it up at the front desk after ten.',
      'Tomorrow the trains run on the holiday timetable. The first one leaves at seven, and then every half hour until late evening.',
      'Your phone bill came in a little higher this month. Most of it was calls abroad in the second week, when you were travelling.',
      'The soup needs another twenty minutes on a low heat. Stir it now and then, and add the herbs only at the very end.',
    ],
    people: NEW_VOICES,
    seed: 8686,
  },
  /** Session 17, made before a look under 0.1 needed the residual's level known (wakeword.ts `LOOK_KNOWN_BELOW`) was measured on it: other commands and replies, another seed. */
  7: {
    commands: ['what is forty divided by eight', 'set a timer for twenty five minutes', 'what time is it in athens', 'what is the time in denver'],
    replies: [
      'The plumber can come on Wednesday morning between eight and eleven. He asked you to clear the space under the kitchen sink before then.',
      'Your flight lands at a quarter to five, local time. The hotel shuttle waits outside the second terminal, and the ride takes twenty minutes.',
      'The farmers market moved to the square behind the church. It runs every Saturday from seven until one, and parking there is free.',
      'The paint on the front door needs a second coat. Wait until tomorrow, when it is dry, and keep the door open for the smell.',
    ],
    people: NEW_VOICES,
    seed: 9797,
  },
};
export const IRIS_VOICE: Record<Part, string> = { dev: 'en-us', heldout: 'en-gb' };
export const REPLIES = [
  'The weather today is sunny with a high of twenty two degrees. Tomorrow brings clouds and a chance of rain in the afternoon.',
  'Your timer for ten minutes is set. I will let you know when it is done. Is there anything else I can help you with?',
  'Here is the news. The city council met on Tuesday to discuss the new bus routes, and the library opens a new wing next month.',
  'It is a quarter past three in the afternoon. Your next meeting starts in forty minutes, and the traffic to the office is light.',
];
/** IRIS alone: its own voice saying the wake word and the stop word. */
export const SELF = 'If you want me to listen, say hey jarvis. Say stop and I will stop. Hey jarvis is my name, and stop means stop.';

export interface Condition {
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
  /** What IRIS said in this room before its earlier reply (a running daemon's canceller has heard it; IRIS_BENCH_STEADY): it starts the room, which marks where the rest begins (`Room.fromS`). */
  irisBefore?: string;
  /** The current reply is IRIS's first since the daemon started: no earlier one (the person starts 0.8–1.8 s after IRIS's first sound). */
  firstReply?: boolean;
}

export const CONDITIONS: Condition[] = [
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
export function sox(samples: Int16Array, effects: string[]): Int16Array {
  const dir = join(CACHE, `sox-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'in.wav'), encodeWav(samples));
  execFileSync('sox', ['-D', join(dir, 'in.wav'), join(dir, 'out.wav'), ...effects], { stdio: ['ignore', 'ignore', 'ignore'] });
  return decodeWav(readFileSync(join(dir, 'out.wav')));
}

export const espeak = (text: string, voice: string): Int16Array => {
  // The text's hash too: two texts that begin alike (a reply, and replies in a row that open with it) are other clips.
  const file = join(CACHE, `iris-${voice}-${text.replace(/[^a-z]+/gi, '_').slice(0, 80)}-${createHash('sha1').update(text).digest('hex').slice(0, 10)}.wav`);
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
export function speechPower(samples: Int16Array): number {
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

export function scaled(samples: Int16Array, gain: number): Int16Array {
  return Int16Array.from(samples, (v) => Math.max(-32768, Math.min(32767, Math.round(v * gain))));
}

export function addInto(out: Float64Array, samples: Int16Array, at: number, gain = 1): void {
  for (let i = 0; i < samples.length && at + i < out.length; i++) if (at + i >= 0) out[at + i] = (out[at + i] ?? 0) + (samples[i] ?? 0) * gain;
}

export const toInt16 = (x: Float64Array): Int16Array => Int16Array.from(x, (v) => Math.max(-32768, Math.min(32767, Math.round(v))));

let babbleSource: Int16Array | undefined;
export function babble(length: number, offset: number): Int16Array {
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

export const pink = (() => {
  let cached: Int16Array | undefined;
  return (length: number): Int16Array => {
    cached ??= (() => {
      const file = join(CACHE, 'pink.wav');
      // -R: sox's noise generator seeded the same each time. Without it every run made new noise, and the
      // same room scored differently from run to run (one dev room's person alone 0.99 in one run, 0.39 in the next).
      execFileSync('sox', ['-R', '-D', '-n', '-r', '16000', '-c', '1', '-b', '16', file, 'synth', '60', 'pinknoise', 'vol', '0.05']);
      return decodeWav(readFileSync(file));
    })();
    if (length <= cached.length) return cached.subarray(0, length);
    // Longer rooms (IRIS_BENCH_STEADY) repeat it: a room past its end had no floor at all, and digital silence read as no speech.
    const out = new Int16Array(length);
    for (let at = 0; at < length; at += cached.length) out.set(cached.subarray(0, Math.min(cached.length, length - at)), at);
    return out;
  };
})();

export interface Room {
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
  /** Where the recording starts in what `room()` made (seconds, a whole number of 80 ms chunks): before it, what IRIS said before (`Condition.irisBefore`), heard only by the canceller; front-end.ts `recorded` cuts `mic` there (the other times here then count from the cut). */
  fromS?: number;
  /** With `withParts`: the microphone's parts at its gain, the person (with the room's noise) and everything but the person. */
  parts?: { person: Int16Array; rest: Int16Array };
}

/** What `played` (16 kHz) adds to room `r`'s microphone from where it starts playing on (the delay included). */
export function echoOf(r: Room, played: Int16Array): Float64Array {
  const delay = Math.round((r.delayMs * RATE) / 1000);
  const out = new Float64Array(played.length + delay);
  if (!r.echo) return out;
  const driven = r.echo.clipping ? scaled(scaled(played, 4), 0.5) : played;
  const echo = sox(driven, r.echo.reverb);
  const gain = r.echo.gain ?? Math.sqrt(r.echo.personPower / speechPower(echo)) * r.echo.scale;
  addInto(out, echo, delay, gain);
  return out;
}

/** `condition` where IRIS first said `count` of `replies` in turn after the room's own two (IRIS_BENCH_STEADY); unchanged where IRIS is silent or `count` is 0. */
export const talkedBefore = (condition: Condition, count: number, pick: number, replies: string[] = REPLIES): Condition =>
  count > 0 && condition.esrDb !== undefined ? { ...condition, irisBefore: Array.from({ length: count }, (_, i) => replies[(pick + 2 + i) % replies.length]).join(' ') } : condition;

export interface Draws { pick: number; personOffsetS: number; delayMs: number; babbleOffset: number }

export const drawsOf = (rand: () => number): Draws => ({ pick: Math.floor(rand() * REPLIES.length), personOffsetS: 0.8 + rand(), delayMs: Math.round(40 + rand() * 160), babbleOffset: Math.floor(rand() * 200_000) });

/**
 * One recording: IRIS's earlier and current reply, the person over the current one. With
 * `cutS`, IRIS stops playing there, as the daemon's barge-in stops it when the wake word is heard.
 */
export function room(condition: Condition, part: Part, person: Int16Array | undefined, draws: Draws, cutS?: number, withParts = false): Room {
  const voice = IRIS_VOICE[part];
  const { pick } = draws;
  const [earlierText, currentText] = condition.irisSays ?? [REPLIES[pick] ?? '', condition.says === 'nothing' ? SELF : (REPLIES[(pick + 1) % REPLIES.length] ?? '')];
  const gap = Math.round(0.4 * RATE);
  const said = condition.irisBefore ? espeak(condition.irisBefore, voice) : new Int16Array(0);
  const before = new Int16Array(said.length && Math.ceil((said.length + gap) / 1280) * 1280);
  before.set(said);
  const earlier = condition.firstReply ? before : concatSamples([before, espeak(earlierText, voice)]);
  const current = espeak(currentText, voice);
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
    delayMs, currentS: (earlier.length + gap) / RATE, ...(before.length ? { fromS: before.length / RATE } : {}),
    echo: { ...(echoGain === undefined ? {} : { gain: echoGain * scale }), personPower, scale, reverb, clipping: condition.clipping === true },
  };
}

/** The licence texts in /usr/share/common-licenses, in ~40 s paragraphs (about 100 words): speech to read on and on. */
export function licenceParagraphs(): string[] {
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
export function voiced(samples: Int16Array): [number, number] {
  const peak = samples.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const loud = (i: number) => Math.abs(samples[i] ?? 0) > peak * 0.02;
  let from = 0;
  let to = samples.length;
  while (from < to && !loud(from)) from++;
  while (to > from && !loud(to - 1)) to--;
  return [from, to];
}

/** The config the benches run with, as bench-understanding.ts's. */
export const benchConfig = () => parseConfig('[assistant]\ntimezone = "Europe/Berlin"\n', 'bench');

/** The person's "hey jarvis, <command>" in one breath, without the synthesiser's lead silence. */
export const commandClip = (command: string, voice: Voice): Int16Array =>
  decodeWav(readFileSync(makeClip({ wake: 'hey jarvis', command, voice, layout: 'one-breath', noise: 'clean' }, CACHE).wav)).subarray(Math.round(0.4 * RATE));

/** The person saying one word ("stop", "yes", "no"). */
export function wordClip(word: string, voice: Voice): Int16Array {
  const file = join(CACHE, `${word}-${voice.synth}-${voice.name}.wav`);
  synthesize(word, voice, file);
  return decodeWav(readFileSync(file));
}

/** The person saying "stop". */
export const stopClip = (voice: Voice): Int16Array => wordClip('stop', voice);

/**
 * The person's command, then their answer to IRIS's "Did you say …?" (`answer`: "yes" or "no")
 * `gapS` after it: IRIS has asked in between (its question is not in the room: the person answers
 * once it has ended).
 */
export function answeredClip(command: Int16Array, answer: string, voice: Voice, gapS = 3): Int16Array {
  const word = wordClip(answer, voice);
  const out = new Int16Array(command.length + Math.round(gapS * RATE) + word.length);
  out.set(command, 0);
  out.set(word, out.length - word.length);
  return out;
}

/** What the speaker played, as the reference the canceller reads (2 s to spare). */
export function referenceOf(played: Int16Array): EchoReference {
  const reference = new EchoReference(played.length / RATE + 2);
  reference.write(played, 0);
  return reference;
}

/** The microphone's gain set so its loudest moment peaks at 29,000 of 32,767: loud, not clipped. */
export function toMicLevel(mix: Float64Array): void {
  const peak = mix.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  for (let k = 0; k < mix.length; k++) mix[k] = (mix[k] ?? 0) * (29_000 / Math.max(1, peak));
}
