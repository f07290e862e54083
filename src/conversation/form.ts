/**
 * A server's question to the person (MCP elicitation) and their replies fitted to it, the same
 * for the voice, `iris chat`, `iris ask` and `iris tools call`. A form is asked one field at a
 * time (only the required fields without a default; defaults fill the rest); spoken numbers
 * and yes/no are read with the intent matcher's normaliser; each value is checked with ajv
 * against its field's schema. A reply that does not fit asks again once, then declines;
 * "cancel" or "never mind" cancels, "no" declines. A link is said and declined: IRIS never
 * opens or fetches it. The server's words are untrusted: plain text, capped.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { matchIntent, normalise } from '../intents/match.js';
import { plainText } from '../pipeline/espeak.js';
import type { FormSchema, FormValue, ToolAnswer, ToolQuestion } from '../toolhost/api.js';
import { explain } from '../toolhost/host.js';

/** Longest server message said (characters): it is spoken, and it is the server's text. */
const MESSAGE_CHARS = 240;
/** Longest field title or option said (characters). */
const LABEL_CHARS = 60;
/** Options listed in a question; more are "and N more". */
const OPTIONS_SAID = 8;

/**
 * The largest form asked; a larger one is declined before anything reads it further. A form is
 * answered by voice or a typed line, so these are generous for people and small for the
 * daemon's one thread: ajv compiles a 5,000-option enum in 0.2 s and 20,000 in 2.4 s, and
 * every reply is matched against every option.
 */
export const FORM_LIMITS = {
  /** Choices in one field (enum, oneOf, anyOf): 8 are said; nobody picks by voice from more. */
  options: 500,
  /** Fields: each is asked in turn. */
  fields: 50,
  /** The schema's size, about as JSON (bytes): a 500-option field with titles fits well inside. */
  bytes: 64 * 1024,
  /** Nesting: an MCP form is an object of primitive fields, 4 deep with titled choices. */
  depth: 8,
} as const;

interface Field {
  name: string;
  title: string;
  /** `other`: a multiple choice, never asked (only its default is sent). */
  type: 'string' | 'number' | 'integer' | 'boolean' | 'other';
  /** A single-choice field's values and what to call them. */
  options?: { value: string; label: string }[];
  schema: Record<string, unknown>;
  validate: ValidateFunction;
}

/** What to say next, or the answer for the server (with a last sentence for the person). */
export type FormStep = { say: string; answer?: undefined } | { answer: ToolAnswer; say?: string };

const CANCEL = /^(?:(?:ok|okay|oh|um|uh|well|no) )?(?:cancel(?: it| that| this)?|never ?mind|forget (?:it|about it)|abort|stop)(?: please)?$/;
const REFUSE = /^(?:(?:no )?i(?: would|'d) rather not(?: say)?|decline|i (?:do not|don't) want to(?: say| answer)?|don't answer|do not answer|none of (?:your|its) business|pass)$/;
const STRING_FORMATS: Record<string, (value: string) => boolean> = {
  email: (v) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v),
  uri: (v) => URL.canParse(v),
  date: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v)),
  'date-time': (v) => !Number.isNaN(Date.parse(v)),
};

/** A validator per question: ajv keeps every schema it compiled, and a daemon sees endless questions. */
const validator = (): Ajv => new Ajv({ allErrors: true, strict: false, formats: STRING_FORMATS });

export class FormInterview {
  readonly #server: string;
  readonly #fields: Field[];
  /** The whole form's schema, compiled. */
  readonly #validate: ValidateFunction;
  readonly #toAsk: Field[];
  readonly #content: Record<string, FormValue> = {};
  #at = 0;
  #retried = false;

  private constructor(question: Extract<ToolQuestion, { mode: 'form' }>, fields: Field[], validate: ValidateFunction) {
    this.#validate = validate;
    this.#server = question.server;
    this.#fields = fields;
    const required = new Set(question.schema.required ?? []);
    this.#toAsk = fields.filter((f) => required.has(f.name) && f.schema.default === undefined);
  }

