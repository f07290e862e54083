/**
 * A thousand tools, one model call: 50 MCP servers of 20 tools each (test/fixtures/home-catalogue.ts,
 * real stdio servers from test/fixtures/home-mcp-server.ts) and spoken requests with the tool
 * each needs (test/fixtures/home-requests.ts), dev and held-out reported apart.
 *
 * 1. Ranking, through the real proxy with the tool lists cached and no server started: recall
 *    of the expected tool among those shown in full in the first request, for several
 *    `[tools] expose_max`; the tokens they cost (all tools ≤ [budget] tool_tokens); IRIS's
 *    time to rank (p50/p90 at 1,000 tools) and to rebuild the index after a list change; the
 *    meta-tools' tokens with 50 servers.
 * 2. Rounds to the right call, through the conversation engine against the Ollama double
 *    with a scripted model: it calls the expected tool when it was shown; else it searches
 *    with get_tools_in_category's query, reads the schema and calls execute_tool; else it
 *    opens its category (named in the search's answer), then the tool. The servers really
 *    run (started on demand).
 * 3. The daemon (the bundle, the unit's Node flags) with 50 configured stdio servers and
 *    preload = false against one with none: RSS after a full GC and one model turn (index
 *    built), its child processes; and with nothing cached, how long learning every tool list
 *    in the background takes and how many servers run at once while it does.
 * Writes scripts/results/tool-rank.json; `--ranking` runs part 1 alone (tool-rank-ranking.json).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toolsTokens } from '../src/budget/fit.js';
import { loadTokenizer, toolTokens } from '../src/budget/tokenizer.js';
import { parseConfig } from '../src/config/load.js';
import { shownInFull } from '../src/conversation/model-turn.js';
import { request } from '../src/daemon/control.js';
import { assemble } from '../src/daemon/assemble.js';
import { silentLogger } from '../src/log.js';
import { shownDefinitions } from '../src/toolhost/mcp/proxy.js';
import { ToolIndex, TUNING } from '../src/toolhost/mcp/rank.js';
import { openThesaurus } from '../src/toolhost/mcp/thesaurus.js';
import { openWordVectors } from '../src/toolhost/mcp/word-vectors.js';
import { fingerprint } from '../src/toolhost/mcp/servers.js';
import { HOME_SERVERS, type CatalogueTool } from '../test/fixtures/home-catalogue.js';
import { DEV, DEV_2, HELD_OUT, HELD_OUT_2, HELD_OUT_3, HELD_OUT_4, HELD_OUT_5, HELD_OUT_6, HELD_OUT_7, HELD_OUT_8, HELD_OUT_8_SPOKEN, HELD_OUT_8_TYPED, type HomeRequest } from '../test/fixtures/home-requests.js';
import { OllamaDouble, type RecordedChat, type ScriptedTurn } from '../test/helpers/ollama-double.js';
import { heapProbe, ROOT, round, unitNodeFlags, writeResults } from './lib/bench.js';

/**
 * dev and dev_2 are tuned on. held_out was looked at by earlier attempts; held_out_2 was
 * written before the November 2026 changes and its totals chose between variants after the
 * first; held_out_3 was measured once, then looked at; held_out_4 was written before ranking by
 * meaning; held_out_5 was written before session 11's changes and looked at after them;
 * held_out_6 was written before session 12's changes, as a speech recogniser writes, and looked at
 * after them (session 13); held_out_7 was written before session 13's changes, half as typed and
 * half as a recogniser writes; held_out_8 was written by another helper who saw neither the ranker nor
 * the other sets, and was measured once.
 */
const SPLITS = { dev: DEV, dev_2: DEV_2, held_out: HELD_OUT, held_out_2: HELD_OUT_2, held_out_3: HELD_OUT_3, held_out_4: HELD_OUT_4, held_out_5: HELD_OUT_5, held_out_6: HELD_OUT_6, held_out_7: HELD_OUT_7, held_out_8: HELD_OUT_8 } as const;
const EXPOSE_MAX = [8, 12, 16, 20];
const DEFAULT_EXPOSE_MAX = 16;
const SERVER_SCRIPT = join(ROOT, 'test/fixtures/home-mcp-server.ts');
const work = mkdtempSync(join(tmpdir(), 'iris-tool-rank-'));
const tokenizer = await loadTokenizer();
const count = (text: string) => tokenizer.count(text);

