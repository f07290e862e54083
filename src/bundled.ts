/**
 * Files that ship beside the bundle in dist/models (scripts/build.ts puts them there): the
 * wake-word and VAD models, the tokenizer's vocabulary and its WebAssembly.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

/** Where a file comes from in development when no build has copied it: an npm package's folder. */
export interface NpmOrigin {
  package: string;
  dir: string;
}

/**
 * Where `file` lives: `$IRIS_MODELS_DIR`, then `models/` beside the running bundle (what the
 * .deb ships), then a checkout's `dist/models` (running from source after `npm run build`),
 * then the npm package it comes from.
 */
export function bundledFile(file: string, origin?: NpmOrigin): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [
    process.env.IRIS_MODELS_DIR && path.join(process.env.IRIS_MODELS_DIR, file),
    path.join(here, 'models', file),
    path.join(here, '..', 'models', file), // from dist/chunks/
    path.join(here, '..', 'dist', 'models', file), // from src/
  ];
  for (const candidate of candidates) if (candidate && existsSync(candidate)) return candidate;
  if (origin) {
    try {
      return path.join(path.dirname(require.resolve(`${origin.package}/package.json`)), origin.dir, file);
    } catch {
      // not installed: report the bundle's place
    }
  }
  return path.join(here, 'models', file);
}
