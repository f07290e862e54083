/**
 * The voice loop: wake word → end of speech → speech to text → the responder (the daemon wires
 * in the conversation) → speech out, sentence by sentence. One loop reads the microphone
 * all the time, so the wake word spoken during a reply is heard: it aborts the turn's one
 * AbortController (model stream, tool calls, synthesis, playback) and a new command starts.
 * After a reply it listens `followUpS` more without the wake word. `once` runs a single turn
 * and waits for it (iris listen: a file source is not real time). The pipeline can also start
 * at the speech stage: `trigger()` (a satellite heard the wake word itself) makes the next
 * audio a command, and a loop without a wake-word detector starts only that way; `drop()`
 * ends the command being taken without a word (another room answers).
 */
import { concatSamples, durationS, meanPower, SPEECH_FORMAT, type AudioChunk, type AudioSink, type AudioSource } from './audio.js';
import { earlyAnswer, settledWords, type EarlyAnswer, type EarlyAnswerCounts } from './early.js';
import { Endpointer, type EndpointerOptions } from './endpointer.js';
import { summaryLine, timingsOf, type Timings, type VoiceEvent, type VoiceEventType } from './events.js';
import { median, ResidualEcho } from './residual.js';
import { runPipeline, stripWakeWord, type PipelineStage, type Responder, type RunInput, type RunResult } from './pipeline.js';
import type { SpeechToText, SttStream, Transcript } from './stt.js';
import type { TextToSpeech } from './tts.js';
import { isBackground, isVoice, voiceFloorDb, type VadFrame, type VoiceActivity } from './vad.js';
import type { Detection, OwnVoiceVeto, WakeWordDetector } from './wakeword.js';

export type { Heard, ReplyStream, Responder } from './pipeline.js';
export type { EarlyAnswerCounts } from './early.js';
export { stripWakeWord } from './pipeline.js';

/** `not_understood`: nothing was heard, or not surely enough to act on (below `minConfidence`). */
export type Outcome = 'answered' | 'no_wake' | 'no_speech' | 'not_understood' | 'cancelled' | 'failed';

export interface VoiceRun<R> {
  run: number;
  wake?: Detection;
  /** True when the command came without the wake word, as a follow-up. */
  followUp: boolean;
  transcript?: string;
  /** The recogniser's confidence in `transcript`, 0–1. */
  confidence?: number;
  result?: R;
  /** What IRIS said when no turn answered (it did not catch the words). */
  said?: string;
  outcome: Outcome;
  error?: string;
  timings: Timings;
  events: VoiceEvent[];
}