/** `[mcp.servers.NAME]` for every home server (started through tsx: slow to start, like many real ones). */
const serversToml = (extra = ''): string => HOME_SERVERS.map((s) => [
  `[mcp.servers.${s.name}]`, `command = ${JSON.stringify(process.execPath)}`,
  `args = ["--import", "tsx", ${JSON.stringify(SERVER_SCRIPT)}, ${JSON.stringify(s.name)}]`, 'confirm = "never"', extra,
].join('\n')).join('\n\n');
const configText = (ollamaUrl: string, servers = true, mcp = '') => [
  '[assistant]', 'timezone = "UTC"', '[ollama]', `url = "${ollamaUrl}"`, '[audio]', 'input = ""',
  '[mcp]', 'preload = false', 'connect_timeout_s = 60', mcp, servers ? serversToml() : '',
].join('\n');

/** The tool lists as the daemon caches them once it has learnt them. */
function warmCache(stateDir: string, text: string): void {
  const config = parseConfig(text, 'bench');
  const servers = Object.fromEntries(HOME_SERVERS.map((s) => {
    const server = config.mcp.servers[s.name];
    if (server === undefined) throw new Error(`no ${s.name}`);
    return [s.name, { fingerprint: fingerprint(server), tools: s.tools }];
  }));
  mkdirSync(stateDir, { recursive: true });
  writeFileSync(join(stateDir, 'mcp-tools.json'), `${JSON.stringify({ version: 1, servers })}\n`);
}

const percentile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

// 1. Ranking ------------------------------------------------------------------------------------
const double = await new OllamaDouble().start();
const stateDir = join(work, 'state');
const text = configText(double.url, true, 'idle_stop_s = 3');
warmCache(stateDir, text);
const iris = assemble(parseConfig(text, 'bench'), { stateDir, log: silentLogger });
await iris.init();
const { proxy, servers } = iris.mcp;
const remote = proxy.remoteTools().length;
if (remote !== 1000) throw new Error(`expected 1,000 remote tools, found ${remote}`);
const offered = iris.host.definitions();
const budget = iris.config.budget.tool_tokens;
const shownFor = (words: string, max: number) => shownInFull(offered, shownDefinitions(proxy.rank(words, max)), budget, count);

const recall = Object.fromEntries(EXPOSE_MAX.map((max) => {
  const bySplit = Object.fromEntries(Object.entries(SPLITS).map(([split, requests]) => {
    const shown = requests.map((r) => shownFor(r.text, max));
    const found = requests.filter((r, i) => shown[i]?.some((d) => d.name === r.expected)).length;
    const tokens = shown.map((defs) => defs.reduce((sum, d) => sum + toolTokens(tokenizer, d) + 1, 0)).sort((a, b) => a - b);
    const allTools = shown.map((defs) => toolsTokens([...offered, ...defs].map((d) => ({ type: 'function' as const, function: { name: d.name, description: d.description, parameters: d.inputSchema } })), count));
    return [split, {
      recall: round(found / requests.length, 3),
      found, requests: requests.length,
      shown_mean: round(shown.reduce((s, d) => s + d.length, 0) / shown.length, 1),
      exposed_tokens_p50: percentile(tokens, 0.5), exposed_tokens_max: tokens.at(-1) ?? 0,
      all_tool_tokens_max: Math.max(...allTools),
    }];
  }));
  return [String(max), bySplit];
}));

// Held-out 8 at the default expose_max by form, and each miss with the tools shown first and
// where the expected tool ranked among all 1,000.
const heldOut8Form = (requests: readonly HomeRequest[]) => {
  const found = requests.filter((r) => shownFor(r.text, DEFAULT_EXPOSE_MAX).some((d) => d.name === r.expected)).length;
  return { recall: round(found / requests.length, 3), found, requests: requests.length };
};
const heldOut8 = {
  typed: heldOut8Form(HELD_OUT_8_TYPED), spoken: heldOut8Form(HELD_OUT_8_SPOKEN),
  misses: HELD_OUT_8.flatMap((r) => {
    const shown = shownFor(r.text, DEFAULT_EXPOSE_MAX).map((d) => d.name);
    if (shown.includes(r.expected)) return [];
    const rank = proxy.rank(r.text, remote, { atGap: false }).findIndex((t) => t.path === r.expected) + 1;
    return [{ text: r.text, expected: r.expected, rank, shown_first: shown.slice(0, 5), shown: shown.length }];
  }),
};

