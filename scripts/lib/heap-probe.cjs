// Preloaded into the daemon by scripts/soak.ts (with --expose-gc): on SIGUSR2, a full garbage
// collection, then one line of process.memoryUsage() on stderr. The soak then compares live
// memory, not how lazily V8 collects: between major collections the old generation holds up
// to ~100 MB of garbage at the soak's pace of 60 turns a second.
process.on('SIGUSR2', () => {
  global.gc();
  process.stderr.write(`heap-probe ${JSON.stringify(process.memoryUsage())}\n`);
});
