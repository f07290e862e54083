/**
 * `iris listen --file WAV [--playback REF] [--out WAV] [--json] [--start STAGE] [--end STAGE]`:
 * the daemon's voice pipeline, with a recording as the microphone and a WAV file as the
 * speaker. One run: wake word → end of speech → speech to text → conversation → speech out, or
 * part of it: from `stt` the recording is the command (no wake word); ending at `stt` gives the
 * words only, at `conversation` the answer unspoken, at `wake` the detection only. With
 * `--playback`, REF is what IRIS's speaker played while WAV was recorded (from WAV's first
 * sample): the microphone goes through the daemon's front end (echo cancellation with REF as
 * the reference, the stop word armed while REF sounds) before the wake word.
 */
import { readFile, writeFile } from 'node:fs/promises';
import type { Config } from '../config/schema.js';
import type { Conversation, TurnResult } from '../conversation/engine.js';
import { createVoiceParts, loopOptions, ownVoiceOf } from '../daemon/voice.js';
import { Engines } from '../pipeline/engines.js';
import type { Logger } from '../log.js';
import { samplesSource } from '../pipeline/capture.js';
import { createFrontEnd, type FrontEnd } from '../daemon/room-ear.js';
import { CollectingSink } from '../pipeline/playback.js';
import type { PipelineStage } from '../pipeline/pipeline.js';
import { VoiceLoop, type VoiceRun } from '../pipeline/voice.js';
import { decodeWav } from '../pipeline/wav.js';

export interface ListenReport extends Partial<TurnResult> {
  /** `skipped`: the run started at stt. */
  wake: { detected: boolean; word: string; score?: number; at_s?: number; skipped?: true };
  transcript?: string;
  /** The recogniser's confidence in the transcript, 0–1. */
  confidence?: number;
  out?: string;
  outcome: VoiceRun<TurnResult>['outcome'];
  timings_ms: VoiceRun<TurnResult>['timings'];
  stt_engine: string;
  /** With --playback: the delay measured between REF and the microphone (ms), and the echo removed while REF sounded (dB). */
  echo?: { delay_ms: number | null; erle_db: number | null };
  /** With --playback: the stop word heard while REF sounded, and where (seconds into WAV). */
  stop?: { detected: boolean; at_s?: number };
}

/** Where a run of `iris listen` starts (a recording is audio: wake or stt) and ends. */
export interface ListenStages {
  start: 'wake' | 'stt';
  end: PipelineStage;
}

export async function listen(config: Config, conversation: Conversation, log: Logger, file: string, out?: string, stages: ListenStages = { start: 'wake', end: 'tts' }, playback?: string): Promise<ListenReport> {
  const samples = decodeWav(await readFile(file), file);
  const played = playback === undefined ? undefined : decodeWav(await readFile(playback), playback);
  const engines = new Engines(() => config, log);
  const parts = await createVoiceParts(engines, stages.start === 'wake');
  const sink = new CollectingSink();
  const controller = new AbortController();
  const interrupt = (): void => controller.abort(new DOMException('interrupted', 'AbortError'));
  process.once('SIGINT', interrupt);
  try {
    await parts.sttStarted; // as the daemon does at start: the stt timing is the transcription
    const options = loopOptions(config, parts, sink, (text, signal, heard) => conversation.turn(text, signal, heard));
    let room: FrontEnd | undefined;
    // With what was played: IRIS's own wake word is vetoed, as in the daemon.
    const ownVoice = played ? await ownVoiceOf(engines, parts, () => room) : {};
    const loop = new VoiceLoop<TurnResult>({ ...options, ...ownVoice, followUpS: 0, end: stages.end });
    if (stages.start === 'stt') loop.trigger(); // the recording is the command
    let source = samplesSource(samples);
    if (played) {
      room = await createFrontEnd(config, log, { source, played, ...(parts.wake ? { wake: await engines.wake(true) } : {}) });
      source = room.source;
    }
    const [run] = await loop.run(source, controller.signal, true).finally(() => room?.stop());
    const roomStats = room?.stats();
    if (!run) throw new Error('the pipeline ended without a result');
    if (out !== undefined && sink.clips > 0) await writeFile(out, sink.wav());
    const answers = stages.end === 'conversation' || stages.end === 'tts';
    // A run that reaches the conversation has ask's fields once the command was taken (the
    // wake word heard, or a recording that is the command): also when nothing was understood
    // (then `reply` is what IRIS said back, on the local path, with no tool called).
    const taken = run.wake !== undefined || stages.start === 'stt';
    const heard: Partial<TurnResult> = answers && taken ? { reply: run.said ?? '', route: 'local', tool_calls: [] } : {};
    return {
      ...heard,
      ...(run.result ?? {}),
      wake: stages.start === 'stt'
        ? { detected: false, word: '', skipped: true }
        : run.wake
          ? { detected: true, word: run.wake.word, score: round(run.wake.score, 3), at_s: round(run.wake.atS, 2) }
          : { detected: false, word: parts.wake?.word ?? '' },
      ...(run.transcript === undefined ? {} : { transcript: run.transcript }),
      ...(run.confidence === undefined ? {} : { confidence: run.confidence }),
      ...(out !== undefined && sink.clips > 0 ? { out } : {}),
      outcome: run.outcome,
      ...(run.error === undefined ? {} : { error: { code: 'voice_failed', message: run.error } }),
      timings_ms: run.timings,
      stt_engine: parts.sttReason,
      ...(roomStats ? {
        echo: { delay_ms: roomStats.delayMs === undefined ? null : round(roomStats.delayMs, 1), erle_db: roomStats.erleDb === undefined ? null : round(roomStats.erleDb, 1) },
        stop: roomStats.stopAtS === undefined ? { detected: false } : { detected: true, at_s: round(roomStats.stopAtS, 2) },
      } : {}),
    };
  } finally {
    process.off('SIGINT', interrupt);
    await engines.stop();
  }
}

const round = (value: number, digits: number): number => Number(value.toFixed(digits));

/** The human-readable form of a report. */
export function describe(report: ListenReport): string[] {
  const t = report.timings_ms;
  const lines = report.wake.skipped === true ? [] : [
    report.wake.detected
      ? `wake word: ${report.wake.word} (score ${report.wake.score}) at ${report.wake.at_s} s`
      : `wake word: ${report.wake.word} not heard`,
  ];
  if (report.transcript !== undefined) {
    const sure = report.confidence === undefined ? '' : ` (confidence ${report.confidence})`;
    lines.push(`heard: ${report.transcript || '(nothing understood)'}${sure}`);
  }
  if (report.echo) lines.push(`echo: delay ${report.echo.delay_ms ?? '?'} ms, reduced by ${report.echo.erle_db ?? '?'} dB`);
  if (report.stop) lines.push(report.stop.detected ? `stop: heard at ${report.stop.at_s} s` : 'stop: not heard');
  if (report.reply !== undefined && report.reply !== '') lines.push(`reply: ${report.reply}`);
  if (report.out !== undefined) lines.push(`spoken reply: ${report.out}`);
  if (report.wake.detected || report.wake.skipped === true) {
    lines.push(`timings: end of speech at ${t.end_of_speech} ms, stt ${t.stt} ms, first token ${t.first_token} ms, first audio ${t.first_audio} ms after end of speech, total ${t.total} ms`);
  }
  return lines;
}
