/**
 * The Ollama adapter: the only file that imports the `ollama` npm client. Streams /api/chat,
 * reads /api/show once per model, and turns every failure into a `ChatError` with a code.
 * Cancellation goes through the client's stream iterator (`abort()`), so barge-in and
 * shutdown stop a generation at once.
 */
import { Ollama, type ChatResponse, type Message } from 'ollama';
import type { AbortableAsyncIterator } from 'ollama/browser';
import { isAbortError, messageOf } from '../errors.js';
import { ChatError, type ChatBackend, type ChatChunk, type ChatMessage, type ChatRequest, type ModelInfo } from './backend.js';

/** Failures of a reused connection that the server closed while it sat idle in the pool. */
const STALE_CONNECTION = /ECONNRESET|EPIPE|UND_ERR_SOCKET|socket hang up|other side closed/;

/** How long a non-streaming request (show) may take (ms); a dead host must not hang a turn. */
const SHOW_TIMEOUT_MS = 5_000;

export function createOllamaBackend(url: string): ChatBackend {
  const client = new Ollama({
    host: url,
    // The client cannot abort non-streaming calls; give them a deadline of their own.
    fetch: (input, init) => fetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(SHOW_TIMEOUT_MS) }),
  });
  /**
   * A client for one chat whose HTTP request ends with `signal`: Ollama answers only once the
   * first token exists, and until then the client has no stream to abort — a timed-out or
   * cancelled request must still close its connection, or Ollama generates on for nobody.
   * (`client.abort()` would end every conversation's stream, not just this one.)
   */
  const chatClient = (signal: AbortSignal): Ollama => new Ollama({
    host: url,
    fetch: (input, init) => fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal }),
  });
  const shown = new Map<string, Promise<ModelInfo>>();

  return {
    url,
    // Ollama's load request: /api/chat with no messages (notes/ollama-api.md). Plain fetch:
    // the client cannot abort a non-streaming call, and a load may take a minute.
    async load(model, keepAlive, signal) {
      const response = await fetch(`${url.replace(/\/$/, '')}/api/chat`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model, messages: [], keep_alive: keepAlive, stream: false }),
        signal,
      });
      await response.body?.cancel();
      if (!response.ok) throw new ChatError(response.status === 404 ? 'model_not_found' : 'rejected', `loading ${model} failed: HTTP ${response.status}`);
    },
    async loaded(signal) {
      const response = await fetch(`${url.replace(/\/$/, '')}/api/ps`, { signal });
      if (!response.ok) throw new ChatError('rejected', `/api/ps answered HTTP ${response.status}`);
      const body = (await response.json()) as { models?: { name?: unknown; model?: unknown }[] };
      return (body.models ?? []).map((m) => m.model ?? m.name).filter((name): name is string => typeof name === 'string' && name !== '');
    },
    async *chat(request: ChatRequest, signal: AbortSignal): AsyncIterable<ChatChunk> {
      if (signal.aborted) throw signal.reason;
      let stream: AbortableAsyncIterator<ChatResponse>;
      const requestClient = chatClient(signal);
      const send = () => requestClient.chat({
        model: request.model,
        messages: request.messages.map(toOllamaMessage),
        ...(request.tools === undefined ? {} : { tools: request.tools }),
        think: request.think,
        keep_alive: request.keepAlive,
        options: request.options,
        stream: true,
      });
      // A pooled keep-alive connection the server has just closed fails before the request is
      // read; sending once more on a fresh connection is safe then, and only then.
      const started = send().catch((error: unknown) => {
        if (signal.aborted || !STALE_CONNECTION.test(causeOf(error))) throw error;
        return send();
      });
      // Until the stream exists there is nothing to abort; abandon the wait instead.
      const aborted = new Promise<never>((_resolve, reject) => {
        const onAbort = (): void => reject(signal.reason as Error);
        signal.addEventListener('abort', onAbort, { once: true });
        void started.finally(() => signal.removeEventListener('abort', onAbort)).catch(() => undefined);
      });
      try {
        stream = await Promise.race([started, aborted]);
      } catch (error) {
        throw translate(error, url, request.model, signal);
      }
      const abort = (): void => stream.abort();
      signal.addEventListener('abort', abort, { once: true });
      let sawDone = false;
      try {
        for await (const part of stream) {
          const chunk: ChatChunk = { content: part.message?.content ?? '', done: part.done };
          if (part.message?.thinking) chunk.thinking = part.message.thinking;
          if (part.message?.tool_calls?.length) {
            chunk.tool_calls = part.message.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments }));
          }
          if (part.done) {
            sawDone = true;
            if (part.done_reason) chunk.done_reason = part.done_reason;
            if (typeof part.prompt_eval_count === 'number') chunk.prompt_eval_count = part.prompt_eval_count;
            if (typeof part.eval_count === 'number') chunk.eval_count = part.eval_count;
          }
          yield chunk;
        }
      } catch (error) {
        throw translate(error, url, request.model, signal, true);
      } finally {
        signal.removeEventListener('abort', abort);
        if (!sawDone) stream.abort();
      }
    },

    show(model: string, signal: AbortSignal): Promise<ModelInfo> {
      let info = shown.get(model);
      if (info === undefined) {
        info = client.show({ model }).then(
          (response) => {
            const modelInfo = response.model_info as unknown as Record<string, unknown> | undefined;
            const key = Object.keys(modelInfo ?? {}).find((k) => k.endsWith('.context_length'));
            const contextLength = key === undefined ? undefined : Number(modelInfo?.[key]);
            const result: ModelInfo = { name: model, capabilities: response.capabilities ?? [] };
            if (contextLength !== undefined && Number.isFinite(contextLength)) result.contextLength = contextLength;
            return result;
          },
          (error: unknown) => {
            shown.delete(model); // do not cache a failure: Ollama may come up, the model be pulled
            throw translate(error, url, model, signal);
          },
        );
        shown.set(model, info);
      }
      return info;
    },
  };
}

