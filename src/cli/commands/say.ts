/** `iris say TEXT [--out WAV]`: a run of the pipeline from text to speech, on the speaker or into a file. */
import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { speakable } from '../../conversation/speech.js';
import { Engines } from '../../pipeline/engines.js';
import { runPipeline } from '../../pipeline/pipeline.js';
import { CollectingSink, Speaker } from '../../pipeline/playback.js';
import { PlayerStream } from '../../pipeline/player.js';
import { EXIT, Exit, print } from '../output.js';
import { globals, logOf, readConfig } from '../session.js';

export function register(program: Command): void {
  program
    .command('say')
    .description('text to speech only: say TEXT on the speaker ([audio] output), or write it as a WAV file with --out')
    .argument('<text...>', 'what to say')
    .option('--out <wav>', 'write a WAV file instead of playing it')
    .action(async (words: string[], opts: { out?: string }, cmd: Command) => {
      const g = globals(cmd);
      const config = await readConfig(g);
      const tts = new Engines(() => config, logOf(g)).tts();
      const file = new CollectingSink();
      // The daemon's one way out to the speaker, or a file.
      const sink = opts.out === undefined ? new Speaker(new PlayerStream({ device: config.audio.output, idleS: config.audio.speaker_idle_s })) : file;
      const controller = new AbortController();
      const interrupt = (): void => controller.abort(new DOMException('interrupted', 'AbortError'));
      process.once('SIGINT', interrupt);
      let spoken = 0;
      try {
        // A run of the pipeline from speech to speech.
        await runPipeline({ text: speakable(words.join(' ')) }, {
          start: 'tts', end: 'tts', tts, signal: controller.signal,
          sink: { play: (wav, signal) => (spoken++, sink.play(wav, signal)) },
        });
        if (spoken === 0) throw new Exit(EXIT.failed, 'nothing to say: the text has no words to speak');
        if (opts.out !== undefined) await writeFile(opts.out, file.wav());
      } finally {
        process.off('SIGINT', interrupt);
        if (sink instanceof Speaker) await sink.close(); // the last sentence sounds to its end
      }
      print(`${opts.out ?? `speaker ${config.audio.output}`}: ${(await tts.describe?.()) ?? config.tts.voice}`);
    });
}
