/**
 * How well IRIS understands spoken commands in voices and rooms it was not tuned on: every
 * clip goes through the real voice loop (openWakeWord, Silero, pocketsphinx with the template
 * grammar, the conversation's local path with the native tools, espeak-ng) and is judged by
 * the tool call it led to: right (the call the command asks for), rejected (IRIS asked again
 * or did nothing), wrong (any other call), or wake missed. Spoken negatives (out-of-grammar
 * requests, human recordings after the wake word) must lead to no call at all.
 *
 * The development part (dev voices × dev commands) is what `[stt] min_confidence` and the
 * scoring were chosen on; the held-out part (other voices, other commands) is reported apart
 * and never tuned on. Also: the local path on typed phrasings (test/fixtures/phrasings.ts),
 * recognition CPU per command, and how long a person waits from their last word to the first
 * sound of the answer. Writes scripts/results/understanding.json.
 *
 * Run: `npx tsx scripts/bench-understanding.ts [--quick]` (part of `npm run bench`); --quick
 * takes one voice per synthesizer and two conditions.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/config/load.js';
import { Conversation, type TurnResult } from '../src/conversation/engine.js';
import { answerLocally } from '../src/conversation/local.js';
import { matchIntent, sameMeaning } from '../src/intents/match.js';
import { prefixState } from '../src/intents/prefix.js';
import { RIVALS } from '../src/intents/sentences.js';
import { silentLogger } from '../src/log.js';
import { samplesSource } from '../src/pipeline/capture.js';
import { createEspeak } from '../src/pipeline/espeak.js';
import { CollectingSink } from '../src/pipeline/playback.js';
import { createPocketsphinx } from '../src/pipeline/pocketsphinx.js';
import type { VoiceEvent } from '../src/pipeline/events.js';
import type { SpeechToText } from '../src/pipeline/stt.js';
import { createSileroVad } from '../src/pipeline/vad.js';
import { VoiceLoop, type VoiceRun } from '../src/pipeline/voice.js';
import { decodeWav } from '../src/pipeline/wav.js';
import { createOpenWakeWord } from '../src/pipeline/wakeword.js';
import { PHRASINGS } from '../test/fixtures/phrasings.js';
import { OllamaDouble } from '../test/helpers/ollama-double.js';
import { nativeHost } from '../test/helpers/tools.js';
import { assemble } from '../src/daemon/assemble.js';
import { round, writeResults } from './lib/bench.js';
import { humanNegatives, makeClip, VOICES, wakeThenHuman, type ClipSpec, type Noise, type Voice } from './lib/speech-set.js';

const quick = process.argv.includes('--quick');
const CACHE = join(tmpdir(), 'iris-understanding-clips');
mkdirSync(CACHE, { recursive: true });

// The mix: the time here and in three places, four timers, three sums, a reminder.
const COMMANDS = {
  dev: [
    'what time is it', 'what time is it in tokyo', 'what time is it in london', 'what time is it in paris',
    'set a timer for ten minutes', 'set a timer for twenty minutes', 'set a timer for five minutes', 'set a timer for an hour',
    'what is fifteen plus twenty seven', 'what is twelve times seven', 'what is nine times eight',
    'remind me in an hour to call mom',
  ],
  heldout: [
    'what time is it', 'what time is it in sydney', 'what time is it in berlin', 'what time is it in toronto',
    'set a timer for fifteen minutes', 'set a timer for thirty minutes', 'set a timer for two minutes', 'set a timer for half an hour',
    'what is twenty plus thirty four', 'what is six times eight', 'what is one hundred divided by four',
    'remind me in ten minutes to check the oven',
  ],
};
/** Commands with a pause inside (" … "): the turn must not end in it. Each is made twice over:
 * 'hesitant', the part before the pause synthesized alone (so it ends like a finished sentence,
 * an afterthought), with 0.5 s; and 'hesitant-whole', the whole sentence synthesized in one go
 * and cut at the word boundary (continuation prosody, as a person who goes on), with each of
 * HESITANT_PAUSES_S. */
const HESITANT = {
  dev: ['what time is it … in tokyo', 'set a timer for ten … minutes', 'remind me in an hour … to call mom', 'what is twelve … times seven'],
  heldout: ['what time is it … in berlin', 'set a timer for fifteen … minutes', 'remind me in ten minutes … to check the oven', 'what is six times … eight'],
};
/** Pauses inside the 'hesitant-whole' clips (seconds): the old clips' 0.5, and one longer than
 * `silence_s` (0.7) — how a full-silence endpointer treats a person who stops to think. */
