import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sayAll, withDouble, type Setup } from './helpers/conversation.js';
import { EVERYTHING, FILESYSTEM, serversToml, stdio } from './helpers/mcp.js';
import { tempDir } from './helpers/tmp.js';

let setup: Setup | undefined;
afterEach(async () => {
  await setup?.iris.stop();
  await setup?.double.close();
  setup = undefined;
});

async function start(servers: Parameters<typeof serversToml>[0], tools: Record<string, number> = {}): Promise<Setup> {
  setup = await withDouble({ tools }, { extraToml: serversToml(servers) });
  await setup.iris.init();
  return setup;
}

const say = sayAll;

const lastTool = (s: Setup, chat: number) => s.double.chats[chat]?.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? '';

describe('a conversation through the lazy MCP proxy', () => {
  it('browses, reads a schema, gets a bad call corrected by the hint, and answers', async () => {
    // Only the meta-tools: no remote tool shown in full (test/tool-rank.test.ts has those).
    const s = await start({ everything: stdio(EVERYTHING, 'stdio') }, { expose_max: 0 });
    s.double.script(
      { tool_calls: [{ name: 'get_tools_in_category', arguments: { path: '' } }] },
      { tool_calls: [{ name: 'get_tools_in_category', arguments: { path: 'everything' } }] },
      { tool_calls: [{ name: 'get_tools_in_category', arguments: { path: 'everything.get-sum' } }] },
      { tool_calls: [{ name: 'execute_tool', arguments: { tool_path: 'everything.get-sum', arguments: { x: 19, y: 23 } } }] },
      { tool_calls: [{ name: 'execute_tool', arguments: { tool_path: 'everything.get-sum', arguments: { a: 19, b: 23 } } }] },
      { content: ['Nineteen and twenty-three make forty-two.'] },
    );
    const said = await say(s.iris.conversation(), 'use the sum tool on nineteen and twenty-three');
    expect(s.double.chats[0]?.tools?.map((t) => t.function.name)).toEqual(expect.arrayContaining(['get_tools_in_category', 'execute_tool']));
    expect(s.double.chats[0]?.tools?.some((t) => t.function.name === 'everything.get-sum')).toBe(false);
    expect(JSON.parse(lastTool(s, 1))).toMatchObject({ categories: { everything: expect.any(Object) } });
    expect(lastTool(s, 2)).toContain('"tool_path":"everything.get-sum"');
    expect(JSON.parse(lastTool(s, 3))).toMatchObject({ inputSchema: { required: ['a', 'b'] } });
    expect(lastTool(s, 4)).toMatch(/^Invalid arguments for everything\.get-sum: "a" is required; "b" is required\. Its inputSchema:/);
    expect(lastTool(s, 5)).toBe('The sum of 19 and 23 is 42.');
    expect(said).toEqual(['Nineteen and twenty-three make forty-two.']);
  });

  it('asks for a yes before a tool that changes things, and runs it only then', async () => {
    const dir = tempDir();
    const s = await start({ files: stdio(FILESYSTEM, dir) });
    const conversation = s.iris.conversation();
    const target = join(dir, 'shopping.txt');
    s.double.script(
      { tool_calls: [{ name: 'execute_tool', arguments: { tool_path: 'files.write_file', arguments: { path: target, content: 'milk' } } }] },
      { content: ['Saved your shopping list.'] },
    );
    expect(await say(conversation, 'save milk to my shopping list')).toEqual([`Should I run write file from files with path ${target}, content milk? Say yes to go ahead.`]);
    expect(existsSync(target)).toBe(false);
    expect(s.double.chats).toHaveLength(1);
    expect(await say(conversation, 'yes')).toEqual(['Saved your shopping list.']);
    expect(readFileSync(target, 'utf8')).toBe('milk');
    expect(lastTool(s, 1)).toMatch(/Successfully wrote/);
  });

  it('does nothing when the user says no, and tells the model so', async () => {
    const dir = tempDir();
    const s = await start({ files: stdio(FILESYSTEM, dir) });
    const conversation = s.iris.conversation();
    s.double.script(
      { tool_calls: [{ name: 'execute_tool', arguments: { tool_path: 'files.write_file', arguments: { path: join(dir, 'x.txt'), content: 'x' } } }] },
      { content: ["OK, I won't."] },
    );
    await say(conversation, 'write x');
    expect(await say(conversation, 'no')).toEqual(["OK, I won't."]);
    expect(existsSync(join(dir, 'x.txt'))).toBe(false);
    expect(lastTool(s, 1)).toBe('The user said no; the tool was not run.');
  });

  it('says plainly that a server is offline', async () => {
    const s = await start({ files: { command: '/nonexistent/mcp-server' } });
    s.double.script(
      { tool_calls: [{ name: 'execute_tool', arguments: { tool_path: 'files.read_text_file', arguments: { path: '/x' } } }] },
      (request) => ({ content: [request.messages.at(-1)?.content.startsWith('The files tools are offline') ? 'The files tools are offline right now.' : 'Hmm.'] }),
    );
    expect(await say(s.iris.conversation(), 'read x')).toEqual(['The files tools are offline right now.']);
  });
});
