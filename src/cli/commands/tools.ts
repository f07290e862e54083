/** `iris tools list|call|search|budget`: the tools the model can reach, one called directly, and what their definitions cost. */
import type { Command } from 'commander';
import type { Config } from '../../config/schema.js';
import { messageOf } from '../../errors.js';
import { loadTokenizer, toolTokens } from '../../budget/tokenizer.js';
import { shownInFull } from '../../conversation/model-turn.js';
import { errorResult, type ToolDefinition } from '../../toolhost/api.js';
import { FULL_SCHEMAS, shownDefinitions } from '../../toolhost/mcp/proxy.js';
import { EXIT, Exit, jsonOption, output, outputToolResult } from '../output.js';
import { globals, readConfig, type Session } from '../session.js';
import { stateWords } from './mcp.js';

function parseJsonArgument(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Exit(EXIT.usage, `ARGS_JSON is not valid JSON: ${messageOf(error)}`);
  }
}

/** Why `SERVER.TOOL` cannot be called because of its server (none by that name, or switched
 * off), or undefined: the proxy then says whether that server has the tool. */
function missingServer(config: Config, toolPath: string): string | undefined {
  const wanted = (toolPath.split('.')[0] ?? '').toLowerCase();
  const servers = Object.entries(config.mcp.servers);
  const server = servers.find(([name]) => name.toLowerCase() === wanted);
  if (server === undefined) {
    const known = servers.map(([name]) => name);
    return `There is no MCP server "${wanted}" in the config (${known.length === 0 ? 'none is configured' : `servers: ${known.join(', ')}`}). A remote tool is called as SERVER.TOOL.`;
  }
  if (server[1].enabled === false) return `The MCP server "${server[0]}" is switched off (enabled = false in its [mcp.servers.${server[0]}] table).`;
  return undefined;
}

