// A microphone that delivers in real time, for benchmarks of the daemon: stands in for arecord
// (its arguments are ignored) and writes $IRIS_BENCH_MIC (raw S16_LE, 16 kHz mono), then
// silence, 80 ms every 80 ms on stdout, as arecord delivers a real microphone. ALSA's file
// plugin with a null slave delivers as fast as it is read, which runs the wake word and VAD
// flat out and queues up to 30 s of audio in the daemon: not how it listens.
const { readFileSync } = require('node:fs');

const pcm = readFileSync(process.env.IRIS_BENCH_MIC ?? '/dev/null');
const CHUNK_BYTES = 2560; // 80 ms at 16 kHz, 16-bit
const CHUNK_MS = 80;
const start = Date.now();
let sent = 0;
function tick() {
  for (const due = Math.floor((Date.now() - start) / CHUNK_MS) + 1; sent < due; sent++) {
    const chunk = Buffer.alloc(CHUNK_BYTES);
    pcm.copy(chunk, 0, Math.min(pcm.length, sent * CHUNK_BYTES), Math.min(pcm.length, (sent + 1) * CHUNK_BYTES));
    process.stdout.write(chunk);
  }
  setTimeout(tick, start + sent * CHUNK_MS - Date.now());
}
process.stdout.on('error', () => process.exit(0)); // the daemon stopped reading
process.on('SIGTERM', () => process.exit(0));
tick();
