/** What the wake-word studies share (scripts/study-wake-verify.ts, study-wake-kws.ts): the command rooms as the wake word hears them, and continuous speech to find false hits in. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { meanPower } from '../../../src/pipeline/audio.js';
import { decodeWav } from '../../../src/pipeline/wav.js';
import { random } from '../bench.js';
import { synthesize, type Voice } from '../speech-set.js';
import type { RoomBenchOptions } from './options.js';
import { CACHE, COMMANDS, CONDITIONS, PEOPLE, RATE, REPLIES, commandClip, drawsOf, licenceParagraphs, referenceOf, room, sox, type Condition, type Part, type Room } from './room.js';

/** Each command room of `part` (bench-room's draws: the same rooms as the main bench's first held-out set), through the canceller where IRIS plays. */
export async function* cancelledCommandRooms(options: RoomBenchOptions, part: Part, only?: string[]): AsyncGenerator<{ condition: Condition; voice: Voice; command: string; heard: Int16Array; personS: [number, number] }> {
  const rand = random(part === 'dev' ? 24 : 2024);
  for (const condition of CONDITIONS) {
    for (const voice of PEOPLE[part]) {
      const spoken = condition.says === 'command' ? COMMANDS[part] : condition.says === 'stop' ? ['stop'] : [''];
      for (const command of spoken) {
        const draws = drawsOf(rand);
        if (condition.says !== 'command' || (only && !only.includes(condition.name))) continue;
        const r = room(condition, part, commandClip(command, voice), draws);
        let heard = r.mic;
        if (condition.esrDb !== undefined) {
          const canceller = await options.makeCanceller(referenceOf(r.played));
          heard = new Int16Array(r.mic.length);
          for (let at = 0; at + 1280 <= r.mic.length; at += 1280) heard.set(canceller.process(r.mic.subarray(at, at + 1280), at), at);
          canceller.destroy();
        }
        yield { condition, voice, command, heard, personS: r.personS ?? [0, 0] };
      }
    }
  }
}

/** Continuous speech: LibriVox at each tempo and pitch (cents), then flite and festival reading the licence texts. */
export function readingSources(tempos: string[], pitches: string[]): { name: string; make: () => Int16Array }[] {
  const librivox = ['0870', '0880', '0890', '0920', '0930'].map((n) => `/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-${n}.wav`);
  const readers: Voice[] = [{ synth: 'flite', name: 'kal16' }, { synth: 'flite', name: 'rms' }, { synth: 'festival', name: 'kal_diphone' }, { synth: 'flite', name: 'awb' }];
  const sources: { name: string; make: () => Int16Array }[] = [];
  for (const tempo of tempos) for (const cents of pitches) for (const f of librivox) sources.push({ name: `librivox ${tempo} ${cents}`, make: () => sox(decodeWav(readFileSync(f)), ['tempo', tempo, 'pitch', cents]) });
  licenceParagraphs().forEach((text, k) => {
    const voice = readers[k % readers.length] ?? readers[0]!;
    sources.push({ name: `${voice.name} reading`, make: () => {
      const file = join(CACHE, `read-${voice.synth}-${voice.name}-${text.replace(/[^a-z]+/gi, '_').slice(0, 60)}-${text.length}.wav`);
      try { return decodeWav(readFileSync(file)); } catch { synthesize(text, voice, file); return decodeWav(readFileSync(file)); }
    } });
  });
  return sources;
}

/**
 * IRIS's two replies in a room of `base` (no person), drawn from `rand`; the reference aligned at
 * the room's true delay less the canceller's 10 ms margin; `cut`: where the first reply (and its
 * gap) ends, on a `frame` boundary (study-rehearse.ts, study-prime.ts).
 */
export function twoRepliesRoom(base: Condition, rand: () => number, frame: number): { r: Room; ref: Int16Array; cut: number } {
  const draws = drawsOf(rand);
  const first = REPLIES[draws.pick] ?? '';
  const second = REPLIES[(draws.pick + 1) % REPLIES.length] ?? '';
  const r = room({ ...base, says: 'nothing', irisSays: [first, second] }, 'dev', undefined, draws);
  const shift = Math.round((draws.delayMs * RATE) / 1000) - 160;
  const ref = new Int16Array(r.mic.length);
  ref.set(r.played.subarray(0, r.mic.length - shift), shift);
  return { r, ref, cut: Math.floor(((r.currentS ?? 0) * RATE) / frame) * frame };
}


/** ERLE (dB) of `out` against `r.mic` over four 2 s windows from `cut`, counting only chunks where `ref` sounds (study-prime.ts, study-room-response.ts). */
export function windowsAfter(r: Room, ref: Int16Array, cut: number): (out: Int16Array) => number[] {
  const refMean = meanPower(ref);
  return (out) => [0, 1, 2, 3].map((w) => {
    let mic = 0;
    let res = 0;
    for (let c = cut + w * 2 * RATE; c < cut + (w + 1) * 2 * RATE && c + 1280 <= r.mic.length; c += 1280) {
      if (meanPower(ref.subarray(c, c + 1280)) < refMean / 100) continue;
      mic += meanPower(r.mic.subarray(c, c + 1280));
      res += meanPower(out.subarray(c, c + 1280));
    }
    return 10 * Math.log10(mic / res);
  });
}

/** Each arm's windows summed over the rooms (`add`, which also writes the room's row) and their means (`means`). */
export class ArmTally {
  readonly #sums = new Map<string, number[]>();

  add(key: string, arm: string, windows: number[], row: string[]): void {
    const s = this.#sums.get(key) ?? [0, 0, 0, 0, 0];
    windows.forEach((v, i) => (s[i] = (s[i] ?? 0) + v));
    s[4] = (s[4] ?? 0) + 1;
    this.#sums.set(key, s);
    row.push(`${arm} ${windows.map((v) => v.toFixed(1)).join(' ')}`);
  }

  means(): [string, string][] {
    return [...this.#sums].map(([key, s]) => [key, s.slice(0, 4).map((v) => (v / (s[4] ?? 1)).toFixed(1)).join(' / ')]);
  }
}

/** `rooms` rooms of IRIS's two replies for each condition in `names` (`twoRepliesRoom`), with the windows' ERLE of an output (`windowsAfter`). */
export function* twoRepliesRooms(names: string[], rooms: number, rand: () => number, frame: number): Generator<{ name: string; k: number; r: Room; ref: Int16Array; cut: number; erles: (out: Int16Array) => number[] }> {
  for (const name of names) {
    const base = CONDITIONS.find((c) => c.name === name);
    if (!base) throw new Error(name);
    for (let k = 0; k < rooms; k++) {
      const { r, ref, cut } = twoRepliesRoom(base, rand, frame);
      yield { name, k, r, ref, cut, erles: windowsAfter(r, ref, cut) };
    }
  }
}
