/**
 * Files that ship beside the bundle in dist/models (scripts/build.ts puts them there): the
 * wake-word and VAD models, the tokenizer's vocabulary and its WebAssembly, the word vectors
 * and the thesaurus.
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';
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
 * then the npm package it comes from (running from source without a build).
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
  const npmDir = origin && npmPackageDir(origin.package);
  return npmDir ? path.join(npmDir, origin.dir, file) : path.join(here, 'models', file);
}

/**
 * An installed npm package's folder, looked for the way Node looks for packages (each
 * node_modules from here up, then NODE_PATH) but without asking the package: its `exports`
 * map may not export package.json (tiktoken's does not: ERR_PACKAGE_PATH_NOT_EXPORTED) or any
 * entry `require` can name.
 */
export function npmPackageDir(name: string): string | undefined {
  for (const modules of require.resolve.paths(name) ?? []) {
    const dir = path.join(modules, name);
    if (existsSync(path.join(dir, 'package.json'))) return dir;
  }
  return undefined;
}

/**
 * `file`, made by `make` unless it is there already, written whole (a part file renamed): the
 * files compacted from an npm package's data (word vectors, thesaurus), named by their source.
 */
export function madeOnce(file: string, make: () => Buffer): string {
  if (!existsSync(file)) {
    const part = `${file}.${process.pid}.part`;
    writeFileSync(part, make());
    renameSync(part, file);
  }
  return file;
}