const HESITANT_PAUSES_S = [0.5, 0.8];
/** Requests the grammar cannot hold: nothing may be done for them. */
const OUT_OF_GRAMMAR = {
  dev: ['play some jazz music', 'turn off the kitchen lights', 'what is the capital of france', 'tell me a joke'],
  heldout: ['how tall is mount everest', 'call my brother tomorrow', 'open the garage door', 'what is the weather like'],
};
/** Layout and noise per condition; the level is what the table groups by. */
const CONDITIONS: { layout: ClipSpec['layout']; noise: Noise; reverb?: boolean }[] = quick
  ? [{ layout: 'one-breath', noise: 'clean' }, { layout: 'one-breath', noise: 'white10' }]
  : [
      { layout: 'one-breath', noise: 'clean' },
      { layout: 'pause', noise: 'clean' },
      { layout: 'speech-before', noise: 'clean' },
      { layout: 'one-breath', noise: 'pink20' },
      { layout: 'one-breath', noise: 'white10' },
      { layout: 'one-breath', noise: 'pink10', reverb: true },
    ];
const level = (noise: Noise) => (noise === 'clean' ? 'clean' : noise.endsWith('20') ? '20dB' : '10dB');

type Part = 'dev' | 'heldout';
interface Row {
  part: Part;
  synth: string;
  voice: string;
  level: string;
  layout: string;
  spoken: string;
  /** The call the command asks for ("" for a negative: none). */
  expected: string;
  /** The call made, "" for none; `wake` false when the wake word was missed. */
  made: string;
  wake: boolean;
  transcript: string;
  confidence: number;
  details: Record<string, number>;
  /** Seconds: from the last word's end to the endpointer's decision (audio time); negative:
   * the turn ended before the last word did (cut off). */
  endpointDelayS?: number;
  /** How the endpointer decided: "done" (full silence) or "complete" (a whole command). */
  endpoint?: string;
  /** ms: from the decision to the first reply audio, as it would be in real time: the clips
   * are fed faster than real time, so scoring begun at a pause (a settle) counts from where
   * in the audio it began, and only what is left of it after the decision is waited for. */
  firstAudioMs?: number;
  /** Whether the words were scored during the pause: "used", or "voided" by more speech. */
  settle?: 'used' | 'voided';
  sttCpuMs: number;
}

const key = (name: string, args: Record<string, unknown>) => `${name} ${JSON.stringify(args)}`;
async function expectedCall(command: string): Promise<string> {
  const m = await matchIntent(command);
  if (m?.intent.tool === undefined) throw new Error(`"${command}" matches no intent`);
  return key(m.intent.tool, m.args);
}

// The parts, loaded once. The decoders' mean adapts across commands as a microphone's would.
const config = parseConfig('[assistant]\ntimezone = "Europe/Berlin"\n', 'bench');
const [wake, vad] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis' }), createSileroVad()]);
const inner = createPocketsphinx({ wakePhrases: ['hey jarvis', 'jarvis'], agree: sameMeaning, rivals: RIVALS });
await inner.start?.();
await sameMeaning('one', 'two'); // loads the number reader before the first timing
let sttCpuUs = 0;
const cpuUs = () => { const u = process.cpuUsage(); return u.user + u.system; };
const counted = <A extends unknown[], T>(fn: (...a: A) => T) => (...a: A): T => {
  const start = cpuUs();
  try {
    return fn(...a);
  } finally {
    sttCpuUs += cpuUs() - start;
  }
};
/** The engine, its CPU counted (the streaming calls run synchronously inside). */
const stt: SpeechToText = {
  name: inner.name,
  transcribe: (s, signal) => inner.transcribe(s, signal),
  stream: async (prime) => {
    const start = cpuUs();
    const s = await (inner.stream as NonNullable<SpeechToText['stream']>)(prime);
    sttCpuUs += cpuUs() - start;
    const timed = async <T>(work: () => Promise<T>): Promise<T> => {
      const t = cpuUs();
      const r = await work();
      sttCpuUs += cpuUs() - t;
      return r;
    };
    return {
      push: counted((x: Int16Array) => s.push(x)), partial: () => s.partial(), cancel: () => s.cancel(),
      end: () => timed(() => s.end()),
      ...(s.settle ? { settle: () => timed(() => (s.settle as NonNullable<typeof s.settle>)()) } : {}),
    };
  },
};
const tts = createEspeak({ voice: 'en-us', rateWpm: 175 });
const state = join(CACHE, `state-${process.pid}`);
const { host } = nativeHost(state);