export function register(program: Command, session: Session): void {
  const tools = program.command('tools').description('the tools the model can reach');

  tools
    .command('list')
    .description('every tool, native and remote, with on/off state and token cost')
    .addOption(jsonOption())
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const { iris } = await session.open(g);
      await iris.mcp.servers.ensureAllTools();
      const tokenizer = await loadTokenizer();
      const native = iris.host.list().filter((t) => t.source === 'native').map((t) => ({
        name: t.name, source: t.source, enabled: t.enabled, description: t.description, tokens: toolTokens(tokenizer, t),
      }));
      const remote = iris.mcp.servers.listing().map(({ server, tool, enabled }) => ({
        name: `${server}.${tool.name}`, source: 'mcp' as const, server, enabled, description: tool.description ?? '', tokens: toolTokens(tokenizer, tool),
      }));
      const rows = [...native, ...remote];
      output(g.json, rows, () => {
        const width = Math.max(0, ...rows.map((r) => r.name.length));
        const down = iris.mcp.servers.status().filter((x) => x.state !== 'up' && x.state !== 'disabled');
        return [
          ...rows.map((r) => `${r.name.padEnd(width)}  ${r.source.padEnd(6)}  ${r.enabled ? 'on ' : 'off'}  ${String(r.tokens).padStart(4)} tok  ${r.description.split('\n')[0] ?? ''}`),
          ...down.map((s) => `(${s.name}: ${stateWords(s.state)}${s.reason ? `: ${s.reason}` : ''})`),
        ];
      });
    });

  tools
    .command('call')
    .description('call one tool directly (NAME, or SERVER.TOOL for a remote one) and print its result')
    .argument('<name>', 'tool name')
    .argument('[args_json]', 'arguments as a JSON object', '{}')
    .addOption(jsonOption('print the MCP CallToolResult'))
    .action(async (name: string, argsJson: string, _opts, cmd: Command) => {
      const g = globals(cmd);
      const args = parseJsonArgument(argsJson);
      // SERVER.TOOL is a remote tool, reached through the proxy like the model reaches it.
      const remote = name.includes('.') && !name.startsWith('functions.');
      const noServer = remote ? missingServer(await readConfig(g), name) : undefined;
      const result = noServer !== undefined
        ? errorResult(noServer)
        : remote
          ? await session.callTool(g, 'execute_tool', { tool_path: name, arguments: args })
          : await session.callTool(g, name, args);
      outputToolResult(result, g.json);
    });

  tools
    .command('search')
    .description('which remote tools the first model request would show for these words, with their scores (shared words + meaning, × the request\'s kind)')
    .argument('<query...>', 'the words, as the person would say them')
    .addOption(jsonOption())
    .action(async (words: string[], _opts, cmd: Command) => {
      const g = globals(cmd);
      const query = words.join(' ');
      const { config, iris } = await session.open(g);
      await iris.mcp.servers.ensureAllTools(); // lists not cached yet (the daemon learns them in the background)
      const tokenizer = await loadTokenizer();
      const count = (text: string) => tokenizer.count(text);
      const ranked = iris.mcp.proxy.rank(query, config.tools.expose_max);
      const offered = iris.host.definitions();
      const definitions = shownDefinitions(ranked);
      const shown = new Set(shownInFull(offered, definitions, config.budget.tool_tokens, count).map((d) => d.name));
      const row = (r: (typeof ranked)[number]) => ({ name: r.path, score: r.score, words: r.words, meaning: r.meaning, kind: r.kind });
      const exposed = ranked.filter((r) => shown.has(r.path));
      const report = {
        query,
        exposed: exposed.map(row),
        tokens: definitions.filter((d) => shown.has(d.name)).reduce((sum, d) => sum + toolTokens(tokenizer, d) + 1, 0),
        budget: config.budget.tool_tokens,
        /** Ranked among the best expose_max but over [budget] tool_tokens beside the other tools. */
        left_out: ranked.filter((r) => !shown.has(r.path)).map(row),
        remote_tools: iris.mcp.proxy.remoteTools().length,
      };
      output(g.json, report, () => {
        if (report.remote_tools === 0) return ['no remote tools known: configure [mcp.servers.NAME] (iris mcp list)'];
        if (config.tools.expose_max === 0) return ['[tools] expose_max = 0: the model is shown only the meta-tools'];
        if (exposed.length === 0) return [`no remote tool matches "${query}": the model gets only the meta-tools (of ${report.remote_tools} remote tools)`];
        const width = Math.max(...ranked.map((r) => r.path.length));
        const parts = (r: { score: number; words: number; meaning: number; kind: number }) => `${r.score.toFixed(2).padStart(5)} = ${r.kind === 1 ? '' : '('}${r.words.toFixed(2)} + ${r.meaning.toFixed(2)}${r.kind === 1 ? '' : `) × ${r.kind.toFixed(2)}`}`;
        const partsWidth = Math.max(...[...exposed, ...report.left_out].map((r) => parts(r).length));
        return [
          `for "${query}" the first request shows ${exposed.length} of ${report.remote_tools} remote tools (${report.tokens} tokens, the first ${FULL_SCHEMAS} in full, the rest without parameter descriptions):`,
          '  score = words + meaning (× kind, under 1 for a tool that changes things when asked a question, or only reads when told to do something)',
          ...exposed.map((r) => `  ${parts(r).padEnd(partsWidth)}  ${r.path.padEnd(width)}  ${(r.tool.description ?? '').split('\n')[0] ?? ''}`),
          ...report.left_out.map((r) => `  ${parts(r).padEnd(partsWidth)}  ${r.name.padEnd(width)}  (left out: over [budget] tool_tokens ${report.budget})`),
        ];
      });
    });

  tools
    .command('budget')
    .description('token accounting of tool definitions')
    .addOption(jsonOption())
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      const { config, iris } = await session.open(g);
      await iris.mcp.servers.ensureAllTools();
      const tokenizer = await loadTokenizer();
      const offered = iris.host.definitions();
      const sum = (defs: readonly ToolDefinition[]) => defs.reduce((total, t) => total + toolTokens(tokenizer, t), 0);
      const nativeTokens = sum(offered.filter((d) => iris.host.list().find((t) => t.name === d.name)?.source === 'native'));
      const metaTokens = sum(offered.filter((d) => d.name === 'get_tools_in_category' || d.name === 'execute_tool'));
      const remote = iris.mcp.proxy.remoteTools();
      const directTokens = sum(remote.map((r) => r.tool));
      const report = {
        budget: config.budget.tool_tokens,
        exposed_tokens: nativeTokens + metaTokens,
        native_tokens: nativeTokens,
        meta_tools_tokens: metaTokens,
        remote_tools: remote.length,
        direct_mcp_tokens: directTokens,
        reduction: directTokens === 0 ? 0 : Math.round((1 - metaTokens / directTokens) * 1000) / 1000,
        /** [tools] expose_max: remote tools shown per request (the first FULL_SCHEMAS in full), in what the budget leaves. */
        expose_max: config.tools.expose_max,
        tokenizer: tokenizer.name,
      };
      output(g.json, report, () => [
        `tool definitions sent to the model: ${report.exposed_tokens} of ${report.budget} tokens (native ${report.native_tokens}, MCP meta-tools ${report.meta_tools_tokens})`,
        `remote tools: ${report.remote_tools}, ${report.direct_mcp_tokens} tokens if sent directly; the proxy saves ${Math.round(report.reduction * 1000) / 10}%`,
        ...(report.remote_tools > 0 && report.expose_max > 0
          ? [`plus, per request, up to ${report.expose_max} remote tools most likely meant (the first ${FULL_SCHEMAS} in full) within the ${report.budget} tokens (iris tools search WORDS)`]
          : []),
        `tokenizer: ${report.tokenizer}`,
      ]);
    });
}
