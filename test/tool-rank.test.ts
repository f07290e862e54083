// The right remote tools in the first model request: ranking every remote tool against the
// person's words (home catalogue, test/fixtures/home-catalogue.ts), the tools shown in full
// beside the meta-tools, and the meta-tool's query.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { toolsTokens } from '../src/budget/fit.js';
import { loadTokenizer } from '../src/budget/tokenizer.js';
import { resultText } from '../src/toolhost/api.js';
import { FULL_SCHEMAS, fullDefinition, shownDefinitions } from '../src/toolhost/mcp/proxy.js';
import { homeWords } from '../src/toolhost/mcp/home-words.js';
import { ToolIndex, TUNING, type Thesaurus } from '../src/toolhost/mcp/rank.js';
import { compactThesaurus, ThesaurusFile } from '../src/toolhost/mcp/thesaurus.js';
import { compactWordVectors, openWordVectors, WordVectorFile } from '../src/toolhost/mcp/word-vectors.js';
import { iris } from './helpers/cli.js';
import { sayAll, withDouble, type Setup } from './helpers/conversation.js';
import { serversToml, withServers, type McpSetup, type ServerSpec } from './helpers/mcp.js';
import { tempDir } from './helpers/tmp.js';
import { HOME_SERVERS } from './fixtures/home-catalogue.js';

const HOME = fileURLToPath(new URL('fixtures/home-mcp-server.ts', import.meta.url));
/** Lights and heating act without a yes in these tests (the confirmation policy has its own). */
const home = (name: string, ...flags: string[]): ServerSpec => ({ command: process.execPath, args: ['--import', 'tsx', HOME, name, ...flags], confirm: 'never' });

let setup: Setup | undefined;
const opened: McpSetup[] = [];
afterEach(async () => {
  await setup?.iris.stop();
  await setup?.double.close();
  setup = undefined;
  await Promise.all(opened.splice(0).map((s) => s.iris.stop()));
});

/** IRIS with these home servers, without the model (the MCP side only). */
async function servers(names: string[], extra = '', stateDir = tempDir()): Promise<McpSetup> {
  const s = withServers(Object.fromEntries(names.map((n) => [n, home(n)])), `[mcp]\nconnect_timeout_s = 30\npreload = false\n${extra}`, stateDir);
  opened.push(s);
  await s.iris.init();
  return s;
}

const running = (s: McpSetup) => s.iris.mcp.servers.status().filter((x) => x.pid !== undefined).map((x) => x.name);

async function start(names: string[], tools: Record<string, number> = {}): Promise<Setup> {
  const servers = Object.fromEntries(names.map((n) => [n, home(n)]));
  setup = await withDouble({ tools, mcp: { connect_timeout_s: 30, preload: false } }, { extraToml: serversToml(servers) });
  await setup.iris.init();
  await setup.iris.mcp.servers.startAll(); // their tool lists known (cached in the state dir after this)
  return setup;
}

const say = sayAll;

/** Requests of the dev sets that share no word with their tool's text (after stemming and stop words). */
const PARAPHRASES: [string, string][] = [
  ["I've had my antibiotics", 'medications.log_dose'],
  ['did the cat eat this morning', 'pets.get_feeding_log'],
  ["what's Peter's mobile", 'contacts.find_contact'],
  ['how stuffy and damp is the cellar', 'climate.get_temperature'],
  ['what can I make for dinner with leftover potatoes', 'recipes.find_recipe'],
];

const offered = (s: Setup, chat: number) => s.double.chats[chat]?.tools?.map((t) => t.function.name) ?? [];

