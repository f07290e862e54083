/**
 * A faithful Ollama test double: a real HTTP server speaking Ollama's API (notes/ollama-api.md)
 * with scripted model turns. Streams NDJSON, sends tool calls whole in non-final chunks, puts
 * the counts on the final chunk, counts prompt tokens with the real Qwen tokenizer over the
 * Qwen2.5 chat template, honours num_ctx by dropping the oldest messages, and can fail in
 * every way the real server does.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadTokenizer, type Tokenizer } from '../../src/budget/tokenizer.js';

export interface ScriptedCall {
  name: string;
  arguments: Record<string, unknown> | string;
}

/** One model reply, or one failure. */
export interface ScriptedTurn {
  /** Text pieces streamed one chunk each. */
  content?: string[];
  thinking?: string;
  tool_calls?: ScriptedCall[];
  done_reason?: 'stop' | 'length';
  /** Fail before any output: HTTP status and `{"error"}` text. */
  status?: number;
  error?: string;
  /** After the pieces: an `{"error"}` line (status stays 200). */
  midStreamError?: string;
  /** After the pieces: end the body without a `done` chunk. */
  truncate?: boolean;
  /** After the pieces: destroy the connection. */
  reset?: boolean;
  /** Destroy the connection before answering at all (a stale keep-alive socket looks like this). */
  drop?: boolean;
  firstTokenDelayMs?: number;
  pieceDelayMs?: number;
  /** Hold the first chunk until this resolves (for cancellation tests). */
  hold?: Promise<void>;
}

export interface ModelSpec {
  capabilities: string[];
  contextLength?: number;
  family?: string;
}

export interface RecordedChat {
  model: string;
  messages: { role: string; content: string; tool_calls?: { function: { name: string; arguments: unknown } }[]; tool_name?: string }[];
  tools?: { type: string; function: { name: string; description: string; parameters: unknown } }[];
  options?: { num_ctx?: number; num_predict?: number; temperature?: number };
  think?: boolean;
  keep_alive?: string;
  stream?: boolean;
  /** What the double counted for this request, after honouring num_ctx. */
  prompt_eval_count: number;
}

type Script = ScriptedTurn | ((request: RecordedChat) => ScriptedTurn);

const DEFAULT_MODELS: Record<string, ModelSpec> = {
  'qwen2.5:7b': { capabilities: ['completion', 'tools'], contextLength: 32768, family: 'qwen2' },
};

export class OllamaDouble {
  readonly chats: RecordedChat[] = [];
  readonly shows: string[] = [];
  /** Load requests (an /api/chat with no messages), in order. */
  readonly loads: { model: string; keep_alive: unknown }[] = [];
  /** Models in memory, as /api/ps reports them: loaded by a load request or a chat. */
  readonly loadedModels = new Set<string>();
  /** Requests the client cancelled while a turn was in progress. */
  cancelled = 0;
  models: Record<string, ModelSpec>;
  #script: Script[] = [];
  #server: Server | undefined;
  #tokenizer: Tokenizer | undefined;
  #sockets = new Set<import('node:net').Socket>();

  constructor(models: Record<string, ModelSpec> = DEFAULT_MODELS) {
    this.models = { ...models };
  }

  get url(): string {
    const address = this.#server?.address() as AddressInfo | null;
    if (!address) throw new Error('double not started');
    return `http://127.0.0.1:${address.port}`;
  }

  /** Queue model turns; each /api/chat takes the next one. */
  script(...turns: Script[]): this {
    this.#script.push(...turns);
    return this;
  }

  get pending(): number {
    return this.#script.length;
  }