/**
 * From the endpointer's decision (audio time `endAtS`, wall `eosMs`) to the first audio (wall
 * `firstMs`), as in real time. A settle that began `atS` into the audio and took W ms of wall
 * clock is ready at `atS` + W in real time; the reply then waits for the later of that and the
 * decision, plus what came after both.
 */
function realTimeFirstAudioMs(events: readonly VoiceEvent[], endAtS: number, eosMs: number, firstMs: number): number {
  const last = (type: VoiceEvent['type']) => [...events].reverse().find((e) => e.type === type);
  const start = last('settle-start');
  const end = last('settle-end');
  const voided = start !== undefined && events.some((e) => e.type === 'settle-void' && e.atMs > start.atMs);
  if (!start || !end || voided || typeof start.data?.atS !== 'number') return firstMs - eosMs;
  const readyAtS = start.data.atS + (end.atMs - start.atMs) / 1000;
  return Math.max(0, readyAtS - endAtS) * 1000 + (firstMs - Math.max(eosMs, end.atMs));
}

async function runClip(samples: Int16Array, lastWordEndS: number | undefined): Promise<Omit<Row, 'part' | 'synth' | 'voice' | 'level' | 'layout' | 'spoken' | 'expected'>> {
  const conversation = new Conversation({
    config, host, log: silentLogger,
    backend: { chat: () => Promise.reject(new Error('no model in this benchmark')) } as never,
    tokenizer: () => Promise.reject(new Error('no model')),
  });
  sttCpuUs = 0;
  // min_confidence 0: every transcript is acted on here and the threshold applied afterwards,
  // so one run gives the figures for any threshold.
  const loop = new VoiceLoop<TurnResult>({
    wake, vad, stt, tts, sink: new CollectingSink(), followUpS: 0, minConfidence: 0,
    commandState: prefixState, completePauseS: config.audio.complete_pause_s, incompletePauseS: config.audio.incomplete_pause_s,
    respond: (text, signal, heard) => conversation.turn(text, signal, heard),
  });
  wake.reset();
  const [run] = await loop.run(samplesSource(samples), new AbortController().signal, true) as [VoiceRun<TurnResult> | undefined];
  const call = run?.result?.route === 'local' ? run.result.tool_calls[0] : undefined;
  const eos = run?.events.find((e) => e.type === 'end_of_speech-end');
  const first = run?.events.find((e) => e.type === 'first-audio');
  const endAtS = typeof eos?.data?.atS === 'number' ? eos.data.atS : undefined;
  const stt1 = run?.events.find((e) => e.type === 'stt-end')?.data ?? {};
  return {
    made: call ? key(call.name, call.arguments) : '',
    wake: run?.wake !== undefined,
    transcript: run?.transcript ?? '',
    confidence: run?.confidence ?? 0,
    details: Object.fromEntries(Object.entries(stt1).filter((e): e is [string, number] => typeof e[1] === 'number')),
    ...(endAtS !== undefined && lastWordEndS !== undefined ? { endpointDelayS: round(endAtS - lastWordEndS, 3) } : {}),
    ...(typeof eos?.data?.state === 'string' ? { endpoint: eos.data.state } : {}),
    ...(eos && first && endAtS !== undefined ? { firstAudioMs: round(realTimeFirstAudioMs(run?.events ?? [], endAtS, eos.atMs, first.atMs), 1) } : {}),
    ...(run?.events.some((e) => e.type === 'settle-start') ? { settle: run.events.some((e) => e.type === 'settle-void') ? 'voided' as const : 'used' as const } : {}),
    sttCpuMs: round(sttCpuUs / 1000, 1),
  };
}