describe('ranking remote tools against the words', () => {
  const index = new ToolIndex(HOME_SERVERS.map((s) => ({ name: s.name, tools: s.tools })));

  it('finds the tool a request is about among 1,000, best first, with scores', () => {
    expect(index.size).toBe(1000);
    const ranked = index.rank('dim the bedroom lights to thirty percent', 5);
    expect(ranked[0]?.path).toBe('lights.set_brightness');
    expect(ranked.map((r) => r.score)).toEqual([...ranked.map((r) => r.score)].sort((a, b) => b - a));
    expect(index.rank('is the front door locked', 8).map((r) => r.path)).toContain('locks.get_lock_state');
    expect(index.rank('who is on the wifi right now', 8).map((r) => r.path)).toContain('network.get_connected_devices'); // "Wi-Fi" is "wifi"
  });

  const paths = (words: string, limit = 12) => index.rank(words, limit).map((r) => r.path);

  it('reads "what\'s" as "what", not as a word "s" matching every possessive', () => {
    const pets = new ToolIndex([{ name: 'pets', tools: [{ name: 'feed_pet', description: 'Feed the pet.', inputSchema: { type: 'object', properties: { pet: { type: 'string', description: "The pet's name." } } } }] }]);
    expect(pets.rank("what's up", 8)).toEqual([]);
    expect(pets.rank("feed the cat, it's hungry", 8).map((r) => r.path)).toEqual(['pets.feed_pet']);
  });

  it('keeps "news" apart from "new" (Porter2): news words find the news server, not every create_ tool', () => {
    const found = paths("what's in the news today");
    expect(found).toContain('news.get_headlines');
    expect(found.filter((p) => !p.startsWith('news.') && /\.create_/.test(p))).toEqual([]);
    expect(found.filter((p) => p.startsWith('news.')).length).toBeGreaterThan(found.length / 2);
  });

  it('adds the words tools use for a request\'s words: warm → temperature, pill → medication, a language → translate', () => {
    expect(paths('how warm is it in the kids room')).toContain('climate.get_temperature');
    expect(paths('I took my blood pressure pill')).toContain('medications.log_dose');
    expect(paths('how do you say thank you in Japanese')).toContain('language.translate_text');
    expect(paths('what is goodbye in Portuguese')).toContain('language.translate_text'); // any language ICU names
    expect(paths('text my brother that dinner is ready')).toContain('messages.send_message');
  });

  it('ends the list at the first clear drop in score: a clear winner alone with its runner-up, a flat run whole', () => {
    const clear = index.rank('close the blinds in the office', 32);
    expect(clear.map((r) => r.path)).toEqual(['blinds.close_blinds', 'blinds.set_blind_position']);
    expect(index.rank('close the blinds in the office', 32, { atGap: false }).length).toBeGreaterThan(clear.length + 2); // a search's listing
    const flat = index.rank('news', 32);
    expect(flat.length).toBeGreaterThanOrEqual(7); // the news server's tools, two of each family (get_/delete_news_source …)
    expect(flat.every((r) => r.path.startsWith('news.'))).toBe(true);
  });

  it('finds nothing for words no tool has, and nothing for no words', () => {
    expect(index.rank('the of and', 8)).toEqual([]);
    expect(index.rank('', 8)).toEqual([]);
    expect(index.rank('lights', 0)).toEqual([]);
    expect(index.rank('um please', 8)).toEqual([]); // fillers only
  });

  it('shows at most two tools of one family (get_, create_, update_, delete_, list_ the same thing): the others a browse away', () => {
    const family = (ranked: { path: string }[]) => ranked.filter((r) => /^pets\.[a-z]+_litter_box(es)?$/.test(r.path)).length;
    const all = new ToolIndex(HOME_SERVERS.map((s) => ({ name: s.name, tools: s.tools })), undefined, { ...TUNING, perFamily: 0 });
    expect(family(all.rank('put the box on', 16))).toBeGreaterThan(2);
    const ranked = index.rank('put the box on', 16);
    expect(family(ranked)).toBe(2);
    expect(ranked.length).toBeGreaterThan(2); // their places go to other tools
    expect(index.rank('lock the back door', 16).map((r) => r.path)).toEqual(expect.arrayContaining(['locks.lock_door', 'locks.unlock_door'])); // one family, both shown
  });

  it("weighs a question's tools that change things, and a command's tools that only read, less (readOnlyHint)", () => {
    const order = (words: string) => index.rank(words, 32, { atGap: false });
    const asked = order('is the front door locked');
    const at = (ranked: typeof asked, path: string) => ranked.findIndex((r) => r.path === path);
    expect(at(asked, 'locks.get_lock_state')).toBeGreaterThanOrEqual(0);
    expect(at(asked, 'locks.get_lock_state')).toBeLessThan(at(asked, 'locks.lock_door'));
    const lock = asked.find((r) => r.path === 'locks.lock_door');
    expect(lock?.kind).toBe(0.7);
    expect(lock?.score).toBeCloseTo(0.7 * ((lock?.words ?? 0) + (lock?.meaning ?? 0)), 2);
    const told = order('lock the front door');
    expect(told[0]).toMatchObject({ path: 'locks.lock_door', kind: 1 });
    expect(told.find((r) => r.path === 'locks.get_lock_state')).toMatchObject({ kind: 0.8 });
    const byKindAlone = new ToolIndex(HOME_SERVERS.map((s) => ({ name: s.name, tools: s.tools })), undefined, { ...TUNING, recordPrior: 0 });
    expect(byKindAlone.rank('track my parcel', 32, { atGap: false }).every((r) => r.kind === 1)).toBe(true); // asks to be told: nothing weighed less
    const off = new ToolIndex(HOME_SERVERS.map((s) => ({ name: s.name, tools: s.tools })), undefined, { ...TUNING, questionPrior: 0, actionPrior: 0 });
    expect(off.rank('is the front door locked', 1)[0]?.path).toBe('locks.lock_door'); // what the words alone say
  });
});

