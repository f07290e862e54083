/**
 * What IRIS understands without a model, as sentence templates (template.ts): the time (here
 * or in a place), the date, arithmetic, timers, reminders, and the words a conversation needs
 * (yes, no). Both the local-path matcher (match.ts) and pocketsphinx's command grammar
 * (pipeline/grammar.ts) are generated from these lines: adding a phrasing is one line here.
 *
 * A slot has a typed form (a regular expression over normalised text: digits, not number
 * words) and, when it can be heard, a spoken form (a template for the grammar). A sentence
 * whose slots all have a spoken form is also in the grammar.
 */

export interface SlotType {
  /** Regular expression source for the slot's value in normalised text. */
  typed: string;
  /** Template for the grammar; a slot without one makes its sentences typed-only. */
  spoken?: string;
}

/** Cities and countries people ask the time of (the grammar keeps those its dictionary has). */
export const PLACES = [
  'tokyo', 'london', 'paris', 'berlin', 'new york', 'los angeles', 'chicago', 'sydney', 'moscow', 'beijing',
  'shanghai', 'hong kong', 'singapore', 'dubai', 'delhi', 'mumbai', 'madrid', 'rome', 'vienna', 'amsterdam',
  'toronto', 'vancouver', 'mexico city', 'san francisco', 'seattle', 'denver', 'boston', 'miami', 'cairo',
  'istanbul', 'seoul', 'bangkok', 'lisbon', 'dublin', 'stockholm', 'oslo', 'helsinki', 'warsaw', 'athens',
  'prague', 'zurich', 'munich', 'hamburg', 'sao paulo', 'montreal', 'krakow', 'new zealand', 'japan', 'china', 'india', 'france', 'germany',
  'australia', 'brazil', 'california', 'texas', 'hawaii', 'alaska', 'utc',
];

/** Things people ask to be reminded of by voice (typed reminders take any text). */
export const ACTIVITIES = [
  'take out the trash', 'call mom', 'call dad', 'check the oven', 'water the plants', 'feed the cat',
  'feed the dog', 'take my medicine', 'stretch', 'go to bed', 'leave', 'check the laundry', 'drink water',
];

/** Names people give timers by voice (typed timers take any name). */
export const TIMER_NAMES = ['pasta', 'tea', 'egg', 'eggs', 'rice', 'pizza', 'bread', 'laundry', 'oven', 'cake', 'coffee'];

/** Spoken number words, one set: any can be heard for any other ("fifteen" / "fifty"). */
const NUMBER_WORDS = [
  'zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen',
  'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen', 'twenty', 'thirty', 'forty', 'fifty', 'sixty',
  'seventy', 'eighty', 'ninety',
];

/** Words that stand in for each other in a slot: a heard one must clearly beat the rest
 * (pocketsphinx.ts checks each against its set before IRIS acts on it). */
export const RIVALS: readonly (readonly string[])[] = [NUMBER_WORDS, PLACES, TIMER_NAMES];

const list = (items: readonly string[]): string => `( ${items.join(' | ')} )`;

/** "20 minute" → "20 minutes", "1 minutes" → "1 minute": one spelling per duration, so two
 * transcripts of it compare equal. */
const units = (text: string): string =>
  text.replace(/\b(\d+(?:\.\d+)?) (second|sec|minute|min|hour|hr|day)s?\b/g, (_, n: string, unit: string) => `${n} ${unit}${n === '1' ? '' : 's'}`);

/** A clock time as the matcher has it ("630 a m tomorrow", "7am") → what the reminder tool
 * reads ("6:30am tomorrow"). */
