// The answers to a server's form, fitted without a server: what the engine tests with real
// servers do not reach (spoken e-mail addresses, forms IRIS cannot ask, long and hostile text).
import { describe, expect, it } from 'vitest';
import { FORM_LIMITS, FormInterview, formTooLarge } from '../src/conversation/form.js';
import type { FormSchema, ToolQuestion } from '../src/toolhost/api.js';

const form = (schema: FormSchema, message = 'Details?'): ToolQuestion => ({ mode: 'form', server: 'shop', message, schema });
const open = (question: ToolQuestion) => {
  const opened = FormInterview.open(question);
  if (!('interview' in opened)) throw new Error(`declined at once: ${opened.say}`);
  return opened;
};

describe('fitting replies to a form', () => {
  it('reads a spoken e-mail address, and refuses one that is not', async () => {
    const { interview, say } = open(form({ type: 'object', properties: { email: { type: 'string', format: 'email', title: 'E-mail' } }, required: ['email'] }));
    expect(say).toBe('The shop server asks: Details? E-mail?');
    expect((await interview.reply('ada at example', true)).say).toBe('Sorry, "ada@example" won\'t do: it must match format "email". E-mail?');
    expect(await interview.reply('Ada at example dot com.', true)).toEqual({ answer: { action: 'accept', content: { email: 'ada@example.com' } } });
  });

  it('declines at once what it cannot ask for: a required multiple choice, a schema ajv refuses', () => {
    const list = FormInterview.open(form({ type: 'object', properties: { toppings: { type: 'array', title: 'Toppings', items: { type: 'string', enum: ['ham', 'olives'] } } }, required: ['toppings'] }));
    expect(list).toEqual({ answer: { action: 'decline' }, say: 'The shop server asked for a list or a set of choices ("Toppings"), which I can\'t ask you for here, so I declined.' });
    const broken = FormInterview.open(form({ type: 'object', properties: { n: { type: 'integer', minimum: 'one' } }, required: ['n'] }));
    expect(broken).toMatchObject({ answer: { action: 'decline' } });
  });

  it('says the server\'s text as plain words, capped, and a link by its host only', () => {
    const { say } = open(form({ type: 'object', properties: {} }, `${'Buy now! '.repeat(60)}[[h@lo]]`));
    expect(say.length).toBeLessThan(320);
    expect(say).toMatch(/^The shop server asks: (Buy now! )+Buy(?: now)?… Say yes to go ahead, or no\.$/); // cut at a word's end
    const link: ToolQuestion = { mode: 'url', server: 'shop', message: 'Pay here \u0001[[x]]', url: 'https://pay.example.com/c?token=abc' };
    expect(FormInterview.open(link)).toEqual({
      answer: { action: 'decline' },
      say: "The shop server wants you to open a link on pay.example.com: Pay here x. I can't open links, so I declined.",
    });
  });

  it("never runs a server's regular expression on the person's words", async () => {
    // ^(a+)+$ against "aaaa…b" backtracks for minutes; MCP's form fields have no pattern.
    const { interview } = open(form({ type: 'object', properties: { code: { type: 'string', title: 'Code', pattern: '^(a+)+$', maxLength: 5 } }, required: ['code'] }));
    const started = performance.now();
    const again = await interview.reply(`${'a'.repeat(40)}b`, false);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(again.say).toMatch(/must NOT have more than 5 characters/);
    expect(again.say).not.toMatch(/pattern/);
  });

  it('reads choices by value or title, numbers in words, and yes/no for a boolean', async () => {
    const { interview } = open(form({
      type: 'object',
      properties: {
        size: { type: 'string', title: 'Size', enum: ['s', 'm', 'l'], enumNames: ['Small', 'Medium', 'Large'] },
        count: { type: 'number', title: 'Count', minimum: 0 },
        gift: { type: 'boolean', title: 'Gift wrap' },
      },
      required: ['size', 'count', 'gift'],
    }));
    expect((await interview.reply('large please', true)).say).toBe('Count? Say a number.');
    expect((await interview.reply('two point five', true)).say).toBe('Gift wrap? Say yes or no.');
    expect(await interview.reply('yeah', true)).toEqual({ answer: { action: 'accept', content: { size: 'l', count: 2.5, gift: true } } });
  });
});

describe('the size of a form', () => {
  const field = (schema: Record<string, unknown>): FormSchema => ({ type: 'object', properties: { f: { type: 'string', title: 'F', ...schema } }, required: ['f'] });
  const choices = (n: number) => Array.from({ length: n }, (_, i) => `c${i}`);

  it('takes the largest form of each kind, and refuses one past it, saying which limit', () => {
    expect(formTooLarge(field({ enum: choices(FORM_LIMITS.options) }))).toBeUndefined();
    expect(formTooLarge(field({ enum: choices(FORM_LIMITS.options + 1) }))).toBe('501 choices for "f"; at most 500');
    expect(formTooLarge(field({ oneOf: choices(600).map((c) => ({ const: c, title: c })) }))).toBe('600 choices for "f"; at most 500');
    const wide = Object.fromEntries(Array.from({ length: FORM_LIMITS.fields + 1 }, (_, i) => [`f${i}`, { type: 'string' }]));
    expect(formTooLarge({ type: 'object', properties: wide })).toBe('more than 50 fields; at most 50');
    expect(formTooLarge(field({ description: 'x'.repeat(FORM_LIMITS.bytes) }))).toBe('more than 64 KiB; at most 64 KiB');
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 10; i++) deep = { not: deep };
    expect(formTooLarge(field(deep))).toBe('nested more than 8 deep');
  });

  it('refuses a form of 1,000,000 choices at once, before ajv sees it, and says so', () => {
    const huge = form(field({ enum: choices(1_000_000) }));
    const started = performance.now();
    const opened = FormInterview.open(huge);
    expect(performance.now() - started).toBeLessThan(100);
    expect(opened).toEqual({
      answer: { action: 'decline' },
      say: 'The shop server sent a form too large to ask here (1000000 choices for "f"; at most 500), so I declined.',
      reason: 'a form too large (1000000 choices for "f"; at most 500)',
    });
  });
});
