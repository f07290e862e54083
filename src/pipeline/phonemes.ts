/**
 * Phonemes as Piper makes them (notes/piper.md §3): espeak-ng's IPA, clause by clause, each
 * clause followed by its punctuation, through libespeak-ng with koffi (Debian's
 * `libespeak-ng1`; the CLI drops the punctuation Piper's voices were trained with). In
 * process: no fork per sentence.
 */
import { IrisError } from '../errors.js';
import { loadNative } from './ffi.js';

export class PhonemeError extends IrisError {
  override name = 'PhonemeError' as const;
}

/** espeak_TextToPhonemes' text mode and phoneme mode: UTF-8 in, IPA without ties out. */
const CHARS_UTF8 = 1;
const PHONEMES_IPA = 0x02;
/** espeak_Initialize's output mode: none, only phonemes are asked for. */
const AUDIO_OUTPUT_RETRIEVAL = 1;
const TERMINATORS = new Set(['.', '?', '!', ',', ':', ';']);

type Phonemize = (text: string, voice: string) => string[][];
let loaded: Promise<Phonemize> | undefined;

/**
 * `text` as Piper's phoneme sentences: each a list of NFD code points, a clause's punctuation
 * after it (and a space after `,` `:` `;`), a new sentence after `.` `?` `!`.
 */
export async function phonemize(text: string, voice: string): Promise<string[][]> {
  loaded ??= load();
  return (await loaded)(text, voice);
}

async function load(): Promise<Phonemize> {
  const { koffi, libs: [lib] } = await loadNative(['libespeak-ng.so.1'], (message, cause) => new PhonemeError('phonemes_missing', message, { cause }), 'libespeak-ng is missing (apt install libespeak-ng1)');
  if (lib === undefined) throw new PhonemeError('phonemes_missing', 'libespeak-ng is missing (apt install libespeak-ng1)');
  const initialize = lib.func('int espeak_Initialize(int output, int buflength, const char *path, int options)');
  const setVoice = lib.func('int espeak_SetVoiceByName(const char *name)');
  const toPhonemes = lib.func('const char *espeak_TextToPhonemes(_Inout_ void **textptr, int textmode, int phonememode)');
  if (initialize(AUDIO_OUTPUT_RETRIEVAL, 0, null, 0) < 0) throw new PhonemeError('phonemes_failed', 'espeak-ng could not start (its data in /usr/lib/*/espeak-ng-data?)');
  let voiceSet = '';

  return (text, voice) => {
    if (voice !== voiceSet) {
      if (setVoice(voice) !== 0) throw new PhonemeError('phonemes_voice', `espeak-ng has no voice "${voice}"`);
      voiceSet = voice;
    }
    const bytes = Buffer.from(`${text}\0`, 'utf8');
    const buffer: unknown = koffi.alloc('char', bytes.length);
    koffi.encode(buffer, 'char', bytes, bytes.length);
    const start = koffi.address(buffer);
    const cell: unknown[] = [buffer];
    const sentences: string[][] = [];
    let sentence: string[] = [];
    let from = 0;
    // Each call phonemizes one clause and moves the pointer past it (and one character more:
    // espeak reads ahead), or to NULL at the end.
    for (let guard = 0; guard <= bytes.length; guard++) {
      const ipa = (toPhonemes(cell, CHARS_UTF8, PHONEMES_IPA) as string | null) ?? '';
      const at = cell[0] === null ? bytes.length : Number(koffi.address(cell[0]) - start);
      const consumed = bytes.subarray(from, at).toString('utf8').replace(/\0/g, '');
      const clause = (cell[0] === null ? consumed : consumed.slice(0, -1)).trimEnd();
      from = at - (cell[0] === null ? 0 : 1);
      const terminator = TERMINATORS.has(clause.slice(-1)) ? clause.slice(-1) : '';
      // Language switches ("(en)…(fr)") are marks, not sounds (Piper strips them too).
      sentence.push(...[...ipa.replace(/\([^)]+\)/g, '').normalize('NFD')]);
      if (terminator !== '') sentence.push(terminator);
      if (',:;'.includes(terminator) && terminator !== '') sentence.push(' ');
      if ('.?!'.includes(terminator) && terminator !== '' && sentence.length > 0) {
        sentences.push(sentence);
        sentence = [];
      }
      if (cell[0] === null) break;
      if (sentence.length > 0 && terminator === '') sentence.push(' ');
    }
    if (sentence.length > 0) sentences.push(sentence);
    return sentences;
  };
}