export interface VoiceLoopOptions<R> {
  /** The wake word on the audio; none when something else hears it and calls `trigger()`. */
  wake?: WakeWordDetector;
  vad: VoiceActivity;
  stt: SpeechToText;
  tts: TextToSpeech;
  sink: AudioSink;
  respond: Responder<R>;
  /** Where each run ends: `tts` (the reply spoken, the default), `conversation` (answered, not
   * spoken), `stt` (the words only) or `wake` (the wake word only: no command is taken). */
  end?: PipelineStage;
  /** End-of-speech settings (seconds). */
  endpoint?: EndpointerOptions;
  /** Keep listening this long after a reply, without the wake word (seconds); 0 = off. */
  followUpS?: number;
  /** Audio kept from before the detection (seconds), searched for where the wake phrase's
   * speech began, so the recogniser gets whole words ("hey jarvis what time is it" in one
   * breath); default 2.5: the wake phrase lasts ~0.8 s and detections come up to 0.6 s after
   * it, with a command's first words in between. */
  preRollS?: number;
  /** Below this transcript confidence nothing is acted on: IRIS says it did not catch that
   * and listens again for the follow-up window; default 0 (everything is acted on). */
  minConfidence?: number;
  /** Words under the gate that acts but at this confidence or above are asked about, not dropped (pipeline.ts `RunOptions.clarifyFrom`), where a follow-up can answer (`followUpS` > 0); default: none. */
  clarifyFrom?: number;
  /** Where the words heard so far stand (intents/prefix.ts): with it, and a recogniser that
   * decodes as the audio arrives, a whole command ends the turn at a short pause instead of
   * the endpointer's full silence. */
  commandState?: (text: string) => { complete: boolean; extendable: boolean };
  /** Pause that ends a whole command nothing could extend (seconds); default 0.2. */
  completePauseS?: number;
  /** Silence that ends words that are only the start of a command ("set a timer for ten" …); default: the endpointer's. */
  incompletePauseS?: number;
  /**
   * Whether whole words that could still go on ("what time is it" … "in Tokyo") may be
   * answered at `completePauseS` all the same: true only where the answer changes nothing (the
   * conversation's `answersEarly`: a read-only local tool, no question open). The loop listens
   * on; if the person goes on, the answer stops at once, is taken back (`ReplyStream.takeBack`)
   * and the whole command is answered. Only with IRIS's own voice removed from the microphone
   * (echo cancellation): its echo would take every early answer back. Needs a recogniser that
   * scores at a pause (`settle`); not with `mayAnswer`. Default: none (such words wait the
   * endpointer's full silence).
   */
  earlyAnswer?: (text: string) => boolean | Promise<boolean>;
  /** After an early answer, the silence that ends the command: how long the person may still go on and have it taken back (seconds; never less than the endpointer's); default: the endpointer's. */
  takeBackS?: number;
  /**
   * What the canceller leaves of an early answer's own echo is not the person going on:
   * `audio(chunk)` is what IRIS played for a microphone chunk, `leadS` ahead of its echo (none
   * while nothing plays; the daemon's front end hands it out as for `ownVoice`), and while an
   * early answer is under way speech takes it back (and counts as speech at all) only in a chunk
   * that stands `minNearDb` above the residual echo IRIS's own audio predicts there — the stop
   * word's measure (residual.ts). Where the residual is not known yet (IRIS's first second of
   * sound) or nothing plays, speech takes it back as without this. Default: none.
   */
  echoResidual?: { audio: (chunk: AudioChunk) => Int16Array | undefined; leadS?: number; minNearDb: number };
  /** Played when listening starts (a WAV); none by default. */
  earcon?: Buffer;
  /**
   * Whether run `run` may act on its command, asked before its words are transcribed (a room
   * waits here for the verdict on which room heard the wake word): false ends it quietly, with
   * no transcript, tool call or sound. Default: every run may.
   */
  mayAnswer?: (run: number, signal: AbortSignal) => Promise<boolean>;
  /**
   * Whether IRIS's own audio sounds (the daemon: it plays, or played within the pre-roll). A
   * wake word heard then was spoken over it: the recogniser neither adapts to the wake phrase's
   * audio nor decodes it (what is left of the echo in it turned commands into garbage), only the
   * last 160 ms before the detection and what follows; and `overSpeechMinConfidence` applies.
   * Default: never. Room bench (docs/room.md, 72 dev echo rooms): the right words in 45, against
   * 16–17 with the wake phrase decoded.
   */
  overSpeech?: () => boolean;
  /** A command whose wake word came over IRIS's own audio (`overSpeech`) is acted on only at
   * this confidence or above, when higher than `minConfidence`: what is left of the echo makes
   * the recogniser surer of wrong words than in a quiet room. Default: `minConfidence`. */
  overSpeechMinConfidence?: number;
  /**
   * After a wake word over IRIS's own audio (`overSpeech`), how long its echo may still reach
   * the microphone (seconds): barge-in stops playback at once, but the player's buffer, the
   * speaker-to-microphone delay (up to 0.25 s) and the room's tail follow. The recogniser is
   * told (`StreamOptions.echoS`) and scores the words heard until then on a scale of their
   * own. Default 0.6.
   */
  echoTailS?: number;
  /** IRIS's speaker clips (the canceller found its clip level): the recogniser is told
   * (`StreamOptions.echoDistorted`) and forgives nothing over the echo. Default: never. */
  echoDistorted?: () => boolean;
  /**
   * The echo canceller is young (it has heard too little of IRIS since the daemon started:
   * echo.ts `YOUNG_CANCELLER_S`): a command whose wake word came over IRIS's audio then is never
   * acted on at once — it is asked about (`clarifyFrom`) or dropped. In IRIS's first reply after a
   * start, with the canceller primed from a remembered room, "set a timer for ten minutes" over
   * IRIS was heard as "two second timer" at 0.70 and acted on (docs/room.md, session 21). Default: never.
   */
  echoYoung?: () => boolean;
  /**
   * IRIS's own wake word never wakes it: `audio(chunk)` is what IRIS played for that
   * microphone chunk, a little ahead of its echo (none while nothing plays), and `veto` runs the
   * wake word on it too (a second detector state) and drops a detection on the microphone that
   * comes just after one there (event `own-wake`). Default: none.
   */
  ownVoice?: { veto: OwnVoiceVeto; audio: (chunk: AudioChunk) => Int16Array | undefined };
  /** Called when the wake word fires (the daemon warms the model then). */
  onWake?: () => void;
  /** Every stage event, as it happens. */
  onEvent?: (event: VoiceEvent) => void;
  /** Each finished run, with its summary line. */
  onRun?: (run: VoiceRun<R>, line: string) => void;
  /** What to say when the words were not understood. */
  notUnderstood?: string;
}

type State = 'idle' | 'command' | 'replying';

interface Command {
  run: number;
  /** Audio for the recogniser: from the wake phrase's first word on. */
  chunks: Int16Array[];
  endpointer: Endpointer;
  followUp: boolean;
  wake?: Detection;
  /** The recogniser decoding as the audio arrives, when the engine can. */
  stream?: SttStream;
  /** The words being scored at a pause (`stream.settle`), and the audio since; `tried`: an early answer was tried on them. */
  settle?: { held: Int16Array[]; words: Promise<Transcript>; tried?: boolean };
  /** Speech has begun (`speech-start` emitted). */
  voiced?: boolean;
  /** The wake word came over IRIS's own audio (`overSpeech`). */
  overSpeech?: boolean;
  /** …while the canceller was young (`echoYoung`): nothing is acted on at once. */
  echoYoung?: boolean;
  /** Frames quieter than this are the room's background, not the person (vad.ts `voiceFloorDb`). */
  floorDb?: number;
  /** The power (mean square) of each chunk the person was heard in, before any early answer: how loud they speak here. */
  voicePowers?: number[];
}

/**
 * How far into `completePauseS` a whole command's words start being scored (the rival decodes
 * take 30–200 ms): half way, so the transcript is mostly ready when the pause ends the turn,
 * and a brief gap inside a word (under half the pause) rarely starts a scoring that more speech
 * then voids (the recogniser must decode the utterance again).
 */
const SETTLE_AT = 0.5;

/**
 * What the recogniser gets of a chunk that is the room's background alone (below the command's
 * `floorDb`): −20 dB, so a person reading aloud 10–15 dB under the voice is as far under it as a
 * quiet room's floor (30–35 dB); heard whole, it was decoded as more words ("what time is it in
 * athens"). Room bench dev babble rooms: right words 7 → 11 of 36, none confidently wrong
 * (−30 dB: one "what time is it" heard as "… in seoul" at 0.70).
 */
