import { describe, expect, it } from 'vitest';
import { statusLines } from '../src/cli/commands/status.js';
import type { DaemonStatus } from '../src/daemon/protocol.js';

const status: DaemonStatus = {
  pid: 42, uptime_s: 60, config: '/etc/iris/config', state_dir: '/var/lib/iris', home_zone: 'Europe/Berlin',
  ollama: { url: 'http://127.0.0.1:11434', model: 'qwen2.5:3b', loaded: true }, timers: 1, mcp: [], rooms: [],
  voice: { state: 'listening', detail: 'hey_jarvis, pocketsphinx' },
};

describe('iris status as text', () => {
  it('says what IRIS heard over its own voice and how its early answers went', () => {
    const lines = statusLines({
      ...status,
      voice: {
        ...status.voice,
        echo: { canceller: 'speexdsp', delay_ms: 93 },
        early_answers: { on: true, started: 3, taken_back: 1 },
        over_iris: { barge_ins: 2, stop_words: 1, own_wakes_ignored: 4 },
      },
    });
    expect(lines).toContain('echo canceller: speexdsp, speaker-to-microphone delay 93 ms');
    expect(lines).toContain('early answers: on, 3 started, 1 taken back because the person went on');
    expect(lines).toContain('heard over IRIS\'s voice: the wake word 2, "stop" 1; its own wake word ignored 4');
  });

  it('leaves the room lines out where the daemon has no microphone', () => {
    expect(statusLines(status).some((line) => /echo|early|over IRIS/.test(line))).toBe(false);
  });
});
