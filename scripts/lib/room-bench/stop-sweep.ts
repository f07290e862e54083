/** bench-room's stop-word sweep (IRIS_BENCH_KWS): one mode of scripts/bench-room.ts. */
import { EchoReference } from '../../../src/pipeline/echo.js';
import type { RoomEcho } from '../../../src/pipeline/echo-memory.js';
import { DEFAULT_LEVEL_ROUTE, DEFAULT_STOP_CHECK, StopWord, ownWord, passesCheck, type StopCandidate, type StopCheck } from '../../../src/pipeline/stopword.js';
import { createOpenWakeWord, OwnVoiceVeto } from '../../../src/pipeline/wakeword.js';
import { random, round, writeResults } from '../bench.js';
import { RATE, type Part, PEOPLE, COMMANDS, IRIS_VOICE, SELF, type Condition, CONDITIONS, REPLIES, sox, espeak, speechPower, addInto, toInt16, pink, drawsOf, talkedBefore, room, licenceParagraphs, voiced, commandClip, stopClip, referenceOf, toMicLevel, benchConfig } from './room.js';
import type { RoomBenchOptions } from './options.js';
import { learnedBefore } from './front-end.js';

/**
 * The stop word alone (IRIS_BENCH_KWS="1e-10,1e-15,…", the mic spotter's `-kws_threshold`s to
 * compare): only the "stop" and IRIS-alone rooms, IRIS_BENCH_STOP_ROOMS of them per person voice
 * (default 4), of the parts in IRIS_BENCH_PARTS (default dev: tune there, measure held-out once
 * at the end; `heldout2`: the held-out voices in new rooms, with other replies and commands, kept
 * for a last look). Each room keeps openWakeWord's hey_jarvis score per chunk of the cancelled
 * stream (`wake`), which the StopWord gets as the front end gives it (its level route's look). The canceller runs once per room; each threshold's StopWord then hears its output
 * as the front end feeds it (the cancelled and raw microphone, IRIS's own audio 0.2 s ahead) and
 * reports every candidate with its measures (stopword.ts `StopCandidate`). Each check in
 * IRIS_BENCH_STOP_CHECKS (a JSON array of `StopCheck`s; default: none, and the wired default) is
 * judged on those candidates: "stop" heard (a passing candidate from the word's first voiced
 * sample to 0.5 s after its last), the lag from the word's end to the sound stopping (the 300 ms target; where a level candidate held the
 * sound while it waited for the wake word's scores, to the hold), sounds held and then let go, and self-stops (over the whole room, and over the
 * current reply only: a warm canceller, as a running daemon's).
 *
 * With IRIS_BENCH_STOP_ALONE_MIN (minutes per level and part), IRIS's own voice talking on and
 * on instead: espeak-ng (dev en-us, held-out en-gb, each reading its own half of the licence
 * texts) from its speaker through a room (a new 60–180 ms delay per paragraph, reverb 50 %), at
 * IRIS_BENCH_STOP_ALONE_DB echo-to-speech levels (default 0,6,12: the room's noise floor 35 dB
 * under a person that much softer than the echo), one canceller kept throughout: false stops
 * per hour for each check. Writes scripts/results/room-stop.json (or IRIS_BENCH_NAME).
 */
