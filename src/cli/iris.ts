#!/usr/bin/env node
// The executable's entry: everything else lives in main.ts so tests can import it.
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
