/**
 * Last word → first reply audio with early answers (issue 24), in real time: each clip is fed
 * to the real voice loop at the pace it was spoken (openWakeWord, Silero, pocketsphinx
 * streaming with the template grammar, the conversation's local path with the native tools,
 * espeak-ng), with `[audio] early_answer` on as the daemon runs it with its echo canceller (the
 * microphone here is clean: no echo of the answer reaches it). Whole commands, and commands
 * continued after a pause ("what time is it … in tokyo", 0.3–0.8 s): the continued ones must
 * end in the whole command's answer (a cut-off is an answer kept to words that ended before
 * the person's did), an early answer taken back when the person goes on, stopped within 150 ms
 * of their voice. Dev and held-out voices and commands apart (speech-set.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync } from 'node:fs';
import { parseConfig } from '../../src/config/load.js';
import { Conversation, type TurnResult } from '../../src/conversation/engine.js';
import { matchIntent, sameMeaning } from '../../src/intents/match.js';
import { prefixState } from '../../src/intents/prefix.js';
import { RIVALS } from '../../src/intents/sentences.js';
import { silentLogger } from '../../src/log.js';
import { FRAME_SAMPLES, SPEECH_FORMAT, type AudioSink, type AudioSource } from '../../src/pipeline/audio.js';
import { createEspeak } from '../../src/pipeline/espeak.js';
import { createPocketsphinx } from '../../src/pipeline/pocketsphinx.js';
import type { VoiceActivity } from '../../src/pipeline/vad.js';
import { VoiceLoop, type VoiceRun } from '../../src/pipeline/voice.js';
import { decodeWav, wavInfo } from '../../src/pipeline/wav.js';
import type { WakeWordDetector } from '../../src/pipeline/wakeword.js';
import { nativeHost } from '../../test/helpers/tools.js';
import { round } from './bench.js';
import { makeClip, VOICES, type Voice } from './speech-set.js';

type Part = 'dev' | 'heldout';

export const WHOLE: Record<Part, string[]> = {
  dev: ['what time is it', 'what time is it in tokyo', 'set a timer for ten minutes', 'what is twelve times seven', 'how much time is left'],
  heldout: ['what time is it', 'what time is it in berlin', 'set a timer for fifteen minutes', 'what is six times eight', 'how much time is left'],
};
/** Said with a pause at " … " (the whole sentence synthesized and cut at the word boundary). */
export const CONTINUED: Record<Part, string[]> = {
  dev: ['what time is it … in tokyo', 'what time is it … in london'],
  heldout: ['what time is it … in berlin', 'what time is it … in sydney'],
};
export const PAUSES_S = [0.3, 0.5, 0.8];

export interface EarlyRow {
  part: Part;
  /** The room it was heard in (bench-room's echo rooms); none: a clean microphone. */
  room?: string;
  voice: string;
  spoken: string;
  pauseS?: number;
  expected: string;
  made: string;
  transcript: string;
  confidence: number;
  /** Last word → first audio of the answer kept (ms, wall clock). */
  waitMs?: number;
  /** Of it, in the audio: last word → where the loop decided to answer (the early answer's pause, or the end of speech; ms). */
  decisionMs?: number;
  /** From that decision (when the loop made it) to the first audio (ms): `waitMs` less `decisionMs` is this plus how far the loop ran behind real time. */
  processingMs?: number;
  /** The answer kept was to words that ended before the person's last word. */
  cutOff: boolean;
  answeredEarly: boolean;
  takenBack: number;
  /** The person's voice coming back → the early answer's sound stopped (ms), when it was sounding. */
  stopMs?: number;
  /** Of `stopMs`: the voice coming back → the VAD hearing it, in the audio (ms). */
  heardAfterMs?: number;
}

/** When a paced clip's first sample was (performance.now ms), and how far it has been handed out (samples). */
export interface PacedClock { t0: number; yieldedTo: number }

/**
 * The clip at the pace it was spoken; `clock.t0` is when its first sample was (performance.now
 * ms). The first `fastS` seconds are handed out at once (a room's earlier reply, which only
 * teaches the canceller the room), the rest in real time. Each chunk is copied out of
 * `samples` when it is handed out, so what is added to `samples` ahead of that (the echo of a
 * reply) is heard.
 */
