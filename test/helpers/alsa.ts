/**
 * Virtual ALSA devices with no sound card (notes/speech.md §2): a HOME whose .asoundrc has a
 * microphone that plays a raw file (`fakemic`), a speaker that writes into a file (`tofile`),
 * and a speaker stuck mid-play (`stuck`: it writes into a FIFO nobody reads), which is what a
 * real device looks like to aplay while a long reply is playing.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { tempDir } from './tmp.js';

export interface VirtualAudio {
  home: string;
  mic: string;
  speaker: string;
}

export function virtualAudio(mic: Int16Array): VirtualAudio {
  const home = tempDir('iris-alsa-');
  const paths = { mic: join(home, 'mic.raw'), speaker: join(home, 'speaker.raw'), fifo: join(home, 'stuck.fifo') };
  writeFileSync(paths.mic, Buffer.from(mic.buffer, mic.byteOffset, mic.byteLength));
  execFileSync('mkfifo', [paths.fifo]);
  // Held open for reading (never read), so aplay's open succeeds and its writes block.
  const reader = openSync(paths.fifo, 'r+');
  afterEach(() => closeSync(reader));
  writeFileSync(
    join(home, '.asoundrc'),
    [
      `pcm.fakemic { type file; slave.pcm "null"; file "/dev/null"; infile "${paths.mic}"; format "raw" }`,
      `pcm.tofile { type file; slave.pcm "null"; file "${paths.speaker}"; format "raw" }`,
      `pcm.stuck { type file; slave.pcm "null"; file "${paths.fifo}"; format "raw" }`,
      '',
    ].join('\n'),
  );
  return { home, mic: paths.mic, speaker: paths.speaker };
}
