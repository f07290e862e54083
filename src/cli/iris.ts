#!/usr/bin/env node
// The executable's entry: everything else lives in main.ts so tests can import it.
import { main } from './main.js';

// A reader that stops early (`iris tools list | head -1`) closes the pipe, the next write fails
// with EPIPE, and Node throws that from an 'error' event nobody listens to: a stack trace. No
// one is left to read, so there is nothing to say. The command still runs to its end, so what
// it does (a timer set, a tool called) never depends on how much of its output was read.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

process.exitCode = await main(process.argv.slice(2));