describe('the home\'s own words and its records', () => {
  const catalogue = HOME_SERVERS.map((s) => ({ name: s.name, tools: s.tools }));
  const index = new ToolIndex(catalogue);
  const without = new ToolIndex(catalogue, undefined, { ...TUNING, homeWeight: 0 });
  const paths = (i: ToolIndex, words: string) => i.rank(words, 12).map((r) => r.path);

  it('reads product names, slang and phrasal verbs as the words tools use: roomba, the telly, call off, out of', () => {
    expect(homeWords('send the roomba back to charge')).toBe('vacuum');
    expect(homeWords('the dog walker is here let her in the front')).toContain('unlock'); // "let … in", words between
    expect(homeWords("we're out of coffee")).toContain('shopping');
    expect(homeWords('the lights')).toBe('');
    for (const [words, tool] of [['call off the dentist on friday', 'calendar.cancel_event'], ['carry on with my audible book', 'audiobooks.resume_audiobook'], ['were out of coffee', 'shopping.add_to_shopping_list'], ['telly on please', 'tv.turn_on_tv']] as const) {
      expect(paths(without, words), words).not.toContain(tool);
      expect(paths(index, words), words).toContain(tool);
    }
    expect(index.rank('send the roomba back to charge', 1)[0]?.path).toBe('vacuum.return_to_dock');
  });

  it('offers the tools that answer questions to a question no tool has the words for', () => {
    expect(paths(index, 'how deep is the mariana trench')).toEqual(['knowledge.answer_question']);
    expect(paths(new ToolIndex(catalogue, undefined, { ...TUNING, askedWeight: 0 }), 'how deep is the mariana trench')).toEqual([]);
    expect(paths(index, 'the mariana trench')).toEqual([]); // not asked
  });

  it("weighs a record family's tools (a thing kept by get_/list_/create_/update_/delete_, three or more) less than a server's own actions", () => {
    const vectors = openWordVectors(); // as the daemon ranks
    const ranked = new ToolIndex(catalogue, vectors).rank('go to channel five', 32, { atGap: false });
    expect(ranked[0]).toMatchObject({ path: 'tv.change_channel', kind: 1 });
    const record = ranked.find((r) => r.path === 'tv.create_tv_channel');
    expect(record?.kind).toBe(0.7);
    expect(record?.score).toBeCloseTo(0.7 * ((record?.words ?? 0) + (record?.meaning ?? 0)), 2);
    const flat = new ToolIndex(catalogue, vectors, { ...TUNING, recordPrior: 0 });
    expect(flat.rank('go to channel five', 1)[0]?.path).toBe('tv.create_tv_channel'); // what the words alone say
  });
});

