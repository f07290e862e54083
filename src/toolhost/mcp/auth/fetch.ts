/** fetch for sign-in traffic: answers read whole, bounded in size and time. */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isAbortError, messageOf } from '../../../errors.js';
import { timerMs } from '../../../timer.js';
import { SignInError } from './errors.js';

/** Metadata, registration and token answers are small: a bigger one is broken or hostile (bytes). */
const MAX_AUTH_BODY_BYTES = 256 * 1024;

/**
 * fetch for everything but the MCP endpoint itself (metadata, registration, tokens): answers
 * are read whole, at most MAX_AUTH_BODY_BYTES, within `timeoutMs`, so a huge or slow answer
 * is a clear error instead of a hang or an out-of-memory daemon.
 */
export function boundedFetch(timeoutMs: number): FetchLike {
  return async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    const where = new URL(url).origin;
    const signal = AbortSignal.timeout(timerMs(timeoutMs));
    try {
      const response = await fetch(input, { ...init, signal });
      const chunks: Uint8Array[] = [];
      let size = 0;
      const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array> | undefined;
      for (let chunk = await reader?.read(); chunk !== undefined && !chunk.done; chunk = await reader?.read()) {
        size += chunk.value.byteLength;
        if (size > MAX_AUTH_BODY_BYTES) {
          await reader?.cancel();
          throw new SignInError('bad_metadata', `${url} answered with more than ${MAX_AUTH_BODY_BYTES / 1024} KiB; refused`);
        }
        chunks.push(chunk.value);
      }
      const body = size === 0 || response.status === 204 || response.status === 304 ? null : Buffer.concat(chunks);
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    } catch (error) {
      if (error instanceof SignInError) throw error;
      if (isAbortError(error) || signal.aborted) throw new SignInError('unreachable', `${url} did not answer within ${timeoutMs / 1000} s`);
      throw new SignInError('unreachable', `${where} could not be reached (${messageOf(error)})`, { cause: error });
    }
  };
}
