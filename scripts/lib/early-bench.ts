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

const WHOLE: Record<Part, string[]> = {
  dev: ['what time is it', 'what time is it in tokyo', 'set a timer for ten minutes', 'what is twelve times seven', 'how much time is left'],
  heldout: ['what time is it', 'what time is it in berlin', 'set a timer for fifteen minutes', 'what is six times eight', 'how much time is left'],
};
/** Said with a pause at " … " (the whole sentence synthesized and cut at the word boundary). */
const CONTINUED: Record<Part, string[]> = {
  dev: ['what time is it … in tokyo', 'what time is it … in london'],
  heldout: ['what time is it … in berlin', 'what time is it … in sydney'],
};
const PAUSES_S = [0.3, 0.5, 0.8];

export interface EarlyRow {
  part: Part;
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

/** The clip at the pace it was spoken; `clock.t0` is when its first sample was (performance.now ms). */
function pacedSource(samples: Int16Array, clock: { t0: number }): AudioSource {
  return {
    async *frames(signal) {
      clock.t0 = performance.now();
      for (let i = 0; i < samples.length && !signal.aborted; i += FRAME_SAMPLES) {
        const due = clock.t0 + ((i + FRAME_SAMPLES) / SPEECH_FORMAT.rate) * 1000;
        const waitMs = due - performance.now();
        if (waitMs > 0) await sleep(waitMs);
        const chunk = new Int16Array(FRAME_SAMPLES);
        chunk.set(samples.subarray(i, i + FRAME_SAMPLES));
        yield { ...SPEECH_FORMAT, samples: chunk, atS: i / SPEECH_FORMAT.rate };
      }
    },
  };
}

/** A speaker that sounds for the clip's length and records when a sound was stopped. */
function timedSink(): AudioSink & { stops: number[] } {
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
function resumeS(samples: Int16Array, fromS: number, toS: number): number {
  let best = { length: 0, end: 0 };
  let run = 0;
  for (let i = Math.floor(fromS * SPEECH_FORMAT.rate); i < Math.floor(toS * SPEECH_FORMAT.rate); i++) {
    run = samples[i] === 0 ? run + 1 : 0;
    if (run > best.length) best = { length: run, end: i + 1 };
  }
  return best.end / SPEECH_FORMAT.rate;
}

const percentile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.min(s.length - 1, Math.floor(q * s.length))] as number);
};

