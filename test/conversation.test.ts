import { afterEach, describe, expect, it } from 'vitest';
import type { Conversation, TurnResult } from '../src/conversation/engine.js';
import { withDouble, type Sections, type Setup } from './helpers/conversation.js';
import { parseConfig } from '../src/config/load.js';
import { errorResult, sayAsIs } from '../src/toolhost/api.js';
import { closedPort } from './helpers/net.js';
import type { ModelSpec } from './helpers/ollama-double.js';

let setup: Setup | undefined;
afterEach(async () => {
  await setup?.double.close();
  setup = undefined;
});

async function start(sections: Sections = {}, options: Parameters<typeof withDouble>[1] = {}): Promise<Setup> {
  setup = await withDouble(sections, options);
  return setup;
}

async function say(conversation: Conversation, text: string, signal?: AbortSignal): Promise<{ said: string[]; result: TurnResult }> {
  const turn = conversation.turn(text, signal);
  const said: string[] = [];
  for await (const sentence of turn.sentences) said.push(sentence);
  return { said, result: await turn.result };
}

const ask = (s: Setup, text: string, signal?: AbortSignal) => say(s.iris.conversation(), text, signal);
const toolMessages = (s: Setup, chat: number) => s.double.chats[chat]?.messages.filter((m) => m.role === 'tool').map((m) => m.content) ?? [];


