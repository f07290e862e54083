/**
 * Text for the ear: what a language model writes ("$5.50", "15:05", "10°C", "e.g.", "5 km",
 * "2026-11-24") rewritten so a voice says it as a person would, for every engine (espeak-ng,
 * and Piper, which phonemizes through espeak-ng). Numbers stay digits: espeak-ng reads plain
 * numbers, ordinals, percentages and 12-hour times well (measured with `espeak-ng -x`); these
 * rules cover what it reads wrong — "$5.50" was "dollar five point five zero", "15:05" "fifteen
 * zero five", "5 km" "five K M", "e.g." "e g". Markdown, URLs and emoji are speakable()'s.
 */

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

const CURRENCIES: Record<string, [one: string, many: string, cent: string, cents: string]> = {
  $: ['dollar', 'dollars', 'cent', 'cents'],
  '€': ['euro', 'euros', 'cent', 'cents'],
  '£': ['pound', 'pounds', 'penny', 'pence'],
  '¥': ['yen', 'yen', '', ''],
};

/** Unit symbols after a number, as words (singular, plural). */
const UNITS: Record<string, [string, string]> = {
  km: ['kilometre', 'kilometres'], m: ['metre', 'metres'], cm: ['centimetre', 'centimetres'], mm: ['millimetre', 'millimetres'],
  mi: ['mile', 'miles'], ft: ['foot', 'feet'], in: ['inch', 'inches'],
  kg: ['kilogram', 'kilograms'], g: ['gram', 'grams'], mg: ['milligram', 'milligrams'], lb: ['pound', 'pounds'], lbs: ['pound', 'pounds'], oz: ['ounce', 'ounces'],
  l: ['litre', 'litres'], ml: ['millilitre', 'millilitres'],
  'km/h': ['kilometre per hour', 'kilometres per hour'], kph: ['kilometre per hour', 'kilometres per hour'], mph: ['mile per hour', 'miles per hour'], 'm/s': ['metre per second', 'metres per second'],
  kb: ['kilobyte', 'kilobytes'], mb: ['megabyte', 'megabytes'], gb: ['gigabyte', 'gigabytes'], tb: ['terabyte', 'terabytes'],
  kw: ['kilowatt', 'kilowatts'], kwh: ['kilowatt hour', 'kilowatt hours'], W: ['watt', 'watts'], V: ['volt', 'volts'], L: ['litre', 'litres'],
  hz: ['hertz', 'hertz'], khz: ['kilohertz', 'kilohertz'], mhz: ['megahertz', 'megahertz'], ghz: ['gigahertz', 'gigahertz'],
  ms: ['millisecond', 'milliseconds'], sec: ['second', 'seconds'], min: ['minute', 'minutes'], h: ['hour', 'hours'], hrs: ['hour', 'hours'],
};

const ABBREVIATIONS: [RegExp, string][] = [
  [/\be\.g\.(?=\s|$|,)/gi, 'for example'],
  [/\bi\.e\.(?=\s|$|,)/gi, 'that is'],
  [/\betc\./gi, 'et cetera'],
  [/\bvs\.?(?=\s)/gi, 'versus'],
  [/\bapprox\.(?=\s)/gi, 'approximately'],
  [/\bno\.\s*(?=\d)/gi, 'number '],
  [/\bDr\.(?=\s+[A-Z])/g, 'Doctor'],
];

/** A number as digits espeak-ng reads whole: thousands separators dropped. */
const plain = (digits: string): string => digits.replace(/,(?=\d{3}\b)/g, '');
const isOne = (digits: string): boolean => Number(plain(digits)) === 1;

/** "$5.50" → "5 dollars 50", "€1" → "1 euro", "$0.99" → "99 cents", "$2.5 million" → "2.5 million dollars". */
function money(_all: string, symbol: string, whole: string, fraction: string | undefined, scale: string | undefined): string {
  const [one, many, cent, cents] = CURRENCIES[symbol] ?? ['', '', '', ''];
  if (scale !== undefined) return `${plain(whole)}${fraction === undefined ? '' : `.${fraction}`} ${scale} ${many}`;
  const fractionValue = fraction === undefined ? 0 : Number(fraction.padEnd(2, '0').slice(0, 2));
  const unit = isOne(whole) ? one : many;
  if (Number(plain(whole)) === 0 && fractionValue > 0 && cent !== '') return `${fractionValue} ${fractionValue === 1 ? cent : cents}`;
  if (fractionValue === 0 || cent === '') return `${plain(whole)} ${unit}`;
  return `${plain(whole)} ${unit} ${fractionValue}`;
}