  async start(port = 0): Promise<this> {
    this.#tokenizer = await loadTokenizer();
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify({ error: String(error) }));
      });
    });
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.#server?.listen(port, '127.0.0.1', resolve));
    return this;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url ?? '/';
    if (path === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      return void res.end('Ollama is running');
    }
    if (path === '/api/version') return json(res, 200, { version: '0.12.6' });
    if (path === '/api/tags') {
      return json(res, 200, {
        models: Object.entries(this.models).map(([name, spec]) => ({
          name, model: name, modified_at: new Date(0).toISOString(), size: 4_683_087_332, digest: 'f'.repeat(64),
          details: { parent_model: '', format: 'gguf', family: spec.family ?? 'qwen2', families: [spec.family ?? 'qwen2'], parameter_size: '7.6B', quantization_level: 'Q4_K_M' },
        })),
      });
    }
    if (path === '/api/ps') return json(res, 200, { models: [...this.loadedModels].map((name) => ({ name, model: name, size: 4_683_087_332, context_length: 4096 })) });
    const text = await body(req);
    if (text === '') return json(res, 400, { error: 'missing request body' });
    let request: Record<string, unknown>;
    try {
      request = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      return json(res, 400, { error: String(error) });
    }
    const model = typeof request.model === 'string' ? request.model : '';
    if (model === '') return json(res, 400, { error: 'model is required' });
    const spec = this.models[model];
    if (path === '/api/show') {
      this.shows.push(model);
      if (spec === undefined) return json(res, 404, { error: `model '${model}' not found` });
      const arch = spec.family ?? 'qwen2';
      const info: Record<string, unknown> = { 'general.architecture': arch, [`${arch}.embedding_length`]: 3584 };
      if (spec.contextLength !== undefined) info[`${arch}.context_length`] = spec.contextLength;
      return json(res, 200, {
        modelfile: '', parameters: '', template: '{{ .Prompt }}', details: { format: 'gguf', family: arch },
        model_info: info, ...(spec.capabilities.length > 0 ? { capabilities: spec.capabilities } : {}), modified_at: new Date(0).toISOString(),
      });
    }
    if (path !== '/api/chat') return json(res, 404, { error: '404 page not found' });
    if (spec === undefined) return json(res, 404, { error: `model '${model}' not found` });
    const chat = request as unknown as RecordedChat;
    // A load request: no messages (notes/ollama-api.md); keep_alive 0 unloads.
    if ((chat.messages ?? []).length === 0) {
      const unload = request.keep_alive === 0 || request.keep_alive === '0';
      this.loads.push({ model, keep_alive: request.keep_alive });
      if (unload) this.loadedModels.delete(model);
      else this.loadedModels.add(model);
      return json(res, 200, { model, created_at: new Date().toISOString(), message: { role: 'assistant', content: '' }, done_reason: unload ? 'unload' : 'load', done: true });
    }
    this.loadedModels.add(model);
    if (chat.tools !== undefined && chat.tools.length > 0 && !spec.capabilities.includes('tools')) {
      return json(res, 400, { error: `registry.ollama.ai/library/${model} does not support tools` });
    }
    for (const message of chat.messages ?? []) {
      for (const call of message.tool_calls ?? []) {
        if (typeof call.function.arguments === 'string') {
          return json(res, 400, { error: 'json: cannot unmarshal string into Go struct field ChatRequest.messages.tool_calls.function.arguments of type api.ToolCallFunctionArguments' });
        }
      }
    }
    chat.prompt_eval_count = this.#count(chat);
    this.chats.push(chat);
    const next = this.#script.shift();
    if (next === undefined) return json(res, 500, { error: 'test double: no scripted turn left' });
    await this.#reply(req, res, chat, typeof next === 'function' ? next(chat) : next);
  }

  async #reply(req: IncomingMessage, res: ServerResponse, chat: RecordedChat, turn: ScriptedTurn): Promise<void> {
    if (turn.drop === true) return void req.socket.destroy();
    if (turn.status !== undefined) return json(res, turn.status, { error: turn.error ?? 'error' });
    let gone = false;
    res.on('close', () => {
      if (!res.writableFinished) {
        gone = true;
        this.cancelled += 1;
      }
    });
    const stream = chat.stream !== false;
    const chunk = (message: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      JSON.stringify({ model: chat.model, created_at: new Date().toISOString(), message: { role: 'assistant', content: '', ...message }, done: false, ...extra });
    const lines: string[] = [];
    if (turn.thinking !== undefined) lines.push(chunk({ thinking: turn.thinking }));
    for (const piece of turn.content ?? []) lines.push(chunk({ content: piece }));
    if (turn.tool_calls !== undefined) {
      lines.push(chunk({
        tool_calls: turn.tool_calls.map((call, index) => ({
          id: `call_${Math.random().toString(36).slice(2, 10).padEnd(8, '0')}`,
          function: { index, name: call.name, arguments: call.arguments },
        })),
      }));
    }
    const evalCount = (turn.content ?? []).length + (turn.tool_calls?.length ?? 0) * 10;
    const final = JSON.stringify({
      model: chat.model, created_at: new Date().toISOString(), message: { role: 'assistant', content: '' },
      done_reason: turn.done_reason ?? 'stop', done: true, total_duration: 182_242_375, load_duration: 41_295_167,
      prompt_eval_count: chat.prompt_eval_count, prompt_eval_duration: 24_573_166, eval_count: evalCount, eval_duration: 115_959_084,
    });
    if (!stream) {
      const merged = { content: (turn.content ?? []).join(''), ...(turn.tool_calls ? { tool_calls: turn.tool_calls.map((c) => ({ function: c })) } : {}) };
      return json(res, 200, { ...(JSON.parse(final) as object), message: { role: 'assistant', ...merged } });
    }
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
    if (turn.hold !== undefined) await turn.hold;
    await delay(turn.firstTokenDelayMs);
    for (const [i, line] of lines.entries()) {
      if (gone) return;
      if (i > 0) await delay(turn.pieceDelayMs);
      res.write(`${line}\n`);
    }
    if (turn.reset === true) {
      await new Promise<void>((resolve) => res.write('', () => resolve())); // what was written arrives first
      return void req.socket.destroy();
    }
    if (turn.midStreamError !== undefined) return void res.end(`${JSON.stringify({ error: turn.midStreamError })}\n`);
    if (turn.truncate === true) return void res.end();
    res.end(`${final}\n`);
  }

  /** Tokens of the prompt as Qwen2.5's template renders it, after dropping what num_ctx cannot hold. */
  #count(chat: RecordedChat): number {
    const tokenizer = this.#tokenizer;
    if (tokenizer === undefined) return 0;
    const messages = [...(chat.messages ?? [])];
    const limit = chat.options?.num_ctx ?? 4096;
    let count = tokenizer.count(renderQwen(messages, chat.tools));
    // Like the server: drop whole old messages, keeping the system messages and the last one.
    while (count > limit) {
      const oldest = messages.findIndex((m, i) => m.role !== 'system' && i < messages.length - 1);
      if (oldest === -1) break;
      messages.splice(oldest, 1);
      count = tokenizer.count(renderQwen(messages, chat.tools));
    }
    return count;
  }
}

