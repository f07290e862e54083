/**
 * What IRIS offers Home Assistant over Wyoming, built from the config in force: the
 * conversation engine (one conversation per HA `conversation_id`), the configured speech to
 * text, voice and wake word. The speech engines are made on first use, so a server that only
 * handles transcripts costs no models.
 */
import type { Config } from '../config/schema.js';
import type { Logger } from '../log.js';
import { Engines } from '../pipeline/engines.js';
import { wakeWordName, type WakeWordDetector } from '../pipeline/wakeword.js';
import type { Conversation } from '../conversation/engine.js';
import type { WyomingServices } from './server.js';

/** Home Assistant's conversations by id (the daemon keeps the pool): `open` throws for an id it does not take. */
export interface ConversationPool {
  open(id?: string): { conversation: Pick<Conversation, 'turn'> };
}

const ATTRIBUTION = { name: 'IRIS', url: '' };

/** `engines`: shared with the daemon's other voices; default: their own, stopped with the services. */
export function irisServices(config: () => Config, conversations: ConversationPool, log: Logger, shared?: Engines): WyomingServices {
  const engines = shared ?? new Engines(config, log);
  let said = '';
  let detectors: { key: string; detector: WakeWordDetector }[] = [];
  const artifact = (name: string, description: string) => ({ name, description, attribution: ATTRIBUTION, installed: true, version: '1' });
  return {
    info() {
      const c = config();
      const wake = wakeWordName(c.assistant.wake_word);
      return {
        handle: [{ ...artifact('iris', 'IRIS: local tools, timers and reminders, MCP tools, Ollama'), models: [{ ...artifact('iris', 'IRIS conversation'), languages: ['en'] }], supports_handled_streaming: false }],
        asr: [{ ...artifact('iris-stt', 'IRIS speech to text'), models: [{ ...artifact(c.stt.engine, `IRIS speech to text (${c.stt.engine})`), languages: ['en'] }], supports_transcript_streaming: false }],
        tts: [{ ...artifact('iris-tts', 'IRIS voice'), voices: [{ ...artifact(c.tts.voice, `espeak-ng ${c.tts.voice}`), languages: ['en'] }], supports_synthesize_streaming: true }],
        wake: [{ ...artifact('iris-wake', 'IRIS wake word (openWakeWord)'), models: [{ ...artifact(wake, wake.replace(/_/g, ' ')), languages: ['en'], phrase: wake.replace(/_/g, ' ') }] }],
      };
    },
    conversation(conversationId) {
      let opened;
      try {
        opened = conversations.open(conversationId === undefined ? undefined : `ha:${conversationId}`);
      } catch {
        opened = conversations.open(); // an id IRIS does not take: a conversation of its own
      }
      const { conversation } = opened;
      return (text, signal, heard) => conversation.turn(text, signal, heard);
    },
    async stt() {
      const { engine, reason, started } = engines.stt();
      if (reason !== said) log.info(`wyoming speech to text: ${reason}`);
      said = reason;
      await started;
      return { stt: engine, minConfidence: config().stt.min_confidence };
    },
    tts: () => engines.tts(),
    // Detectors hold their audio: one per request in flight, kept for the next instead of
    // loading the models again each time.
    async wake() {
      const key = `${config().assistant.wake_word} ${config().assistant.wake_threshold} ${config().assistant.wake_check_from}`;
      const idle = detectors.filter((d) => d.key === key);
      const kept = idle.pop();
      detectors = detectors.filter((d) => d !== kept);
      const detector = kept?.detector ?? await engines.wake();
      detector.reset();
      return { detector, release: () => void detectors.push({ key, detector }) };
    },
    async stop() {
      if (shared === undefined) await engines.stop();
    },
  };
}
