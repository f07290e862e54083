// A server's question during a tool call (MCP elicitation) is asked of the person and the next
// utterance answers it: typed or spoken, fitted to the form, defaults applied, asked again once,
// cancelled, declined, timed out; a link is said and declined. A real SDK server (the fake's
// `elicit` mode) and the Ollama double.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Conversation, TurnResult } from '../src/conversation/engine.js';
import { stallProbe, withDouble, type Sections, type Setup } from './helpers/conversation.js';
import { EVERYTHING, fake, serversToml, stdio, type ServerSpec } from './helpers/mcp.js';

let setup: Setup | undefined;
/** One IRIS and server for the tests that need no config of their own (each server start costs ~1.5 s). */
let shared: Setup | undefined;
const stop = async (s: Setup | undefined) => {
  await s?.iris.stop();
  await s?.double.close();
};
afterEach(async () => {
  await stop(setup);
  setup = undefined;
});
afterAll(() => stop(shared));

async function open(server: Partial<ServerSpec>, sections: Sections): Promise<Setup> {
  const s = await withDouble(sections, { extraToml: serversToml({ desk: { ...fake('elicit'), confirm: 'never', ...server } }) });
  await s.iris.init();
  return s;
}
/** The desk server (the fake's `elicit` mode), with a config of the test's own. */
const start = async (server: Partial<ServerSpec> = {}, sections: Sections = {}): Promise<Setup> => (setup = await open(server, sections));
/** The desk server as configured by default, shared. */
const desk = async (): Promise<Setup> => (shared ??= await open({}, {}));

async function say(conversation: Conversation, text: string, confidence?: number): Promise<TurnResult & { said: string[] }> {
  const turn = conversation.turn(text, undefined, confidence === undefined ? {} : { confidence });
  const said: string[] = [];
  for await (const sentence of turn.sentences) said.push(sentence);
  return { ...(await turn.result), said };
}

const call = (tool: string) => ({ tool_calls: [{ name: 'execute_tool', arguments: { tool_path: `desk.${tool}`, arguments: {} } }] });
/** The tool results the model was sent in its last chat. */
const toolResults = (s: Setup) => s.double.chats.at(-1)?.messages.filter((m) => m.role === 'tool').map((m) => m.content) ?? [];
/** What the server got, as the tool result the model was last sent says. */
const got = (s: Setup, tool: string): unknown => JSON.parse(toolResults(s).at(-1)?.replace(`${tool} got `, '') ?? 'null');

const BOOK_QUESTION = 'The desk server asks: How many people are coming? tS. Party size? Say a whole number.';

describe('a form question during a tool call', () => {
  it('is asked as plain text, answered by the next typed line, defaults filled in; the model goes on with the result', async () => {
    const s = await desk();
    s.double.script(call('book_table'), { content: ['Your table for four is booked.'] });
    const conversation = s.iris.conversation();
    const chats = s.double.chats.length;
    const asked = await say(conversation, 'book me a table');
    // The server's [[phonemes]] and control character are gone; the question is the reply.
    expect(asked.said).toEqual([BOOK_QUESTION]);
    expect(asked.question).toEqual({ server: 'desk', expires_at: expect.any(String) });
    expect(s.double.chats).toHaveLength(chats + 1); // the model waits for the answer

    const answered = await say(conversation, '4');
    expect(answered.said).toEqual(['Your table for four is booked.']);
    expect(got(s, 'book_table')).toEqual({ action: 'accept', content: { party: 4, seating: 'inside', name: 'Guest' } });
    expect(toolResults(s).join()).not.toMatch(/Still running/); // the placeholder was replaced
    expect(answered.tool_calls).toEqual([expect.objectContaining({ name: 'execute_tool', result: expect.objectContaining({ isError: false }) })]);
    expect(answered.question).toBeUndefined();
  });

  it('takes a spoken answer with a number word', async () => {
    const s = await desk();
    s.double.script(call('book_table'), { content: ['Booked.'] });
    const conversation = s.iris.conversation();
    await say(conversation, 'book me a table', 0.9);
    await say(conversation, 'Um, eleven of us.', 0.9);
    expect(got(s, 'book_table')).toMatchObject({ action: 'accept', content: { party: 11 } });
  });

  it('asks again once when the reply does not fit, then declines', async () => {
    const s = await desk();
    s.double.script(call('book_table'), { content: ['No booking then.'] });
    const conversation = s.iris.conversation();
    await say(conversation, 'book me a table');
    expect((await say(conversation, 'forty')).said).toEqual(['Sorry, "40" won\'t do: it must be <= 12. Party size? Say a whole number.']);
    const second = await say(conversation, 'quite a crowd');
    expect(second.said).toEqual(['I still couldn\'t use that, so I told the desk server no.', 'No booking then.']);
    expect(got(s, 'book_table')).toEqual({ action: 'decline' });
  });

  it('"never mind" and "cancel" cancel; "no" and "I\'d rather not" decline', async () => {
    const s = await desk();
    const replies: [string, string][] = [['never mind', 'cancel'], ['cancel', 'cancel'], ['no', 'decline'], ["I'd rather not", 'decline']];
    const conversation = s.iris.conversation();
    for (const [words, action] of replies) {
      s.double.script(call('book_table'), { content: ['OK.'] });
      await say(conversation, 'book me a table');
      await say(conversation, words);
      expect(got(s, 'book_table'), words).toEqual({ action });
    }
  });

  it('asks a form field by field: titled choices, then yes or no for a boolean', async () => {
    const s = await desk();
    s.double.script(call('sign_up'), { content: ['You are signed up.'] });
    const conversation = s.iris.conversation();
    expect((await say(conversation, 'sign me up')).said).toEqual(['The desk server asks: A few details, please. First, Plan? Say Basic or Professional.']);
    expect((await say(conversation, 'the professional one')).said).toEqual(['Newsletter? Say yes or no.']);
    await say(conversation, 'no');
    expect(got(s, 'sign_up')).toEqual({ action: 'accept', content: { plan: 'pro', newsletter: false } });
  });

  it('with nothing to fill in, a yes sends the defaults', async () => {
    const s = await desk();
    s.double.script(call('send_report'), { content: ['Sent.'] });
    const conversation = s.iris.conversation();
    expect((await say(conversation, 'send the report')).said).toEqual(['The desk server asks: Send the weekly report? It would get Copies 2, Urgent no. Say yes to send that, or no.']);
    await say(conversation, 'yes');
    expect(got(s, 'send_report')).toEqual({ action: 'accept', content: { copies: 2, urgent: false } });
  });

  it('after a confirmed call too: the yes runs it, its question follows', async () => {
    const s = await start({ confirm: 'always' });
    s.double.script(call('book_table'), { content: ['Booked for two.'] });
    const conversation = s.iris.conversation();
    expect((await say(conversation, 'book me a table')).confirm).toBeDefined();
    expect((await say(conversation, 'yes')).said).toEqual([BOOK_QUESTION]);
    expect((await say(conversation, 'two')).said).toEqual(['Booked for two.']);
    expect(got(s, 'book_table')).toMatchObject({ action: 'accept', content: { party: 2 } });
  });

  it('an unanswered question is declined after confirm_timeout_s, which does not count against timeout_s; the next words are a request of their own', async () => {
    const s = await start({ timeout_s: 0.2 }, { assistant: { confirm_timeout_s: 0.5 } });
    s.double.script(call('book_table'));
    const conversation = s.iris.conversation();
    await say(conversation, 'book me a table');
    await expect.poll(() => s.logs.find((l) => /book_table answer:/.test(l)), { timeout: 5_000 }).toMatch(/book_table answer: \{"action":"decline"\}/);
    expect(s.logs).toContain('info test:conversation: desk: no answer to its question within 0.5 s; declined');
    // The call waited 0.5 s for the person with a 0.2 s timeout, and still ended well.
    await expect.poll(() => s.iris.mcp.servers.status()[0]?.health.success_rate).toBe(1);
    expect(s.iris.mcp.servers.status()[0]?.health.errors).toBe(0);
    const next = await say(conversation, 'what is 6 times 7');
    expect(next.said).toEqual(["That's 42."]);
    expect(next.route).toBe('local');
  });
});