  /** The first thing to say, and the interview; or, for what cannot be asked, the answer at once. */
  static open(question: ToolQuestion): { interview: FormInterview; say: string } | { answer: ToolAnswer; say: string; reason?: string } {
    const who = `The ${question.server} server`;
    if (question.mode === 'url') {
      let host = 'a website';
      try {
        host = plain(new URL(question.url).hostname, LABEL_CHARS);
      } catch {
        // not even a URL: said as "a website"
      }
      return { answer: { action: 'decline' }, say: `${who} wants you to open a link on ${host}: ${sentence(question.message)} I can't open links, so I declined.` };
    }
    const large = formTooLarge(question.schema);
    if (large !== undefined) {
      return { answer: { action: 'decline' }, say: `${who} sent a form too large to ask here (${large}), so I declined.`, reason: `a form too large (${large})` };
    }
    const ajv = validator();
    const fields = readFields(question.schema, ajv);
    let validate: ValidateFunction | undefined;
    try {
      validate = ajv.compile(unpatterned(question.schema));
    } catch {
      // a form ajv refuses: said as such below
    }
    if (typeof fields === 'string' || validate === undefined) {
      const what = typeof fields === 'string' ? fields : 'something it describes in a way IRIS cannot read';
      return { answer: { action: 'decline' }, say: `${who} asked for ${what}, which I can't ask you for here, so I declined.` };
    }
    const interview = new FormInterview(question, fields, validate);
    return { interview, say: `${who} asks: ${sentence(question.message)} ${interview.#prompt(true)}`.trim() };
  }

  /** Take the person's reply (`spoken`: a transcript, whose end punctuation is the recogniser's). */
  async reply(text: string, spoken: boolean): Promise<FormStep> {
    const words = await normalise(text);
    if (CANCEL.test(words)) return { answer: { action: 'cancel' } };
    if (REFUSE.test(words)) return { answer: { action: 'decline' } };
    const said = (await matchIntent(text, (intent) => intent.name === 'yes' || intent.name === 'no'))?.intent.name;
    const field = this.#toAsk[this.#at];
    if (field === undefined) {
      // Nothing to fill in: the question is whether to send the defaults.
      if (said === 'yes') return this.#finish();
      if (said === 'no') return { answer: { action: 'decline' } };
      return this.#again('Please say yes or no.');
    }
    if (said === 'no' && field.type !== 'boolean') return { answer: { action: 'decline' } };
    const fitted = fit(field, text, words, said, spoken);
    if ('problem' in fitted) return this.#again(fitted.problem);
    const { value } = fitted;
    if (!field.validate(value)) return this.#again(`"${plain(String(value), LABEL_CHARS)}" won't do: it ${plain(explain(field.validate.errors ?? []), MESSAGE_CHARS)}.`);
    this.#content[field.name] = value;
    this.#at += 1;
    this.#retried = false;
    return this.#at < this.#toAsk.length ? { say: this.#prompt(false) } : this.#finish();
  }

  #again(problem: string): FormStep {
    if (this.#retried) return { answer: { action: 'decline' }, say: `I still couldn't use that, so I told the ${this.#server} server no.` };
    this.#retried = true;
    return { say: `Sorry, ${problem} ${this.#prompt(false)}`.trim() };
  }

  /** The answers and every other field's default, checked against the whole schema. */
  #finish(): FormStep {
    const content: Record<string, FormValue> = {};
    for (const field of this.#fields) {
      const value = this.#content[field.name] ?? (field.schema.default as FormValue | undefined);
      if (value !== undefined) content[field.name] = value;
    }
    if (!this.#validate(content)) {
      return { answer: { action: 'decline' }, say: `The ${this.#server} server's form doesn't accept its own defaults (${plain(explain(this.#validate.errors ?? []), MESSAGE_CHARS)}), so I declined.` };
    }
    return { answer: { action: 'accept', content } };
  }

  /** What to ask now: the field and how to answer it, or whether to send the defaults. */
  #prompt(first: boolean): string {
    const field = this.#toAsk[this.#at];
    if (field === undefined) {
      const defaults = this.#fields.filter((f) => f.schema.default !== undefined).map((f) => `${labelOf(f.name, { title: f.schema.title ?? f.schema.description })} ${spoken(f.schema.default)}`);
      const sent = defaults.length === 0 ? '' : ` It would get ${plain(defaults.join(', '), MESSAGE_CHARS)}.`;
      return `${sent} Say yes to ${defaults.length === 0 ? 'go ahead' : 'send that'}, or no.`.trim();
    }
    const ask = `${first && this.#toAsk.length > 1 ? 'First, ' : ''}${field.title}? `;
    return `${ask}${hint(field)}`.trim();
  }
}

