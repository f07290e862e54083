/**
 * Spoken announcements wait for the voice loop to be idle, repeat to a limit, and stop when the
 * wake word acknowledges them. Fake timers: the repeats are seconds apart.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { Announcer } from '../src/daemon/announcer.js';
import { createLogger, silentLogger } from '../src/log.js';
import { AudioError } from '../src/pipeline/capture.js';

function setup() {
  const said: string[] = [];
  let idle = false;
  let playing: (() => void) | undefined;
  const config = parseConfig('[audio]\nannounce_repeats = 3\nannounce_every_s = 10\n', 'config');
  const announcer = new Announcer({
    tts: { synthesize: (text) => Promise.resolve(Buffer.from(text)) },
    sink: {
      play: (wav, signal) =>
        new Promise<void>((resolve) => {
          said.push(wav.toString());
          playing = resolve;
          signal.addEventListener('abort', () => resolve(), { once: true });
        }),
    },
    isIdle: () => idle,
    config: () => config,
    log: silentLogger,
  });
  return {
    announcer,
    said,
    setIdle: (value: boolean) => (idle = value),
    finishPlaying: () => playing?.(),
  };
}

const timer = { kind: 'timer' as const, text: 'Your tea timer is done.', id: '1', due: '2026-11-22T10:00:00Z' };

describe('announcements', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('waits until nothing is being said or heard, then repeats every announce_every_s up to the limit', async () => {
    const { announcer, said, setIdle, finishPlaying } = setup();
    announcer.announce(timer);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(said).toEqual([]); // a conversation is in progress
    setIdle(true);
    await vi.advanceTimersByTimeAsync(300);
    expect(said).toEqual([timer.text]);
    finishPlaying();
    await vi.advanceTimersByTimeAsync(9_000);
    expect(said).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_100);
    expect(said).toHaveLength(2);
    finishPlaying();
    await vi.advanceTimersByTimeAsync(10_100);
    finishPlaying();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(said).toHaveLength(3);
    expect(announcer.pending).toBe(0);
  });

  it('stops at once, and for good, when the wake word acknowledges it', async () => {
    const { announcer, said, setIdle } = setup();
    setIdle(true);
    announcer.announce(timer);
    await vi.advanceTimersByTimeAsync(10);
    expect(said).toHaveLength(1);
    announcer.acknowledge(); // mid-sentence: playback is aborted
    await vi.advanceTimersByTimeAsync(60_000);
    expect(said).toHaveLength(1);
    expect(announcer.pending).toBe(0);
  });

  it('says a timer missed while IRIS was off once', async () => {
    const { announcer, said, setIdle, finishPlaying } = setup();
    setIdle(true);
    announcer.announce({ ...timer, kind: 'missed', text: 'While I was off, your tea timer was due.' });
    await vi.advanceTimersByTimeAsync(10);
    finishPlaying();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(said).toHaveLength(1);
  });

  it('with no speaker that works ([audio] output = ""), logs that it could not say it, never that it did', async () => {
    const lines: string[] = [];
    const config = parseConfig('[audio]\noutput = ""\nannounce_repeats = 2\nannounce_every_s = 10\n', 'config');
    const announcer = new Announcer({
      tts: { synthesize: (text) => Promise.resolve(Buffer.from(text)) },
      sink: { play: () => Promise.reject(new AudioError('audio_output', 'speaker "" failed: aplay: main:850: audio open error: No such file or directory')) },
      isIdle: () => true,
      config: () => config,
      log: createLogger('announce', { write: (line) => lines.push(line), journald: false }),
    });
    announcer.announce(timer);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(lines).toEqual([
      'info announce: timer #1: Your tea timer is done.',
      'warn announce: could not say timer #1 (1 of 2): speaker "" failed: aplay: main:850: audio open error: No such file or directory',
      'warn announce: could not say timer #1 (2 of 2): speaker "" failed: aplay: main:850: audio open error: No such file or directory',
    ]);
    expect(announcer.pending).toBe(0);
  });
});
