/**
 * How much of IRIS's echo the canceller leaves over the first 0.4 s of each clip on the speaker
 * stream, against the rest of the clip, with each clip's echo reference placed where the clip
 * falls between two 16 kHz reference samples (playback.ts, now) or rounded to the nearest one (as
 * before session 15). The real parts: the daemon's `Speaker` on its speaker stream (one aplay,
 * pipeline/player.ts), arecord, the daemon's front end (live clock, speexdsp), on ALSA's file
 * plugin through test/helpers/alsa-room.ts's room (the speaker band-limited to 16 kHz, 120 ms
 * late, two reflections, a noise floor). espeak-ng says 14 sentences with 0.4–1.2 s between
 * them, three times over per placing; the first three clips (the filter converging) are not
 * counted. Each placing twice, alternating. Prints and writes scripts/results/clip-starts.json.
 *
 *   npx tsx scripts/study-clip-starts.ts
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseConfig } from '../src/config/load.js';
import { createFrontEnd } from '../src/daemon/room-ear.js';
import { createLogger } from '../src/log.js';
import { meanPower, type AudioSource, type StreamSink } from '../src/pipeline/audio.js';
import { arecordSource } from '../src/pipeline/capture.js';
import { Speaker } from '../src/pipeline/playback.js';
import { PlayerStream } from '../src/pipeline/player.js';
import { AlsaRoom } from '../test/helpers/alsa-room.js';
import { round, writeResults } from './lib/bench.js';

const SENTENCES = [
  'Here is the weather for today.', 'It will be sunny in the morning, with clouds later on.', 'The wind comes from the west.',
  'Tomorrow looks much the same.', 'Your timer has four minutes left.', 'The train leaves at ten past six.', 'I added milk to the list.',
  'The oven is hot now.', 'It is half past three.', 'There are two timers running.', 'The first one ends in a minute.',
  'Twelve times seven is eighty four.', 'The kitchen light is on.', 'That is all for now.',
];
const db = (x: number): number => 10 * Math.log10(x + 1);

interface Chunk { raw: number; kept: number }

async function run(placing: 'between' | 'rounded'): Promise<{ onset: number[]; rest: number[] }> {
  const room = new AlsaRoom(join(mkdtempSync(join(tmpdir(), 'iris-clip-starts-')), 'room'), 120, 0.7);
  process.env.ALSA_CONFIG_PATH = room.env.ALSA_CONFIG_PATH; // the feeder thread's aplay and arecord inherit it
  const stream = new PlayerStream({ device: 'spk', idleS: 30 });
  // Rounded: the clip's place as the stream sink said it before (the nearest reference sample).
  const sink: StreamSink = placing === 'between' ? stream : {
    play: (wav, signal) => stream.play(wav, signal),
    schedule: (wav, signal) => {
      const placed = stream.schedule(wav, signal);
      return { at: placed.at.then(Math.round), done: placed.done };
    },
    open: () => stream.open(),
    hold: (held) => stream.hold(held),
    close: () => stream.close(),
  };
  const speaker = new Speaker(sink);
  const raw: number[] = []; // the microphone's power per chunk, in order: the front end hands on one chunk for each
  const microphone = arecordSource({ device: 'mic' });
  const tapped: AudioSource = {
    async *frames(signal) {
      for await (const chunk of microphone.frames(signal)) {
        raw.push(meanPower(chunk.samples));
        yield chunk;
      }
    },
  };
  const ear = await createFrontEnd(parseConfig('', 'study'), createLogger('study', { write: () => undefined }), { source: tapped, speaker });
  const chunks: Chunk[] = [];
  const controller = new AbortController();
  const reading = (async () => {
    for await (const chunk of ear.source.frames(controller.signal)) {
      const before = raw.shift() ?? 0;
      chunks.push({ raw: db(before), kept: db(meanPower(chunk.samples)) - db(before) });
    }
  })().catch(() => undefined);
  await sleep(1_000);
  const wavs = SENTENCES.map((text) => execFileSync('espeak-ng', ['-v', 'en-us', '--stdout', text]));
  let pause = 0;
  for (let round = 0; round < 3; round++) {
    for (const wav of wavs) {
      await speaker.play(wav, controller.signal);
      await sleep(400 + ((pause++ * 317) % 800));
    }
  }
  await sleep(1_000);
  controller.abort();
  await reading;
  await ear.stop();
  await stream.close();
  await room.close();
  return split(chunks);
}

/** kept dB (cancelled over raw) of the first five chunks after each quiet stretch, where loud, and of the other loud chunks; the first three clips left out. */
function split(chunks: Chunk[]): { onset: number[]; rest: number[] } {
  const floor = [...chunks].map((c) => c.raw).sort((a, b) => a - b)[Math.floor(chunks.length / 10)] ?? 0;
  const loud = (c: Chunk | undefined) => c !== undefined && c.raw > floor + 20;
  const onset: number[] = [];
  const rest: number[] = [];
  let clips = 0;
  let sinceOnset = Infinity;
  chunks.forEach((c, i) => {
    if (loud(c) && [1, 2, 3].every((k) => !loud(chunks[i - k]))) {
      clips += 1;
      sinceOnset = 0;
    }
    if (loud(c) && clips > 3) (sinceOnset < 5 ? onset : rest).push(c.kept);
    sinceOnset += 1;
  });
  return { onset, rest };
}

const runs: { placing: string; onset_chunks: number; onset_kept_db_median: number; onset_kept_db_p90: number; rest_chunks: number; rest_kept_db_median: number; rest_kept_db_p90: number }[] = [];
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const p90 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)] ?? NaN; // the least removed
// Each placing twice, alternating, each run a new room, stream and canceller.
for (const placing of ['rounded', 'between', 'rounded', 'between'] as const) {
  const { onset, rest } = await run(placing);
  runs.push({ placing, onset_chunks: onset.length, onset_kept_db_median: round(median(onset), 1), onset_kept_db_p90: round(p90(onset), 1), rest_chunks: rest.length, rest_kept_db_median: round(median(rest), 1), rest_kept_db_p90: round(p90(rest), 1) });
  console.log(runs.at(-1));
}
writeResults('clip-starts', { runs });
