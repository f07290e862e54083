/** `iris listen --file WAV …`: the options and their checks; the run itself is ../listen.ts. */
import { open as openFile, rm } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { messageOf } from '../../errors.js';
import { STAGES } from '../../pipeline/pipeline.js';
import { describe, listen, type ListenStages } from '../listen.js';
import { EXIT, Exit, jsonOption, output } from '../output.js';
import { globals, type Session } from '../session.js';

/**
 * Fail now, as a usage error, when `path` cannot be written (its directory missing, not
 * writable, or `path` a directory) — not after a whole run. Tried by creating the file: that
 * also catches a read-only file system and holds for root, whom permission bits do not stop.
 */
async function checkWritable(path: string): Promise<void> {
  try {
    const file = await openFile(path, 'wx');
    await file.close();
    await rm(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      try {
        await (await openFile(path, 'r+')).close();
        return;
      } catch (again) {
        error = again;
      }
    }
    const why: Record<string, string> = {
      ENOENT: `its directory ${dirname(resolve(path))} does not exist`,
      ENOTDIR: `${dirname(resolve(path))} is not a directory`,
      EISDIR: 'it is a directory',
      EACCES: 'no permission to write it',
      EPERM: 'no permission to write it',
      EROFS: 'the file system is read-only',
    };
    const reason = why[(error as NodeJS.ErrnoException).code ?? ''] ?? messageOf(error);
    throw new Exit(EXIT.usage, `cannot write --out ${path}: ${reason}`);
  }
}

export function register(program: Command, session: Session): void {
  program
    .command('listen')
    .description('the voice pipeline over a recording: wake word, end of speech, speech to text, conversation, reply to --out (or part of it: --start, --end). It carries out what it hears, as the daemon would: timers and reminders are set and tools called (with this config and state dir); --dry-run does not')
    .requiredOption('--file <wav>', 'the recording: a WAV of 8- to 32-bit integer or 32/64-bit float samples (or A-law, µ-law), any rate and channels; converted to 16 kHz mono')
    .option('--out <wav>', 'write the spoken reply here (checked before the run)')
    .option('--playback <wav>', 'what IRIS\'s speaker played while the recording was made (from its first sample): echo cancellation and the stop word run as in the daemon')
    .option('--dry-run', 'call only tools that change nothing (the time, a sum, a listing); say what would have been done instead of setting timers or calling other tools')
    .addOption(jsonOption())
    .addOption(new Option('--start <stage>', 'where the run starts: at the wake word, or at stt (the recording is the command)').choices(['wake', 'stt']).default('wake'))
    .addOption(new Option('--end <stage>', 'where it ends: wake (the detection), stt (the words), conversation (the answer, unspoken) or tts').choices([...STAGES]).default('tts'))
    .action(async (opts: { file: string; out?: string; playback?: string; dryRun?: boolean } & ListenStages, cmd: Command) => {
      const g = globals(cmd);
      if (opts.start === 'stt' && opts.end === 'wake') throw new Exit(EXIT.usage, 'a run that starts at stt cannot end at the wake word');
      if (opts.out !== undefined) await checkWritable(opts.out);
      const { config, iris, log } = await session.open(g);
      if (opts.dryRun === true) iris.host.dryRun();
      const report = await listen(config, iris.conversation(), log, opts.file, opts.out, { start: opts.start, end: opts.end }, opts.playback);
      output(g.json, report, () => describe(report));
      if (report.outcome === 'failed' || report.error !== undefined) process.exitCode = EXIT.failed;
    });
}