function toOllamaMessage(message: ChatMessage): Message {
  const out: Message = { role: message.role, content: message.content };
  if (message.thinking !== undefined) out.thinking = message.thinking;
  if (message.tool_name !== undefined) out.tool_name = message.tool_name;
  if (message.tool_calls !== undefined) {
    // Ollama rejects string arguments with a 400: always send objects back.
    out.tool_calls = message.tool_calls.map((c) => ({
      function: { name: c.name, arguments: typeof c.arguments === 'string' ? {} : c.arguments },
    }));
  }
  return out;
}

/** Any failure of the client as a `ChatError`; the turn's own abort passes through as it is. */
function translate(error: unknown, url: string, model: string, signal: AbortSignal, midStream = false): unknown {
  if (signal.aborted) return signal.reason ?? error;
  if (error instanceof ChatError) return error;
  const status = (error as { status_code?: number }).status_code;
  const text = messageOf(error);
  if (status === 404 || /not found/i.test(text)) {
    return new ChatError('model_not_found', `the model ${model} is not installed on ${url}; run: ollama pull ${model}`, { cause: error });
  }
  if (status === 400 && /does not support tools/i.test(text)) {
    return new ChatError('no_tools', `${model} does not support tools`, { cause: error });
  }
  if (status === 503) return new ChatError('busy', `Ollama at ${url} is busy`, { cause: error });
  if (status !== undefined) return new ChatError('rejected', `Ollama answered ${status}: ${text}`, { cause: error });
  if (isAbortError(error) || /timeout|timed out/i.test(text)) {
    return new ChatError('timeout', `Ollama at ${url} did not answer in time`, { cause: error });
  }
  if (midStream || /did not receive done/i.test(text)) {
    return new ChatError('stream_broken', `the answer from ${model} broke off: ${text}`, { cause: error });
  }
  return new ChatError('unreachable', `cannot reach Ollama at ${url} (${causeOf(error)})`, { cause: error });
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? messageOf(error);
}