/** bench-room's parts, and "held-out 2" … "9": rooms no stop-word choice had looked at (sessions 14, 15, 15, 18 ×4, 19: each made after the one before had been seen). */
type SweepPart = Part | 'heldout2' | 'heldout3' | 'heldout4' | 'heldout5' | 'heldout6' | 'heldout7' | 'heldout8' | 'heldout9' | 'heldout10';
/** Held-out 2's … 10's commands (the held-out voices say them over IRIS) and IRIS's replies (its earlier and current one): said in no other room. */
const NEW_ROOMS: Record<Exclude<SweepPart, Part>, { commands: string[]; replies: string[] }> = {
  heldout2: {
    commands: ['what is nine times four', 'set a timer for twenty minutes', 'what time is it in paris', 'cancel my timer'],
    replies: [
      'Your shopping list has milk, eggs and bread on it. I added coffee as you asked, and the list is shared with the family.',
      'The train to the airport leaves at ten past six from platform four. It takes about forty minutes, and there is a cafe on board.',
      'Good morning. It is cold outside, about four degrees, with a light wind from the north. You might want a warm coat today.',
      'I found three recipes for dinner. The first is a vegetable curry that takes half an hour, and the second is a simple pasta bake.',
    ],
  },
  heldout3: {
    commands: ['what is fifteen plus six', 'set a timer for three minutes', 'what time is it in madrid', 'how much time is left'],
    replies: [
      'The library opens at nine tomorrow and closes at five. Your two books are due back on Friday, and you can renew them once.',
      'It is raining in the city right now, with some sun expected after lunch. The weekend should be dry and a little warmer.',
      'Your sister called this morning and left a message. She asked whether you are free for dinner on Sunday evening.',
      'The bread needs another ten minutes in the oven. After that, let it cool on the rack before you slice it.',
    ],
  },
  heldout4: {
    commands: ['what is nine plus thirteen', 'set a timer for eight minutes', 'what time is it in vienna', 'cancel the timer'],
    replies: [
      'The parcel was delivered at noon and left with your neighbour at number twelve. She will be home again after four.',
      'Your dentist appointment is on Tuesday at half past two. Please bring your insurance card and arrive ten minutes early.',
      'The garden lights switch on at sunset and off at midnight. You can change that in the settings whenever you like.',
      'There is heavy traffic on the ring road this evening. The quickest way home today is through the old town.',
    ],
  },
  heldout5: {
    commands: ['what is seven times eight', 'set a timer for twelve minutes', 'what time is it in oslo', 'how long is left on my timer'],
    replies: [
      'The washing machine finished its cycle a few minutes ago. The towels can go on the line, and the shirts are best left to dry flat.',
      'Your flight on Thursday is on time. Boarding starts at a quarter past seven, and the gate will be shown an hour before.',
      'The heating is set to twenty degrees in the living room and eighteen in the bedrooms. It will turn down at eleven tonight.',
      'Next week the bins are collected on Wednesday instead of Tuesday, because of the holiday. Paper and glass go out together.',
    ],
  },
  heldout6: {
    commands: ['what is eleven minus four', 'set a timer for forty minutes', 'what time is it in lima', 'cancel all my timers'],
    replies: [
      'The museum is open until six on weekdays and until eight on Saturdays. Entry is free for children under twelve.',
      'Your package from the bookshop is on its way. It should arrive on Monday morning, and someone needs to sign for it.',
      'The pharmacy on the main road closes early today, at one in the afternoon. The one by the station is open until ten.',
      'Rain will move in from the west this afternoon and clear by the evening. Tomorrow looks bright, with a fresh breeze.',
    ],
  },
  heldout7: {
    commands: ['what is six times nine', 'set a timer for fifteen minutes', 'what time is it in cairo', 'how much time is left'],
    replies: [
      'The car is due for its service next month. The garage has a free slot on the fourth, early in the morning.',
      'There are two eggs, half a loaf of bread and some cheese in the fridge. That is enough for a simple omelette tonight.',
      'The concert starts at eight, and the doors open an hour before. Your tickets are in the email from last Friday.',
      'Your phone battery is low. The charger you used yesterday is on the desk in the study, next to the lamp.',
    ],
  },
  heldout8: {
    commands: ['what is twenty plus nine', 'set a timer for five minutes', 'what time is it in seoul', 'cancel my last timer'],
    replies: [
      'The printer in the hall is out of paper again. There is a new pack in the cupboard under the stairs.',
      'Your brother sent a photo from the beach this afternoon. He says the water is warm and the town is very quiet.',
      'The oven is set to two hundred degrees and will be ready in about ten minutes. The timer for the roast is running.',
      'Tonight the moon rises a little after nine. The sky should be clear, so it will be easy to see from the garden.',
    ],
  },
  heldout9: {
    commands: ['what is thirty minus twelve', 'set a timer for six minutes', 'what time is it in athens', 'how long until my timer ends'],
    replies: [
      'The kettle has boiled and the tea is ready. There are biscuits in the tin on the top shelf, next to the honey.',
      'Your library card runs out at the end of the month. You can renew it online or at the front desk on any weekday.',
      'The wind will pick up after dark, with strong gusts near the coast. Bring the chairs in from the patio before bed.',
      'The school bus comes ten minutes later tomorrow because of the road works. The children should be at the corner by eight.',
    ],
  },
  heldout10: {
    commands: ['what is fifteen times four', 'set a timer for eight minutes', 'what time is it in lima', 'list my timers'],
    replies: [
      'The parcel from the bookshop came this morning. It is on the table by the door, next to the umbrella.',
      'The heating comes on at six tomorrow and goes off again at nine. The bedrooms will be warm by seven.',
      'Your cousin called about the birthday dinner on Friday. She booked a table for eight at the Italian place.',
      'The river path is closed after the storm, so take the road past the mill. It adds about ten minutes to the walk.',
    ],
  },
};

