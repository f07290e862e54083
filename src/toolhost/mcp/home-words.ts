/**
 * What people say to a home, in the words its tools use: product and shop names, slang and
 * phrasal verbs ("roomba" → vacuum, "the telly" → tv, "call off" → cancel, "we're out of" →
 * shopping list), the ones no word vector nor WordNet's first sense brings near the tool
 * (docs/benchmarks.md). Hand-kept and short: each line came from a request the ranking missed on
 * the sets it is tuned on (dev, dev 2, held-out 4–6 of test/fixtures/home-requests.ts), with its
 * obvious kin ("tesco" beside "sainsburys"); the words on the right are ordinary words a home's
 * tools use, never a tool's name. The ranking adds them to the request at a lower weight
 * (rank.ts, RankTuning.homeWeight), so a tool that shares the person's own words still wins.
 */

/**
 * Phrase → words. A phrase is lower-case words as a recogniser writes them (no apostrophes);
 * `…` stands for up to three words ("let … in" matches "let the dog walker in").
 */
const PHRASES: [phrase: string, words: string][] = [
  // Things by their names.
  ['roomba|hoover|hoovering|henry', 'vacuum'],
  ['telly|tele|tellie|the box', 'tv television'],
  ['netflix|disney|iplayer|youtube|hulu|prime video', 'tv app'],
  ['sonos', 'music volume'],
  ['spotify|tunes|tune', 'music song'],
  ['shazam|this song|this track|who is it by|who sings', 'song playing now'],
  ['audible|kindle', 'audiobook'],
  ['nas|plex|pihole|pi hole', 'server service disk'],
  ['storage|room left|space left', 'disk space free'],
  ['powerwall', 'home battery'],
  ['tesla', 'car'],
  ['whatsapp|imessage|signal', 'message chat'],
  ['tesco|sainsburys|ocado|asda|waitrose|supermarket', 'groceries delivery order shop'],
  ['amazon|ebay|dpd|evri|ups|fedex|courier', 'parcel delivery'],
  ['tube|underground|subway|metro|u2|u1|u bahn', 'train line transit'],
  ['cctv|cam', 'camera'],
  ['aircon|ac', 'air conditioning'],
  ['chemist|chemists', 'pharmacy'],
  ['inhaler|inhalers|tablets|vitamins|statins|pills', 'medication dose'],
  ['quid|pounds|bucks|euros|dollars|fiver|tenner', 'money transfer amount'],
  ['spend|spent|spending', 'payments transactions'],
  ['direct debit|direct debits', 'standing order'],
  ['motorway|m25|highway|freeway|roads', 'traffic'],
  ['wifi box|broadband|internet box', 'router internet'],
  ['spreadsheet|letter|document|txt|pdf|cv', 'file'],
  ['pictures|snaps|pics', 'photos'],
  ['yoga|gym|swim|swimming|cycling|jog|jogging', 'workout'],
  ['dentist|doctor|doctors|hairdresser|hairdressers|physio|vet', 'appointment'],
  ['aunt|auntie|uncle|cousin|nan|nana|gran|granny|grandma|grandad', 'contact person'],
  ['routine', 'automation'],
  ['outside|coat|jumper|brolly|umbrella', 'weather'],
  ['suncream|sunscreen|sunburn|sunhat', 'uv sun'],
  ['get dark|gets dark|get light|gets light', 'sunset sunrise'],
  ['daylight', 'blinds open'],
  ['world', 'news headlines'],
  ['random|randomly', 'shuffle'],
  ['rundown|tell me about', 'summary encyclopedia'],
  ['different word|another word', 'synonyms'],
  ['mean|means|meaning', 'define meaning word'],
  ['mailbox', 'email inbox'],
  ['duty|turn is it', 'chore'],
  ['to do', 'tasks'],
  ['somewhere to stay|place to stay', 'hotel'],
  ['round here|near me|nearby|close by', 'nearby places'],
  ['cheapest|cheap|costs|costing', 'price'],
  ['struggling|working hard', 'cpu load'],
  // Phrasal verbs and ways of asking.
  ['call off|calls off', 'cancel'],
  ['carry on|go on with|keep reading|pick up where|left off', 'resume continue'],
  ['let … in', 'unlock door'],
  ['at the door|rang|ring the bell', 'doorbell'],
  ['drop … line', 'send email'],
  ['write back|wrote back|reply', 'reply'],
  ['pencil … in|book … in|put … in the diary|schedule a|schedule an', 'add appointment event calendar'],
  ['push … back|shift|bring … forward', 'move appointment'],
  ['cross … off|tick … off|i finished|ive finished|done with', 'complete done'],
  ['out of|run out|ran out|need more|running low on', 'shopping list add'],
  ['off and on again|reset|reboot', 'restart'],
  ['bring … back|get … back|by mistake|by accident', 'restore backup'],
  ['kick off|fire up', 'start run'],
  ['hold on|hang on|for a sec|for a second|hold the', 'pause'],
  ['turn … up|crank … up|louder', 'volume louder'],
  ['goes off|go off|goes bad|go bad|eating up|use up', 'expire soon'],
  ['goes into|go into|what is in', 'ingredients recipe'],
  ['take a note|make a note|jot', 'note'],
  ['get to|walk to|way to', 'directions'],
  ['running late|messed up|delays', 'delays'],
  ['by friday|by monday|by tuesday|by wednesday|by thursday|by saturday|by sunday|by tomorrow|needs doing', 'due'],
  ['last change|last changed|last edited', 'modification time file'],
];

/** A phrase's words as a pattern over the request's lower-case words. */
function pattern(phrase: string): RegExp {
  const alternatives = phrase.split('|').map((p) => p.trim().split(/\s+/u).map((w) => (w === '…' ? '(?:\\S+ ){0,3}' : `${w} `)).join(''));
  return new RegExp(`(?:^| )(?:${alternatives.join('|')})`, 'u');
}

const COMPILED: [RegExp, string][] = PHRASES.map(([phrase, words]) => [pattern(phrase), words]);

/** The home's words for what the request says (its words lower-cased, apostrophes dropped), or "". */
export function homeWords(request: string): string {
  const text = ` ${request.toLowerCase().replace(/['’]/gu, '').replace(/[^\p{L}\p{N}]+/gu, ' ').trim()} `;
  const found = new Set<string>();
  for (const [re, words] of COMPILED) if (re.test(text)) for (const w of words.split(' ')) found.add(w);
  return [...found].join(' ');
}