const BACKGROUND_GAIN = 0.1;

/** The least of a chunk whose level is judged against the residual echo (samples: 20 ms). */
const FRAME_MIN = 320;

/**
 * How much softer than their command (the median of its voiced chunks) a person's going on may
 * be: speech under an early answer's residual is taken for its echo only where the person, this
 * much softer, would still stand `minNearDb` above it. Held-out +12 dB room (IRIS 12 dB louder
 * than the person): "in berlin" read −0.5 dB over the residual and was ignored, a cut-off.
 */
const PERSON_MARGIN_DB = 6;

/** Over IRIS, the command's audio starts 160 ms (two chunks) before the detection: not the echo-laden wake phrase (fed 0.4 s, 25 of 72 dev echo rooms right against 45). */
const OVER_SPEECH_LEAD_S = 0.16;

/** `echoTailS`'s default: the bench cuts IRIS 0.2 s after the wake word, its echo arrives 40–200 ms late, and the room's tail (RT60 up to 0.6 s) is mostly cancelled after that. */
const ECHO_TAIL_S = 0.6;

export class VoiceLoop<R> {
  readonly #o: VoiceLoopOptions<R>;
  #state: State = 'idle';
  #runs = 0;
  /** The last wake-word command's `floorDb`: a follow-up has no wake phrase to measure, and the room and the person are the same. */
  #floorDb: number | undefined;
  #events = new Map<number, VoiceEvent[]>();
  #turn: { run: number; controller: AbortController; done: Promise<void> } | undefined;
  /** Set by `trigger()`: the next audio starts a command, with this detection if any. */
  #triggered: { wake?: Detection } | undefined;
  /** Set by `drop()`: the command being taken ends quietly at the next audio. */
  #dropped = false;
  /** Each command's early answer while it runs (early.ts). */
  readonly #early = new WeakMap<Command, EarlyAnswer<R>>();
  readonly #earlyCounts: EarlyAnswerCounts = { started: 0, takenBack: 0 };
  /** The early answer under way while its command is still heard, and that command's run. */
  #answering: { early: EarlyAnswer<R>; run: number } | undefined;
  /** The residual echo's level, over the chunks IRIS's own audio sounded in (`echoResidual`). */
  readonly #residual: ResidualEcho | undefined;
  /** The last chunk tracked in `#residual`, and where it lies there. */
  #tracked: { chunk: AudioChunk; from: number } | undefined;

  constructor(options: VoiceLoopOptions<R>) {
    this.#o = options;
    const residual = options.echoResidual;
    this.#residual = residual ? new ResidualEcho(Math.round((residual.leadS ?? 0.2) * SPEECH_FORMAT.rate), { chunks: true }) : undefined;
  }