describe('ranking by meaning: word vectors', () => {
  it('compacts the vectors package\'s JSON: plain lower-case words by frequency, unit vectors, found by binary search', () => {
    const source = { precision: 6, l2NormIndex: 3, wordIndex: 4, dimensions: 3, unkVector: [0, 0, 0, 0, 0], size: 5,
      words: ['the', 'Cat', 'dog', 'a-b', 'zebra'],
      vectors: { the: [2, 0, 0, 2, 0], Cat: [0, 1, 0, 1, 1], dog: [0, 3, 4, 5, 2], 'a-b': [1, 1, 1, 1, 3], zebra: [0, 0, -1, 1, 4] } };
    const file = join(tempDir(), 'vectors.bin');
    writeFileSync(file, compactWordVectors(Buffer.from(JSON.stringify(source)), 2)); // the 2 most frequent plain words: the, dog
    const vectors = new WordVectorFile(file);
    try {
      expect([vectors.size, vectors.dimensions]).toEqual([2, 3]);
      expect([...(vectors.vector('dog') ?? [])].map((v) => Math.round(v * 100) / 100)).toEqual([0, 0.6, 0.8]);
      expect(vectors.rank('dog')).toBe(2);
      expect([...(vectors.vector('the') ?? [])]).toEqual([1, 0, 0]);
      for (const unknown of ['cat', 'Cat', 'a-b', 'zebra', 'do', 'dogs', '']) expect(vectors.vector(unknown)).toBeUndefined();
    } finally {
      vectors.close();
    }
  });

  const vectors = openWordVectors();
  const catalogue = HOME_SERVERS.map((s) => ({ name: s.name, description: s.about, tools: s.tools }));
  const withMeaning = new ToolIndex(catalogue, vectors);
  const wordsAlone = new ToolIndex(catalogue);
  const found = (index: ToolIndex, words: string) => index.rank(words, 12).map((r) => r.path);

  it('finds the tool of a request that shares no word with it, which shared words alone miss', () => {
    expect(vectors?.size).toBe(100_000);
    for (const [words, tool] of PARAPHRASES) {
      expect(found(wordsAlone, words), words).not.toContain(tool);
      expect(found(withMeaning, words), words).toContain(tool);
    }
  });

  it('reads words as a speech recogniser writes them: "whats" as "what\'s", fillers dropped', () => {
    const scored = (index: ToolIndex, words: string) => index.rank(words, 8).map((r) => `${r.path} ${r.score}`);
    expect(scored(withMeaning, 'um whats the weather like please')).toEqual(scored(withMeaning, "what's the weather like"));
    expect(scored(withMeaning, 'im cold')).toEqual(scored(withMeaning, "I'm cold"));
    const literal = new ToolIndex(catalogue, vectors, { ...TUNING, spoken: false });
    expect(scored(literal, 'um whats the weather like please')).not.toEqual(scored(literal, "what's the weather like"));
  });

  it('scores a tool as its shared words plus its meaning, and keeps what shared words find', () => {
    const [best] = withMeaning.rank('dim the bedroom lights to thirty percent', 12);
    expect(best).toMatchObject({ path: 'lights.set_brightness', words: 1 });
    expect(best?.meaning).toBeGreaterThan(0);
    expect(best?.score).toBeCloseTo((best?.words ?? 0) + (best?.meaning ?? 0), 2);
    expect(withMeaning.rank('', 8)).toEqual([]);
    expect(withMeaning.rank('zzzz qqqq', 8)).toEqual([]); // no word known: no meaning either
  });
});

