/**
 * The daemon's own microphone and speaker over real ALSA devices: the real `iris` (daemon and
 * doctor) records with arecord and plays with aplay on PCMs of a private ALSA config, and what
 * aplay plays reaches arecord 120 ms later through a room served in real time
 * (helpers/alsa-room.ts). IRIS talks (a reminder said aloud, with "hey jarvis" in it); a person
 * says "hey jarvis, what time is it" over it.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EchoReference } from '../src/pipeline/echo.js';
import { Speaker } from '../src/pipeline/playback.js';
import { encodeWav } from '../src/pipeline/wav.js';
import { AlsaRoom } from './helpers/alsa-room.js';
import { iris, startIris, waitForLine } from './helpers/cli.js';
import { closedPort } from './helpers/net.js';
import { commandSamples } from './helpers/speech.js';
import { tempDir } from './helpers/tmp.js';

const tools = ['arecord', 'aplay'].every((tool) => spawnSync(tool, ['--version']).status === 0);

let room: AlsaRoom | undefined;
const priority = getPriority();
afterEach(async () => {
  await room?.close();
  room = undefined;
  setPriority(priority);
});

/**
 * A private config and state on this test's room. The daemon (and the aplay and arecord it
 * starts) and the room run at a higher priority than the other work sharing this machine: at a
 * load of 9 aplay took 4-40 ms from its spawn to its first sample (raised: 0-18 ms), and IRIS
 * measures that as part of the delay.
 */
async function onDevices(delayMs: number, input = 'mic'): Promise<{ vars: Record<string, string>; room: AlsaRoom }> {
  const dir = tempDir('iris-alsa-');
  room = new AlsaRoom(join(dir, 'room'), delayMs, 0.7); // IRIS about as loud as the person at the microphone
  try {
    setPriority(-10); // the room's clock too
  } catch { /* not allowed here */ }
  writeFileSync(join(dir, 'config'), `[ollama]\nurl = "http://127.0.0.1:${await closedPort()}"\n[assistant]\ntimezone = "UTC"\nfollow_up_s = 0\n[audio]\ninput = "${input}"\noutput = "spk"\nearcon = false\nannounce_every_s = 60\n`);
  return { room, vars: { ...room.env, IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') } };
}

function raise(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) setPriority(child.pid, -10);
  } catch { /* not allowed here: the timing is the machine's */ }
}

/**
 * A delay IRIS measured, against the room's `injectedMs`. IRIS's clocks add to the room's delay
 * what it cannot tell apart from it: aplay's own start after it was spawned (0-18 ms, under a
 * load of 10-12 on this shared machine) and the live clock's anchor (up to 10 ms late by design,
 * echo.ts JITTER_SAMPLES). Instrumented runs: 125-141 ms over a room of 120, each the sum of the
 * three to the millisecond; in the test 127-156 ms. The room places a sound within 3 ms.
 */
const near = (injectedMs: number) => (ms: number): boolean => ms >= injectedMs - 10 && ms <= injectedMs + 40;

const until = async (check: () => boolean, timeoutMs: number): Promise<boolean> => {
  const end = performance.now() + timeoutMs;
  while (!check() && performance.now() < end) await new Promise((r) => setTimeout(r, 50));
  return check();
};

