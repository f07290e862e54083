/**
 * WAV in and out, the one file that imports `wavefile`: any PCM WAV becomes 16 kHz mono int16
 * (resampled, bit depth converted, channels averaged), and PCM becomes a WAV file.
 */
import wavefile from 'wavefile';
import { SPEECH_FORMAT, type AudioFormat } from './audio.js';
import { IrisError } from '../errors.js';

export class WavError extends IrisError {
  override name = 'WavError' as const;
}

/** espeak-ng --stdout cannot seek back, so it writes placeholder sizes (data 0x7ffff000, RIFF
 * 0x7ffff024) past the end of the file; fix them from the length. */
export function patchStreamedHeader(wav: Buffer): Buffer {
  if (wav.length < 44 || wav.readUInt32LE(4) <= wav.length - 8) return wav;
  const fixed = Buffer.from(wav);
  fixed.writeUInt32LE(fixed.length - 8, 4);
  if (fixed.toString('ascii', 36, 40) === 'data') fixed.writeUInt32LE(fixed.length - 44, 40);
  return fixed;
}

/** The samples of `wav` as 16 kHz mono int16; a clear error for anything that is not WAV. */
export function decodeWav(wav: Buffer, name = 'audio'): Int16Array {
  const file = new wavefile.WaveFile();
  try {
    file.fromBuffer(patchStreamedHeader(wav));
  } catch (error) {
    throw new WavError('wav_invalid', `${name} is not a WAV file we can read: ${(error as Error).message}`, { cause: error });
  }
  const fmt = file.fmt as { numChannels: number; sampleRate: number; bitsPerSample: number };
  if (fmt.bitsPerSample !== 16) file.toBitDepth('16');
  const channels = file.getSamples(false, Int16Array) as unknown as Int16Array | Int16Array[];
  const planar = Array.isArray(channels) ? channels : [channels];
  let mono: Int16Array = planar[0] ?? new Int16Array(0);
  if (planar.length > 1) {
    mono = mono.map((_, i) => Math.round(planar.reduce((sum, channel) => sum + (channel[i] ?? 0), 0) / planar.length));
  }
  if (fmt.sampleRate === SPEECH_FORMAT.rate) return mono;
  const resampled = new wavefile.WaveFile();
  resampled.fromScratch(1, fmt.sampleRate, '16', mono);
  resampled.toSampleRate(SPEECH_FORMAT.rate, { method: 'sinc' });
  return resampled.getSamples(false, Int16Array) as unknown as Int16Array;
}

/** A WAV file holding `samples`. */
export function encodeWav(samples: Int16Array, format: AudioFormat = SPEECH_FORMAT): Buffer {
  const file = new wavefile.WaveFile();
  file.fromScratch(format.channels, format.rate, '16', samples);
  return Buffer.from(file.toBuffer());
}

/** The format a WAV header declares, and where its samples start and end. */
export function wavInfo(wav: Buffer): AudioFormat & { dataOffset: number; dataBytes: number } {
  const file = new wavefile.WaveFile();
  file.fromBuffer(patchStreamedHeader(wav), false);
  const fmt = file.fmt as { numChannels: number; sampleRate: number; bitsPerSample: number };
  const data = file.data as { chunkSize: number };
  return {
    rate: fmt.sampleRate,
    channels: fmt.numChannels,
    width: fmt.bitsPerSample / 8,
    dataOffset: wav.indexOf('data') + 8,
    dataBytes: data.chunkSize,
  };
}