/** IRIS_BENCH_STOP_ALONE_TEXT=announce: what IRIS says over and over, each opening with the wake word (the live test's announcement; a reminder's text is the user's own words). */
const ANNOUNCEMENTS = [
  'Hey jarvis, your timer is done. The ten minutes are up, and the cake can come out of the oven now.',
  'Hey jarvis, your timer for the laundry is done.',
  'Hey jarvis, a reminder: call the plumber about the kitchen sink.',
];

/** IRIS_BENCH_STOP_FIRST=alone: what IRIS says in its first reply, in turn (dev: its own words, the announcements and the replies of dev and held-out 2–5; held-out: the replies of held-out 6–10). */
const FIRST_ALONE: Record<Part, string[]> = {
  dev: [SELF, ...ANNOUNCEMENTS, ...REPLIES, ...(['heldout2', 'heldout3', 'heldout4', 'heldout5'] as const).flatMap((p) => NEW_ROOMS[p].replies)],
  heldout: [SELF, ...(['heldout6', 'heldout7', 'heldout8', 'heldout9', 'heldout10'] as const).flatMap((p) => NEW_ROOMS[p].replies)],
};

export async function stopSweep(options: RoomBenchOptions, kwsSweep: number[]): Promise<void> {
  const { only, makeCanceller, stopOptions, envParts, kwsDelay } = options;
  const parts = envParts as SweepPart[];
  const perVoice = Number(process.env.IRIS_BENCH_STOP_ROOMS ?? 4);
  const aloneMin = Number(process.env.IRIS_BENCH_STOP_ALONE_MIN ?? 0);
  /**
   * IRIS_BENCH_STOP_FIRST=1: "stop" begun 0.8–1.8 s into IRIS's first reply since a start instead (a
   * canceller that has heard nothing before it; `StopCheck.young`). IRIS_BENCH_STOP_FIRST=alone: IRIS's
   * first reply with no one speaking, IRIS_BENCH_STOP_ROOMS rooms a level, each saying one of
   * `FIRST_ALONE`'s texts in turn: self-stops in a young canceller's seconds.
   */
  const firstAlone = process.env.IRIS_BENCH_STOP_FIRST === 'alone';
  const first = process.env.IRIS_BENCH_STOP_FIRST === '1' || firstAlone;
  /** IRIS_BENCH_PRIMED (options.ts `primed`; with STOP_FIRST, or IRIS's second reply after a restart without it). */
  const primed = options.primed !== undefined;
  /** Primed rooms whose earlier canceller had learned nothing to keep (too little of IRIS), and the verdicts on the primed filters. */
  const primedVerdicts: Record<string, number> = {};
  const aloneDb = (process.env.IRIS_BENCH_STOP_ALONE_DB ?? '0,6,12').split(',').map(Number);
  /** IRIS alone: the pause after each paragraph (seconds), and how far (samples, up to) each paragraph's reference is placed off where it sounded: a clip stamped a sample off its last one (a per-clip sink; a new speaker stream). */
  const aloneGapS = Number(process.env.IRIS_BENCH_STOP_ALONE_GAP_S ?? 1);
  const aloneJitter = Number(process.env.IRIS_BENCH_STOP_ALONE_JITTER ?? 0);
  /** IRIS_BENCH_STOP_ALONE_TEXT=announce: IRIS says a timer's announcement again and again instead of reading ("Hey jarvis, your timer is done. …"). */
  const announce = process.env.IRIS_BENCH_STOP_ALONE_TEXT === 'announce';
  /** The spotters' utterance restart to try instead of the default (seconds; Infinity = never), e.g. IRIS_BENCH_STOP_RESTART_S=Infinity. */
  const restartS = process.env.IRIS_BENCH_STOP_RESTART_S === undefined ? undefined : Number(process.env.IRIS_BENCH_STOP_RESTART_S);
  /**
   * IRIS_BENCH_STOP_LIVE=1: the StopWord runs with the default check itself, as the daemon's (a
   * candidate turned down is looked at again a chunk later, its tail fed again), instead of
   * reporting every candidate unchecked; judge it with the check "default" only.
   */
  const live = process.env.IRIS_BENCH_STOP_LIVE === '1';
  const checks: { name: string; check: StopCheck | false }[] = [
    { name: 'none', check: false },
    { name: 'default', check: DEFAULT_STOP_CHECK },
    ...(JSON.parse(process.env.IRIS_BENCH_STOP_CHECKS ?? '[]') as StopCheck[]).map((check) => ({ name: JSON.stringify(check), check })),
  ];
  /** A level-route candidate's own limit on its fit (stopword.ts `LevelRoute.maxFit`), judged with every check but "none". */
  const levelMaxFit = (stopOptions.levelRoute === false ? undefined : stopOptions.levelRoute?.maxFit) ?? DEFAULT_LEVEL_ROUTE.maxFit;
  const levelMaxWake = (stopOptions.levelRoute === false ? undefined : stopOptions.levelRoute?.maxWakeScore) ?? DEFAULT_LEVEL_ROUTE.maxWakeScore;
  /** A candidate this long after the word's last voiced sample is the word heard (late, if over 300 ms: `lag_ms`); elsewhere a self-stop. */
  const HEARD_WITHIN_S = 0.5;
  /** A wake-word score the daemon takes as a detection without the second look (its `wake_threshold`): the command's wake word barging in. */
  const wakeThreshold = benchConfig().assistant.wake_threshold;
  interface Heard { part: SweepPart; condition: string; says: Condition['says']; person: string; threshold: number; seconds: number; wordS?: [number, number]; currentS: number; candidates: StopCandidate[]; wake: number[] }
  const heard: Heard[] = [];
  /** A StopWord over cancelled, raw and own audio in 80 ms chunks (only where `armed`), every candidate kept; `wakeS`: the wake word's score of each chunk. */
  const spot = async (threshold: number, out: Int16Array, raw: Int16Array, own: Int16Array, armed: (at: number) => boolean, wakeS: number[], heard?: number[]): Promise<StopCandidate[]> => {
    const candidates: StopCandidate[] = [];
    let chunk = 0;
    // Primed: the canceller's age as the daemon hands it over (`stats.ageS`).
    const heardS = heard ? { heardS: () => heard[chunk] ?? 0 } : {};
    const stopWord = await StopWord.create({ threshold, ...stopOptions, ...heardS, ...(live ? {} : { check: false }), onCandidate: (c) => candidates.push(c), ...(restartS === undefined ? {} : { restartS }), ...(kwsDelay === undefined ? {} : { kwsDelay }) });
    let wasArmed = false;
    for (let at = 0; at + 1280 <= out.length; at += 1280, chunk++) {
      const on = armed(at);
      if (on) stopWord.push(out.subarray(at, at + 1280), own.subarray(at, at + 1280), (at + 1280) / RATE, raw.subarray(at, at + 1280), wakeS[at / 1280]);
      else if (wasArmed) stopWord.reset();
      wasArmed = on;
    }
    stopWord.free();
    return candidates;
  };
  /**
   * IRIS_BENCH_STOP_MODEL=FILE.onnx (scripts/train-stop-word.ts): an openWakeWord keyword model
   * for "stop" instead of the spotter, IRIS_BENCH_KWS its score thresholds; its own-voice veto
   * is a second detector on IRIS's audio (as the wake word's). One candidate per second at most;
   * no measures (judge it with the check "none").
   */
  const stopModel = process.env.IRIS_BENCH_STOP_MODEL;
  const spotModel = async (model: string, threshold: number, out: Int16Array, own: Int16Array, armed: (at: number) => boolean): Promise<StopCandidate[]> => {
    const candidates: StopCandidate[] = [];
    const detector = await createOpenWakeWord({ model, threshold });
    const veto = new OwnVoiceVeto(await createOpenWakeWord({ model, threshold: Number(process.env.IRIS_BENCH_STOP_OWN ?? threshold / 2) }), { holdS: 0 });
    let wasArmed = false;
    for (let at = 0; at + 1280 <= out.length; at += 1280) {
      const chunk = { samples: out.subarray(at, at + 1280), atS: at / RATE, rate: RATE, width: 2, channels: 1 };
      const on = armed(at);
      await veto.hear(chunk, on ? own.subarray(at, at + 1280) : undefined);
      if (on) {
        const { heard, own: vetoed } = veto.judge(await detector.process(chunk), (at + 1280) / RATE);
        const d = heard ?? vetoed;
        if (d !== undefined && !(d.atS - (candidates.at(-1)?.atS ?? -Infinity) < 1)) candidates.push({ route: 'spotter', atS: d.atS, fromS: d.atS, toS: d.atS, own: vetoed !== undefined, ownGapS: NaN, fit: NaN, share: NaN, wake: NaN, heldS: NaN, nearDb: NaN, riseDb: NaN, keptDb: NaN, settled: true, cancelling: false, irisS: NaN, heard: true });
      } else if (wasArmed) detector.reset();
      wasArmed = on;
    }
    return candidates;
  };
  /** The canceller once over `mic`: its output and IRIS's own audio as the front end hands them on. */
  const cancel = async (mic: Int16Array, reference: EchoReference, remembered?: RoomEcho): Promise<{ out: Int16Array; own: Int16Array; heard: number[] }> => {
    const canceller = await makeCanceller(reference, remembered ? { remembered } : {});
    const out = new Int16Array(mic.length);
    const own = new Int16Array(mic.length);
    const heard: number[] = [];
    for (let at = 0; at + 1280 <= mic.length; at += 1280) {
      out.set(canceller.process(mic.subarray(at, at + 1280), at), at);
      own.set(canceller.played(at, 1280, RATE / 5), at);
      heard.push(canceller.stats.ageS);
    }
    const verdict = remembered ? (canceller.stats.primed ?? 'none') : undefined;
    if (verdict) primedVerdicts[verdict] = (primedVerdicts[verdict] ?? 0) + 1;
    canceller.destroy();
    return { out, own, heard };
  };
  /** openWakeWord's hey_jarvis score per 80 ms chunk of the cancelled microphone (no second look), as the daemon's wake word hears it. */
  const wake = await createOpenWakeWord({ model: 'hey_jarvis', check: false });
  const wakeScores = async (out: Int16Array): Promise<number[]> => {
    await wake.prime?.();
    const scores: number[] = [];
    for (let at = 0; at + 1280 <= out.length; at += 1280) {
      await wake.process({ samples: out.subarray(at, at + 1280), atS: at / RATE, rate: RATE, width: 2, channels: 1 });
      scores.push(round(wake.lastPeak ?? 0, 4));
    }
    return scores;
  };
  for (const part of parts) {
    // "held-out 2" … "9" (IRIS_BENCH_PARTS=heldout2, …): the held-out voices and IRIS's en-gb, new seeds, commands and replies.
    const roomPart: Part = part === 'dev' ? 'dev' : 'heldout';
    const seed = { dev: 0, heldout: 2000, heldout2: 3000, heldout3: 4000, heldout4: 5000, heldout5: 6000, heldout6: 7000, heldout7: 8000, heldout8: 9000, heldout9: 10000, heldout10: 11000 }[part];
    const { commands: newCommands, replies: newReplies } = part === 'dev' || part === 'heldout' ? { commands: undefined, replies: undefined } : NEW_ROOMS[part];
    const rand = random(124 + seed);
    // The stop rooms, IRIS alone, then the person saying a command (not "stop") over IRIS at 0 dB,
    // one room per voice and command, drawn apart (the stop rooms stay those measured before).
    const commandRand = random(324 + seed);
    // "stop" at +12 dB (a speaker beside the microphone) last, so the rooms drawn before it stay those measured before.
    const sweepConditions = first
      ? [0, 6, 12].map((esrDb): Condition => ({ name: `${firstAlone ? 'IRIS alone' : 'stop'} in IRIS's first reply ${esrDb ? `+${esrDb}` : 0} dB`, esrDb, reverb: 50, says: firstAlone ? 'nothing' : 'stop', firstReply: true }))
      : CONDITIONS.filter((c) => c.says !== 'command').concat(CONDITIONS.filter((c) => c.name === 'echo 0 dB'), [{ name: 'stop over echo +12 dB', esrDb: 12, reverb: 50, says: 'stop' }]);
    for (const condition of aloneMin > 0 ? [] : sweepConditions.filter((c) => only === undefined || only.includes(c.name))) {
      for (const voice of condition.says === 'nothing' ? PEOPLE[roomPart].slice(0, 1) : PEOPLE[roomPart]) {
        for (const [k, command] of (condition.says === 'command' ? (newCommands ?? COMMANDS[roomPart]) : Array.from({ length: perVoice }, () => 'stop')).entries()) {
          let person: Int16Array | undefined;
          if (condition.says === 'stop') person = stopClip(voice);
          if (condition.says === 'command') person = commandClip(command, voice);
          if (k >= perVoice && condition.says !== 'command') break;
          const draws = drawsOf(condition.says === 'command' ? commandRand : rand);
          const alone = FIRST_ALONE[roomPart];
          const irisSays: [string, string] | undefined = firstAlone
            ? [alone[(k + 1) % alone.length] ?? '', alone[k % alone.length] ?? '']
            : newReplies ? [newReplies[draws.pick] ?? '', condition.says === 'nothing' ? SELF : (newReplies[(draws.pick + 1) % newReplies.length] ?? '')] : undefined;
          const said: Condition = irisSays ? { ...condition, irisSays } : condition;
          // IRIS_BENCH_STEADY: IRIS talked in this room before (its times count in the room: self-stops there too).
          const r = room(talkedBefore(said, options.steadyReplies, draws.pick, newReplies), roomPart, person, draws);
          const reference = referenceOf(r.played);
          let remembered: RoomEcho | undefined;
          if (primed) {
            remembered = await learnedBefore(options, said, roomPart, person, draws, newReplies);
            if (!remembered) primedVerdicts['nothing learned'] = (primedVerdicts['nothing learned'] ?? 0) + 1;
          }
          const { out, own, heard: heardS } = await cancel(r.mic, reference, remembered);
          // The word itself, without the synthesiser's silence around it.
          const spoken = person ? voiced(person) : undefined;
          const wordS: [number, number] | undefined = r.personS && spoken ? [r.personS[0] + spoken[0] / RATE, r.personS[0] + spoken[1] / RATE] : undefined;
          const wakeS = await wakeScores(out);
          for (const threshold of kwsSweep) {
            const armed = (at: number): boolean => reference.sounding(at - RATE / 4, at + 1280);
            const candidates = stopModel ? await spotModel(stopModel, threshold, out, own, armed) : await spot(threshold, out, r.mic, own, armed, wakeS, remembered ? heardS : undefined);
            heard.push({ part, condition: condition.says === 'command' ? 'a command over echo 0 dB' : condition.name, says: condition.says, person: `${voice.synth}:${voice.name}`, threshold, seconds: r.mic.length / RATE, ...(wordS ? { wordS } : {}), currentS: r.currentS ?? 0, candidates, wake: wakeS });
          }
        }
      }
      process.stderr.write(`${part} ${condition.name}: ${heard.length} rooms\n`);
    }
    if (aloneMin > 0) {
      const paragraphs = licenceParagraphs().filter((_p, i) => i % 2 === (part === 'dev' ? 0 : 1));
      for (const esrDb of aloneDb) {
        // One stream per level: paragraphs back to back, a second's pause after each.
        const pieces: Int16Array[] = [];
        const delays: number[] = [];
        const spoken: number[] = [];
        for (let i = 0, s = 0; s < aloneMin * 60; i++) {
          const text = announce ? ANNOUNCEMENTS[i % ANNOUNCEMENTS.length] ?? '' : (paragraphs[(i * 7 + esrDb) % paragraphs.length] ?? '');
          const speech = espeak(text, IRIS_VOICE[roomPart]);
          const played = new Int16Array(speech.length + Math.round(aloneGapS * RATE));
          played.set(speech);
          pieces.push(played);
          spoken.push(speech.length);
          // A new delay per paragraph (the canceller finds it again); one for the whole stream while announcing (a room's own: only the clips' placing moves).
          delays.push(announce && i > 0 ? (delays[0] ?? 100) : 60 + Math.round(rand() * 120));
          s += played.length / RATE;
        }
        const length = pieces.reduce((n, p) => n + p.length, 0);
        const played = new Int16Array(length);
        const mix = new Float64Array(length + RATE);
        let at = 0;
        pieces.forEach((p, i) => {
          played.set(p, at);
          addInto(mix, sox(p, ['reverb', '50', '50', '60']), at + Math.round(((delays[i] ?? 100) * RATE) / 1000));
          at += p.length;
        });
        const echoPower = speechPower(toInt16(mix.subarray(0, 60 * RATE))); // the first minute: its spread of frames fits Math.max's arguments
        const noise = pink(Math.min(length, 60 * RATE));
        const noiseGain = Math.sqrt(echoPower / 10 ** ((35 + esrDb) / 10) / speechPower(noise));
        for (let k = 0; k < length; k += noise.length) addInto(mix, noise, k, noiseGain);
        toMicLevel(mix);
        const mic = toInt16(mix).subarray(0, length);
        const reference = new EchoReference(length / RATE + 2);
        // Each paragraph's speech as its own clip (the pause after it is nothing played: the front end disarms there, as in the daemon).
        for (let i = 0, start = 0; i < pieces.length; start += pieces[i]?.length ?? 0, i++) reference.write(pieces[i]?.subarray(0, spoken[i]) ?? new Int16Array(0), start + (i === 0 ? 0 : Math.round((rand() * 2 - 1) * aloneJitter)));
        const { out, own } = await cancel(mic, reference);
        const wakeS = await wakeScores(out);
        // Armed as in the daemon: while IRIS's audio (and a quarter second of its room) sounds; a pause between paragraphs disarms it.
        const armed = (at: number): boolean => reference.sounding(at - RATE / 4, at + 1280);
        for (const threshold of kwsSweep) {
          const candidates = stopModel ? await spotModel(stopModel, threshold, out, own, armed) : await spot(threshold, out, mic, own, armed, wakeS);
          heard.push({ part, says: 'nothing', condition: `IRIS ${announce ? 'announcing' : 'talking on'}, ${esrDb >= 0 ? '+' : ''}${esrDb} dB${aloneJitter ? `, placed ±${aloneJitter}` : ''}`, person: `espeak:${IRIS_VOICE[roomPart]}`, threshold, seconds: length / RATE, currentS: 0, candidates, wake: wakeS });
        }
        process.stderr.write(`${part} IRIS alone ${esrDb} dB: ${round(length / RATE / 60, 1)} min\n`);
      }
    }
  }
  const conditions = [...new Set(heard.map((h) => h.condition))];
  const sweep = kwsSweep.flatMap((threshold) => checks.flatMap(({ name, check }) => parts.flatMap((part) => conditions.flatMap((condition) => {
    const set = heard.filter((h) => h.part === part && h.condition === condition && h.threshold === threshold);
    if (set.length === 0) return [];
    const judged = set.map((h) => {
      // When the sound stopped: at the verdict, or where it was held for it (a level candidate's wait for the wake word's scores).
      const passed = h.candidates.filter((c) => !ownWord(c, check) && passesCheck(c, check) && (check === false || c.route !== 'level' || (c.fit <= levelMaxFit && !(c.wake > levelMaxWake)))).map((c) => (c.heldS >= 0 ? c.heldS : c.atS));
      const [from, to] = h.wordS ?? [Infinity, Infinity];
      const mine = passed.filter((t) => t >= from && t <= to + HEARD_WITHIN_S);
      const self = passed.filter((t) => !(t >= from && t <= to + HEARD_WITHIN_S));
      // A command's wake word heard over IRIS stops it there (barge-in), and the stop word disarms a quarter second after IRIS's sound ends.
      const wakeChunk = h.says === 'command' ? h.wake.findIndex((score) => score >= wakeThreshold) : -1;
      const bargedS = wakeChunk >= 0 ? ((wakeChunk + 1) * 1280) / RATE + 0.25 : Infinity;
      // Held, then let go (the live StopWord's verdict): IRIS went silent for a moment and on again.
      const letGo = h.candidates.filter((c) => c.heldS >= 0 && !c.heard).length;
      return { heard: mine.length > 0, lagMs: mine.length > 0 ? ((mine[0] ?? 0) - to) * 1000 : undefined, self: self.length, warm: self.filter((t) => t >= h.currentS).length, letGo, beforeBarge: mine.filter((t) => t < bargedS).length };
    });
    const hours = set.reduce((s, h) => s + h.seconds, 0) / 3600;
    const lags = judged.flatMap((j) => (j.lagMs === undefined ? [] : [j.lagMs])).sort((a, b) => a - b);
    const says = set[0]?.says === 'stop';
    return [{
      threshold, check: name, part, condition, n: set.length,
      // Commands: rooms where a word of the command stopped IRIS before the command's wake word did (as in the daemon), and at any time.
      ...(set[0]?.says === 'command' ? { stopped_by_the_command: judged.filter((j) => j.beforeBarge > 0).length, stopped_by_the_command_any_time: judged.filter((j) => j.heard).length } : {}),
      ...(says ? {
        stop_pct: Math.round((100 * judged.filter((j) => j.heard).length) / set.length),
        lag_ms_p50: lags.length ? round(lags[Math.floor(lags.length / 2)] ?? 0, 0) : null,
        lag_ms_max: lags.length ? round(lags.at(-1) ?? 0, 0) : null,
        over_300_ms: lags.filter((l) => l > 300).length,
      } : {}),
      self_stops: judged.reduce((s, j) => s + j.self, 0), self_stops_current_reply: judged.reduce((s, j) => s + j.warm, 0),
      held_and_let_go: judged.reduce((s, j) => s + j.letGo, 0),
      ...(set[0]?.says === 'nothing' ? { minutes: round(hours * 60, 1), self_stops_per_hour: round(judged.reduce((s, j) => s + j.self, 0) / hours, 1) } : {}),
    }];
  }))));
  console.table(sweep);
  if (primed) console.log('primed filters:', primedVerdicts);
  writeResults(process.env.IRIS_BENCH_NAME ?? 'room-stop', { parts, rooms_per_voice: perVoice, alone_min: aloneMin, thresholds: kwsSweep, checks, restart_s: restartS ?? 'default', ...(primed ? { primed: primedVerdicts } : {}), sweep, heard });
}