export function pacedSource(samples: Int16Array, clock: PacedClock, fastS = 0): AudioSource {
  return {
    async *frames(signal) {
      const fast = Math.floor((fastS * SPEECH_FORMAT.rate) / FRAME_SAMPLES) * FRAME_SAMPLES;
      clock.t0 = performance.now() - (fast / SPEECH_FORMAT.rate) * 1000;
      for (let i = 0; i < samples.length && !signal.aborted; i += FRAME_SAMPLES) {
        if (i === fast) clock.t0 = performance.now() - (fast / SPEECH_FORMAT.rate) * 1000;
        const due = clock.t0 + ((i + FRAME_SAMPLES) / SPEECH_FORMAT.rate) * 1000;
        const waitMs = due - performance.now();
        if (i >= fast && waitMs > 0) await sleep(waitMs);
        const chunk = new Int16Array(FRAME_SAMPLES);
        chunk.set(samples.subarray(i, i + FRAME_SAMPLES));
        clock.yieldedTo = i + FRAME_SAMPLES;
        yield { ...SPEECH_FORMAT, samples: chunk, atS: i / SPEECH_FORMAT.rate };
      }
    },
  };
}

/** A speaker that sounds for the clip's length and records when a sound was stopped. */
export function timedSink(): AudioSink & { stops: number[] } {
  const stops: number[] = [];
  return {
    stops,
    play: async (wav, signal) => {
      const info = wavInfo(wav);
      const ms = (info.dataBytes / (info.width * info.channels) / info.rate) * 1000;
      // When the stop is asked for (aplay is killed then), not when the rejection is handled.
      const stopped = () => stops.push(performance.now());
      signal?.addEventListener('abort', stopped, { once: true });
      try {
        await sleep(ms, undefined, signal ? { signal } : {});
      } finally {
        signal?.removeEventListener('abort', stopped);
      }
    },
  };
}

/** Where the person's voice comes back after the pause inside: the end of the longest run of digital silence between the command's start and its last word (s). */
export function resumeS(samples: Int16Array, fromS: number, toS: number): number {
  let best = { length: 0, end: 0 };
  let run = 0;
  for (let i = Math.floor(fromS * SPEECH_FORMAT.rate); i < Math.floor(toS * SPEECH_FORMAT.rate); i++) {
    run = samples[i] === 0 ? run + 1 : 0;
    if (run > best.length) best = { length: run, end: i + 1 };
  }
  return best.end / SPEECH_FORMAT.rate;
}

export const percentile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.min(s.length - 1, Math.floor(q * s.length))] as number);
};

const key = (name: string, args: Record<string, unknown>) => `${name} ${JSON.stringify(args)}`;

/** What each run shares: the config, the recogniser (pocketsphinx with the grammar), espeak-ng, the native tools warmed as a running daemon has them. */
export async function earlyParts(stateDir: string) {
  const config = parseConfig('[assistant]\ntimezone = "Europe/Berlin"\n', 'bench');
  const stt = createPocketsphinx({ wakePhrases: ['hey jarvis', 'jarvis'], agree: sameMeaning, rivals: RIVALS });
  await stt.start?.();
  const tts = createEspeak({ voice: 'en-us', rateWpm: 175 });
  const { host } = nativeHost(stateDir);
  // What a running daemon has loaded after its first time and sum: the gazetteer, the calculator.
  await host.call('get_current_time', { timezone: 'tokyo' });
  await host.call('calculator', { expression: '6 times 8' });
  await matchIntent('what is two plus two');
  return {
    config, stt, tts,
    /** A fresh conversation on the local path (no model). */
    conversation: () => new Conversation({
      config, host, log: silentLogger,
      backend: { chat: () => Promise.reject(new Error('no model in this benchmark')) } as never,
      tokenizer: () => Promise.reject(new Error('no model')),
    }),
    /** The tool call the whole command (" … " closed up) should make. */
    expectedOf: async (spoken: string) => {
      const m = await matchIntent(spoken.replace(' … ', ' '));
      return m?.intent.tool === undefined ? '' : key(m.intent.tool, m.args);
    },
  };
}

/** The clips of a part: whole commands, and commands continued after each pause. */
export function earlyClips(part: Part): { spoken: string; layout: 'one-breath' | 'hesitant-whole'; pauseS?: number }[] {
  return [
    ...WHOLE[part].map((spoken) => ({ spoken, layout: 'one-breath' as const })),
    ...CONTINUED[part].flatMap((spoken) => PAUSES_S.map((pauseS) => ({ spoken, layout: 'hesitant-whole' as const, pauseS }))),
  ];
}

/**
 * One run's row. Times in the audio (`lastWordEndS`, `resumeAtS`: where the person's voice came
 * back after the pause) are seconds of the stream the loop heard; `clock` is its pacing.
 */