const rows: Row[] = [];
const started = performance.now();
for (const part of ['dev', 'heldout'] as Part[]) {
  const voices: Voice[] = quick ? VOICES[part].filter((v, i, all) => all.findIndex((w) => w.synth === v.synth) === i) : VOICES[part];
  for (const voice of voices) {
    for (const condition of CONDITIONS) {
      for (const spoken of [...COMMANDS[part], ...OUT_OF_GRAMMAR[part]]) {
        const negative = OUT_OF_GRAMMAR[part].includes(spoken);
        if (negative && condition.layout !== 'one-breath') continue;
        const clip = makeClip({ wake: 'hey jarvis', command: spoken, voice, ...condition }, CACHE);
        const result = await runClip(decodeWav(readFileSync(clip.wav)), clip.lastWordEndS);
        rows.push({
          part, synth: voice.synth, voice: voice.name, level: level(condition.noise), layout: condition.layout + (condition.reverb ? '+reverb' : ''),
          spoken, expected: negative ? '' : await expectedCall(spoken), ...result,
        });
      }
    }
    for (const spoken of HESITANT[part]) {
      const clip = makeClip({ wake: 'hey jarvis', command: spoken, voice, layout: 'hesitant', noise: 'clean' }, CACHE);
      const result = await runClip(decodeWav(readFileSync(clip.wav)), clip.lastWordEndS);
      rows.push({ part, synth: voice.synth, voice: voice.name, level: 'clean', layout: 'hesitant', spoken, expected: await expectedCall(spoken.replace(' … ', ' ')), ...result });
      for (const pauseS of HESITANT_PAUSES_S) {
        const whole = makeClip({ wake: 'hey jarvis', command: spoken, voice, layout: 'hesitant-whole', noise: 'clean', pauseS }, CACHE);
        const wholeResult = await runClip(decodeWav(readFileSync(whole.wav)), whole.lastWordEndS);
        rows.push({ part, synth: voice.synth, voice: voice.name, level: 'clean', layout: `hesitant-whole-${pauseS}`, spoken, expected: await expectedCall(spoken.replace(' … ', ' ')), ...wholeResult });
      }
    }
    process.stderr.write(`${part} ${voice.synth} ${voice.name}: ${rows.length} clips, ${round((performance.now() - started) / 1000, 0)} s\n`);
  }
  // Human speech after the wake word (and without it): never a command.
  const humans = humanNegatives(CACHE);
  const mine = humans.filter((_, i) => (i % 2 === 0) === (part === 'dev'));
  for (const [i, file] of mine.entries()) {
    const voice = VOICES[part][i % VOICES[part].length] as Voice;
    const result = await runClip(decodeWav(readFileSync(wakeThenHuman(voice, file, CACHE))), undefined);
    rows.push({ part, synth: 'human', voice: file.split('/').pop() ?? file, level: 'clean', layout: 'wake+human', spoken: '(human speech)', expected: '', ...result });
  }
}

type Verdict = 'right' | 'rejected' | 'wrong' | 'wake_missed';
function verdict(row: Row, minConfidence: number): Verdict {
  if (!row.wake) return row.expected === '' ? 'rejected' : 'wake_missed';
  const acted = row.made !== '' && row.confidence >= minConfidence;
  if (!acted) return 'rejected';
  return row.made === row.expected ? 'right' : 'wrong';
}
function tally(list: Row[], minConfidence: number) {
  const counts: Record<Verdict, number> = { right: 0, rejected: 0, wrong: 0, wake_missed: 0 };
  for (const row of list) counts[verdict(row, minConfidence)] += 1;
  return { n: list.length, ...counts };
}
const percentile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.min(s.length - 1, Math.floor(q * s.length))] as number);
};

const minConfidence = config.stt.min_confidence;
const table: Record<string, ReturnType<typeof tally>> = {};
for (const part of ['dev', 'heldout'] as Part[]) {
  for (const synth of ['espeak', 'flite', 'festival', 'human']) {
    for (const lvl of ['clean', '20dB', '10dB']) {
      const list = rows.filter((r) => r.part === part && r.synth === synth && r.level === lvl);
      if (list.length) table[`${part} ${synth} ${lvl}`] = tally(list, minConfidence);
    }
  }
  table[`${part} all`] = tally(rows.filter((r) => r.part === part), minConfidence);
}
// How the threshold was chosen: dev figures at several, and the held-out ones beside them.
const sweep = [0, 0.3, 0.4, 0.5, 0.6, 0.7].map((t) => ({
  min_confidence: t,
  dev: tally(rows.filter((r) => r.part === 'dev'), t),
  heldout: tally(rows.filter((r) => r.part === 'heldout'), t),
}));