// The same at the default expose_max with shared words alone, with meaning, and with meaning and
// the thesaurus (what the daemon ranks with), each ranked by a ToolIndex of its own; and what
// building the index with word vectors costs.
const catalogueServers = HOME_SERVERS.map((s) => ({ name: s.name, tools: s.tools }));
const bareIndex = new ToolIndex(catalogueServers);
const vectorsStarted = performance.now();
const wordVectors = openWordVectors();
const meaningIndex = new ToolIndex(catalogueServers, wordVectors);
const meaningIndexMs = round(performance.now() - vectorsStarted, 1);
const thesaurus = openThesaurus();
const fullIndex = new ToolIndex(catalogueServers, wordVectors, TUNING, thesaurus);
const recallWith = (index: ToolIndex) => Object.fromEntries(Object.entries(SPLITS).map(([split, requests]) => {
  const found = requests.filter((r) => shownInFull(offered, shownDefinitions(index.rank(r.text, DEFAULT_EXPOSE_MAX)), budget, count).some((d) => d.name === r.expected)).length;
  return [split, round(found / requests.length, 3)];
}));
/** Session 13's parts taken out of what the daemon ranks with: all three (session 12's ranker), the home's words alone. */
const session12 = new ToolIndex(catalogueServers, wordVectors, { ...TUNING, homeWeight: 0, askedWeight: 0, recordPrior: 0 }, thesaurus);
const withoutHomeWords = new ToolIndex(catalogueServers, wordVectors, { ...TUNING, homeWeight: 0 }, thesaurus);
const meaningAblation = {
  without_meaning: recallWith(bareIndex), with_meaning: recallWith(meaningIndex), with_meaning_and_thesaurus: recallWith(fullIndex),
  session_12_ranker: recallWith(session12), without_home_words: recallWith(withoutHomeWords),
  index_with_vectors_first_build_ms: meaningIndexMs, word_vectors: wordVectors === undefined ? 'none' : `${wordVectors.size} words × ${wordVectors.dimensions}`,
  thesaurus: thesaurus === undefined ? 'none' : `${thesaurus.size} words`,
};
wordVectors?.close();
thesaurus?.close();

const everyRequest = Object.values(SPLITS).flat();
const rankSamples: number[] = [];
for (let pass = 0; pass < 20; pass++) {
  for (const r of everyRequest) {
    const start = performance.now();
    proxy.rank(r.text, DEFAULT_EXPOSE_MAX);
    rankSamples.push(performance.now() - start);
  }
}
rankSamples.sort((a, b) => a - b);
const rebuild: number[] = [];
for (let i = 0; i < 5; i++) {
  proxy.invalidate();
  const start = performance.now();
  proxy.rank('warm up', 1);
  rebuild.push(performance.now() - start);
}
rebuild.sort((a, b) => a - b);
const meta = offered.filter((d) => d.name === 'get_tools_in_category' || d.name === 'execute_tool');
const ranking = {
  servers: HOME_SERVERS.length, remote_tools: remote, budget_tokens: budget,
  native_and_meta_tokens: toolsTokens(offered.map((d) => ({ type: 'function' as const, function: { name: d.name, description: d.description, parameters: d.inputSchema } })), count),
  meta_tools_tokens: meta.reduce((sum, d) => sum + toolTokens(tokenizer, d), 0),
  recall_by_expose_max: recall,
  meaning: meaningAblation,
  rank_ms: { p50: round(percentile(rankSamples, 0.5), 3), p90: round(percentile(rankSamples, 0.9), 3) },
  index_rebuild_ms_p50: round(percentile(rebuild, 0.5), 1),
  servers_started: servers.status().filter((s) => s.pid !== undefined).length,
  held_out_8: heldOut8,
};