describe('a form too large to ask', () => {
  it('is declined before it is compiled, said and logged, and the daemon\'s thread is not held', async () => {
    const s = await desk();
    s.double.script(call('pick_anything'), { content: ['Nothing picked.'] });
    // The thread's longest stall while the form arrives and is refused (30,000 choices took 4 s to compile).
    const probe = stallProbe();
    let stalledMs: number;
    try {
      const result = await say(s.iris.conversation(), 'pick something');
      expect(result.said).toEqual(['The desk server sent a form too large to ask here (30000 choices for "choice"; at most 500), so I declined.', 'Nothing picked.']);
    } finally {
      stalledMs = probe.stop();
    }
    expect(got(s, 'pick_anything')).toEqual({ action: 'decline' });
    expect(s.logs).toContain('info test:conversation: desk: a form too large (30000 choices for "choice"; at most 500); declined');
    expect(stalledMs).toBeLessThan(500);
  });
});

describe('a real server\'s question (server-everything)', () => {
  it('trigger-elicitation-request: the one required field is asked, the defaults of the rest are sent', async () => {
    setup = await withDouble({}, { extraToml: serversToml({ everything: { ...stdio(EVERYTHING, 'stdio'), confirm: 'never' } }) });
    await setup.iris.init();
    const s = setup;
    s.double.script({ tool_calls: [{ name: 'execute_tool', arguments: { tool_path: 'everything.trigger-elicitation-request', arguments: {} } }] }, { content: ['Thanks, Ada.'] });
    const conversation = s.iris.conversation();
    expect((await say(conversation, 'fill in the form')).said).toEqual(['The everything server asks: Please provide inputs for the following fields: String (Your full, legal name)?']);
    expect((await say(conversation, 'Ada Lovelace.', 0.9)).said).toEqual(['Thanks, Ada.']);
    const result = toolResults(s).at(-1) ?? '';
    expect(result).toMatch(/User provided the requested information/);
    expect(result).toMatch(/- Name: Ada Lovelace\n/); // the recogniser's full stop is not part of a name
    expect(result).toMatch(/- Favorite Integer: 42\n/); // defaults, sent unasked
    expect(result).toMatch(/- Favorite Number: 3.14\n/);
  });
});

describe('a link request', () => {
  it('is said plainly and declined, never opened; the link itself is neither said nor logged', async () => {
    const s = await desk();
    s.double.script(call('sign_in'), { content: ['You need to sign in on the website first.'] });
    const result = await say(s.iris.conversation(), 'sign me in');
    expect(result.said).toEqual([
      "The desk server wants you to open a link on login.example.com: Please sign in to your account. I can't open links, so I declined.",
      'You need to sign in on the website first.',
    ]);
    expect(got(s, 'sign_in')).toEqual({ action: 'decline' });
    expect([...result.said, ...s.logs].join('\n')).not.toContain('s3cret');
  });
});