/**
 * What makes a form too large to ask (see FORM_LIMITS), or undefined. Run before anything else
 * reads the form; it stops at the first limit passed, so its own work is bounded by the limits
 * and not by what the server sent.
 */
export function formTooLarge(schema: unknown): string | undefined {
  let bytes = 0;
  const walk = (value: unknown, depth: number, field: string | undefined): string | undefined => {
    if (depth > FORM_LIMITS.depth) return `nested more than ${FORM_LIMITS.depth} deep`;
    if (typeof value === 'string') bytes += value.length + 3;
    else if (typeof value !== 'object' || value === null) bytes += 8;
    else if (Array.isArray(value)) {
      if (value.length > FORM_LIMITS.options) return `${value.length} choices${field === undefined ? '' : ` for "${plain(field, LABEL_CHARS)}"`}; at most ${FORM_LIMITS.options}`;
      for (const item of value) {
        const why = walk(item, depth + 1, field);
        if (why !== undefined) return why;
      }
    } else {
      for (const key in value) {
        bytes += key.length + 4;
        if (bytes > FORM_LIMITS.bytes) break;
        const why = walk((value as Record<string, unknown>)[key], depth + 1, depth === 1 ? key : field);
        if (why !== undefined) return why;
      }
    }
    return bytes > FORM_LIMITS.bytes ? `more than ${FORM_LIMITS.bytes / 1024} KiB; at most ${FORM_LIMITS.bytes / 1024} KiB` : undefined;
  };
  const properties = (schema as { properties?: unknown } | null)?.properties;
  if (typeof properties === 'object' && properties !== null) {
    let fields = 0;
    for (const _ in properties) if (++fields > FORM_LIMITS.fields) return `more than ${FORM_LIMITS.fields} fields; at most ${FORM_LIMITS.fields}`;
  }
  return walk(schema, 0, undefined);
}

/** The form's fields, or what it asks for that cannot be asked here (a required non-primitive). */
function readFields(schema: FormSchema, ajv: Ajv): Field[] | string {
  const required = new Set(schema.required ?? []);
  const fields: Field[] = [];
  for (const [name, raw] of Object.entries(schema.properties ?? {})) {
    const title = labelOf(name, raw);
    const primitive = raw.type === 'string' || raw.type === 'number' || raw.type === 'integer' || raw.type === 'boolean';
    if (!primitive && required.has(name) && raw.default === undefined) return `a list or a set of choices ("${title}")`;
    const type = primitive ? (raw.type as Field['type']) : 'other';
    let validate: ValidateFunction;
    try {
      validate = ajv.compile(unpatterned(raw));
    } catch {
      return `something it describes in a way IRIS cannot read ("${title}")`; // a schema ajv refuses
    }
    const field: Field = { name, title, type, schema: raw, validate };
    const options = optionsOf(raw);
    if (options !== undefined) field.options = options;
    fields.push(field);
  }
  return fields;
}

/** What a field is called: its title, with its description when it has both (capped, plain). */
function labelOf(name: string, schema: Record<string, unknown>): string {
  const title = typeof schema.title === 'string' ? schema.title : undefined;
  const description = typeof schema.description === 'string' ? schema.description : undefined;
  const label = title !== undefined && description !== undefined ? `${title} (${description})` : title ?? description ?? name.replace(/[_-]+/g, ' ');
  return plain(label, LABEL_CHARS * 2);
}

