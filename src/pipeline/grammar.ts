/**
 * The command grammar for pocketsphinx (JSGF): what IRIS answers with no model at all — the
 * time (here or in a city), the date, arithmetic, timers and reminders — plus the words a
 * conversation needs (yes, no, stop). pocketsphinx with a general language model gets 87 % of
 * espeak's words wrong; with a command grammar 5.7 % (notes/speech.md §5). The phrases mirror
 * the local path's patterns (conversation/local.ts), which turns these transcripts into tool
 * calls; a word the pronunciation dictionary lacks is dropped, since pocketsphinx refuses a
 * grammar with unknown words.
 */

/** Cities people ask the time of; any the dictionary lacks are left out. */
const PLACES = [
  'tokyo', 'london', 'paris', 'berlin', 'new york', 'los angeles', 'chicago', 'sydney', 'moscow', 'beijing',
  'shanghai', 'hong kong', 'singapore', 'dubai', 'delhi', 'mumbai', 'madrid', 'rome', 'vienna', 'amsterdam',
  'toronto', 'vancouver', 'mexico city', 'san francisco', 'seattle', 'denver', 'boston', 'miami', 'cairo',
  'istanbul', 'seoul', 'bangkok', 'lisbon', 'dublin', 'stockholm', 'oslo', 'helsinki', 'warsaw', 'athens',
  'prague', 'zurich', 'munich', 'hamburg', 'new zealand', 'japan', 'china', 'india', 'france', 'germany',
  'australia', 'brazil', 'california', 'texas', 'hawaii', 'alaska', 'utc',
];

const UNITS = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const TEENS = ['ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];

const ACTIVITIES = [
  'take out the trash', 'call mom', 'call dad', 'check the oven', 'water the plants', 'feed the cat',
  'feed the dog', 'take my medicine', 'stretch', 'go to bed', 'leave', 'check the laundry', 'drink water',
];

export interface GrammarOptions {
  /** Wake phrases allowed before a command ("hey jarvis"), since audio from just before the
   * detection is kept. */
  wakePhrases: readonly string[];
  /** Words the recogniser can pronounce; phrases with other words are left out. */
  knows?: (word: string) => boolean;
}

const alt = (items: readonly string[]): string => `( ${items.join(' | ')} )`;

export function commandGrammar(options: GrammarOptions): string {
  const knows = options.knows ?? (() => true);
  const known = (items: readonly string[]) => items.filter((item) => item.split(' ').every(knows));
  const wake = known(options.wakePhrases.map((w) => w.replace(/_/g, ' ')));
  const rules: Record<string, string> = {
    digit: alt(UNITS),
    // Arithmetic: 0–99 and whole hundreds; durations: the counts people say. Fewer paths, fewer
    // confusions: "ten minutes" came out as "two second and forty minutes" with 0–999 everywhere.
    number: `( zero | <digit> | ${TEENS.join(' | ')} | ( ${TENS.join(' | ')} ) [ <digit> ] | [ a | <digit> ] hundred | a thousand )`,
    count: `( a | an | <digit> | ${TEENS.join(' | ')} | twenty [ five ] | thirty | forty [ five ] | fifty | sixty | ninety )`,
    unit: '( second | seconds | minute | minutes | hour | hours )',
    duration: '( <count> <unit> | half an hour | an hour and a half )',
    place: alt(known(PLACES)),
    time: '( what time is it | what is the time | what\'s the time | tell me the time ) [ in <place> ]',
    date: '( what is the date | what day is it | what is today\'s date )',
    timer: '( set | start ) [ a | an ] timer for <duration> | <duration> timer',
    timers: '( cancel | stop | delete ) [ all ] [ the | my ] ( timer | timers | reminder | reminders ) | ( list | show ) [ my ] ( timers | reminders ) | what timers do i have | how much time is left',
    remind: `remind me in <duration> to ${alt(known(ACTIVITIES))}`,
    math: '( what is | what\'s | calculate ) <number> ( plus | minus | times | divided by | percent of ) <number> | ( what is | what\'s ) the square root of <number>',
    reply: '( yes | no | stop | cancel | never mind | thank you | thanks | go ahead | do it )',
  };
  const command = '( <time> | <date> | <timer> | <timers> | <remind> | <math> | <reply> )';
  const lines = ['#JSGF V1.0;', 'grammar iris;'];
  lines.push(`public <utterance> = ${wake.length ? `[ ${alt(wake)} ] ` : ''}${command};`);
  for (const [name, body] of Object.entries(rules)) lines.push(`<${name}> = ${body};`);
  return `${lines.join('\n')}\n`;
}

/** The words a JSGF grammar uses: its rule bodies without rule names and operators. */
export function grammarWords(grammar: string): Set<string> {
  const bodies = grammar.split('\n').slice(2).map((line) => line.slice(line.indexOf('=') + 1));
  return new Set(bodies.join(' ').replace(/<[a-z]+>|[;|()[\]]/g, ' ').split(/\s+/).filter(Boolean));
}