/** Qwen2.5's chat template, as Ollama's qwen2.5 model renders it. */
export function renderQwen(messages: RecordedChat['messages'], tools?: RecordedChat['tools']): string {
  let out = '';
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
  if (system !== '' || (tools?.length ?? 0) > 0) {
    out += '<|im_start|>system\n';
    if (system !== '') out += system;
    if (tools !== undefined && tools.length > 0) {
      out += '\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n'
        + 'You are provided with function signatures within <tools></tools> XML tags:\n<tools>';
      for (const tool of tools) out += `\n{"type": "function", "function": ${JSON.stringify(tool.function)}}`;
      out += '\n</tools>\n\nFor each function call, return a json object with function name and arguments within '
        + '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>';
    }
    out += '<|im_end|>\n';
  }
  for (const m of messages) {
    if (m.role === 'user') out += `<|im_start|>user\n${m.content}<|im_end|>\n`;
    if (m.role === 'tool') out += `<|im_start|>user\n<tool_response>\n${m.content}\n</tool_response><|im_end|>\n`;
    if (m.role === 'assistant') {
      out += '<|im_start|>assistant\n';
      if (m.content !== '') out += m.content;
      else if (m.tool_calls) {
        out += '<tool_call>\n';
        for (const c of m.tool_calls) out += `{"name": "${c.function.name}", "arguments": ${JSON.stringify(c.function.arguments)}}\n`;
        out += '</tool_call>';
      }
      out += '<|im_end|>\n';
    }
  }
  return `${out}<|im_start|>assistant\n`;
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(value));
}

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

function delay(ms: number | undefined): Promise<void> {
  return ms === undefined || ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}
