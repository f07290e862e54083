/**
 * WAV in and out, the one file that imports `wavefile`: a recording in any common encoding
 * (8- to 32-bit integer PCM, 32- or 64-bit float, A-law, µ-law; plain or WAVE_FORMAT_EXTENSIBLE),
 * at any rate and with any number of channels, becomes 16 kHz mono int16 (bit depth converted,
 * channels averaged, resampled), and PCM becomes a WAV file. wavefile (maintained, no
 * dependencies) does the parsing, the bit depths, the companded codecs and sinc resampling;
 * this file only decides what it may be handed (below) and says why not in one line.
 */
import wavefile from 'wavefile';
import { SPEECH_FORMAT, type AudioFormat } from './audio.js';
import { IrisError, messageOf } from '../errors.js';

export class WavError extends IrisError {
  override name = 'WavError' as const;
}

/** What wavefile reads from the 'fmt ' chunk (its typings say only `object`). */
interface Fmt {
  audioFormat: number;
  numChannels: number;
  sampleRate: number;
  bitsPerSample: number;
  /** WAVE_FORMAT_EXTENSIBLE's sub-format GUID as four uint32s; the first is a format tag. */
  subformat: number[];
}

/** WAVE format tags (RFC 2361). */
const TAG = { pcm: 1, float: 3, alaw: 6, mulaw: 7, extensible: 0xfffe } as const;

/** espeak-ng --stdout cannot seek back, so it writes placeholder sizes (data 0x7ffff000, RIFF
 * 0x7ffff024) past the end of the file; fix them from the length. */
export function patchStreamedHeader(wav: Buffer): Buffer {
  if (wav.length < 44 || wav.readUInt32LE(4) <= wav.length - 8) return wav;
  const fixed = Buffer.from(wav);
  fixed.writeUInt32LE(fixed.length - 8, 4);
  if (fixed.toString('ascii', 36, 40) === 'data') fixed.writeUInt32LE(fixed.length - 44, 40);
  return fixed;
}

/** The samples of `wav` as 16 kHz mono int16; a one-line WavError for anything it cannot read. */
export function decodeWav(wav: Buffer, name = 'audio'): Int16Array {
  const file = readWav(wav, name);
  // Copied out before converting: wavefile's conversions zero the `fmt` object they replace,
  // so a reference taken earlier reads 0 Hz afterwards ("Invalid sample rate").
  const { sampleRate } = file.fmt as Fmt;
  try {
    toSixteenBits(file);
    const channels = file.getSamples(false, Int16Array) as unknown as Int16Array | Int16Array[];
    const planar = Array.isArray(channels) ? channels : [channels];
    let mono: Int16Array = planar[0] ?? new Int16Array(0);
    if (planar.length > 1) {
      mono = mono.map((_, i) => Math.round(planar.reduce((sum, channel) => sum + (channel[i] ?? 0), 0) / planar.length));
    }
    if (sampleRate === SPEECH_FORMAT.rate || mono.length === 0) return mono;
    const resampled = new wavefile.WaveFile();
    resampled.fromScratch(1, sampleRate, '16', mono);
    resampled.toSampleRate(SPEECH_FORMAT.rate, { method: 'sinc' });
    return resampled.getSamples(false, Int16Array) as unknown as Int16Array;
  } catch (error) {
    throw new WavError('wav_invalid', `${name} could not be converted to 16 kHz mono: ${sentence(error)}`, { cause: error });
  }
}

/**
 * `wav` parsed, if its encoding is one wavefile converts correctly. wavefile takes the encoding from
 * the bit depth and the plain format tag, so it would read other codecs (MS ADPCM, MP3, …) and
 * 64-bit integers as something they are not; those are refused here, naming what they are.
 */
function readWav(wav: Buffer, name: string): wavefile.WaveFile {
  const file = new wavefile.WaveFile();
  try {
    file.fromBuffer(patchStreamedHeader(wav));
  } catch (error) {
    throw new WavError('wav_invalid', `${name} is not a WAV file IRIS can read: ${sentence(error)}`, { cause: error });
  }
  const fmt = file.fmt as Fmt;
  const extensible = fmt.audioFormat === TAG.extensible;
  const tag = (extensible ? fmt.subformat[0] : fmt.audioFormat) ?? 0;
  const bits = fmt.bitsPerSample;
  const readable =
    tag === TAG.pcm ? bits >= 8 && bits <= 32
    : tag === TAG.float ? bits === 32 || bits === 64
    : (tag === TAG.alaw || tag === TAG.mulaw) && bits === 8 && !extensible;
  if (!readable) {
    throw new WavError('wav_unsupported',
      `${name} is encoded as ${encoding(tag, bits)}; IRIS reads 8- to 32-bit integer PCM, 32- and 64-bit float, A-law and µ-law (convert it: sox IN -b 16 OUT.wav)`);
  }
  return file;
}

/** Convert `file` to 16-bit integer samples, around two blind spots of wavefile 11. */
function toSixteenBits(file: wavefile.WaveFile): void {
  const fmt = file.fmt as Fmt;
  // It would read an extensible file's 32-bit floats as 32-bit integers: hand them over as floats.
  if (fmt.audioFormat === TAG.extensible && fmt.subformat[0] === TAG.float && fmt.bitsPerSample === 32) {
    file.fromScratch(fmt.numChannels, fmt.sampleRate, '32f', floats(file));
  }
  // toBitDepth would expand A-law and µ-law, then convert the result as if it were still 8-bit
  // (it reads the old depth first): expand them to 16 bits on their own.
  if (file.bitDepth === '8a') file.fromALaw();
  if (file.bitDepth === '8m') file.fromMuLaw();
  if (file.bitDepth !== '16') file.toBitDepth('16');
}

function encoding(tag: number, bits: number): string {
  if (tag === TAG.pcm) return `${bits}-bit integer PCM`;
  if (tag === TAG.float) return `${bits}-bit float`;
  return `format tag 0x${tag.toString(16).padStart(4, '0')}, ${bits}-bit`;
}

/** The data chunk's bytes as 32-bit floats (little-endian, unless the file is RIFX). */
function floats(file: wavefile.WaveFile): Float32Array {
  const bytes = (file.data as { samples: Uint8Array }).samples;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const littleEndian = file.container !== 'RIFX';
  const out = new Float32Array(bytes.byteLength >> 2);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, littleEndian);
  return out;
}

/** wavefile's "Could not find the "data" chunk." as a clause: "could not find the "data" chunk". */
const sentence = (error: unknown): string => messageOf(error).replace(/^./, (c) => c.toLowerCase()).replace(/\.$/, '');

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