/** A single-choice field's options: `enum` (titled by `enumNames`), or `oneOf`/`anyOf` of `const` + `title`. */
function optionsOf(schema: Record<string, unknown>): { value: string; label: string }[] | undefined {
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return schema.enum.map((value, i) => ({ value: String(value), label: plain(String(names[i] ?? value), LABEL_CHARS) }));
  }
  const choices = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : undefined;
  if (choices === undefined) return undefined;
  return (choices as { const?: unknown; title?: unknown }[])
    .filter((c) => c.const !== undefined)
    .map((c) => ({ value: String(c.const), label: plain(String(c.title ?? c.const), LABEL_CHARS) }));
}

/** How to answer a field, said after its question. */
function hint(field: Field): string {
  if (field.options !== undefined) {
    const labels = field.options.map((o) => o.label);
    const shown = labels.slice(0, OPTIONS_SAID);
    const more = labels.length > OPTIONS_SAID ? ` and ${labels.length - OPTIONS_SAID} more` : '';
    return shown.length === 1 ? `Say ${shown[0]}.` : `Say ${shown.slice(0, -1).join(', ')}${more === '' ? ' or' : ','} ${shown.at(-1)}${more}.`;
  }
  if (field.type === 'boolean') return 'Say yes or no.';
  if (field.type === 'number' || field.type === 'integer') return `Say a${field.type === 'integer' ? ' whole' : ''} number.`;
  return '';
}

/** The reply as the field's value, or what is wrong with it. */
function fit(field: Field, text: string, words: string, said: string | undefined, spoken: boolean): { value: FormValue } | { problem: string } {
  if (field.options !== undefined) {
    const folded = fold(words);
    const exact = field.options.filter((o) => fold(o.value) === folded || fold(o.label) === folded);
    const within = field.options.filter((o) => new RegExp(`\\b(?:${escape(fold(o.value))}|${escape(fold(o.label))})\\b`).test(folded));
    const found = exact.length === 1 ? exact : within;
    if (found.length === 1 && found[0] !== undefined) return { value: field.type === 'string' ? found[0].value : Number(found[0].value) };
    return { problem: 'I need one of the choices.' };
  }
  switch (field.type) {
    case 'boolean':
      if (said === 'yes' || words === 'true') return { value: true };
      if (said === 'no' || words === 'false') return { value: false };
      return { problem: 'I need a yes or a no.' };
    case 'number':
    case 'integer': {
      const numbers = words.match(/-?\d+(?:\.\d+)?/g) ?? [];
      return numbers.length === 1 ? { value: Number(numbers[0]) } : { problem: 'I need a number.' };
    }
    default: {
      let value = text.trim();
      if (spoken) value = value.replace(/[.!?]+$/, '');
      // A spoken address: "ada at example dot com".
      if (field.schema.format === 'email' && !value.includes('@')) {
        value = value.replace(/\s+at\s+/i, '@').replace(/\s+dot\s+/gi, '.').replace(/\s+/g, '').toLowerCase();
      }
      return { value };
    }
  }
}

const fold = (text: string): string => text.toLowerCase().replace(/[^\p{L}\p{N}.-]+/gu, ' ').trim();
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A default as it is said: booleans as yes/no. */
function spoken(value: unknown): string {
  return typeof value === 'boolean' ? (value ? 'yes' : 'no') : Array.isArray(value) ? value.join(', ') : String(value);
}

/** The server's message as one plain sentence, ended so that what IRIS says next is another. */
function sentence(text: string): string {
  const said = plain(text, MESSAGE_CHARS);
  return /[.?!:…]$/.test(said) || said === '' ? said : `${said}.`;
}

/** The server's text as plain words: no control characters or brackets, one line, capped. */
/**
 * MCP's form fields have no `pattern`: a server's regular expression run on the person's words
 * could stall the daemon (catastrophic backtracking), so any is dropped before ajv compiles.
 */
const unpatterned = <T>(schema: T): T =>
  JSON.parse(JSON.stringify(schema, (key, value: unknown) => (key === 'pattern' || key === 'patternProperties' ? undefined : value))) as T;

function plain(text: string, max: number): string {
  // A server's megabyte of text is not read in full.
  const flat = plainText(text.slice(0, max * 4)).replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:.!?-]+$/, '')}…`; // at a word's end
}