// What a person waits for a right local answer: last word → endpointer → first audio.
const waits = (part: Part) => rows
  .filter((r) => r.part === part && verdict(r, minConfidence) === 'right' && r.endpointDelayS !== undefined && r.firstAudioMs !== undefined)
  .map((r) => (r.endpointDelayS ?? 0) * 1000 + (r.firstAudioMs ?? 0));
const processing = rows.filter((r) => r.firstAudioMs !== undefined).map((r) => r.firstAudioMs ?? 0);
/** Commands whose turn ended before their last word did (words lost). */
const cutOff = (part: Part) => rows.filter((r) => r.part === part && r.expected !== '' && (r.endpointDelayS ?? 0) < 0);
const cpu = rows.filter((r) => r.wake).map((r) => r.sttCpuMs);

// The local path on typed phrasings.
const typed: Record<string, { n: number; right: number; false_matches: number; missed: number }> = {};
for (const part of ['dev', 'heldout'] as Part[]) {
  const t = { n: 0, right: 0, false_matches: 0, missed: 0 };
  for (const [text, tool, args] of PHRASINGS[part]) {
    const answer = await answerLocally(text, nativeHost(join(state, `typed-${part}`)).host);
    const call = answer?.tool_calls[0];
    t.n += 1;
    if (tool === null) t[call ? 'false_matches' : 'right'] += 1;
    else if (call?.name === tool && Object.entries(args ?? {}).every(([k, v]) => call.arguments[k] === v)) t.right += 1;
    else t[call ? 'false_matches' : 'missed'] += 1;
  }
  typed[part] = t;
}
// A model answer, the Ollama double answering at once: "thank you" has no local tool, so it
// goes to the model; the wake word has already asked for the model to load.
const double = await new OllamaDouble().start();
const modelFirstAudio: number[] = [];
try {
  const modelConfig = parseConfig(`[assistant]\ntimezone = "Europe/Berlin"\n[ollama]\nurl = "${double.url}"\n`, 'bench');
  const iris = assemble(modelConfig, { stateDir: join(state, 'model'), log: silentLogger });
  for (const voice of VOICES.heldout) {
    for (let i = 0; i < 2; i++) {
      double.script({ content: ["You're welcome."] });
      const conversation = iris.conversation();
      const loop = new VoiceLoop<TurnResult>({
        wake, vad, stt, tts, sink: new CollectingSink(), followUpS: 0, minConfidence: modelConfig.stt.min_confidence,
        commandState: prefixState, completePauseS: modelConfig.audio.complete_pause_s, incompletePauseS: modelConfig.audio.incomplete_pause_s,
        onWake: () => conversation.warm(),
        respond: (text, signal, heard) => conversation.turn(text, signal, heard),
      });
      wake.reset();
      const clip = makeClip({ wake: 'hey jarvis', command: 'thank you', voice, layout: 'one-breath', noise: 'clean' }, CACHE);
      const [run] = await loop.run(samplesSource(decodeWav(readFileSync(clip.wav))), new AbortController().signal, true);
      const eos = run?.events.find((e) => e.type === 'end_of_speech-end');
      const first = run?.events.find((e) => e.type === 'first-audio');
      if (run?.result?.route === 'llm' && eos && first) modelFirstAudio.push(first.atMs - eos.atMs);
    }
  }
} finally {
  await double.close();
}
const localFirstAudio = rows.filter((r) => r.part === 'heldout' && r.made !== '' && r.firstAudioMs !== undefined).map((r) => r.firstAudioMs ?? 0);
await inner.stop?.();