  /** Early answers started and taken back so far. */
  get earlyAnswers(): EarlyAnswerCounts {
    return { ...this.#earlyCounts };
  }

  /** Idle: not taking a command and not replying (announcements wait for this). */
  get idle(): boolean {
    return this.#state === 'idle';
  }

  /**
   * The wake word was heard elsewhere (a satellite's own detector): the next audio starts a
   * command, barging in on a reply as the wake word does.
   */
  trigger(wake?: Detection): void {
    this.#triggered = wake ? { wake } : {};
  }

  /**
   * End the command being taken (or starting), without a reply or a sound; a reply already
   * under way stops (another room answers it).
   */
  drop(): void {
    if (this.#state === 'replying') this.#turn?.controller.abort(new DOMException('dropped', 'AbortError'));
    else this.#dropped = true;
  }

  /**
   * The stop word was heard (at `atS` in the audio): a reply being spoken stops, without
   * taking a command; back to the wake word. Returns whether a reply was stopped.
   */
  hush(atS: number): boolean {
    if (this.#hushEarly(atS)) return true;
    if (this.#state !== 'replying' || !this.#turn) return false;
    this.#emit(this.#turn.run, 'stop-word', { atS });
    this.#turn.controller.abort(new DOMException('stop word', 'AbortError'));
    return true;
  }

  /**
   * Read `source` until it ends or `signal` aborts. With `once`, stop after the first run
   * (also when no wake word was heard) and return it.
   */
  async run(source: AudioSource, signal: AbortSignal, once = false): Promise<VoiceRun<R>[]> {
    const finished: VoiceRun<R>[] = [];
    const preRoll: AudioChunk[] = [];
    const preRollS = this.#o.preRollS ?? 2.5;
    let command: Command | undefined;
    let lastAtS = 0;
    const report = (run: VoiceRun<R>) => {
      finished.push(run);
      this.#o.onRun?.(run, summaryLine(run.run, run.events));
    };
    /** Counts command starts: a start overtaken by a later one while it awaited (a trigger or the wake word while the follow-up window opens) gives way. */
    let starts = 0;
    /**
     * The source has ended (or the run stopped): no follow-up opens, and one opening gives way.
     * Before, a reply that ended after its source opened the follow-up window once `run` had
     * returned, and the recogniser's stream it took was never closed: pocketsphinx's next
     * utterance waited for it for ever (found by bench-room, which runs one loop per room).
     */
    let ended = false;
    /** The last turn with what follows it (`onTurnEnd`): awaited at the source's end. */
    let lastTurn: Promise<void> | undefined;
    const startCommand = async (run: number, followUp: boolean, wake?: Detection, before: AudioChunk[] = [], overSpeech = false) => {
      const start = ++starts;
      const echoYoung = overSpeech && (this.#o.echoYoung?.() ?? false);
      if (wake) this.#emit(run, 'wake-end', { word: wake.word, score: wake.score, atS: wake.atS });
      this.#emit(run, 'end_of_speech-start');
      const boundary = await this.#wordBoundary(before);
      const { audio } = boundary;
      if (wake) this.#floorDb = boundary.floorDb;
      const floorDb = followUp ? this.#floorDb : boundary.floorDb;
      const endpoint = followUp ? { ...this.#o.endpoint, noSpeechS: this.#o.followUpS ?? 0 } : this.#o.endpoint;
      // Over IRIS, its echo lies under the words until `echoTailS` after the wake word.
      const last = before.at(-1);
      // From the chunk it was taken in (barge-in stops IRIS there), later than the detection when the own-voice veto held it.
      const echoS = overSpeech && last ? Math.max(0, last.atS + durationS(last.samples.length) + (this.#o.echoTailS ?? ECHO_TAIL_S) - (audio[0]?.atS ?? last.atS)) : 0;
      // Decode while the person speaks, so the words are ready when they stop; the kept audio
      // (the wake phrase, in the same voice and room) first adapts the recogniser to both.
      const stream = await this.#o.stt.stream?.(concatSamples(before.map((c) => c.samples)), echoS > 0 ? { echoS, ...(this.#o.echoDistorted?.() ? { echoDistorted: true } : {}) } : undefined);
      if (start !== starts || ended) {
        report(this.#finish({ ...noCommand(run, followUp, wake), ...(stream ? { stream } : {}) }, 'cancelled'));
        return;
      }
      command = { run, chunks: audio.map((c) => c.samples), endpointer: new Endpointer(endpoint), followUp, ...(wake ? { wake } : {}), ...(stream ? { stream } : {}), ...(overSpeech ? { overSpeech } : {}), ...(echoYoung ? { echoYoung } : {}), ...(floorDb === undefined ? {} : { floorDb }) };
      stream?.push(concatSamples(command.chunks));
      this.#o.vad.reset();
      this.#state = 'command';
      if (this.#o.earcon && !once) void this.#o.sink.play(this.#o.earcon, signal).catch(() => undefined);
    };
    const onTurnEnd = async (run: VoiceRun<R>) => {
      report(run);
      if (this.#turn?.run !== run.run) return; // barged in: a new command already runs
      this.#turn = undefined;
      const listenAgain = (this.#o.end ?? 'tts') === 'tts' && (run.outcome === 'answered' || (run.outcome === 'not_understood' && run.transcript !== undefined));
      if (listenAgain && (this.#o.followUpS ?? 0) > 0 && !signal.aborted && !once && !ended) {
        const next = ++this.#runs;
        this.#emit(next, 'run-start', { followUp: true });
        try {
          await startCommand(next, true);
        } catch (error) {
          // The recogniser could not start (stopped): no follow-up, back to the wake word.
          this.#emit(next, 'error', { message: error instanceof Error ? error.message : String(error) });
          report(this.#finish(noCommand(next, true), 'failed'));
          this.#listenForWake();
        }
      } else this.#listenForWake();
    };

    this.#emit(this.#runs + 1, 'run-start');
    try {
      for await (const chunk of source.frames(signal)) {
        lastAtS = chunk.atS + durationS(chunk.samples.length);
        this.#track(chunk);
        const triggered = this.#triggered;
        this.#triggered = undefined;
        if (triggered && command) {
          // Heard again while a command is being taken: that command ends, a new one starts.
          report(this.#finish(command, 'cancelled'));
          command = undefined;
          this.#state = 'idle';
        }
        if (this.#state !== 'command') {
          if (chunk.stopped && !triggered) {
            // The stream paused: what came before is not the start of what follows.
            preRoll.splice(0);
            this.#o.wake?.reset();
            continue;
          }
          const detection = triggered ? triggered.wake : await this.#detect(chunk);
          if (!triggered) {
            preRoll.push(chunk);
            while (preRoll.length > 1 && durationS(preRoll.length * chunk.samples.length) > preRollS + 0.08) preRoll.shift();
          }
          if (!detection && !triggered) continue;
          const overSpeech = this.#o.overSpeech?.() ?? false;
          this.#o.wake?.reset();
          this.#o.onWake?.();
          if (this.#state === 'replying' && this.#turn) {
            this.#emit(this.#turn.run, 'barge-in', { atS: detection?.atS ?? chunk.atS });
            this.#turn.controller.abort(new DOMException('barge-in', 'AbortError'));
            this.#turn = undefined;
            this.#emit(this.#runs + 1, 'run-start', { bargeIn: true });
          }
          this.#dropped = false;
          if (this.#o.end === 'wake') {
            // A run that ends at the wake word: heard, reported, and back to listening.
            const run = ++this.#runs;
            if (detection) this.#emit(run, 'wake-end', { word: detection.word, score: detection.score, atS: detection.atS });
            report(this.#finish(noCommand(run, false, detection), 'answered'));
            preRoll.length = 0;
            if (once) return finished;
            this.#emit(this.#runs + 1, 'run-start');
            continue;
          }
          const before = triggered ? [] : preRoll.splice(0);
          await startCommand(++this.#runs, false, detection, overSpeech ? before.filter((c) => c.atS + durationS(c.samples.length) > (detection?.atS ?? 0) - OVER_SPEECH_LEAD_S + 1e-3) : before, overSpeech);
          if (!triggered) continue; // this chunk is the pre-roll's last
          // Started at the speech stage: this chunk is the command's first.
        }
        if (!command) continue;
        if (this.#dropped) {
          this.#dropped = false;
          const done = command;
          command = undefined;
          report(this.#finish(done, 'cancelled'));
          this.#listenForWake();
          continue;
        }
        // A `stopped` chunk: the sender stopped streaming (a satellite's own VAD heard the
        // speech end). The command ends there as at the end of a file: words heard are acted
        // on (scored as always), a command not yet begun is no speech.
        if (!chunk.stopped) await this.#hear(command, chunk);
        const state = chunk.stopped ? (command.endpointer.state === 'speaking' ? 'end_of_audio' : 'no_speech') : command.endpointer.state;
        if (state === 'waiting' || state === 'speaking') continue;
        const done = command;
        command = undefined;
        if (state === 'no_speech') {
          report(this.#finish(done, 'no_speech'));
          this.#state = 'idle';
          this.#o.wake?.reset();
          if (once) return finished;
          this.#emit(this.#runs + 1, 'run-start');
          continue;
        }
        this.#emit(done.run, 'end_of_speech-end', { atS: chunk.atS + durationS(chunk.samples.length), state });
        const turn = this.#startTurn(done, signal).then(onTurnEnd);
        lastTurn = turn;
        if (once) {
          await turn;
          return finished;
        }
      }
      // The source ended (a file): a command still being spoken ends here. Stopped instead (a
      // room removed, the daemon stopping): half a command is never acted on.
      ended = true;
      if (command) {
        const done = command;
        if (signal.aborted) report(this.#finish(done, 'cancelled'));
        else if (done.endpointer.state === 'speaking') {
          this.#emit(done.run, 'end_of_speech-end', { atS: lastAtS, state: 'end_of_audio' });
          await this.#startTurn(done, signal).then(onTurnEnd);
        } else report(this.#finish(done, 'no_speech'));
      } else if (once && finished.length === 0 && !this.#turn) {
        report(this.#finish(noCommand(this.#runs + 1, false), 'no_wake'));
      }
      await this.#turn?.done;
      await lastTurn;
      return finished;
    } finally {
      ended = true;
      if (command) this.#early.get(command)?.controller.abort(new DOMException('stopped', 'AbortError'));
      command?.stream?.cancel();
      this.#turn?.controller.abort(new DOMException('stopped', 'AbortError'));
    }
  }

  /** The wake word in `chunk`, unless IRIS's own voice said it (`ownVoice`). */
  async #detect(chunk: AudioChunk): Promise<Detection | undefined> {
    const own = this.#o.ownVoice;
    await own?.veto.hear(chunk, own.audio(chunk)); // first: IRIS's audio is heard ahead of its echo
    const detection = await this.#o.wake?.process(chunk);
    if (own === undefined) return detection;
    const judged = own.veto.judge(detection, chunk.atS + durationS(chunk.samples.length));
    if (judged.own === undefined) return judged.heard;
    this.#o.wake?.reset();
    const { word, score, atS, fit, nearDb } = judged.own;
    this.#emit(this.#turn?.run ?? this.#runs + 1, 'own-wake', { word, score, atS, ...(fit === undefined ? {} : { fit }), ...(nearDb === undefined ? {} : { nearDb }) });
    return undefined;
  }

  /** Back to the wake word: idle, the detector's audio forgotten, the next run begun. */
  #listenForWake(): void {
    this.#state = 'idle';
    this.#o.wake?.reset();
    this.#emit(this.#runs + 1, 'run-start');
  }

  /** A chunk that IRIS's own audio sounded in: into the residual echo's history (`echoResidual`). */
  #track(chunk: AudioChunk): void {
    const own = this.#residual && !chunk.stopped && chunk.samples.length > 0 ? this.#o.echoResidual?.audio(chunk) : undefined;
    // After chunks with nothing playing, IRIS's audio starts again.
    const resumed = this.#tracked === undefined;
    this.#tracked = own === undefined ? undefined : { chunk, from: this.#residual?.track(chunk.samples, own, resumed) ?? 0 };
  }

  /**
   * How far the speech in `chunk`, from `onsetS` into it to its end, stands above the residual
   * echo IRIS's own audio predicts there (dB): the person's first word often starts softly, part
   * way into a chunk; and how far the person, as loud as in their command, would (`personDb`).
   * Undefined when nothing sounded in it or too little was heard yet to tell.
   */
  #nearDb(command: Command, chunk: AudioChunk, onsetS: number): { nearDb: number; personDb: number } | undefined {
    const tracked = this.#tracked;
    if (this.#residual === undefined || tracked?.chunk !== chunk) return undefined;
    const onset = Math.min(Math.round(onsetS * SPEECH_FORMAT.rate), chunk.samples.length - FRAME_MIN);
    const { nearDb, residual } = this.#residual.levels(tracked.from + Math.max(0, onset), tracked.from + chunk.samples.length);
    const person = median(command.voicePowers ?? []);
    return nearDb === -99 ? undefined : { nearDb, personDb: person > 0 ? 10 * Math.log10(person / Math.max(1, residual)) : -Infinity };
  }

  /** A chunk of the command: to the recogniser, the VAD and the endpointer. */
  async #hear(command: Command, chunk: AudioChunk): Promise<void> {
    const heard = await this.#o.vad.process(chunk);
    let frames = heard.map((f) => ({ ...f, isSpeech: isVoice(f, command.floorDb) }));
    const voiced = frames.some((f) => f.isSpeech);
    if (voiced && !this.#early.has(command)) (command.voicePowers ??= []).push(meanPower(chunk.samples));
    // While an early answer is under way, speech no louder than its own echo's residual is that
    // echo, not the person going on: where the person, as loud as in their command, would stand
    // clear of that residual. Where they would not (IRIS far louder than them at the
    // microphone), nothing tells them from it, and any speech takes the answer back.
    const heardOver = voiced && this.#early.has(command) ? this.#nearDb(command, chunk, speechOnsetS(frames)) : undefined;
    const nearDb = heardOver?.nearDb;
    const minDb = this.#o.echoResidual?.minNearDb ?? -Infinity;
    if (heardOver !== undefined && heardOver.nearDb < minDb && heardOver.personDb >= minDb + PERSON_MARGIN_DB) {
      frames = frames.map((f) => ({ ...f, isSpeech: false }));
      this.#emit(command.run, 'answer-echo', { atS: chunk.atS, nearDb: heardOver.nearDb, personDb: Math.round(heardOver.personDb * 10) / 10 });
    }
    // The background alone (the person has stopped, or pauses): turned down for the recogniser, which would take it for words.
    const samples = isBackground(heard, command.floorDb) ? scaled(chunk.samples, BACKGROUND_GAIN) : chunk.samples;
    command.chunks.push(samples);
    // After a settle the audio waits: silence would void it, and the pause may end the turn.
    if (command.settle) command.settle.held.push(samples);
    else command.stream?.push(samples);
    for (const frame of frames) command.endpointer.process(frame.seconds, frame.isSpeech);
    if (command.settle && frames.some((f) => f.isSpeech)) this.#unsettle(command, chunk.atS + speechOnsetS(frames), nearDb);
    this.#endEarly(command, chunk.atS + durationS(chunk.samples.length));
    if (command.endpointer.state !== 'waiting' && !command.voiced) {
      command.voiced = true;
      this.#emit(command.run, 'speech-start', { atS: chunk.atS });
    }
  }

  #startTurn(command: Command, outer: AbortSignal): Promise<VoiceRun<R>> {
    const early = this.#early.get(command);
    this.#early.delete(command);
    this.#answering = undefined; // from here it is the turn's reply
    // An early answer under way becomes the turn: it goes on, and the wake word stops it as any reply.
    const controller = early?.controller ?? new AbortController();
    const stop = () => controller.abort(outer.reason);
    if (outer.aborted) stop(); // an aborted signal fires no more 'abort' events
    outer.addEventListener('abort', stop, { once: true });
    this.#state = 'replying';
    const work = this.#reply(command, controller.signal, early).finally(() => outer.removeEventListener('abort', stop));
    this.#turn = { run: command.run, controller, done: work.then(() => undefined, () => undefined) };
    return work;
  }

  /** The command's run of the pipeline, from speech to text on; an early answer's, when it answered. */
  async #reply(command: Command, signal: AbortSignal, early?: EarlyAnswer<R>): Promise<VoiceRun<R>> {
    const { run } = command;
    let transcript: string | undefined;
    try {
      let done: RunResult<R> | undefined;
      if (early !== undefined && (await early.decided)) done = await early.answer;
      if (done === undefined) {
        if (this.#o.mayAnswer !== undefined && !(await this.#o.mayAnswer(run, signal))) return this.#finish(command, 'cancelled');
        done = await this.#runCommand(command, command.stream ? { recognition: command.stream } : { samples: concatSamples(command.chunks) }, signal, (type, data, atMs) => {
          if (type === 'stt-end' && typeof data?.text === 'string') transcript = data.text;
          this.#emit(run, type, data, atMs);
        });
      }
      const { outcome, confidence, result, said } = done;
      return this.#finish(command, outcome === 'no_wake' ? 'no_speech' : outcome, { transcript: done.transcript ?? '', ...(confidence === undefined ? {} : { confidence }), ...(result === undefined ? {} : { result }), ...(said === undefined ? {} : { said }) });
    } catch (error) {
      transcript ??= early?.transcript;
      if (signal.aborted) return this.#finish(command, 'cancelled', { ...(transcript === undefined ? {} : { transcript }) });
      const message = error instanceof Error ? error.message : String(error);
      this.#emit(run, 'error', { message });
      return this.#finish(command, 'failed', { ...(transcript === undefined ? {} : { transcript }), error: message });
    }
  }

  /** The pipeline from speech to text on, over the command's words. */
  #runCommand(command: Command, input: RunInput, signal: AbortSignal, emit: (type: VoiceEventType, data?: Record<string, unknown>, atMs?: number) => void, respond = this.#o.respond): Promise<RunResult<R>> {
    const { stt, tts, sink, notUnderstood } = this.#o;
    const minConfidence = this.#actsFrom(command);
    return runPipeline(input, {
      start: 'stt', end: this.#o.end === undefined || this.#o.end === 'wake' ? 'tts' : this.#o.end, signal, stt, tts, sink, respond,
      ...(minConfidence === undefined ? {} : { minConfidence }),
      // Asked only where the answer can be heard: the follow-up window, without the wake word.
      ...(this.#o.clarifyFrom === undefined || (this.#o.followUpS ?? 0) <= 0 ? {} : { clarifyFrom: this.#o.clarifyFrom }),
      ...(notUnderstood === undefined ? {} : { notUnderstood }),
      ...(command.wake ? { wakeWord: command.wake.word } : {}),
      emit,
    });
  }

  /**
   * The confidence `command`'s words act at: spoken over IRIS's own voice, the stricter gate; over
   * a young canceller's echo, none (they are asked about).
   */
  #actsFrom(command: Command): number | undefined {
    if (command.echoYoung) return Infinity;
    return command.overSpeech ? Math.max(this.#o.minConfidence ?? 0, this.#o.overSpeechMinConfidence ?? 0) : this.#o.minConfidence;
  }

  /**
   * During a pause, end a command whose words are already whole and cannot go on, after
   * `completePauseS`; anything else ("what time is it" … "in Tokyo", "set a timer for ten" …
   * "minutes") waits for the endpointer's full silence.
   */
  #endEarly(command: Command, atS: number): void {
    const { endpointer, stream } = command;
    const judge = this.#o.commandState;
    if (endpointer.state !== 'speaking' || stream === undefined || judge === undefined) return;
    const pauseS = this.#o.completePauseS ?? 0.2;
    if (endpointer.silenceS < pauseS * SETTLE_AT) return;
    const partial = stripWakeWord(stream.partial(), command.wake?.word);
    const words = judge(partial);
    // Half a command ("set a timer for fifteen" …, "remind me in ten minutes" …) is someone
    // still thinking: its pause must be longer to end it. Judged anew at each chunk, as the
    // words so far change. After an early answer, the person may go on for `takeBackS`.
    endpointer.waitFor(!words.complete && words.extendable && partial !== '' ? this.#o.incompletePauseS : this.#early.has(command) ? this.#o.takeBackS : undefined);
    const early = words.extendable && this.#mayAnswerEarly();
    if (!words.complete || (words.extendable && !early)) return;
    // Score the words now, while the pause runs on: the transcript is then ready when the
    // pause ends the turn, instead of being worked out after it.
    if (!command.settle && stream.settle) this.#settle(command, atS, stream.settle.bind(stream));
    if (endpointer.silenceS < pauseS) return;
    if (!early) endpointer.complete();
    else this.#answerEarly(command, atS);
  }

  /** Score the words heard so far (`settle`): the audio from here on is held until speech goes on (`#unsettle`) or the command ends. */
  #settle(command: Command, atS: number, settle: () => Promise<Transcript>): void {
    this.#emit(command.run, 'settle-start', { atS });
    const scoring = settle();
    command.settle = { held: [], words: scoring };
    scoring.then(() => this.#emit(command.run, 'settle-end'), () => undefined);
  }

  /**
   * The stop word while an early answer plays (its command still being heard): the answer
   * stops and the command ends quietly, as a reply's turn does; not taken for more words.
   */
  #hushEarly(atS: number): boolean {
    const answering = this.#answering;
    if (answering === undefined || answering.early.takenBack) return false;
    this.#answering = undefined;
    this.#emit(answering.run, 'stop-word', { atS });
    answering.early.controller.abort(new DOMException('stop word', 'AbortError'));
    this.#dropped = true;
    return true;
  }

  /** Whether whole words that could go on may be answered at the short pause (`earlyAnswer`). */
  #mayAnswerEarly(): boolean {
    return this.#o.earlyAnswer !== undefined && this.#o.mayAnswer === undefined && (this.#o.end ?? 'tts') === 'tts';
  }

  /**
   * The pause after whole words that could go on has lasted `completePauseS`: once their
   * scoring is done, answer them now if they are sure enough and the answer is read-only,
   * while the loop listens on. The command's end keeps it (`#startTurn`); more speech takes it
   * back (`#takeBack`).
   */
  #answerEarly(command: Command, atS: number): void {
    const settle = command.settle;
    const judge = this.#o.earlyAnswer;
    if (settle === undefined || settle.tried === true || judge === undefined || this.#early.has(command)) return;
    settle.tried = true;
    const early = earlyAnswer<R>();
    const { signal } = early.controller;
    const decide = async (): Promise<Transcript | undefined> => {
      const words = await settle.words;
      const text = stripWakeWord(words.text, command.wake?.word);
      if (text === '' || words.confidence < (this.#actsFrom(command) ?? 0) || signal.aborted) return undefined;
      return (await judge(text)) && !signal.aborted ? words : undefined;
    };
    const words = decide().catch(() => undefined);
    early.decided = words.then((w) => w !== undefined && !signal.aborted);
    // Not answered early: the command ends as any other (its pause is not lengthened to `takeBackS`).
    void early.decided.then((yes) => !yes && this.#early.get(command) === early && this.#early.delete(command));
    early.answer = words.then((w) => (w === undefined || signal.aborted ? undefined : this.#runEarly(command, early, w, atS)));
    early.answer.catch(() => undefined); // awaited when the command ends; a take-back rejects it
    this.#early.set(command, early);
  }

  /** The early answer's run of the pipeline: its events into the command's run unless taken back. */
  #runEarly(command: Command, early: EarlyAnswer<R>, words: Transcript, atS: number): Promise<RunResult<R>> {
    const { run } = command;
    early.started = true;
    early.startedAtMs = performance.now();
    this.#answering = { early, run };
    this.#earlyCounts.started += 1;
    const emit = (type: VoiceEventType, data?: Record<string, unknown>, atMs?: number) => {
      if (early.takenBack) return;
      if (type === 'stt-end' && typeof data?.text === 'string') early.transcript = data.text;
      early.events.add(this.#emit(run, type, data, atMs));
    };
    emit('answer-early', { atS, text: stripWakeWord(words.text, command.wake?.word) });
    return this.#runCommand(command, { recognition: settledWords(words) }, early.controller.signal, emit, (text, signal, heard) => {
      const reply = this.#o.respond(text, signal, heard);
      early.reply = reply;
      if (early.takenBack) reply.takeBack?.(); // taken back while the conversation was being asked
      return reply;
    });
  }

  /**
   * The person went on (at `atS` in the audio) after an early answer: it stops now, the
   * conversation forgets it, its events leave the run, and the command goes on being heard.
   */
  #takeBack(command: Command, atS: number, nearDb?: number): void {
    const early = this.#early.get(command);
    if (early === undefined) return;
    this.#early.delete(command);
    if (this.#answering?.early === early) this.#answering = undefined;
    early.takenBack = true;
    early.controller.abort(new DOMException('taken back', 'AbortError'));
    early.reply?.takeBack?.();
    if (!early.started) return; // it had not begun to answer: nothing to take back
    this.#earlyCounts.takenBack += 1;
    // What is decoded from here on was heard over the answer's echo: scored and gated as words over IRIS.
    command.overSpeech = true;
    command.stream?.overEcho?.();
    const events = this.#events.get(command.run);
    if (events) this.#events.set(command.run, events.filter((e) => !early.events.has(e)));
    this.#emit(command.run, 'answer-taken-back', { atS, text: early.transcript ?? '', after_ms: Math.round(performance.now() - (early.startedAtMs ?? 0)), ...(nearDb === undefined ? {} : { nearDb }) });
  }

  /** Speech went on (at `atS`) after a settle: the recogniser gets the held audio and decodes on; an early answer is taken back. */
  #unsettle(command: Command, atS: number, nearDb?: number): void {
    const held = command.settle?.held ?? [];
    delete command.settle;
    this.#emit(command.run, 'settle-void');
    this.#takeBack(command, atS, nearDb); // first: the recogniser decodes the whole utterance again
    for (const samples of held) command.stream?.push(samples);
  }

  /**
   * The pre-roll from where the wake phrase's speech began (Silero over the kept audio: the
   * start of the last run of speech, gaps under 0.3 s bridged, less 0.15 s). Only the
   * recogniser gets it: the endpointer starts at the detection, so a pause after the wake
   * word is not taken for the end of the command. Speech in the background, quieter than the
   * wake phrase, is not counted (`floorDb`, also for the command's frames).
   */
  async #wordBoundary(before: AudioChunk[]): Promise<{ audio: AudioChunk[]; floorDb?: number }> {
    if (before.length === 0) return { audio: [] };
    this.#o.vad.reset();
    const heard: (VadFrame & { atS: number })[] = [];
    for (const chunk of before) {
      let atS = chunk.atS;
      for (const frame of await this.#o.vad.process(chunk)) {
        heard.push({ ...frame, atS });
        atS += frame.seconds;
      }
    }
    const floorDb = voiceFloorDb(heard);
    const frames = heard.map((f) => ({ atS: f.atS, isSpeech: isVoice(f, floorDb) }));
    const found = (audio: AudioChunk[]) => ({ audio, ...(floorDb === undefined ? {} : { floorDb }) });
    let i = frames.length - 1;
    while (i >= 0 && !frames[i]?.isSpeech) i--;
    const endAtS = before[before.length - 1]?.atS ?? 0;
    if (i < 0) return found(before.filter((c) => c.atS >= endAtS - 0.5)); // no speech: the last 0.5 s
    let onsetS = frames[i]?.atS ?? 0;
    for (; i >= 0; i--) {
      const frame = frames[i];
      if (!frame) break;
      if (frame.isSpeech) onsetS = frame.atS;
      else if (onsetS - frame.atS > 0.3) break; // a pause this long: the phrase began after it
    }
    return found(before.filter((c) => c.atS + durationS(c.samples.length) > onsetS - 0.15));
  }

  #finish(command: Command, outcome: Outcome, extra: { transcript?: string; confidence?: number; result?: R; said?: string; error?: string } = {}): VoiceRun<R> {
    const early = this.#early.get(command);
    early?.controller.abort(new DOMException(outcome, 'AbortError')); // a command dropped while it was answered early
    this.#early.delete(command);
    if (early !== undefined && this.#answering?.early === early) this.#answering = undefined;
    command.stream?.cancel();
    this.#emit(command.run, 'run-end', { outcome });
    const events = this.#events.get(command.run) ?? [];
    this.#events.delete(command.run);
    return {
      run: command.run,
      ...(command.wake ? { wake: command.wake } : {}),
      followUp: command.followUp,
      outcome,
      ...extra,
      timings: timingsOf(events),
      events,
    };
  }

  #emit(run: number, type: VoiceEventType, data?: Record<string, unknown>, atMs = performance.now()): VoiceEvent {
    const event: VoiceEvent = { type, run, atMs, ...(data ? { data } : {}) };
    let events = this.#events.get(run);
    if (!events) this.#events.set(run, (events = []));
    events.push(event);
    this.#o.onEvent?.(event);
    return event;
  }
}

const scaled = (samples: Int16Array, gain: number) => Int16Array.from(samples, (v) => Math.round(v * gain));

/** Where in a chunk its first speech frame begins (seconds). */
function speechOnsetS(frames: readonly { seconds: number; isSpeech: boolean }[]): number {
  let atS = 0;
  for (const frame of frames) {
    if (frame.isSpeech) return atS;
    atS += frame.seconds;
  }
  return atS;
}

/** A run that took no command (ended at the wake word, gave way, or never started): nothing to hear. */
function noCommand(run: number, followUp: boolean, wake?: Detection): Command {
  return { run, chunks: [], endpointer: new Endpointer(), followUp, ...(wake ? { wake } : {}) };
}