/** Run the clips (`quick`: one voice per synthesizer) and return the figures per part. */
export async function benchEarlyAnswers(parts: { wake: WakeWordDetector; vad: VoiceActivity; cacheDir: string; stateDir: string; quick: boolean; early?: boolean; log?: (line: string) => void }) {
  const { wake, vad, cacheDir, stateDir, quick } = parts;
  const early = parts.early ?? true;
  const config = parseConfig('[assistant]\ntimezone = "Europe/Berlin"\n', 'bench');
  const stt = createPocketsphinx({ wakePhrases: ['hey jarvis', 'jarvis'], agree: sameMeaning, rivals: RIVALS });
  await stt.start?.();
  const tts = createEspeak({ voice: 'en-us', rateWpm: 175 });
  const { host } = nativeHost(stateDir);
  // What a running daemon has loaded after its first time and sum: the gazetteer, the calculator.
  await host.call('get_current_time', { timezone: 'tokyo' });
  await host.call('calculator', { expression: '6 times 8' });
  await matchIntent('what is two plus two');
  const rows: EarlyRow[] = [];
  const key = (name: string, args: Record<string, unknown>) => `${name} ${JSON.stringify(args)}`;
  for (const part of ['dev', 'heldout'] as Part[]) {
    const voices: Voice[] = quick ? VOICES[part].filter((v, i, all) => all.findIndex((w) => w.synth === v.synth) === i) : VOICES[part];
    const clips: { spoken: string; layout: 'one-breath' | 'hesitant-whole'; pauseS?: number }[] = [
      ...WHOLE[part].map((spoken) => ({ spoken, layout: 'one-breath' as const })),
      ...CONTINUED[part].flatMap((spoken) => PAUSES_S.map((pauseS) => ({ spoken, layout: 'hesitant-whole' as const, pauseS }))),
    ];
    for (const voice of voices) {
      for (const { spoken, layout, pauseS } of clips) {
        const clip = makeClip({ wake: 'hey jarvis', command: spoken, voice, layout, noise: 'clean', ...(pauseS === undefined ? {} : { pauseS }) }, cacheDir);
        const samples = decodeWav(readFileSync(clip.wav));
        const whole = spoken.replace(' … ', ' ');
        const m = await matchIntent(whole);
        const expected = m?.intent.tool === undefined ? '' : key(m.intent.tool, m.args);
        const conversation = new Conversation({
          config, host, log: silentLogger,
          backend: { chat: () => Promise.reject(new Error('no model in this benchmark')) } as never,
          tokenizer: () => Promise.reject(new Error('no model')),
        });
        const sink = timedSink();
        const loop = new VoiceLoop<TurnResult>({
          wake, vad, stt, tts, sink, followUpS: 0, minConfidence: config.stt.min_confidence,
          endpoint: { silenceS: config.audio.silence_s },
          commandState: prefixState, completePauseS: config.audio.complete_pause_s, incompletePauseS: config.audio.incomplete_pause_s,
          respond: (text, signal, heard) => conversation.turn(text, signal, heard),
          ...(early ? { earlyAnswer: (text: string) => conversation.answersEarly(text), takeBackS: config.audio.take_back_s } : {}),
        });
        wake.reset();
        const clock = { t0: 0 };
        const [run] = await loop.run(pacedSource(samples, clock), new AbortController().signal, true) as [VoiceRun<TurnResult> | undefined];
        const call = run?.result?.route === 'local' ? run.result.tool_calls[0] : undefined;
        const first = run?.events.find((e) => e.type === 'first-audio');
        const eos = run?.events.find((e) => e.type === 'end_of_speech-end')?.data?.atS;
        const decided = run?.events.find((e) => e.type === 'answer-early') ?? run?.events.find((e) => e.type === 'end_of_speech-end');
        const answerEarly = run?.events.find((e) => e.type === 'answer-early')?.data?.atS;
        /** Where in the audio the words answered ended: the early answer's pause, or the end of speech. */
        const answeredAtS = typeof answerEarly === 'number' ? answerEarly : typeof eos === 'number' ? eos : undefined;
        const takenBack = run?.events.filter((e) => e.type === 'answer-taken-back') ?? [];
        const resume = pauseS === undefined ? undefined : resumeS(samples, clip.commandStartS, clip.lastWordEndS);
        const stop = sink.stops[0];
        const row: EarlyRow = {
          part, voice: voice.name, spoken, ...(pauseS === undefined ? {} : { pauseS }), expected,
          made: call ? key(call.name, call.arguments) : '',
          transcript: run?.transcript ?? '',
          confidence: run?.confidence ?? 0,
          ...(first ? { waitMs: round(first.atMs - (clock.t0 + clip.lastWordEndS * 1000), 0) } : {}),
          ...(answeredAtS === undefined ? {} : { decisionMs: round((answeredAtS - clip.lastWordEndS) * 1000, 0) }),
          ...(first && decided ? { processingMs: round(first.atMs - decided.atMs, 0) } : {}),
          cutOff: call !== undefined && answeredAtS !== undefined && answeredAtS < clip.lastWordEndS - 0.05,
          answeredEarly: answerEarly !== undefined,
          takenBack: takenBack.length,
          ...(takenBack.length > 0 && stop !== undefined && resume !== undefined ? { stopMs: round(stop - (clock.t0 + resume * 1000), 0) } : {}),
          ...(typeof takenBack[0]?.data?.atS === 'number' && resume !== undefined ? { heardAfterMs: round((takenBack[0].data.atS - resume) * 1000, 0) } : {}),
        };
        rows.push(row);
        parts.log?.(`${part} ${voice.name} ${JSON.stringify(spoken)}${pauseS === undefined ? '' : ` (${pauseS} s)`}: ${row.made === row.expected ? 'right' : row.made === '' ? 'rejected' : `WRONG ${row.made}`} (${run?.outcome ?? 'no run'}: ${JSON.stringify(row.transcript)} ${round(row.confidence, 2)}), wait ${row.waitMs ?? '-'} ms${row.answeredEarly ? ', early' : ''}${row.takenBack ? `, taken back (stopped ${row.stopMs === undefined ? 'before sounding' : `${row.stopMs} ms after the voice came back, heard ${row.heardAfterMs} ms in`})` : ''}${row.cutOff ? ', CUT OFF' : ''}`);
      }
    }
  }
  await stt.stop?.();
  const right = (r: EarlyRow) => r.made !== '' && r.made === r.expected && r.confidence >= config.stt.min_confidence;
  const figuresOf = (part: Part) => {
    const mine = rows.filter((r) => r.part === part);
    const waits = mine.filter((r) => right(r) && r.waitMs !== undefined).map((r) => r.waitMs ?? 0);
    const kept = mine.filter((r) => right(r) && r.decisionMs !== undefined && r.processingMs !== undefined);
    /** The wait with the loop keeping up with real time: the decision's place in the audio plus the work after it. */
    const unloaded = kept.map((r) => (r.decisionMs ?? 0) + (r.processingMs ?? 0));
    const spread = (xs: number[]) => ({ p50: round(percentile(xs, 0.5), 0), p95: round(percentile(xs, 0.95), 0), n: xs.length });
    const stops = mine.filter((r) => r.stopMs !== undefined).map((r) => r.stopMs ?? 0);
    return {
      clips: mine.length,
      right: mine.filter(right).length,
      wrong: mine.filter((r) => r.made !== '' && r.made !== r.expected && r.confidence >= config.stt.min_confidence).length,
      last_word_to_first_audio_ms: spread(waits),
      /** Whole commands apart from those continued after a pause. */
      whole_ms: spread(mine.filter((r) => right(r) && r.pauseS === undefined && r.waitMs !== undefined).map((r) => r.waitMs ?? 0)),
      continued_ms: spread(mine.filter((r) => right(r) && r.pauseS !== undefined && r.waitMs !== undefined).map((r) => r.waitMs ?? 0)),
      /** Decision in the audio + processing after it: the wait on a core the loop has to itself. */
      decision_plus_processing_ms: spread(unloaded),
      decision_ms: spread(kept.map((r) => r.decisionMs ?? 0)),
      cut_offs: mine.filter((r) => r.cutOff).length,
      answered_early: mine.filter((r) => r.answeredEarly).length,
      taken_back: mine.reduce((n, r) => n + r.takenBack, 0),
      taken_back_while_sounding: stops.length,
      stop_after_voice_ms: { p50: round(percentile(stops, 0.5), 0), max: stops.length === 0 ? null : Math.max(...stops) },
      stop_heard_after_ms: spread(mine.filter((r) => r.stopMs !== undefined && r.heardAfterMs !== undefined).map((r) => r.heardAfterMs ?? 0)),
      continued: mine.filter((r) => r.pauseS !== undefined).length,
    };
  };
  return { early, quick, dev: figuresOf('dev'), heldout: figuresOf('heldout'), rows };
}