/** "15:05" → "15 oh 5", "3:00 pm" → "3 PM", "9:30" → "9 30". */
function clock(_all: string, hours: string, minutes: string, meridiem: string | undefined): string {
  const m = Number(minutes);
  const said = m === 0 ? (meridiem === undefined ? `${Number(hours)} hundred` : `${Number(hours)}`) : m < 10 ? `${Number(hours)} oh ${m}` : `${Number(hours)} ${m}`;
  if (m === 0 && meridiem === undefined && Number(hours) <= 12) return `${Number(hours)} o'clock`;
  return meridiem === undefined ? said : `${said} ${meridiem.replace(/\./g, '').toUpperCase()}`;
}

/** "2026-11-24" → "November 24th, 2026". */
function isoDate(all: string, year: string, month: string, day: string): string {
  const name = MONTHS[Number(month) - 1];
  const d = Number(day);
  if (name === undefined || d < 1 || d > 31) return all;
  return `${name} ${d}${ordinalSuffix(d)}, ${year}`;
}

const ordinalSuffix = (n: number): string => (n % 100 >= 11 && n % 100 <= 13 ? 'th' : ['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');

/** Unit symbols that are also words ("2 in the box", "5 m" could be a name): only written onto the number ("5m", "10s"). */
const ONLY_ATTACHED = new Set(['m', 'in', 'g', 'l', 'L', 'V', 'W', 'h', 'sec', 'min', 'mi', 'ms', 'hrs']);

function unit(all: string, number: string, space: string, symbol: string): string {
  // One letter is case-sensitive ("5G" is a network, "500g" grams); longer ones are not ("GB", "gb").
  const key = symbol.length === 1 ? symbol : symbol.toLowerCase();
  const words = UNITS[key];
  if (words === undefined || key === 'in' || (space !== '' && ONLY_ATTACHED.has(key))) return all;
  return `${number} ${isOne(number) ? words[0] : words[1]}`;
}

/** `text` rewritten for the ear; anything it does not recognise is left as it is. */
export function forTheEar(text: string): string {
  let out = text;
  for (const [pattern, words] of ABBREVIATIONS) out = out.replace(pattern, words);
  out = out
    .replace(/([$€£¥])\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?(?:\s?(thousand|million|billion|trillion)\b)?/g, money)
    .replace(/\b(\d{4})-(\d{2})-(\d{2})\b/g, isoDate)
    .replace(/\b([01]?\d|2[0-3]):([0-5]\d)(?::[0-5]\d)?\s?([ap]\.m\.|[ap]m)?(?![\w:])/gi, clock)
    .replace(/(-?\d+(?:\.\d+)?)\s?°\s?([CF])\b/g, (_all, n: string, scale: string) => `${n} degrees ${scale === 'C' ? 'Celsius' : 'Fahrenheit'}`)
    .replace(/(-?\d+(?:\.\d+)?)\s?°/g, (_all, n: string) => `${n} degrees`)
    .replace(/(\d+(?:[.,]\d+)?)(\s?)(km\/h|m\/s|[a-zA-Z]{1,3})(?![\w/])/g, (all, n: string, space: string, symbol: string) => unit(all, plain(n), space, symbol))
    .replace(/(\d)\s?[x×]\s?(\d)/g, '$1 times $2')
    .replace(/(\d)\s?÷\s?(\d)/g, '$1 divided by $2')
    .replace(/(\d)\s?=\s?(-?\d)/g, '$1 equals $2')
    .replace(/~\s?(\d)/g, 'about $1')
    .replace(/#(\d)/g, 'number $1')
    .replace(/\s+&\s+/g, ' and ');
  return out;
}