export const alarmTime = (clock: string): string =>
  clock
    .replace(/^(\d{1,2})(\d{2})\b/, '$1:$2')
    .replace(/ ?\b([ap]) ?m\b/, '$1m')
    .replace(/ ?o'clock\b/, ':00');

/** A duration in digits: "20 minutes", "1 minute and 30 seconds", "1.5 hours". */
const DURATION = String.raw`\d+(?:\.\d+)? (?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?)(?:(?:,? | and )\d+(?:\.\d+)? (?:seconds?|secs?|minutes?|mins?|hours?|hrs?))*`;
/** Free words: a place, a name, a reminder's text (checked by the tool that receives them). */
const WORDS = String.raw`[a-z][a-z.'&-]*(?: [a-z][a-z.'&-]*)*?`;

export const SLOTS: Record<string, SlotType> = {
  digit: { typed: String.raw`\d`, spoken: '( one | two | three | four | five | six | seven | eight | nine )' },
  tens: { typed: String.raw`\d0`, spoken: '( twenty | thirty | forty | fifty | sixty | seventy | eighty | ninety )' },
  // 0–99, whole hundreds and a thousand, with a decimal digit or two ("three point five").
  // Fewer paths, fewer confusions: "ten minutes" came out as "two second and forty minutes"
  // with 0–999 everywhere.
  number: {
    typed: String.raw`-?\d+(?:\.\d+)?`,
    spoken: '( zero | {digit} | ten | eleven | twelve | thirteen | fourteen | fifteen | sixteen | seventeen | eighteen | nineteen | {tens} [ {digit} ] | [ a | {digit} ] hundred | a thousand ) [ point {digit} [ {digit} ] ]',
  },
  // The counts people use for durations.
  count: { typed: String.raw`\d+`, spoken: '( a | an | {digit} | ten | eleven | twelve | fifteen | twenty [ five ] | thirty | forty [ five ] | fifty | sixty | ninety )' },
  duration: {
    typed: DURATION,
    spoken: '( {count} ( second | seconds | minute | minutes | hour | hours ) [ and {count} ( seconds | minutes ) ] | half an hour | an hour and a half )',
  },
  place: { typed: WORDS, spoken: list(PLACES) },
  name: { typed: String.raw`[a-z]+(?: [a-z]+)?`, spoken: list(TIMER_NAMES) },
  activity: { typed: String.raw`[a-z].*?`, spoken: list(ACTIVITIES) },
  // When a reminder is due; the reminder tool reads it and refuses what it cannot.
  // "yesterday …" and "earlier …" are read too, so that a reminder in the past is refused
  // rather than its words taken for the thing to remember.
  when: { typed: String.raw`(?:(?:in|at|on|every|each|next) .+?|(?:tomorrow|tonight|today|yesterday|earlier|last)(?: .+?)?)`, spoken: 'in {duration}' },
  // A clock time for an alarm: "7am", "6:30", "6:30 tomorrow" (spoken "six thirty" arrives as
  // "630": alarmTime() puts the colon back).
  clock: {
    typed: String.raw`\d{1,4}(?::\d{2})?(?: ?(?:am|pm|a m|p m|o'clock))?(?: (?:tomorrow|today|tonight)(?: morning)?)?`,
    spoken: "( {digit} | ten | eleven | twelve ) [ fifteen | thirty | forty five ] ( a.m. | p.m. | o'clock ) [ tomorrow ]",
  },
  // What a cancel names when it names no timer: "cancel the timer" means a timer, not a reminder.
  kind: { typed: '(?:timer|reminder|alarm)', spoken: '( timer | reminder )' },
  // A timer's number: "cancel timer 2".
  id: { typed: String.raw`#?\d+` },
  // Arithmetic, typed: anything with a digit (the calculator decides); spoken: two numbers
  // and an operation, or a root.
  expression: {
    // A number alone ("one", "42") is an answer to something, not a sum: it needs an operation.
    typed: String.raw`(?=.*\d)(?=.*(?:[-+*/^%×÷]|\b(?:plus|minus|times|divided|over|percent|squared|cubed|root|sqrt|cbrt|mod|to|in)\b))(?!.*\b(?:timers?|remind|reminders?)\b).*?`,
    spoken: '( {number} ( plus | minus | times | multiplied by | divided by | over | percent of ) {number} | the square root of {number} )',
  },
};

/**
 * Words people put around a command that change nothing: skipped before, between and after a
 * template's words by the matcher (in normalised form: "quick one" → "quick 1"). The grammar
 * allows the ones in `SPOKEN_LEAD` / `SPOKEN_TAIL` at the ends only: every optional word is a
 * path the recogniser can wander into.
 */
export const SKIP = [
  'um', 'uh', 'erm', 'hmm', 'hey', 'hi', 'so', 'oh', 'well', 'ok', 'okay', 'alright', 'quick 1', 'quick question', 'please', 'just',
  'right now', 'at the moment', 'currently', 'for me', 'over', 'now', 'then',
  'can you', 'could you', 'would you', 'will you', 'can you tell me', 'could you tell me', 'i want you to', "i'd like you to", 'i need you to',
  'jarvis', 'hey jarvis', 'iris', 'hey iris', 'computer', 'alexa',
];
export const SPOKEN_LEAD: string[] = [];
export const SPOKEN_TAIL: string[] = [];

export interface IntentSpec {
  /** The intent's name (reported, and used for confirmation words). */
  name: string;
  /** The native tool it calls; none for words that only steer the conversation. */
  tool?: string;
  sentences: string[];
  /** More phrasings for typed text and free transcripts only: kept out of pocketsphinx's
   * grammar, where every extra path is one more thing to mishear ("what are" + numbers made
   * "what time is it" come out empty). */
  typed?: string[];
  /** Tool arguments from the slot values. */
  args?: (slots: Readonly<Record<string, string>>) => Record<string, unknown>;
}

const TIME_QUESTION = "( what time is it | what's the time | what is the time | tell me the time )";
const TIME_TYPED = "( what time's it | tell me what time it is | do you know what time it is | do you have the time | ( what's | what is ) the ( current | exact ) time | [ the ] current time | time check )";

export const INTENTS: IntentSpec[] = [
  {
    name: 'time',
    tool: 'get_current_time',
    sentences: [`${TIME_QUESTION} [ in {place} ]`],
    typed: [`${TIME_QUESTION} ( at | for ) {place}`, `${TIME_TYPED} [ ( in | at | for ) {place} ]`, 'time in {place}'],
    args: (s) => (s.place === undefined ? {} : { timezone: s.place }),
  },
  {
    name: 'date',
    tool: 'get_current_time',
    sentences: ["what is ( the date | today's date )", 'what day is it'],
    typed: ["( what's | what is ) ( the date | today's date ) [ today ]", 'what day is ( it | today ) [ today ]', "( what's | what is ) today"],
  },
  {
    name: 'set_timer',
    tool: 'set_timer',
    // The article is not optional when spoken: "set a timer" came out as "set tea timer".
    sentences: ['( set | start ) ( a | an ) [ {name} ] timer for {duration}', '{duration} timer'],
    typed: [
      '( set | start | create | make | put on ) [ me ] [ a | an | the ] [ {name} ] ( timer | countdown ) ( for | of ) {duration} [ ( called | named | labelled | labeled | for ) [ the | my | a ] {name} ]',
      '[ set | start | create | make ] [ me ] [ a | an ] {duration} [ long ] [ {name} ] ( timer | countdown )',
      '( timer | countdown ) [ for ] {duration}',
    ],
    args: (s) => ({ duration: units(s.duration ?? ''), ...(s.name === undefined || /^(?:new|quick|kitchen)$/.test(s.name) ? {} : { label: s.name }) }),
  },
  {
    name: 'set_reminder',
    tool: 'set_reminder',
    sentences: ['remind me {when} to {activity}'],
    typed: ['remind me [ to ] {activity} {when}'],
    args: (s) => ({ at: units((s.when ?? '').replace(/^at /, '')), text: s.activity }),
  },
  {
    // An alarm is a reminder at a clock time ("wake up", said when it is due).
    name: 'set_alarm',
    tool: 'set_reminder',
    sentences: ['set an alarm for {clock}', 'wake me up at {clock}'],
    typed: [
      '( set | make | create | put ) [ me ] ( a | an ) alarm ( for | at ) {clock}',
      'wake me [ up ] ( at | by ) {clock}',
      'wake me [ up ] ( tomorrow | today ) at {clock}',
      '( alarm | wake up call ) ( for | at ) {clock}',
    ],
    args: (s) => ({ at: alarmTime(s.clock ?? ''), text: 'wake up' }),
  },
  {
    // How long one named timer has left: list_timers, answered for that name (local.ts).
    name: 'time_left',
    tool: 'list_timers',
    sentences: ['how long until my {name} timer ( ends | is done | goes off )', 'how much time is left on the {name} timer'],
    typed: [
      'how ( long | much time ) ( until | till | before ) ( the | my ) {name} timer ( ends | is done | goes off | finishes | rings )',
      'how ( much time | long ) is left on ( the | my ) {name} timer',
      'how ( much time | long ) ( does | has ) ( the | my ) {name} timer [ got ] left',
    ],
  },
  {
    name: 'list_timers',
    tool: 'list_timers',
    sentences: ['( list | show ) [ my ] ( timers | reminders )', 'what timers do i have', 'how much time is left'],
    typed: [
      '( list | show ) [ me ] [ my | all | the ] ( timers | reminders )',
      '( what | which ) ( timers | reminders ) [ do i have | are ( set | running | there | on ) ]',
      'do i have any ( timers | reminders )',
      'how ( much time | long ) is left [ on ( the | my ) timer ]',
    ],
  },
  {
    name: 'cancel_all',
    tool: 'cancel_timer',
    sentences: ['( cancel | stop | delete ) all [ the | my ] ( timers | reminders )'],
    typed: [
      '( cancel | stop | delete | remove | clear ) all [ the | my ] [ timers | reminders | alarms ]',
      '( cancel | stop | delete | remove | clear ) [ the | my ] ( timers | reminders | alarms )',
    ],
    args: () => ({ id: 'all' }),
  },
  {
    name: 'cancel_timer',
    tool: 'cancel_timer',
    sentences: ['( cancel | stop | delete ) [ the | my ] [ {name} ] {kind}'],
    typed: ['( cancel | stop | delete | remove | clear ) [ the | my ] [ {name} ] {kind} [ [ number ] {id} ]'],
    // An alarm is a reminder at a clock time.
    args: (s) => (s.id !== undefined ? { id: s.id.replace(/^#/, '') } : s.name !== undefined ? { id: s.name } : { id: s.kind === 'alarm' ? 'reminder' : s.kind }),
  },
  {
    name: 'calculate',
    tool: 'calculator',
    sentences: ["( what is | what's | calculate ) {expression}"],
    typed: ["( what's | what is | what are | calculate | compute | how much is | work out | evaluate | convert ) {expression} [ equal | equals | make ]"],
    args: (s) => ({ expression: s.expression }),
  },
  // Answers to a question IRIS asked ("Cancel all 3 timers?"): the whole utterance must be one.
  {
    name: 'yes',
    sentences: ['( yes | yeah | go ahead | confirm )'],
    typed: ["( yes | yeah | yep | yup | sure | ok | okay | go ahead | do it | confirm | confirmed | affirmative | yes please | please do | that's right | correct )"],
  },
  {
    name: 'no',
    sentences: ['( no | stop | cancel | never mind )'],
    typed: ["( no | nope | don't | do not | cancel | stop | never mind | abort | no thanks | no thank you | forget it )"],
  },
  { name: 'thanks', sentences: ['( thank you | thanks )'] },
];