describe.skipIf(!tools)(`the daemon on ALSA devices${tools ? '' : ' (skipped: arecord/aplay missing, apt install alsa-utils)'}`, () => {
  // Real time on a shared machine: aplay's start and the live clock's anchor reached +36 ms of the
  // +40 allowed once in 13 runs (a load of 12), so it is tried twice; a broken path fails both.
  it('hears a person say the wake word over its own voice, not its own "hey jarvis", and measures the room\'s delay', { timeout: 30_000, retry: 1 }, async () => {
    const { vars, room } = await onDevices(120);
    const daemon = startIris(['daemon', '--log-level', 'info'], vars);
    raise(daemon);
    const lines: string[] = [];
    daemon.stderr?.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
    try {
      await waitForLine(daemon, /listening for "hey_jarvis"/);
      const text = 'check the oven. The cake needs ten more minutes. Hey jarvis, the cake, the cake is almost done, so take it out soon, then let it cool on the rack by the window before you cut it';
      expect((await iris(['tools', 'call', 'set_reminder', JSON.stringify({ at: 'in 1 second', text })], vars)).code).toBe(0);
      expect(await until(() => room.soundedS() > 0.2, 10_000)).toBe(true);
      const from = room.now();
      await new Promise((r) => setTimeout(r, 7_000)); // IRIS talks: its "hey jarvis" about 4 s in
      const status = JSON.parse((await iris(['status', '--json'], vars)).stdout) as { voice: { echo?: { canceller: string; delay_ms?: number } } };
      const before = lines.filter((line) => /acknowledged|turn \d+:/.test(line));
      const played = room.soundedS(from);
      room.say(commandSamples('hey jarvis, what time is it', { padS: [0, 0.3] }));
      const heard = await until(() => lines.some((line) => line.includes('acknowledged: #1')), 8_000);

      expect(played, 'IRIS\'s speech through aplay').toBeGreaterThan(3);
      expect(before, lines.join('\n')).toEqual([]); // IRIS's own voice, its "hey jarvis" included, did not wake it
      expect(status.voice.echo?.canceller).toBe('speexdsp');
      expect(status.voice.echo?.delay_ms).toSatisfy(near(120));
      expect(lines.some((line) => /echo canceller speexdsp: speaker-to-microphone delay \d+ ms/.test(line))).toBe(true);
      expect(heard, lines.join('\n')).toBe(true); // the person's wake word over IRIS: the reminder is stopped
    } finally {
      daemon.kill('SIGTERM');
    }
  });
});

describe.skipIf(!tools)(`iris doctor on ALSA devices${tools ? '' : ' (skipped: arecord/aplay missing, apt install alsa-utils)'}`, () => {
  /** `iris doctor` on this test's devices: its "echo canceller" line, and all it printed. */
  async function doctor(vars: Record<string, string>): Promise<{ echo: string; stdout: string }> {
    const child = startIris(['doctor'], vars);
    raise(child);
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    await new Promise((resolve) => child.once('close', resolve));
    return { echo: /^✓ echo canceller: (.*)$/m.exec(stdout)?.[1] ?? stdout, stdout };
  }

  it('reports the canceller and the delay it measured from the speaker to the microphone', { timeout: 30_000, retry: 1 }, async () => {
    const { echo, stdout } = await doctor((await onDevices(90)).vars);
    expect(stdout).toMatch(/✓ microphone: ALSA device "mic" records 16 kHz mono/);
    expect(echo).toMatch(/^speexdsp; speaker-to-microphone delay \d+ ms, measured on a test sentence/);
    expect(Number(/delay (\d+) ms/.exec(echo)?.[1]), echo).toSatisfy(near(90));
  });

  it('says why it could not measure the delay when the microphone cannot be opened', { timeout: 30_000 }, async () => {
    const { echo } = await doctor((await onDevices(90, 'nodev')).vars);
    expect(echo).toMatch(/^speexdsp; the delay could not be measured: microphone "nodev" stopped: .*audio open error/);
  });
});

describe('the speaker path with a real player', () => {
  // Spawning aplay took 3-24 ms here: the clip is placed where the player has it, not before.
  it('stamps a clip with the clock once the player has started it', async () => {
    let clock = 1000;
    const slowStart = { play: () => { clock += 400; return Promise.resolve(); } }; // 25 ms to spawn
    const speaker = new Speaker(slowStart, new EchoReference(4), () => clock);
    await speaker.play(encodeWav(new Int16Array(1600).fill(1000)), new AbortController().signal);
    expect(speaker.reference.sounding(1000, 1400)).toBe(false);
    expect(speaker.reference.sounding(1400, 1401)).toBe(true);
  });
});