export function earlyRowOf(run: VoiceRun<TurnResult> | undefined, heard: { part: Part; room?: string; voice: string; spoken: string; pauseS?: number; expected: string; lastWordEndS: number; resumeAtS?: number; clock: PacedClock; stops: number[] }): EarlyRow {
  const { clock, lastWordEndS, resumeAtS: resume, pauseS } = heard;
  const call = run?.result?.route === 'local' ? run.result.tool_calls[0] : undefined;
  const first = run?.events.find((e) => e.type === 'first-audio');
  const eos = run?.events.find((e) => e.type === 'end_of_speech-end')?.data?.atS;
  const decided = run?.events.find((e) => e.type === 'answer-early') ?? run?.events.find((e) => e.type === 'end_of_speech-end');
  const answerEarly = run?.events.find((e) => e.type === 'answer-early')?.data?.atS;
  /** Where in the audio the words answered ended: the early answer's pause, or the end of speech. */
  const answeredAtS = typeof answerEarly === 'number' ? answerEarly : typeof eos === 'number' ? eos : undefined;
  const takenBack = run?.events.filter((e) => e.type === 'answer-taken-back') ?? [];
  const stop = heard.stops[0];
  return {
    part: heard.part, ...(heard.room === undefined ? {} : { room: heard.room }), voice: heard.voice, spoken: heard.spoken, ...(pauseS === undefined ? {} : { pauseS }), expected: heard.expected,
    made: call ? key(call.name, call.arguments) : '',
    transcript: run?.transcript ?? '',
    confidence: run?.confidence ?? 0,
    ...(first ? { waitMs: round(first.atMs - (clock.t0 + lastWordEndS * 1000), 0) } : {}),
    ...(answeredAtS === undefined ? {} : { decisionMs: round((answeredAtS - lastWordEndS) * 1000, 0) }),
    ...(first && decided ? { processingMs: round(first.atMs - decided.atMs, 0) } : {}),
    cutOff: call !== undefined && answeredAtS !== undefined && answeredAtS < lastWordEndS - 0.05,
    answeredEarly: answerEarly !== undefined,
    takenBack: takenBack.length,
    ...(takenBack.length > 0 && stop !== undefined && resume !== undefined ? { stopMs: round(stop - (clock.t0 + resume * 1000), 0) } : {}),
    ...(typeof takenBack[0]?.data?.atS === 'number' && resume !== undefined ? { heardAfterMs: round((takenBack[0].data.atS - resume) * 1000, 0) } : {}),
  };
}

/** A row as one log line. */
export function earlyLine(row: EarlyRow, outcome = 'no run'): string {
  return `${row.part}${row.room === undefined ? '' : ` ${row.room}`} ${row.voice} ${JSON.stringify(row.spoken)}${row.pauseS === undefined ? '' : ` (${row.pauseS} s)`}: ${row.made === row.expected ? 'right' : row.made === '' ? 'rejected' : `WRONG ${row.made}`} (${outcome}: ${JSON.stringify(row.transcript)} ${round(row.confidence, 2)}), wait ${row.waitMs ?? '-'} ms${row.answeredEarly ? ', early' : ''}${row.takenBack ? `, taken back (${row.pauseS === undefined ? 'nothing followed' : row.stopMs === undefined ? 'stopped before sounding' : `stopped ${row.stopMs} ms after the voice came back, heard ${row.heardAfterMs} ms in`})` : ''}${row.cutOff ? ', CUT OFF' : ''}`;
}