const bySplit = (figures: Record<string, number | { recall: number }> | undefined) => Object.entries(figures ?? {}).map(([k, v]) => `${k} ${typeof v === 'number' ? v : v.recall}`).join(', ');
console.log(`${remote} tools on ${HOME_SERVERS.length} servers; native tools + meta-tools ${ranking.native_and_meta_tokens} of ${budget} tokens; meta-tools ${ranking.meta_tools_tokens}`);
for (const max of EXPOSE_MAX) {
  const r = recall[String(max)];
  console.log(`expose_max ${String(max).padStart(2)}: recall ${bySplit(r)}; held-out 7 shown ${r?.held_out_7?.shown_mean} tools, ${r?.held_out_7?.exposed_tokens_p50} tokens p50 (all tools ≤ ${Math.max(...Object.keys(SPLITS).map((k) => r?.[k]?.all_tool_tokens_max ?? 0))})`);
}
console.log(`held-out 8 (expose_max ${DEFAULT_EXPOSE_MAX}): typed ${heldOut8.typed.found}/${heldOut8.typed.requests}, as a recogniser writes ${heldOut8.spoken.found}/${heldOut8.spoken.requests}; misses:`);
for (const m of heldOut8.misses) console.log(`  ${JSON.stringify(m.text)} -> ${m.expected} (rank ${m.rank}; ${m.shown} shown, first: ${m.shown_first.join(' ')})`);
console.log(`shared words alone (expose_max ${DEFAULT_EXPOSE_MAX}): ${bySplit(meaningAblation.without_meaning)}`);
console.log(`with meaning: ${bySplit(meaningAblation.with_meaning)}`);
console.log(`with meaning and the thesaurus (${meaningAblation.thesaurus}): ${bySplit(meaningAblation.with_meaning_and_thesaurus)}`);
console.log(`session 12's ranker (no home words, records or question words): ${bySplit(meaningAblation.session_12_ranker)}`);
console.log(`without the home's words: ${bySplit(meaningAblation.without_home_words)}`);
console.log(`rank p50 ${ranking.rank_ms.p50} ms, p90 ${ranking.rank_ms.p90} ms at 1,000 tools; index rebuild ${ranking.index_rebuild_ms_p50} ms; servers started by ranking: ${ranking.servers_started}`);
console.log(`word vectors ${meaningAblation.word_vectors}; index with them built in ${meaningIndexMs} ms (first, file not cached)`);
// --ranking: part 1 only (seconds, not minutes), written to tool-rank-ranking.json.
if (process.argv.includes('--ranking')) {
  await iris.stop();
  await double.close();
  rmSync(work, { recursive: true, force: true });
  writeResults('tool-rank-ranking', { ranking });
  process.exit(0);
}

// 2. Rounds to the right call ----------------------------------------------------------------------
const catalogue = new Map<string, CatalogueTool>(HOME_SERVERS.flatMap((s) => s.tools.map((t): [string, CatalogueTool] => [`${s.name}.${t.name}`, t])));
/** Arguments a model would fill in from the schema. */
function argumentsFor(tool: CatalogueTool | undefined): Record<string, unknown> {
  const sample: Record<string, unknown> = { string: 'kitchen', integer: 2, number: 2, array: ['anna@example.org'] };
  return Object.fromEntries((tool?.inputSchema.required ?? []).map((name) => [name, sample[tool?.inputSchema.properties[name]?.type ?? 'string']]));
}
/** A scripted model that knows which tool it wants and takes the shortest way it is given to it. */
function scriptedModel(expected: string): (chat: RecordedChat) => ScriptedTurn {
  const server = expected.split('.')[0] ?? '';
  const args = argumentsFor(catalogue.get(expected));
  const browse = (path: string): ScriptedTurn => ({ tool_calls: [{ name: 'get_tools_in_category', arguments: { path } }] });
  return (chat) => {
    const user = chat.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
    const turnStart = chat.messages.map((m) => m.role).lastIndexOf('user');
    const results = chat.messages.slice(turnStart).filter((m) => m.role === 'tool').map((m) => m.content);
    const last = results.at(-1);
    if (last?.startsWith(`${expected} done`)) return { content: ['Done.'] };
    if (last === undefined) {
      return chat.tools?.some((t) => t.function.name === expected)
        ? { tool_calls: [{ name: expected, arguments: args }] }
        : { tool_calls: [{ name: 'get_tools_in_category', arguments: { query: user } }] };
    }
    if (last.includes(`"tool_path":"${expected}"`) && last.includes('inputSchema')) {
      return { tool_calls: [{ name: 'execute_tool', arguments: { tool_path: expected, arguments: args } }] };
    }
    if (last.includes(`"${expected}"`) || last.includes(`"tool_path":"${expected}"`)) return browse(expected); // found: read its schema
    // The search missed it: its category, named in the search's answer.
    if (last.startsWith('{"query"')) return browse(last.includes(`"${server}"`) ? server : '');
    if (last.startsWith('{"categories"')) return browse(server);
    return { content: ['I could not find it.'] };
  };
}

