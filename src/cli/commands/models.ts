/** `iris models fetch NAME [--from FILE]`: the options; fetching, checking and installing is ../models.ts. */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { KNOWN_MODELS, STALL_TIMEOUT_MS } from '../../pipeline/models.js';
import { PIPER_VOICES } from '../../pipeline/voices.js';
import { fetchModels, type ModelsFetchOptions } from '../models.js';
import { print } from '../output.js';
import { globals, readConfig } from '../session.js';

/** A number of seconds from the command line: positive, at most a day (past that a timer would overflow to 1 ms). */
function seconds(text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0 || value > 86_400) throw new InvalidArgumentError('expected seconds, more than 0 and at most 86400');
  return value;
}

export function register(program: Command): void {
  const models = program.command('models').description('speech models');

  models
    .command('fetch')
    .summary('download a speech model (or install one --from a file), checked against its pinned size and SHA-256')
    .description(
      `install a speech model, checked against its pinned size and SHA-256: whisper.cpp (${Object.keys(KNOWN_MODELS).join(', ')}, or any URL with --sha256) ` +
      `or a Piper voice (${Object.keys(PIPER_VOICES).map((v) => `piper:${v}`).join(', ')}; its licence is shown first). ` +
      'Downloaded, or --from a copy fetched some other way. A download is stopped the moment it passes the pinned size or stalls; ' +
      'a failed or stopped one (Ctrl-C) leaves nothing behind. Files go into the models dir: the directory of [stt] model, ' +
      'by default $IRIS_STATE_DIR/models (/var/lib/iris/models); $IRIS_PIPER_MIRROR replaces the Piper voices\' base URL',
    )
    .argument('<name-or-url>', 'a known model name, piper:VOICE, or an http(s) URL')
    .option('--sha256 <hex>', 'the published SHA-256 (required for a URL, refused for a name: those are pinned)')
    .option('--from <file>', 'install this copy instead of downloading (for piper:VOICE the .onnx, its .onnx.json beside it)')
    .option('--out <path>', 'where to put it (default: the models dir; for a Piper voice, the directory its piper/ folder goes in)')
    .addOption(new Option('--stall-s <seconds>', 'give up on a download after this many seconds without a byte').default(STALL_TIMEOUT_MS / 1000).argParser(seconds))
    .action(async (what: string, opts: ModelsFetchOptions, cmd: Command) => {
      await fetchModels(what, opts, await readConfig(globals(cmd)), print);
    });
}