/** The figures over `rows` (one part, one room): waits over the right answers only, at `minConfidence` (the gate each was judged at). */
export function earlyFigures(rows: EarlyRow[], minConfidence: number | ((row: EarlyRow) => number)) {
  const gate = typeof minConfidence === 'number' ? () => minConfidence : minConfidence;
  const right = (r: EarlyRow) => r.made !== '' && r.made === r.expected && r.confidence >= gate(r);
  const waits = rows.filter((r) => right(r) && r.waitMs !== undefined).map((r) => r.waitMs ?? 0);
  const kept = rows.filter((r) => right(r) && r.decisionMs !== undefined && r.processingMs !== undefined);
  /** The wait with the loop keeping up with real time: the decision's place in the audio plus the work after it. */
  const unloaded = kept.map((r) => (r.decisionMs ?? 0) + (r.processingMs ?? 0));
  const spread = (xs: number[]) => ({ p50: round(percentile(xs, 0.5), 0), p95: round(percentile(xs, 0.95), 0), n: xs.length });
  const stops = rows.filter((r) => r.stopMs !== undefined).map((r) => r.stopMs ?? 0);
  return {
    clips: rows.length,
    right: rows.filter(right).length,
    wrong: rows.filter((r) => r.made !== '' && r.made !== r.expected && r.confidence >= gate(r)).length,
    last_word_to_first_audio_ms: spread(waits),
    /** Whole commands apart from those continued after a pause. */
    whole_ms: spread(rows.filter((r) => right(r) && r.pauseS === undefined && r.waitMs !== undefined).map((r) => r.waitMs ?? 0)),
    continued_ms: spread(rows.filter((r) => right(r) && r.pauseS !== undefined && r.waitMs !== undefined).map((r) => r.waitMs ?? 0)),
    /** Decision in the audio + processing after it: the wait on a core the loop has to itself. */
    decision_plus_processing_ms: spread(unloaded),
    decision_ms: spread(kept.map((r) => r.decisionMs ?? 0)),
    cut_offs: rows.filter((r) => r.cutOff).length,
    answered_early: rows.filter((r) => r.answeredEarly).length,
    taken_back: rows.reduce((n, r) => n + r.takenBack, 0),
    /** Of them, in whole commands: nothing followed, so something else (IRIS's own echo, noise) took the answer back. */
    taken_back_whole: rows.filter((r) => r.pauseS === undefined).reduce((n, r) => n + r.takenBack, 0),
    taken_back_while_sounding: stops.length,
    stop_after_voice_ms: { p50: round(percentile(stops, 0.5), 0), max: stops.length === 0 ? null : Math.max(...stops) },
    stop_heard_after_ms: spread(rows.filter((r) => r.stopMs !== undefined && r.heardAfterMs !== undefined).map((r) => r.heardAfterMs ?? 0)),
    continued: rows.filter((r) => r.pauseS !== undefined).length,
  };
}

/** Run the clips (`quick`: one voice per synthesizer) and return the figures per part. */
export async function benchEarlyAnswers(parts: { wake: WakeWordDetector; vad: VoiceActivity; cacheDir: string; stateDir: string; quick: boolean; early?: boolean; only?: Part; log?: (line: string) => void }) {
  const { wake, vad, cacheDir, stateDir, quick } = parts;
  const early = parts.early ?? true;
  const { config, stt, tts, conversation: newConversation, expectedOf } = await earlyParts(stateDir);
  const rows: EarlyRow[] = [];
  for (const part of parts.only ? [parts.only] : (['dev', 'heldout'] as Part[])) {
    const voices: Voice[] = quick ? VOICES[part].filter((v, i, all) => all.findIndex((w) => w.synth === v.synth) === i) : VOICES[part];
    for (const voice of voices) {
      for (const { spoken, layout, pauseS } of earlyClips(part)) {
        const clip = makeClip({ wake: 'hey jarvis', command: spoken, voice, layout, noise: 'clean', ...(pauseS === undefined ? {} : { pauseS }) }, cacheDir);
        const samples = decodeWav(readFileSync(clip.wav));
        const expected = await expectedOf(spoken);
        const conversation = newConversation();
        const sink = timedSink();
        const loop = new VoiceLoop<TurnResult>({
          wake, vad, stt, tts, sink, followUpS: 0, minConfidence: config.stt.min_confidence,
          endpoint: { silenceS: config.audio.silence_s },
          commandState: prefixState, completePauseS: config.audio.complete_pause_s, incompletePauseS: config.audio.incomplete_pause_s,
          respond: (text, signal, heard) => conversation.turn(text, signal, heard),
          ...(early ? { earlyAnswer: (text: string) => conversation.answersEarly(text), takeBackS: config.audio.take_back_s } : {}),
        });
        wake.reset();
        const clock = { t0: 0, yieldedTo: 0 };
        const [run] = await loop.run(pacedSource(samples, clock), new AbortController().signal, true) as [VoiceRun<TurnResult> | undefined];
        const resume = pauseS === undefined ? undefined : resumeS(samples, clip.commandStartS, clip.lastWordEndS);
        const row = earlyRowOf(run, { part, voice: voice.name, spoken, ...(pauseS === undefined ? {} : { pauseS }), expected, lastWordEndS: clip.lastWordEndS, ...(resume === undefined ? {} : { resumeAtS: resume }), clock, stops: sink.stops });
        rows.push(row);
        parts.log?.(earlyLine(row, run?.outcome));
      }
    }
  }
  await stt.stop?.();
  const figuresOf = (part: Part) => earlyFigures(rows.filter((r) => r.part === part), config.stt.min_confidence);
  return { early, quick, dev: figuresOf('dev'), heldout: figuresOf('heldout'), rows };
}