const rounds: Record<string, { mean: number; two_rounds: number; found_in_first_request: { n: number; mean_rounds: number }; missed: { n: number; mean_rounds: number; max_rounds: number }; wrong: number }> = {};
const callStarted = performance.now();
/** The model's policy for the request being measured; every scripted turn asks it. */
let policy: (chat: RecordedChat) => ScriptedTurn = () => ({ content: ['?'] });
// Enough turns for every request's longest way (search, category, schema, call, answer) and more:
// a script that runs out answers the rest wrongly (2,000 ran out in held-out 7 once the sets grew).
const turnsNeeded = 8 * Object.values<readonly HomeRequest[]>(SPLITS).reduce((n, requests) => n + requests.length, 0);
double.script(...Array.from({ length: turnsNeeded }, () => (chat: RecordedChat) => policy(chat)));
for (const [split, requests] of Object.entries<readonly HomeRequest[]>(SPLITS)) {
  const perRequest: { shown: boolean; rounds: number; ok: boolean }[] = [];
  for (const r of requests) {
    const before = double.chats.length;
    policy = scriptedModel(r.expected);
    const conversation = iris.conversation();
    const turn = conversation.turn(r.text);
    for await (const _ of turn.sentences) { /* drained */ }
    const result = await turn.result;
    const chats = double.chats.length - before;
    const shown = double.chats[before]?.tools?.some((t) => t.function.name === r.expected) ?? false;
    perRequest.push({ shown, rounds: chats, ok: result.reply === 'Done.' });
  }
  const mean = (xs: number[]) => (xs.length === 0 ? 0 : round(xs.reduce((a, b) => a + b, 0) / xs.length, 2));
  const found = perRequest.filter((p) => p.shown);
  const missed = perRequest.filter((p) => !p.shown);
  rounds[split] = {
    mean: mean(perRequest.map((p) => p.rounds)),
    two_rounds: perRequest.filter((p) => p.rounds === 2).length,
    found_in_first_request: { n: found.length, mean_rounds: mean(found.map((p) => p.rounds)) },
    missed: { n: missed.length, mean_rounds: mean(missed.map((p) => p.rounds)), max_rounds: Math.max(0, ...missed.map((p) => p.rounds)) },
    wrong: perRequest.filter((p) => !p.ok).length,
  };
}
const roundsSeconds = round((performance.now() - callStarted) / 1000, 1);
await iris.stop();
await double.close();

// 3. The daemon with 50 servers -------------------------------------------------------------------
interface Sample { rss_mb: number; heap_mb: number; children: number }
const probe = ['--expose-gc', '--require', join(ROOT, 'scripts/lib/heap-probe.cjs')];

async function daemon(name: string, withServers: boolean, warm: boolean): Promise<{ process: ChildProcess; socket: string; pid: number; sample: () => Promise<Sample>; stop: () => Promise<void> }> {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  const socket = join(dir, 'control.sock');
  const ollama = await new OllamaDouble().start();
  const config = configText(ollama.url, withServers);
  writeFileSync(join(dir, 'config'), config);
  if (warm && withServers) warmCache(join(dir, 'state'), config);
  const child = spawn(process.execPath, [...unitNodeFlags(), ...probe, join(ROOT, 'dist/iris.mjs'), 'daemon'], {
    env: { ...process.env, IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: socket },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (/ready:/.test(seen)) {
        child.stderr?.off('data', onData);
        resolve();
      }
    };
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`daemon exited ${code}: ${seen}`)));
  });
  const pid = child.pid ?? 0;
  // One model turn: the ranking index is built, as in use.
  ollama.script({ content: ['The bedroom lights are dimmed.'] });
  await request(socket, { cmd: 'ask', text: 'dim the bedroom lights' }, 60_000);
  const sample = async (): Promise<Sample> => {
    const memory = await heapProbe(child);
    const mb = (bytes: number) => round(bytes / 1024 / 1024, 1);
    return { rss_mb: mb(memory.rss), heap_mb: mb(memory.heapUsed), children: childrenOf(pid) };
  };
  const stop = async () => {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await ollama.close();
  };
  return { process: child, socket, pid, sample, stop };
}
const childrenOf = (pid: number): number => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).length;

/**
 * RSS after a full GC moves by ±20 MB between runs of the same daemon (the allocator returns
 * pages when it decides): the run with the median RSS of three, for each configuration.
 */
