/** What the wake-word studies share (scripts/study-wake-verify.ts, study-wake-kws.ts): the command rooms as the wake word hears them, and continuous speech to find false hits in. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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

