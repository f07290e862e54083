/**
 * The `ChatBackend` seam: where the conversation meets a language model. One streaming chat
 * call and one capability look-up, both cancellable. Only the adapter (ollama.ts) knows the
 * vendor's client; tests put a real HTTP test double behind the same adapter.
 */
import { IrisError } from '../errors.js';

export interface ToolCall {
  name: string;
  /** An object on the native API; some models send a JSON string, which repair handles. */
  arguments: Record<string, unknown> | string;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  thinking?: string;
  tool_calls?: ToolCall[];
  /** On `tool` messages: which tool answered. */
  tool_name?: string;
}

/** A tool as the model is shown it (Ollama's `tools[]` entry). */
export interface ModelTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  /** Omitted for models without the `tools` capability. */
  tools?: ModelTool[];
  think: boolean;
  keepAlive: string;
  options: { num_ctx: number; num_predict: number; temperature: number };
}

/** One streamed piece: text, thinking, whole tool calls, and on the last one the counts. */
export interface ChatChunk {
  content: string;
  thinking?: string;
  tool_calls?: ToolCall[];
  done: boolean;
  done_reason?: string;
  prompt_eval_count?: number;
  eval_count?: number;
}

export interface ModelInfo {
  name: string;
  capabilities: readonly string[];
  /** The model's trained maximum context, when the server says. */
  contextLength?: number;
}

export interface ChatBackend {
  /** Where the backend lives, for messages ("http://127.0.0.1:11434"). */
  readonly url: string;
  chat(request: ChatRequest, signal: AbortSignal): AsyncIterable<ChatChunk>;
  show(model: string, signal: AbortSignal): Promise<ModelInfo>;
  /** Load `model` and keep it `keepAlive` ("30m"), so the next chat does not wait for it. */
  load?(model: string, keepAlive: string, signal: AbortSignal): Promise<void>;
  /** The models loaded now. */
  loaded?(signal: AbortSignal): Promise<string[]>;
}

export type ChatErrorCode =
  | 'unreachable'
  | 'model_not_found'
  | 'no_tools'
  | 'timeout'
  | 'stream_broken'
  | 'busy'
  | 'rejected';

/** A model call that failed, with a code the conversation turns into a spoken sentence. */
export class ChatError extends IrisError {
  override name = 'ChatError' as const;
  declare readonly code: ChatErrorCode;

  constructor(code: ChatErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