async function medianRun(name: string, withServers: boolean): Promise<Sample> {
  const runs: Sample[] = [];
  for (let i = 0; i < 3; i++) {
    const one = await daemon(`${name}-${i}`, withServers, true);
    runs.push(await one.sample());
    await one.stop();
  }
  runs.sort((a, b) => a.rss_mb - b.rss_mb);
  return runs[1] ?? runs[0] ?? { rss_mb: NaN, heap_mb: NaN, children: NaN };
}
/**
 * The CLI with 50 servers configured and their lists cached, no daemon running: `iris tools
 * list`, `tools budget` and `mcp list` must stay quick (and start no server). Median of 3 runs
 * of the bundle, against the same commands with no server configured.
 */
function cliTimes(withServers: boolean): Record<string, number> {
  const dir = join(work, `cli-${withServers ? 'fifty' : 'none'}`);
  mkdirSync(dir, { recursive: true });
  const config = configText('http://127.0.0.1:9', withServers);
  writeFileSync(join(dir, 'config'), config);
  if (withServers) warmCache(join(dir, 'state'), config);
  const env = { ...process.env, IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'none.sock') };
  const commands = { tools_list: ['tools', 'list'], tools_budget: ['tools', 'budget'], mcp_list: ['mcp', 'list'] };
  return Object.fromEntries(Object.entries(commands).map(([name, args]) => {
    const runs = [0, 1, 2].map(() => {
      const started = performance.now();
      execFileSync(process.execPath, [join(ROOT, 'dist/iris.mjs'), ...args], { env, stdio: 'ignore' });
      return performance.now() - started;
    }).sort((a, b) => a - b);
    return [name, Math.round(runs[1] ?? NaN)];
  }));
}
const cli = { no_servers_ms: cliTimes(false), fifty_servers_ms: cliTimes(true) };

const noServers = await medianRun('none', false);
const withFifty = await medianRun('fifty', true);

// Nothing cached: the daemon learns every list in the background, a few servers at a time.
const cold = await daemon('cold', true, false);
const learnStart = performance.now();
let mostChildren = 0;
for (;;) {
  mostChildren = Math.max(mostChildren, childrenOf(cold.pid));
  const status = await request(cold.socket, { cmd: 'status' }, 10_000);
  if (status.mcp.every((s) => s.tools > 0 && s.pid === undefined)) break;
  if (performance.now() - learnStart > 600_000) throw new Error('learning the tool lists took over 10 minutes');
  await new Promise((resolve) => setTimeout(resolve, 200));
}
const learnSeconds = round((performance.now() - learnStart) / 1000, 1);
const afterLearning = await cold.sample();
await cold.stop();

const daemonFigures = {
  no_servers: noServers,
  fifty_servers_preload_false: withFifty,
  rss_growth_mb: round(withFifty.rss_mb - noServers.rss_mb, 1),
  heap_growth_mb: round(withFifty.heap_mb - noServers.heap_mb, 1),
  cold_cache: { learn_all_s: learnSeconds, most_servers_running_at_once: mostChildren, after: afterLearning },
  cli,
};

rmSync(work, { recursive: true, force: true });
console.log(`rounds (expose_max ${DEFAULT_EXPOSE_MAX}): ${Object.entries(rounds).map(([k, v]) => `${k}: mean ${v.mean}, 2 rounds for ${v.two_rounds}, missed ones ${v.missed.mean_rounds} (max ${v.missed.max_rounds}), wrong ${v.wrong}`).join('; ')} (${roundsSeconds} s)`);
console.log(`daemon RSS after GC: ${noServers.rss_mb} MB with no servers, ${withFifty.rss_mb} MB with 50 (preload=false; +${daemonFigures.rss_growth_mb} MB), children ${withFifty.children}; cold cache: all lists learnt in ${learnSeconds} s, at most ${mostChildren} servers at once, ${afterLearning.children} running after`);
console.log(`CLI, no daemon, 50 servers cached (no servers): ${Object.entries(cli.fifty_servers_ms).map(([k, ms]) => `${k.replace('_', ' ')} ${ms} ms (${cli.no_servers_ms[k]} ms)`).join(', ')}`);
writeResults('tool-rank', { ranking, rounds: { expose_max: DEFAULT_EXPOSE_MAX, by_split: rounds, seconds: roundsSeconds }, daemon: daemonFigures });
