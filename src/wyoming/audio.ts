/**
 * Audio over Wyoming: a peer's `audio-chunk` as the pipeline's speech (16 kHz mono 16-bit,
 * resampled and mixed down when it is not), and a WAV as the `audio-start`, 2 KiB
 * `audio-chunk`s and `audio-stop` a peer plays.
 */
import { SPEECH_FORMAT } from '../pipeline/audio.js';
import { decodeWav, encodeWav, wavInfo } from '../pipeline/wav.js';
import { WyomingError } from './events.js';
import type { AudioChunk, Message } from './messages.js';

/** Audio is sent in chunks of this many bytes, as Home Assistant does. */
const CHUNK_BYTES = 2048;

/** An audio chunk's PCM as 16 kHz mono 16-bit (resampled and mixed down when it is not). */
export function toSpeech(chunk: AudioChunk): Int16Array {
  const { rate, width, channels, audio } = chunk;
  if (width !== 2) throw new WyomingError('wyoming_audio', `audio of width ${String(width)}: IRIS takes 16-bit samples`);
  const samples = new Int16Array(audio.buffer.slice(audio.byteOffset, audio.byteOffset + audio.length - (audio.length % 2)));
  if (rate === SPEECH_FORMAT.rate && channels === 1) return samples;
  if (!(Number.isInteger(rate) && rate >= 8000 && rate <= 192_000 && Number.isInteger(channels) && channels >= 1 && channels <= 8)) {
    throw new WyomingError('wyoming_audio', `audio at ${String(rate)} Hz with ${String(channels)} channels: not a format IRIS reads`);
  }
  return decodeWav(encodeWav(samples, { rate, width, channels }), 'an audio chunk');
}

export type AudioMessage = Extract<Message, { type: 'audio-start' | 'audio-chunk' | 'audio-stop' }>;

/** A WAV as `audio-start`, 2 KiB `audio-chunk`s and `audio-stop`, in its own format; and how long it plays (s). */
export function wavMessages(wav: Buffer): { messages: AudioMessage[]; seconds: number } {
  const { rate, width, channels, dataOffset, dataBytes } = wavInfo(wav);
  const pcm = wav.subarray(dataOffset, dataOffset + dataBytes);
  const format = { rate, width, channels };
  const bytesPerMs = (rate * width * channels) / 1000;
  const messages: AudioMessage[] = [{ type: 'audio-start', ...format, timestamp: 0 }];
  for (let at = 0; at < pcm.length; at += CHUNK_BYTES) {
    messages.push({ type: 'audio-chunk', ...format, timestamp: Math.round(at / bytesPerMs), audio: pcm.subarray(at, at + CHUNK_BYTES) });
  }
  messages.push({ type: 'audio-stop', timestamp: Math.round(pcm.length / bytesPerMs) });
  return { messages, seconds: pcm.length / bytesPerMs / 1000 };
}