const figures = {
  min_confidence: minConfidence,
  clips: rows.length,
  quick,
  table,
  sweep,
  wait_last_word_to_first_audio_ms: Object.fromEntries((['dev', 'heldout'] as Part[]).map((p) => [p, { p50: round(percentile(waits(p), 0.5), 0), p95: round(percentile(waits(p), 0.95), 0), n: waits(p).length }])),
  cut_off: Object.fromEntries((['dev', 'heldout'] as Part[]).map((p) => [p, { commands: rows.filter((r) => r.part === p && r.expected !== '' && r.wake).length, cut_off: cutOff(p).length, hesitant: rows.filter((r) => r.part === p && r.layout.startsWith('hesitant')).length,
    by_layout: Object.fromEntries(['hesitant', ...HESITANT_PAUSES_S.map((s) => `hesitant-whole-${s}`)].map((l) => [l, { cut_off: cutOff(p).filter((r) => r.layout === l).length, ...tally(rows.filter((r) => r.part === p && r.layout === l), minConfidence) }])) }])),
  early_endpoints: rows.filter((r) => r.endpoint === 'complete').length,
  settles: { used: rows.filter((r) => r.settle === 'used').length, voided: rows.filter((r) => r.settle === 'voided').length },
  model_vs_local_first_audio_ms: {
    model_p50: round(percentile(modelFirstAudio, 0.5), 0), local_p50: round(percentile(localFirstAudio, 0.5), 0), model_runs: modelFirstAudio.length, model_loads_at_wake: double.loads.length,
  },
  end_of_speech_to_first_audio_ms: { p50: round(percentile(processing, 0.5), 0), p95: round(percentile(processing, 0.95), 0) },
  stt_cpu_ms_per_command: { p50: round(percentile(cpu, 0.5), 0), p95: round(percentile(cpu, 0.95), 0) },
  typed,
  rows,
};
console.log(`min_confidence ${minConfidence}; ${rows.length} clips in ${round((performance.now() - started) / 1000, 0)} s`);
console.log('part      synth     level   n   right  rejected  wrong  wake missed');
for (const [name, t] of Object.entries(table)) {
  const [part, synth, lvl] = name.split(' ');
  console.log(`${(part ?? '').padEnd(9)} ${(synth ?? '').padEnd(9)} ${(lvl ?? '').padEnd(6)} ${String(t.n).padStart(3)} ${String(t.right).padStart(6)} ${String(t.rejected).padStart(9)} ${String(t.wrong).padStart(6)} ${String(t.wake_missed).padStart(12)}`);
}
console.log('threshold sweep (dev | held-out: right/wrong):', sweep.map((s) => `${s.min_confidence}: ${s.dev.right}/${s.dev.wrong} | ${s.heldout.right}/${s.heldout.wrong}`).join('; '));
console.log(`typed phrasings, local path: dev ${typed.dev?.right}/${typed.dev?.n} (false matches ${typed.dev?.false_matches}), held-out ${typed.heldout?.right}/${typed.heldout?.n} (false matches ${typed.heldout?.false_matches})`);
console.log(`last word → first reply audio (right answers): dev p50 ${figures.wait_last_word_to_first_audio_ms.dev?.p50} ms p95 ${figures.wait_last_word_to_first_audio_ms.dev?.p95}; held-out p50 ${figures.wait_last_word_to_first_audio_ms.heldout?.p50} ms p95 ${figures.wait_last_word_to_first_audio_ms.heldout?.p95}`);
console.log(`cut off (the turn ended before the last word): dev ${cutOff('dev').length}, held-out ${cutOff('heldout').length} (of ${figures.cut_off.heldout?.commands}, ${figures.cut_off.heldout?.hesitant} with a pause inside); ended early on a whole command: ${figures.early_endpoints} of ${rows.length}`);
for (const p of ['dev', 'heldout'] as Part[]) {
  console.log(`  ${p} with a pause inside: ${Object.entries(figures.cut_off[p]?.by_layout ?? {}).map(([l, t]) => `${l} ${t.cut_off} cut off, ${t.right} right, ${t.wrong} wrong of ${t.n}`).join('; ')}`);
}
for (const r of [...cutOff('dev'), ...cutOff('heldout')]) console.log(`  cut off: ${r.part} ${r.voice} ${r.layout} "${r.spoken}" → "${r.transcript}"`);
console.log(`end of speech → first audio, a model answer (instant double) vs the local path, held-out: p50 ${figures.model_vs_local_first_audio_ms.model_p50} vs ${figures.model_vs_local_first_audio_ms.local_p50} ms (${modelFirstAudio.length} model answers; ${double.loads.length} loads asked at the wake word)`);
console.log(`end of speech → first audio: p50 ${figures.end_of_speech_to_first_audio_ms.p50} ms, p95 ${figures.end_of_speech_to_first_audio_ms.p95} ms; recognition CPU per command p50 ${figures.stt_cpu_ms_per_command.p50} ms`);
writeResults(quick ? 'understanding-quick' : 'understanding', figures);
