// Build the bundle once per run: the CLI tests run dist/iris.mjs, the file the package ships
// (and it starts in a third of tsx's time).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: root, stdio: 'inherit' });
  buildWhisperServer(root);
  buildWebrtcAec(root);
}

// --- the webrtc echo canceller's shim for test/webrtc-aec.test.ts ---------------------------------
// Built into .cache/webrtc-aec (gitignored) in ~5 s, again only when native/webrtc-aec.cc changes.
// Without libwebrtc-audio-processing-dev it cannot be built: the tests that need it then fail
// (or are skipped, saying so, when the library itself is absent).
function buildWebrtcAec(root: string): void {
  try {
    execFileSync('bash', ['scripts/build-webrtc-aec.sh', '.cache/webrtc-aec'], { cwd: root, stdio: 'inherit' });
  } catch (error) {
    console.error(`global setup: building the webrtc echo canceller's shim failed: ${(error as Error).message}`);
  }
}

// --- whisper-server for test/whisper.test.ts ---------------------------------------------------
// Built once into .cache/whisper (gitignored) from the whisper.cpp source in node_modules: about
// 3 minutes on 2 cores the first time; afterwards the script sees its stamp and returns at once.
// A failed build does not stop the other tests; whisper.test.ts then fails, naming the binary.
function buildWhisperServer(root: string): void {
  try {
    execFileSync('bash', ['scripts/build-whisper.sh', '.cache/whisper'], { cwd: root, stdio: 'inherit' });
  } catch (error) {
    console.error(`global setup: building whisper-server failed: ${(error as Error).message}`);
  }
}