describe('the tool loop', () => {
  it('runs a tool call, sends the result back, and streams the answer as sentences', async () => {
    const s = await start();
    s.double.script(
      { tool_calls: [{ name: 'get_current_time', arguments: { timezone: 'Asia/Tokyo' } }] },
      { content: ["It's ", '3:04 PM in ', 'Tokyo. ', 'Anything else?'] },
    );
    const { said, result } = await ask(s, 'how late is it over in japan');
    expect(said).toEqual(["It's 3:04 PM in Tokyo.", 'Anything else?']);
    expect(result).toMatchObject({ route: 'llm', reply: "It's 3:04 PM in Tokyo. Anything else?", repairs: {} });
    expect(result.tool_calls).toEqual([expect.objectContaining({ name: 'get_current_time', arguments: { timezone: 'Asia/Tokyo' } })]);
    const [first, second] = s.double.chats;
    expect(first?.tools?.map((t) => t.function.name)).toEqual(['get_current_time', 'calculator', 'set_timer', 'set_reminder', 'list_timers', 'cancel_timer']);
    expect(first?.options).toMatchObject({ num_ctx: 8192, num_predict: 512, temperature: 0.3 });
    expect(first?.think).toBe(false);
    expect(first?.keep_alive).toBe('30m');
    expect(second?.messages.slice(-2)).toEqual([
      { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_current_time', arguments: { timezone: 'Asia/Tokyo' } } }] },
      { role: 'tool', content: expect.stringMatching(/^It's \d{1,2}:\d{2} [AP]M on .+ in Tokyo\.$/), tool_name: 'get_current_time' },
    ]);
    expect(result.tokens.prompt_eval_count).toBe(second?.prompt_eval_count);
    expect(result.tokens).toMatchObject({ num_ctx: 8192, budget: 8192 - 512 });
    expect(result.timings_ms.first_token).toBeGreaterThan(0);
  });

  it("says IRIS's own sign-in sentence word for word, and a server's lookalike only through the model", async () => {
    const s = await start();
    const sentence = 'To sign in to calendar, go to https://auth.example.org/device and enter the code WJLR-JQQG.';
    const tool = (name: string, own: boolean) => ({
      name, description: 'calendar', inputSchema: { type: 'object' as const, properties: {} },
      run: () => (own ? sayAsIs(errorResult(sentence)) : errorResult(sentence)),
    });
    s.iris.host.register(tool('calendar_today', true));
    s.iris.host.register(tool('lookalike', false));
    s.double.script({ tool_calls: [{ name: 'calendar_today', arguments: {} }] }, { content: ['Please sign in on the website.'] });
    const own = await ask(s, "what's on my calendar today");
    expect(own.said).toEqual([sentence.replace('https://', '')]); // the address said, not "the link"
    expect(s.double.chats).toHaveLength(1); // the model never rephrased it
    expect(s.double.pending).toBe(1);
    s.double.script({ tool_calls: [{ name: 'lookalike', arguments: {} }] });
    const other = await ask(s, "what's on my calendar today");
    expect(other.said).toEqual(['Please sign in on the website.']);
  });

  it('runs parallel tool calls from one chunk, in order', async () => {
    const s = await start();
    s.double.script(
      { tool_calls: [{ name: 'calculator', arguments: { expression: '2+2' } }, { name: 'calculator', arguments: { expression: '3*3' } }] },
      { content: ['Four, and nine.'] },
    );
    const { result } = await ask(s, 'two plus two and three times three, in words');
    expect(result.tool_calls.map((c) => c.result.content[0])).toEqual([{ type: 'text', text: '4' }, { type: 'text', text: '9' }]);
    expect(toolMessages(s, 1)).toEqual(['4', '9']);
  });

  it('stops after max_tool_rounds and answers from the results it has', async () => {
    const s = await start({ ollama: { max_tool_rounds: 2 } });
    const again = { tool_calls: [{ name: 'calculator', arguments: { expression: '6*7' } }] };
    s.double.script(again, again, again);
    const { said, result } = await ask(s, 'keep multiplying');
    expect(s.double.chats).toHaveLength(2);
    expect(result.route).toBe('fallback');
    expect(said).toEqual(["The model didn't finish, but here is what I found: 42 42"]);
    expect(result.error?.message).toMatch(/2 rounds of tool calls/);
  });
});

describe('the small-model safety net', () => {
  it('does not run a tool that does not exist, tells the model which exist, and counts it', async () => {
    const s = await start();
    s.double.script({ tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] }, { content: ["I can't check the weather."] });
    const { result } = await ask(s, 'weather in paris');
    expect(toolMessages(s, 1)[0]).toMatch(/^There is no tool named "get_weather"\. Available tools: get_current_time, calculator/);
    expect(result.repairs).toEqual({ unknown_tool: 1 });
    expect(result.tool_calls[0]?.result.isError).toBe(true);
  });

  it('resolves hyphen/underscore and namespace mismatches to the real tool', async () => {
    const s = await start();
    s.double.script(
      { tool_calls: [{ name: 'get-current-time', arguments: {} }, { name: 'functions.Calculator', arguments: { expression: '1+1' } }] },
      { content: ['Done.'] },
    );
    const { result } = await ask(s, 'the time and one plus one please, thanks');
    expect(result.tool_calls.map((c) => [c.name, c.result.isError ?? false])).toEqual([['get_current_time', false], ['calculator', false]]);
    expect(result.repairs).toEqual({ tool_name: 2 });
  });

  it('parses arguments sent as a JSON string', async () => {
    const s = await start();
    s.double.script({ tool_calls: [{ name: 'calculator', arguments: '{"expression": "12*12"}' }] }, { content: ['144.'] });
    const { result } = await ask(s, 'a gross');
    expect(toolMessages(s, 1)).toEqual(['144']);
    expect(result.repairs).toEqual({ arguments_string: 1 });
    // What goes back to Ollama is an object: a string would be a 400.
    expect(s.double.chats[1]?.messages.find((m) => m.tool_calls)?.tool_calls?.[0]?.function.arguments).toEqual({ expression: '12*12' });
  });

  it('returns schema failures to the model, which corrects itself', async () => {
    const s = await start();
    s.double.script(
      { tool_calls: [{ name: 'set_timer', arguments: { minutes: 10 } }] },
      { tool_calls: [{ name: 'set_timer', arguments: { duration: '10m', label: 'tea' } }] },
      { content: ['Your tea timer is running.'] },
    );
    const { result } = await ask(s, 'tea in ten');
    expect(toolMessages(s, 1)).toEqual(['Invalid arguments for set_timer: "duration" is required; "minutes" is not an argument of set_timer. '
      + 'Usage: set_timer(duration: string|number, label?: string).']);
    expect(toolMessages(s, 2).at(-1)).toBe('Tea timer set for 10 minutes.');
    expect(result.reply).toBe('Your tea timer is running.');
  });

  it.each([
    ['bare JSON', ['{"name": "calculator", "arguments": {"expression": "7*6"}}']],
    ['Hermes tags', ['<tool_call>\n{"name": "calculator", ', '"arguments": {"expression": "7*6"}}\n</tool_call>']],
    ['seed 004 tags', ['<tool>{"name": "calculator", "arguments": {"expression": "7*6"}}</tool>']],
    ['a fenced block with sloppy JSON', ["```json\n{name: 'calculator', arguments: {expression: '7*6'},}\n```"]],
  ])('runs a call written as %s in the text, and never speaks it', async (_kind, content) => {
    const s = await start();
    s.double.script({ content }, { content: ["It's 42."] });
    const { said, result } = await ask(s, 'six sevens');
    expect(toolMessages(s, 1)).toEqual(['42']);
    expect(said).toEqual(["It's 42."]);
    expect(result.repairs).toEqual({ call_in_text: 1 });
  });

  it('runs a call left inside thinking', async () => {
    const s = await start();
    s.double.script({ thinking: 'I should call <tool_call>{"name":"calculator","arguments":{"expression":"2^8"}}</tool_call>' }, { content: ['256.'] });
    const { result } = await ask(s, 'two to the eighth, as a byte');
    expect(toolMessages(s, 1)).toEqual(['256']);
    expect(result.repairs).toEqual({ call_in_thinking: 1 });
  });
});

describe('models without native tool calling', () => {
  const noTools: Record<string, ModelSpec> = { 'qwen2.5:7b': { capabilities: ['completion'], contextLength: 32768 } };

  it('sends no tools field, describes the tools in the prompt, and parses <tool_call> replies', async () => {
    const s = await start({}, { models: noTools });
    s.double.script({ content: ['<tool_call>{"name": "calculator", "arguments": {"expression": "9*9"}}</tool_call>'] }, { content: ['Eighty-one.'] });
    const { said } = await ask(s, 'nine nines');
    const [first, second] = s.double.chats;
    expect(first?.tools).toBeUndefined();
    expect(first?.messages[0]?.content).toContain('"name":"calculator"');
    expect(first?.messages[0]?.content).toContain('<tool_call>');
    expect(second?.messages.at(-1)).toEqual({ role: 'user', content: '<tool_response name="calculator">\n81\n</tool_response>' });
    expect(said).toEqual(['Eighty-one.']);
  });

  it('switches to the text protocol when Ollama rejects tools with a 400', async () => {
    // An older server: /api/show lists no capabilities, and /api/chat refuses tools.
    const s = await start({}, { models: { 'qwen2.5:7b': { capabilities: [] } } });
    s.double.script({ content: ['Hello there.'] });
    const { said } = await ask(s, 'say hello');
    expect(said).toEqual(['Hello there.']);
    expect(s.logs.some((l) => /rejected tools; switching to the text tool protocol/.test(l))).toBe(true);
  });
});

describe('the token budget', () => {
  it('clamps num_ctx to the model maximum and says so once', async () => {
    const s = await start({ budget: { context_tokens: 16384 } }, { models: { 'qwen2.5:7b': { capabilities: ['tools'], contextLength: 4096 } } });
    s.double.script({ content: ['One.'] }, { content: ['Two.'] });
    const conversation = s.iris.conversation();
    await say(conversation, 'first');
    await say(conversation, 'second');
    expect(s.double.chats.map((c) => c.options?.num_ctx)).toEqual([4096, 4096]);
    expect(s.logs.filter((l) => /context_tokens 16384 is above qwen2.5:7b's maximum 4096/.test(l))).toHaveLength(1);
  });

  it('keeps tool definitions under tool_tokens, dropping the last ones and saying which', async () => {
    const s = await start({ budget: { tool_tokens: 300 } });
    s.double.script({ content: ['Hi.'] });
    const { result } = await ask(s, 'hello');
    const sent = s.double.chats[0]?.tools?.map((t) => t.function.name) ?? [];
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.length).toBeLessThan(6);
    expect(result.tokens.tools).toBeLessThanOrEqual(300);
    expect(s.logs.some((l) => /not offered: .*cancel_timer/.test(l))).toBe(true);
  });

  it('fits a long history by dropping whole oldest rounds; Ollama never has to truncate', async () => {
    const s = await start({ budget: { context_tokens: 1024, reply_tokens: 128 } });
    const conversation = s.iris.conversation();
    for (let i = 0; i < 12; i++) {
      s.double.script(
        { tool_calls: [{ name: 'calculator', arguments: { expression: `${i}+1` } }] },
        { content: [`Round ${i}: ${'the answer is long. '.repeat(8)}`] },
      );
      await say(conversation, `question ${i}: ${'please think about it. '.repeat(6)}`);
    }
    const last = s.double.chats.at(-1);
    expect(s.logs.some((l) => /dropped the \d+ oldest round/.test(l))).toBe(true);
    // The double counts the real template; it had nothing to drop.
    expect(last?.prompt_eval_count).toBeLessThanOrEqual(1024 - 128);
    // Every tool call that was kept still has its result right after it.
    const messages = last?.messages ?? [];
    messages.forEach((m, i) => {
      if (m.tool_calls) expect(messages[i + 1]?.role).toBe('tool');
      if (m.role === 'tool') expect(messages[i - 1]?.tool_calls ?? messages[i - 1]?.role).toBeTruthy();
    });
    expect(messages[0]?.role).toBe('system');
    expect(messages.at(-1)?.content).toMatch(/^Round 11|^11$|12/);
  });

  it('cuts an oversized tool result with a marker', async () => {
    const s = await start({ budget: { tool_result_chars: 200 } });
    s.double.script({ tool_calls: [{ name: 'list_timers', arguments: {} }] }, { content: ['OK.'] });
    const conversation = s.iris.conversation();
    for (let i = 0; i < 8; i++) await s.iris.host.call('set_timer', { duration: `${i + 1}m`, label: `timer number ${i}` });
    await say(conversation, 'what are all my timers called, in detail');
    const sent = toolMessages(s, 1)[0] ?? '';
    expect(sent.length).toBeLessThan(260);
    expect(sent).toMatch(/\[… cut: \d+ more characters\]$/);
  });

  it('estimates the prompt within 10% of what the model counts', async () => {
    const s = await start();
    const conversation = s.iris.conversation();
    const ratios: number[] = [];
    for (const text of ['what is the meaning of life', 'and in one word?', 'tell me about timers and reminders in detail']) {
      s.double.script({ content: ['A short answer. '.repeat(5)] });
      const { result } = await say(conversation, text);
      ratios.push(result.tokens.prompt_estimate / result.tokens.prompt_eval_count);
    }
    for (const ratio of ratios) expect(Math.abs(ratio - 1)).toBeLessThan(0.1);
  });
});

describe('routing, speech and memory', () => {
  it('answers time, arithmetic and timers on the local path without calling the model', async () => {
    const s = await start();
    const { result } = await ask(s, 'what is 17% of 2,340');
    expect(result).toMatchObject({ route: 'local', reply: "That's 397.8." });
    expect(s.double.chats).toEqual([]);
  });

  it('cleans markdown, code, URLs and emoji before anything is spoken', async () => {
    const s = await start();
    s.double.script({ content: ['**Sure!** 🎉 See [the docs](https://example.org/x) for ', 'more.\n\n```sh\nrm -rf /\n```\n', '- Step one\n- Step two'] });
    const { said } = await ask(s, 'how do I do it');
    expect(said).toEqual(['Sure!', 'See the docs for more.', 'Step one', 'Step two']);
    expect(said.join(' ')).not.toMatch(/[*`#\u{1F389}]|https?:|rm -rf/u);
  });

  it('follows a reloaded config (model, temperature) in a conversation that already exists', async () => {
    const s = await start({}, { models: { 'qwen2.5:7b': { capabilities: ['tools'] }, 'llama3.1:8b': { capabilities: ['tools'] } } });
    const conversation = s.iris.conversation();
    s.double.script({ content: ['First.'] }, { content: ['Second.'] });
    await say(conversation, 'hello there');
    const next = `[ollama]\nurl = "${s.double.url}"\nmodel = "llama3.1:8b"\ntemperature = 0.9\n[assistant]\ntimezone = "UTC"\n`;
    await s.iris.reconfigure(parseConfig(next, 'reloaded'));
    await say(conversation, 'and again');
    expect(s.double.chats.map((c) => [c.model, c.options?.temperature])).toEqual([['qwen2.5:7b', 0.3], ['llama3.1:8b', 0.9]]);
  });

  it('remembers the conversation for follow-ups, and forgets it after the idle time', async () => {
    let now = Date.UTC(2026, 10, 22, 12);
    setup = await withDouble({ assistant: { forget_after_s: 60 } }, { now: () => now });
    const s = setup;
    const conversation = s.iris.conversation();
    s.double.script(
      { tool_calls: [{ name: 'get_current_time', arguments: { timezone: 'Tokyo' } }] },
      { content: ['It is evening in Tokyo.'] },
      { tool_calls: [{ name: 'get_current_time', arguments: { timezone: 'Paris' } }] },
      { content: ['It is noon in Paris.'] },
      { content: ['Paris, but which question?'] },
    );
    await say(conversation, 'is it late in tokyo?');
    now += 30_000;
    await say(conversation, 'and in Paris?');
    const followUp = s.double.chats[2]?.messages.map((m) => m.content) ?? [];
    expect(followUp).toContain('is it late in tokyo?');
    expect(followUp).toContain('It is evening in Tokyo.');
    now += 61_000;
    await say(conversation, 'and in Paris?');
    const fresh = s.double.chats[4]?.messages.map((m) => m.role) ?? [];
    expect(fresh).toEqual(['system', 'user']);
  });
});

describe('warming the model, and confirmations by voice', () => {
  it('loads the model on request (an empty /api/chat with keep_alive) and reports it loaded', async () => {
    const s = await start({ ollama: { keep_alive: '45m' } });
    const conversation = s.iris.conversation();
    expect(await conversation.modelLoaded()).toBe(false);
    conversation.warm();
    conversation.warm(); // one load in flight is enough
    await expect.poll(() => s.double.loads.length).toBe(1);
    expect(s.double.loads[0]).toEqual({ model: 'qwen2.5:7b', keep_alive: '45m' });
    expect(s.double.chats).toEqual([]); // no turn used up
    await expect.poll(() => conversation.modelLoaded()).toBe(true);
  });

  it('says it cannot tell when Ollama does not answer', async () => {
    const s = await start({}, { url: `http://127.0.0.1:${await closedPort()}` });
    const conversation = s.iris.conversation();
    conversation.warm(); // logs, never throws
    expect(await conversation.modelLoaded()).toBeNull();
  });

  it('asks before cancelling all timers by voice; a spoken yes must be sure; typed text acts at once', async () => {
    const s = await start();
    const conversation = s.iris.conversation();
    const spoken = (text: string, confidence: number) => conversation.turn(text, undefined, { confidence }).result;
    await ask(s, 'set a tea timer for 3 minutes');
    await ask(s, 'set a pasta timer for 8 minutes');
    expect(await spoken('cancel all timers', 0.9)).toMatchObject({ reply: 'Cancel all 2 timers and reminders? Say yes or no.', tool_calls: [] });
    // "yes" heard, but not surely enough: asked again, nothing cancelled.
    expect(await spoken('yes', 0.7)).toMatchObject({ reply: 'Sorry, was that a yes? Please say yes or no.', tool_calls: [] });
    expect(await spoken('yes', 0.95)).toMatchObject({ reply: 'Cancelled the 2 timers and reminders.' });
    // Cancelling one of several by voice is confirmed too; "no" keeps it.
    await ask(s, 'set a tea timer for 3 minutes');
    await ask(s, 'set an egg timer for 6 minutes');
    expect((await spoken('cancel the tea timer', 0.9)).reply).toBe('Cancel the tea timer? You have 2. Say yes or no.');
    expect((await spoken('no', 0.9)).reply).toBe("OK, I won't.");
    expect((await ask(s, 'what timers do I have')).result.reply).toMatch(/^You have 2:/);
    // Anything else drops the question and is a request of its own.
    expect((await spoken('cancel all timers', 0.9)).reply).toMatch(/^Cancel all 2/);
    expect((await spoken('what is 2 plus 2', 0.9)).reply).toBe("That's 4.");
    expect((await spoken('yes', 0.95)).route).not.toBe('local');
    expect((await ask(s, 'what timers do I have')).result.reply).toMatch(/^You have 2:/);
    // Typed, the same request acts at once.
    expect((await ask(s, 'cancel all timers')).result.reply).toBe('Cancelled the 2 timers and reminders.');
  });

  it('asks about words heard unsurely ("Did you say …?"): a sure yes acts on them, a no or anything else does not', async () => {
    const s = await start();
    const conversation = s.iris.conversation();
    const unsure = (text: string) => conversation.turn(text, undefined, { confidence: 0.4, unsure: true }).result;
    const spoken = (text: string, confidence = 0.95) => conversation.turn(text, undefined, { confidence }).result;
    const timers = async () => (await ask(s, 'what timers do I have')).result.reply;
    expect(await unsure('set a timer for ten minutes')).toMatchObject({ reply: 'Did you say: set a timer for ten minutes?', route: 'local', tool_calls: [] });
    expect(await timers()).toMatch(/^You have no/);
    expect(await unsure('set a timer for ten minutes')).toMatchObject({ reply: 'Did you say: set a timer for ten minutes?' });
    // A yes that might be noise is asked again; a sure one acts on the words.
    expect(await spoken('yes', 0.7)).toMatchObject({ reply: 'Sorry, was that a yes? Please say yes or no.', tool_calls: [] });
    expect(await spoken('yes')).toMatchObject({ route: 'local', tool_calls: [expect.objectContaining({ name: 'set_timer' })] });
    expect(await timers()).toMatch(/^You have one/);
    // No: nothing, and the question is gone (a later yes acts on nothing).
    expect(await unsure('cancel the timer')).toMatchObject({ reply: 'Did you say: cancel the timer?' });
    expect(await spoken('no')).toMatchObject({ reply: 'OK. Please say it again.', tool_calls: [] });
    expect((await spoken('yes')).tool_calls).toEqual([]);
    // Anything else is a request of its own and drops the question.
    expect(await unsure('cancel the timer')).toMatchObject({ reply: 'Did you say: cancel the timer?' });
    expect(await spoken('what is 2 plus 2')).toMatchObject({ reply: "That's 4." });
    expect((await spoken('yes')).tool_calls).toEqual([]);
    expect(await timers()).toMatch(/^You have one/);
    // An unsure yes or no is never asked about, and an open question is not asked over.
    expect(await unsure('yes')).toMatchObject({ reply: "Sorry, I didn't catch that." });
    expect(await unsure('and then the quick brown fox jumped over the lazy dog again and again and again and again')).toMatchObject({ reply: "Sorry, I didn't catch that." });
    await ask(s, 'set a tea timer for 3 minutes');
    expect(await spoken('cancel all timers', 0.9)).toMatchObject({ reply: 'Cancel all 2 timers and reminders? Say yes or no.' });
    expect(await unsure('what time is it')).toMatchObject({ reply: "Sorry, I didn't catch that.", tool_calls: [] });
    expect(await spoken('yes')).toMatchObject({ reply: 'Cancelled the 2 timers and reminders.' });
  });

  it('a question about unsure words expires after confirm_timeout_s', async () => {
    let now = 1_000_000;
    const s = await start({ assistant: { confirm_timeout_s: 30 } }, { now: () => now });
    const conversation = s.iris.conversation();
    expect((await conversation.turn('set a timer for ten minutes', undefined, { confidence: 0.4, unsure: true }).result).reply).toBe('Did you say: set a timer for ten minutes?');
    now += 31_000;
    expect(await conversation.turn('yes', undefined, { confidence: 0.95 }).result).toMatchObject({ reply: 'I asked too long ago. Please say it again.', tool_calls: [] });
  });

  it('takes the answer to "which timer?": a named choice cancels that one, anything else is a request of its own', async () => {
    const s = await start();
    const conversation = s.iris.conversation();
    const spoken = (text: string) => conversation.turn(text, undefined, { confidence: 0.9 }).result;
    const typed = (text: string) => conversation.turn(text).result;
    for (const timer of ['tea', 'pasta', 'egg']) await typed(`set a ${timer} timer for 5 minutes`);
    expect((await typed('cancel the timer')).reply).toBe('The tea, the pasta or the egg timer?');
    expect((await typed('the pasta one')).reply).toBe('Cancelled the timer "pasta".');
    expect((await typed('what timers do I have')).reply).toMatch(/^You have 2: a tea timer .*; an egg timer/);
    // A name that is not among the choices, or no name, cancels nothing: the question is dropped.
    expect((await typed('cancel the timer')).reply).toBe('The tea or the egg timer?');
    expect((await typed('the rice')).route).not.toBe('local');
    expect((await typed('the tea')).route).not.toBe('local');
    expect((await typed('what timers do I have')).reply).toMatch(/^You have 2:/);
    // Heard, the named choice is confirmed as any spoken cancel of one of several.
    expect((await spoken('cancel the timer')).reply).toBe('The tea or the egg timer?');
    expect((await spoken('the first one')).reply).toBe('Cancel the tea timer? You have 2. Say yes or no.');
    expect((await spoken('yes')).reply).toBe('Cancelled the timer "tea".');
    expect((await typed('what timers do I have')).reply).toMatch(/^You have one: an egg timer/);
  });
});

describe('failures said plainly', () => {
  it('Ollama not running: a spoken reason at once, and the local path still works', async () => {
    const s = await start({}, { url: `http://127.0.0.1:${await closedPort()}` });
    const started = performance.now();
    const { said, result } = await ask(s, 'write a haiku');
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(result.route).toBe('fallback');
    expect(result.error?.code).toBe('unreachable');
    expect(said).toEqual([expect.stringMatching(/^I can't reach the language model at http:\/\/127\.0\.0\.1:\d+\. I can still tell the time/)]);
    expect((await ask(s, 'what time is it in tokyo')).result.route).toBe('local');
  });

  it('model not pulled: says which model and the ollama pull command', async () => {
    const s = await start({ ollama: { model: 'llama3.2:3b' } });
    const { said, result } = await ask(s, 'hello');
    expect(said).toEqual(['The model llama3.2:3b is not installed. Run: ollama pull llama3.2:3b.']);
    expect(result.error).toMatchObject({ code: 'model_not_found' });
  });

  it('model too slow: gives up at timeout_s and says so', async () => {
    const s = await start({ ollama: { timeout_s: 0.3 } });
    s.double.script({ content: ['Too late.'], firstTokenDelayMs: 5_000 });
    const started = performance.now();
    const { said, result } = await ask(s, 'think hard');
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(said).toEqual(['The model is taking too long to answer. Please try again.']);
    expect(result.error?.code).toBe('timeout');
  });

  it.each([
    ['a mid-stream error line', { midStreamError: 'model runner crashed' }],
    ['a stream with no done', { truncate: true }],
    ['a connection reset', { reset: true }],
  ])('stream broken by %s: keeps what was said and adds why', async (_kind, fault) => {
    const s = await start();
    s.double.script({ content: ['First sentence. ', 'Second half'], ...fault });
    const { said, result } = await ask(s, 'tell me a story');
    expect(said).toEqual(['First sentence.', "The model's answer broke off. Please try again."]);
    expect(result.error?.code).toBe('stream_broken');
  });

  it('answers from the tool results it got when the follow-up dies', async () => {
    const s = await start();
    s.double.script({ tool_calls: [{ name: 'calculator', arguments: { expression: '17% of 2340' } }] }, { status: 500, error: 'llama runner process has terminated' });
    const { said } = await ask(s, 'seventeen percent of that number I told you');
    expect(said).toEqual(["The model didn't finish, but here is what I found: 397.8"]);
  });

  it('sends once more when a reused connection was closed under it, and only once', async () => {
    const s = await start();
    s.double.script({ drop: true }, { content: ['Still here.'] }, { drop: true }, { drop: true });
    expect((await ask(s, 'are you there')).said).toEqual(['Still here.']);
    const { result } = await ask(s, 'and now');
    expect(result.error?.code).toBe('unreachable');
    expect(s.double.pending).toBe(0);
  });

  it('busy server (503): asks to try again', async () => {
    const s = await start();
    s.double.script({ status: 503, error: 'server busy, please try again.  maximum pending requests exceeded' });
    expect((await ask(s, 'hi')).said).toEqual(['The model is busy right now. Please try again in a moment.']);
  });
});

describe('cancellation', () => {
  it('stops the generation at once when the turn is aborted', async () => {
    const s = await start();
    let release: () => void = () => undefined;
    const pieces = Array.from({ length: 10 }, (_v, i) => `Sentence ${i + 1}. `);
    s.double.script({ content: ['One. ', ...pieces], hold: new Promise((resolve) => (release = resolve)), pieceDelayMs: 200 });
    const controller = new AbortController();
    const turn = s.iris.conversation().turn('count slowly', controller.signal);
    const iterator = turn.sentences[Symbol.asyncIterator]();
    release();
    expect((await iterator.next()).value).toBe('One.');
    const aborted = performance.now();
    controller.abort(new Error('barge-in'));
    await expect(turn.result).rejects.toThrow('barge-in');
    // The rest of the stream would take 2 s; the turn ends long before (200 ms on a quiet machine).
    expect(performance.now() - aborted).toBeLessThan(1_000);
    await expect.poll(() => s.double.cancelled).toBe(1);
  });
});
