/**
 * The node_modules the .deb ships beside the bundle: the two native addons esbuild leaves out
 * (onnxruntime-node with onnxruntime-common, and koffi), pruned to this architecture and to
 * what Node loads at run time. Left out: TypeScript sources and declarations (`lib/*.ts`,
 * every `.d.ts` and its map), source maps, and onnxruntime-common's ES-module build — the
 * binding is CommonJS, so `require('onnxruntime-common')` takes `dist/cjs` (its package.json
 * "exports": require → dist/cjs). test/ship-modules.test.ts loads the result.
 *
 *   tsx scripts/ship-modules.ts DEST ARCH     (ARCH: x64 or arm64; debian/rules runs it)
 */
import { cpSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Per package, the paths under it (files or folders) that are shipped, before pruning. */
export function shippedRoots(arch: 'x64' | 'arm64'): Record<string, string[]> {
  return {
    'onnxruntime-common': ['package.json', 'dist/cjs'],
    'onnxruntime-node': ['package.json', 'dist', `bin/napi-v6/linux/${arch}`],
    koffi: ['package.json', 'index.js', 'indirect.js', 'LICENSE.txt', `build/koffi/linux_${arch}`],
  };
}

/** Whether Node can load `path` at run time: not a type declaration, TypeScript source or source map. */
export const loadedAtRunTime = (path: string): boolean => !/\.(?:d\.[cm]?ts|[cm]?ts|map)$/.test(path);

/** Every file to ship, as paths relative to `modules` (a node_modules folder), sorted. */
export function shippedFiles(modules: string, arch: 'x64' | 'arm64'): string[] {
  const files: string[] = [];
  const walk = (path: string): void => {
    if (statSync(path).isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
    else if (loadedAtRunTime(path)) files.push(relative(modules, path));
  };
  for (const [pkg, roots] of Object.entries(shippedRoots(arch))) for (const root of roots) walk(join(modules, pkg, root));
  return files.sort();
}

/** Copy the shipped files from `modules` into `dest`, keeping their paths. */
export function shipModules(modules: string, dest: string, arch: 'x64' | 'arm64'): string[] {
  const files = shippedFiles(modules, arch);
  for (const file of files) {
    mkdirSync(dirname(join(dest, file)), { recursive: true });
    cpSync(join(modules, file), join(dest, file), { preserveTimestamps: true });
  }
  return files;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [dest, arch] = process.argv.slice(2);
  if (dest === undefined || (arch !== 'x64' && arch !== 'arm64')) {
    console.error('usage: tsx scripts/ship-modules.ts DEST x64|arm64');
    process.exit(2);
  }
  const root = fileURLToPath(new URL('..', import.meta.url));
  console.log(`ship-modules: ${shipModules(join(root, 'node_modules'), dest, arch).length} files into ${dest}`);
}
