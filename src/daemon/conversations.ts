/**
 * The daemon's text conversations, one per client: each has its own history and its own
 * pending confirmation, so one client's "yes" never answers another's question. A client
 * names its conversation to continue it (`iris ask --conversation ID`); one that names none
 * gets a new one. The least recently used are dropped past a cap.
 */
import { randomUUID } from 'node:crypto';
import type { Conversation } from '../conversation/engine.js';

/** Conversations kept at once; a dropped one is forgotten (its pending call never runs). */
const MAX_CONVERSATIONS = 64;
const ID = /^[\w.:@-]{1,100}$/;

export class Conversations {
  readonly #byId = new Map<string, Conversation>();

  /** `create` makes the conversation a new id names. */
  constructor(private readonly create: (id: string) => Conversation) {}

  /** The conversation `id` names (a new one when it is unknown), or a new one with a new id. */
  open(id?: unknown): { id: string; conversation: Conversation } {
    if (id !== undefined && (typeof id !== 'string' || !ID.test(id))) {
      throw new Error('"conversation" must be 1–100 letters, digits or . _ : @ -');
    }
    const key = id ?? randomUUID();
    const conversation = this.#byId.get(key) ?? this.create(key);
    this.#byId.delete(key); // re-inserted last: Map order is recency
    this.#byId.set(key, conversation);
    for (const oldest of this.#byId.keys()) {
      if (this.#byId.size <= MAX_CONVERSATIONS) break;
      this.#byId.delete(oldest);
    }
    return { id: key, conversation };
  }

  get size(): number {
    return this.#byId.size;
  }
}