describe('wider words: a thesaurus (WordNet)', () => {
  /** WordNet's database format, a few entries: "pill" has two senses, only the first counts. */
  function dictionary(): string {
    const dir = tempDir();
    const header = '  1 This software and database is being provided to you, the LICENSEE, by Princeton University\n';
    writeFileSync(join(dir, 'data.noun'), `${header}${[
      '00000100 06 n 02 sunscreen 0 sunblock 0 001 @ 00000200 n 0000 | a cream spread on the skin; contains a chemical (as PABA) to filter out ultraviolet light and so protect from sunburn; "wear sunscreen"  ',
      '00000200 06 n 01 cream 0 000 | toiletry consisting of a thick liquid  ',
      '00000300 06 n 01 pill 0 000 | a dose of medicine in the form of a small pellet  ',
      '00000400 06 n 01 pill 0 000 | something unpleasant that must be accepted  ',
    ].join('\n')}\n`);
    writeFileSync(join(dir, 'index.noun'), `${header}${['cream n 1 0 1 0 00000200  ', 'pill n 2 0 2 0 00000300 00000400  ', 'sunblock n 1 1 @ 1 0 00000100  ', 'sunscreen n 1 1 @ 1 0 00000100  '].join('\n')}\n`);
    for (const part of ['verb', 'adj', 'adv']) for (const kind of ['data', 'index']) writeFileSync(join(dir, `${kind}.${part}`), header);
    return dir;
  }

  it("compacts WordNet's files: the first sense's synonyms, broader terms and definition words, by binary search, inflections too", () => {
    const file = join(tempDir(), 'thesaurus.bin');
    writeFileSync(file, compactThesaurus(dictionary()));
    const thesaurus = new ThesaurusFile(file);
    try {
      expect(thesaurus.size).toBe(4);
      const sunscreen = thesaurus.related('sunscreen');
      expect(sunscreen?.synonyms).toEqual(['sunblock']);
      expect(sunscreen?.broader).toEqual(['cream']);
      expect(sunscreen?.gloss).toEqual(expect.arrayContaining(['ultraviolet', 'sunburn', 'skin']));
      for (const left of ['the', 'paba', 'wear', 'sunscreen']) expect(sunscreen?.gloss).not.toContain(left); // stop words, asides, examples, itself
      expect(thesaurus.related('pills')?.gloss).toEqual(['dose', 'medicine', 'form', 'small', 'pellet']); // "pills" → pill, first sense only
      for (const unknown of ['zebra', 'Sunscreen', 'sun-screen', '']) expect(thesaurus.related(unknown)).toBeUndefined();
    } finally {
      thesaurus.close();
    }
  });

  it('widens only the words no tool uses, at low weight: "sunscreen" finds the UV index by its definition', () => {
    const file = join(tempDir(), 'thesaurus.bin');
    writeFileSync(file, compactThesaurus(dictionary()));
    const thesaurus = new ThesaurusFile(file);
    const asked: string[] = [];
    const spy: Thesaurus = { related: (word) => (asked.push(word), thesaurus.related(word)) };
    const catalogue = HOME_SERVERS.map((s) => ({ name: s.name, tools: s.tools }));
    try {
      const found = (index: ToolIndex, words: string) => index.rank(words, 12).map((r) => r.path);
      const noHomeWords = { ...TUNING, homeWeight: 0 }; // they know "sunscreen" too (home-words.ts)
      expect(found(new ToolIndex(catalogue, undefined, noHomeWords), 'sunscreen')).toEqual([]);
      const wider = new ToolIndex(catalogue, undefined, noHomeWords, spy);
      expect(found(wider, 'sunscreen')).toContain('weather.get_uv_index');
      asked.length = 0;
      wider.rank('sunscreen today', 12);
      expect(asked).toEqual(['sunscreen']); // "today" is a tool's word ("Steps walked today"): not widened
      const [best] = wider.rank('water the garden', 1);
      expect(best?.path).toBe('garden.start_watering');
    } finally {
      thesaurus.close();
    }
  });
});

