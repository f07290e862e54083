/**
 * What the .deb ships of node_modules (scripts/ship-modules.ts, run by debian/rules): this
 * architecture's native addons without type declarations, TypeScript sources or source maps —
 * and what is shipped still loads and runs in Node.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadedAtRunTime, shipModules, shippedFiles } from '../scripts/ship-modules.js';
import { tempDir } from './helpers/tmp.js';

const MODULES = fileURLToPath(new URL('../node_modules', import.meta.url));
const ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';

describe('the node_modules the package ships', () => {
  it('tells run-time files from declarations, sources and maps', () => {
    expect(['a/index.js', 'a/package.json', 'a/x.node', 'a/libonnxruntime.so.1'].every(loadedAtRunTime)).toBe(true);
    expect(['a/index.d.ts', 'a/index.d.ts.map', 'a/index.js.map', 'lib/backend.ts', 'a/x.d.mts', 'a/y.cts'].some(loadedAtRunTime)).toBe(false);
  });

  it('has no .d.ts, TypeScript source or ES-module copy of onnxruntime-common, and one architecture', () => {
    const files = shippedFiles(MODULES, ARCH);
    expect(files.filter((f) => /\.(d\.ts|ts|map)$/.test(f))).toEqual([]);
    expect(files.filter((f) => f.startsWith('onnxruntime-common/lib/') || f.startsWith('onnxruntime-common/dist/esm/'))).toEqual([]);
    expect(files).toContain('onnxruntime-common/dist/cjs/index.js');
    expect(files).toContain(`onnxruntime-node/bin/napi-v6/linux/${ARCH}/onnxruntime_binding.node`);
    expect(files).toContain(`koffi/build/koffi/linux_${ARCH}/koffi.node`);
    expect(files.filter((f) => /koffi\.node$/.test(f))).toHaveLength(1);
    expect(files.filter((f) => /napi-v6\/(?!linux\/(x64|arm64)\/)/.test(f) || f.includes(`linux/${ARCH === 'x64' ? 'arm64' : 'x64'}/`))).toEqual([]);
  });

  it('loads from the shipped copy: onnxruntime-node runs a tensor op, koffi opens libc', () => {
    const dest = join(tempDir(), 'node_modules');
    shipModules(MODULES, dest, ARCH);
    const script = [
      "const ort = require('onnxruntime-node');",
      "const t = new ort.Tensor('float32', new Float32Array([1, 2, 3]), [3]);",
      "const koffi = require('koffi');",
      "const lib = koffi.load('libc.so.6');",
      "const abs = lib.func('int abs(int)');",
      "console.log(require.resolve('onnxruntime-common').replace(process.cwd(), ''), t.dims.join(','), abs(-7));",
    ].join('\n');
    const out = execFileSync(process.execPath, ['-e', script], { cwd: join(dest, '..'), encoding: 'utf8' });
    expect(out.trim()).toBe('/node_modules/onnxruntime-common/dist/cjs/index.js 3 7');
  });
});
