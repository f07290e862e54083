import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FRAME_SAMPLES } from '../src/pipeline/audio.js';
import { arecordSource } from '../src/pipeline/capture.js';
import { tempDir } from './helpers/tmp.js';

describe('the microphone source', () => {
  it('cuts a pipe of odd-sized blocks into 80 ms frames of the same samples, stamped with their place in the stream', async () => {
    const dir = tempDir();
    const samples = Int16Array.from({ length: FRAME_SAMPLES * 5 + 100 }, (_v, i) => ((i * 7919) % 65536) - 32768);
    writeFileSync(join(dir, 'pcm'), Buffer.from(samples.buffer));
    // A stand-in for arecord: the bytes in blocks of 333 (odd: a block ends inside a sample),
    // paced as a device delivers them so the pipe does not join them, then it exits.
    const fake = join(dir, 'arecord');
    const blocks = Math.ceil(samples.byteLength / 333);
    writeFileSync(fake, `#!/bin/sh\ni=0\nwhile [ $i -lt ${blocks} ]; do dd if='${join(dir, 'pcm')}' bs=333 skip=$i count=1 status=none; sleep 0.01; i=$((i+1)); done\n`);
    chmodSync(fake, 0o755);
    const frames: { samples: Int16Array; atS: number; rate: number }[] = [];
    const stream = arecordSource({ device: 'fake', command: fake }).frames(new AbortController().signal);
    await expect((async () => {
      for await (const frame of stream) frames.push(frame);
    })()).rejects.toThrow(/microphone "fake" stopped/);
    expect(frames.map((f) => f.samples.length)).toEqual(Array(5).fill(FRAME_SAMPLES));
    frames.forEach((f, k) => expect(f.atS).toBeCloseTo(k * 0.08, 9));
    expect(frames.every((f) => f.rate === 16_000)).toBe(true);
    expect(Array.from(frames.flatMap((f) => Array.from(f.samples)))).toEqual(Array.from(samples.subarray(0, FRAME_SAMPLES * 5)));
  });
});