describe('the likeliest remote tools in the first request', () => {
  it('shows the best few with full schemas and the rest without parameter descriptions, so more fit', () => {
    const ranked = new ToolIndex(HOME_SERVERS.map((s) => ({ name: s.name, tools: s.tools }))).rank('dim the lights', 12);
    expect(ranked.length).toBeGreaterThan(FULL_SCHEMAS);
    const shown = shownDefinitions(ranked);
    expect(shown.slice(0, FULL_SCHEMAS)).toEqual(ranked.slice(0, FULL_SCHEMAS).map(fullDefinition));
    const [brief, full] = [shown[FULL_SCHEMAS], ranked[FULL_SCHEMAS] && fullDefinition(ranked[FULL_SCHEMAS])];
    expect(brief?.name).toBe(full?.name);
    expect(brief?.description).toBe(full?.description);
    const properties = (d: typeof brief) => Object.entries((d?.inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>);
    expect(properties(brief).map(([name, p]) => [name, p.type])).toEqual(properties(full).map(([name, p]) => [name, p.type]));
    expect(properties(brief).every(([, p]) => p.description === undefined)).toBe(true);
    expect(properties(full).some(([, p]) => typeof p.description === 'string')).toBe(true);
    expect(brief?.inputSchema.required).toEqual(full?.inputSchema.required);
    expect(JSON.stringify(brief).length).toBeLessThan(JSON.stringify(full).length);
  });

  it('shows the matching tool in full beside the meta-tools; the model calls it at once: two rounds', async () => {
    const s = await start(['lights', 'climate', 'music']);
    s.double.script(
      (request) => (request.tools?.some((t) => t.function.name === 'lights.set_brightness')
        ? { tool_calls: [{ name: 'lights.set_brightness', arguments: { room: 'bedroom', brightness: 30 } }] }
        : { tool_calls: [{ name: 'get_tools_in_category', arguments: { path: '' } }] }),
      { content: ['The bedroom lights are at thirty percent.'] },
    );
    const said = await say(s.iris.conversation(), 'dim the bedroom lights to thirty percent');
    expect(said).toEqual(['The bedroom lights are at thirty percent.']);
    expect(s.double.chats).toHaveLength(2);
    const first = s.double.chats[0];
    expect(offered(s, 0)).toEqual(expect.arrayContaining(['get_tools_in_category', 'execute_tool', 'get_current_time', 'lights.set_brightness']));
    const shown = first?.tools?.find((t) => t.function.name === 'lights.set_brightness');
    expect(shown?.function.parameters).toMatchObject({ properties: { room: { type: 'string' }, brightness: { type: 'integer' } }, required: ['room', 'brightness'] });
    // Every definition sent stays inside [budget] tool_tokens.
    const tokenizer = await loadTokenizer();
    expect(toolsTokens(first?.tools as never, (t) => tokenizer.count(t))).toBeLessThanOrEqual(1500);
    expect(s.double.chats[1]?.messages.at(-1)).toMatchObject({ role: 'tool', content: 'lights.set_brightness done: {"room":"bedroom","brightness":30}' });
  });

  it('shows again, in a follow-up, the remote tool the previous round called', async () => {
    const s = await start(['lights', 'climate', 'music']);
    const conversation = s.iris.conversation();
    s.double.script(
      { tool_calls: [{ name: 'lights.set_brightness', arguments: { room: 'bedroom', brightness: 30 } }] },
      { content: ['Done.'] },
      (request) => (request.tools?.some((t) => t.function.name === 'lights.set_brightness')
        ? { tool_calls: [{ name: 'lights.set_brightness', arguments: { room: 'hall', brightness: 30 } }] }
        : { content: ['Which tool?'] }),
      { content: ['The hall too.'] },
    );
    await say(conversation, 'dim the bedroom lights to thirty percent');
    expect(await say(conversation, 'the same for the hall please')).toEqual(['The hall too.']); // words no tool has
    expect(s.double.chats).toHaveLength(4);
    expect(s.double.chats[3]?.messages.at(-1)?.content).toBe('lights.set_brightness done: {"room":"hall","brightness":30}');
  });

  it('runs a shown tool the model calls by its bare name, counted as a repair', async () => {
    const s = await start(['lights']);
    s.double.script(
      { tool_calls: [{ name: 'set_brightness', arguments: { room: 'bedroom', brightness: 30 } }] },
      { content: ['Done.'] },
    );
    const turn = s.iris.conversation().turn('dim the bedroom lights to thirty percent');
    for await (const _ of turn.sentences) { /* drained */ }
    const result = await turn.result;
    expect(result.repairs).toEqual({ tool_name: 1 });
    expect(result.tool_calls[0]).toMatchObject({ name: 'lights.set_brightness', result: { content: [{ type: 'text', text: 'lights.set_brightness done: {"room":"bedroom","brightness":30}' }] } });
  });

  it('runs a shown tool through the same checks as execute_tool: bad arguments get the repair hint', async () => {
    const s = await start(['lights']);
    s.double.script(
      { tool_calls: [{ name: 'lights.set_brightness', arguments: { room: 'bedroom', level: 30 } }] },
      { content: ['Sorry.'] },
    );
    await say(s.iris.conversation(), 'dim the bedroom lights');
    expect(s.double.chats[1]?.messages.at(-1)?.content).toMatch(/^Invalid arguments for lights\.set_brightness: "brightness" is required/);
  });

  it('[tools] expose_max = 0 shows only the meta-tools', async () => {
    const s = await start(['lights'], { expose_max: 0 });
    s.double.script({ content: ['Which room?'] });
    await say(s.iris.conversation(), 'dim the bedroom lights to thirty percent');
    expect(offered(s, 0)).toContain('execute_tool');
    expect(offered(s, 0).filter((n) => n.includes('.'))).toEqual([]);
  });

  it('shows at most expose_max, and only as many as fit in [budget] tool_tokens', async () => {
    const s = await start(['lights', 'climate'], { expose_max: 2 });
    s.double.script({ content: ['OK.'] }, { content: ['OK.'] });
    await say(s.iris.conversation(), 'turn the lights in the bedroom on and set the temperature');
    expect(offered(s, 0).filter((n) => n.includes('.'))).toHaveLength(2);
    const tight = await withDouble({ budget: { tool_tokens: 700 }, mcp: { preload: false } }, { extraToml: serversToml({ lights: home('lights') }) });
    try {
      await tight.iris.init();
      await tight.iris.mcp.servers.startAll();
      tight.double.script({ content: ['OK.'] });
      await say(tight.iris.conversation(), 'dim the bedroom lights');
      const tokenizer = await loadTokenizer();
      const tools = tight.double.chats[0]?.tools ?? [];
      expect(toolsTokens(tools as never, (t) => tokenizer.count(t))).toBeLessThanOrEqual(700);
      expect(tools.map((t) => t.function.name)).toContain('execute_tool');
    } finally {
      await tight.iris.stop();
      await tight.double.close();
    }
  });
});

describe('get_tools_in_category with a query', () => {
  it('returns the best-matching tools across every category, one line each', async () => {
    const s = await start(['lights', 'climate', 'music']);
    const found = JSON.parse(resultText(await s.iris.host.call('get_tools_in_category', { query: 'set the heating temperature' }))) as { tools: Record<string, string>; categories: string[] };
    expect(found.categories).toEqual(['lights', 'climate', 'music']); // a miss opens its category next, not the root
    expect(Object.keys(found.tools)[0]).toBe('climate.set_temperature');
    expect(found.tools['climate.set_temperature']).toBe('Set the target temperature of the heating or air conditioning in a room.');
    expect(Object.keys(found.tools).length).toBeLessThanOrEqual(8);
    // path still browses as before
    expect(JSON.parse(resultText(await s.iris.host.call('get_tools_in_category', { path: '' })))).toMatchObject({ categories: { lights: { tools: 20 } } });
  });

  it('keeps the two meta-tools at or under 250 tokens with 50 servers configured', async () => {
    const servers = Object.fromEntries(HOME_SERVERS.map((h) => [h.name, home(h.name)]));
    setup = await withDouble({ mcp: { preload: false } }, { extraToml: serversToml(servers) });
    await setup.iris.init();
    const tokenizer = await loadTokenizer();
    const meta = setup.iris.host.definitions().filter((d) => d.name === 'get_tools_in_category' || d.name === 'execute_tool');
    const tokens = meta.reduce((sum, d) => sum + tokenizer.count(JSON.stringify({ type: 'function', function: { name: d.name, description: d.description, parameters: d.inputSchema } })), 0);
    expect(meta).toHaveLength(2);
    expect(tokens).toBeLessThanOrEqual(250);
    expect(setup.iris.mcp.servers.status().filter((x) => x.pid !== undefined)).toEqual([]); // none started
  });
});

describe('at home-server scale: cached tool lists, servers started when used', () => {
  it('ranks from the cached tool lists without starting a server; a call starts only its own', async () => {
    const stateDir = tempDir();
    const first = await servers(['lights', 'climate', 'music'], '', stateDir);
    await first.iris.mcp.servers.startAll();
    await first.iris.stop();
    const again = await servers(['lights', 'climate', 'music'], '', stateDir);
    expect(again.iris.mcp.proxy.rank('dim the bedroom lights', 8)[0]?.path).toBe('lights.set_brightness');
    expect(running(again)).toEqual([]);
    const result = await again.iris.host.call('execute_tool', { tool_path: 'lights.set_brightness', arguments: { room: 'hall', brightness: 5 } });
    expect(resultText(result)).toBe('lights.set_brightness done: {"room":"hall","brightness":5}');
    expect(running(again)).toEqual(['lights']);
  });

  it('without pre-warm, the daemon learns the tool lists not cached yet in the background and stops those servers again', async () => {
    const s = await servers(['lights', 'climate', 'tv', 'mail']);
    expect(s.iris.mcp.proxy.rank('dim the bedroom lights', 8)).toEqual([]); // nothing known yet
    await s.iris.start();
    await vi.waitFor(() => expect(s.iris.mcp.servers.status().map((x) => [x.name, x.state, x.tools])).toEqual([
      ['lights', 'stopped', 20], ['climate', 'stopped', 20], ['tv', 'stopped', 20], ['mail', 'stopped', 20],
    ]), { timeout: 60_000, interval: 100 });
    expect(running(s)).toEqual([]);
    expect(s.iris.mcp.proxy.rank('dim the bedroom lights', 8)[0]?.path).toBe('lights.set_brightness');
    expect(s.logs.some((l) => l.includes('lights: 20 tools learnt; stopped until used'))).toBe(true);
  }, 90_000);

  it('stops a server idle for [mcp] idle_stop_s; its next call starts it again', async () => {
    const s = await servers(['lights'], 'idle_stop_s = 0.3');
    const call = () => s.iris.host.call('execute_tool', { tool_path: 'lights.turn_off_light', arguments: { room: 'hall' } });
    expect(resultText(await call())).toBe('lights.turn_off_light done: {"room":"hall"}');
    expect(running(s)).toEqual(['lights']);
    await vi.waitFor(() => expect(running(s)).toEqual([]), { timeout: 10_000, interval: 50 });
    expect(s.iris.mcp.servers.status()[0]).toMatchObject({ state: 'stopped', health: { state: 'healthy' } }); // resting, not failing
    expect(resultText(await call())).toBe('lights.turn_off_light done: {"room":"hall"}');
  });

  it("follows a server's list_changed: the new tool is ranked and cached", async () => {
    const stateDir = tempDir();
    const s = withServers({ garden: home('garden', '--grow') }, '[mcp]\nconnect_timeout_s = 30\npreload = false\n', stateDir);
    opened.push(s);
    await s.iris.init();
    await s.iris.mcp.servers.ensureTools('garden');
    // The index is built (WordNet's related words may find other garden tools; never the new one).
    expect(s.iris.mcp.proxy.rank('polish the gadget', 3).map((r) => r.path)).not.toContain('garden.garden_extra_20');
    await s.iris.host.call('execute_tool', { tool_path: 'garden.stop_watering', arguments: {} });
    const cached = () => (JSON.parse(readFileSync(join(stateDir, 'mcp-tools.json'), 'utf8')) as { servers: Record<string, { tools: { name: string }[] }> }).servers.garden?.tools.map((t) => t.name);
    await vi.waitFor(() => expect(cached()).toContain('garden_extra_20'), { timeout: 10_000, interval: 50 });
    expect(s.iris.mcp.proxy.rank('polish the gadget', 3)[0]?.path).toBe('garden.garden_extra_20');
  });
});

describe('iris tools search', () => {
  it('shows what the first request would show for the words, with scores, and what the budget leaves out', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'config'), `[assistant]\ntimezone = "UTC"\n[mcp]\nconnect_timeout_s = 30\npreload = false\n${serversToml({ lights: home('lights'), climate: home('climate') })}`);
    const vars = { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') };
    const json = await iris(['tools', 'search', '--json', 'dim', 'the', 'bedroom', 'lights'], vars);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as { query: string; exposed: { name: string; score: number; words: number; meaning: number }[]; tokens: number; budget: number; left_out: unknown[] };
    expect(report).toMatchObject({ query: 'dim the bedroom lights', budget: 1500, remote_tools: 40 });
    expect(report.exposed[0]).toEqual({ name: 'lights.set_brightness', score: expect.any(Number), words: 1, meaning: expect.any(Number), kind: 1 });
    expect(report.exposed.length + report.left_out.length).toBeLessThanOrEqual(16); // [tools] expose_max
    expect(report.tokens).toBeGreaterThan(0);
    expect(report.tokens).toBeLessThan(1500);
    const people = await iris(['tools', 'search', 'dim the bedroom lights'], vars);
    expect(people.stdout).toMatch(/^for "dim the bedroom lights" the first request shows \d+ of 40 remote tools \(\d+ tokens, the first 4 in full, the rest without parameter descriptions\):\n {2}score = words \+ meaning \(× kind, [^\n]*\)\n +\d\.\d\d = 1\.00 \+ \d\.\d\d {2,}lights\.set_brightness +Dim or brighten/);
    expect((await iris(['tools', 'search', 'zzzz'], vars)).stdout).toBe('no remote tool matches "zzzz": the model gets only the meta-tools (of 40 remote tools)\n');
  }, 60_000);
});
