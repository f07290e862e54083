/**
 * The daemon's own audio path, through ALSA (arecord from a virtual microphone, aplay into a
 * file): a spoken question is answered aloud, due timers are announced aloud, and a missing
 * microphone is reported and retried while text requests keep working.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { concatSamples } from '../src/pipeline/audio.js';
import { forTheEar } from '../src/pipeline/ear.js';
import { createEspeak } from '../src/pipeline/espeak.js';
import { decodeWav } from '../src/pipeline/wav.js';
import { virtualAudio } from './helpers/alsa.js';
import { iris, startIris, waitForLine } from './helpers/cli.js';
import { commandSamples, commandWav, soxStat, speechWav } from './helpers/speech.js';
import { tempDir } from './helpers/tmp.js';
import { closedPort } from './helpers/net.js';

/** RMS of 16-bit samples in a raw file, 0–1. */
function rms(file: string): number {
  const pcm = readFileSync(file);
  let sum = 0;
  for (let i = 0; i + 1 < pcm.length; i += 2) sum += (pcm.readInt16LE(i) / 32768) ** 2;
  return Math.sqrt(sum / Math.max(1, pcm.length / 2));
}

async function daemonEnv(config: string, mic: Int16Array) {
  const audio = virtualAudio(mic);
  const dir = tempDir();
  const port = await closedPort();
  writeFileSync(join(dir, 'config'), `[ollama]\nurl = "http://127.0.0.1:${port}"\n${config}`);
  return { audio, vars: { HOME: audio.home, IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') } };
}

describe('iris daemon: the voice through ALSA', () => {
  it('hears "hey jarvis, what time is it" from the microphone and answers aloud; logs one line per turn', async () => {
    const mic = concatSamples([commandSamples('hey jarvis, what time is it')]);
    const { audio, vars } = await daemonEnv('[assistant]\ntimezone = "UTC"\nfollow_up_s = 0\n[audio]\ninput = "fakemic"\noutput = "tofile"\nearcon = false\n', mic);
    const daemon = startIris(['daemon', '--log-level', 'info'], vars);
    try {
      const turn = await waitForLine(daemon, /turn 1: answered/);
      expect(turn).toMatch(/wake 1\.\d\d s, end of speech [23]\.\d\d s, stt \d+(\.\d)? ms, first token [\d.]+ ms, first audio \d+(\.\d)? ms, total \d+(\.\d)? ms, "what time is it"/);
      expect(existsSync(audio.speaker)).toBe(true);
      expect(statSync(audio.speaker).size).toBeGreaterThan(20_000); // "It's 3:04 PM." at 22 kHz
      expect(rms(audio.speaker)).toBeGreaterThan(0.02);
    } finally {
      daemon.kill('SIGTERM');
    }
  });

  it('reports a microphone that vanishes mid-stream, and hears again once it is back', async () => {
    const mic = concatSamples([commandSamples('hey jarvis, what time is it')]);
    const { vars } = await daemonEnv('[assistant]\nfollow_up_s = 0\n[audio]\ninput = "fakemic"\noutput = "tofile"\nearcon = false\n', mic);
    const daemon = startIris(['daemon', '--log-level', 'info'], vars);
    try {
      await waitForLine(daemon, /turn 1: answered/);
      // Unplugged: arecord dies with the device. The file device replays from the start when reopened.
      const arecord = execFileSync('pgrep', ['-P', String(daemon.pid), '-x', 'arecord'], { encoding: 'utf8' }).trim();
      process.kill(Number(arecord), 'SIGKILL');
      expect(await waitForLine(daemon, /no microphone: .*retrying in 2 s/)).toMatch(/microphone "fakemic"/);
      const status = JSON.parse((await iris(['status', '--json'], vars)).stdout) as { voice: { state: string } };
      expect(['no_microphone', 'listening']).toContain(status.voice.state);
      expect(await waitForLine(daemon, /turn 2: answered/)).toMatch(/"what time is it"/);
      expect(JSON.parse((await iris(['status', '--json'], vars)).stdout)).toMatchObject({ voice: { state: 'listening' } });
    } finally {
      daemon.kill('SIGTERM');
    }
  });

  it('a reload applies everywhere: a new home zone answers at once, a microphone turned on restarts the voice', async () => {
    const mic = concatSamples([commandSamples('hey jarvis, what time is it')]);
    const voiceOff = '[assistant]\ntimezone = "Europe/Berlin"\nfollow_up_s = 0\n[audio]\ninput = ""\noutput = "tofile"\nearcon = false\n';
    const { vars } = await daemonEnv(voiceOff, mic);
    const daemon = startIris(['daemon', '--log-level', 'info'], vars);
    try {
      await waitForLine(daemon, /ready:/);
      const config = readFileSync(vars.IRIS_CONFIG, 'utf8');
      writeFileSync(vars.IRIS_CONFIG, config.replace('Europe/Berlin', 'Asia/Tokyo').replace('input = ""', 'input = "fakemic"'));
      const restarted = waitForLine(daemon, /config re-read; restarting the voice for audio\.input/);
      const heard = waitForLine(daemon, /turn 1: answered/); // the microphone, once the voice restarted
      expect((await iris(['reload'], vars)).code).toBe(0);
      await restarted;
      const tokyo = new Intl.DateTimeFormat('en-US', { timeZone: 'Asia/Tokyo', hour: 'numeric', minute: '2-digit' }).format(new Date()).replace(/\s/g, ' ');
      const answer = (await iris(['ask', 'what time is it'], vars)).stdout;
      const after = new Intl.DateTimeFormat('en-US', { timeZone: 'Asia/Tokyo', hour: 'numeric', minute: '2-digit' }).format(new Date()).replace(/\s/g, ' ');
      expect([tokyo, after].some((t) => answer.startsWith(`It's ${t}`))).toBe(true);
      expect(JSON.parse((await iris(['status', '--json'], vars)).stdout)).toMatchObject({ home_zone: 'Asia/Tokyo' });
      expect(await heard).toMatch(/"what time is it"/);
    } finally {
      daemon.kill('SIGTERM');
    }
  });

  it('says a due timer aloud, repeated until the limit', async () => {
    const { audio, vars } = await daemonEnv('[audio]\ninput = ""\noutput = "tofile"\nannounce_repeats = 2\nannounce_every_s = 2\n', new Int16Array(0));
    const daemon = startIris(['daemon', '--log-level', 'info'], vars);
    try {
      await waitForLine(daemon, /ready:/);
      const announced = waitForLine(daemon, /timer #1: .*tea/i);
      expect((await iris(['tools', 'call', 'set_timer', '{"duration":"1 second","label":"tea"}'], vars)).code).toBe(0);
      await announced;
      await waitForLine(daemon, /said timer #1 \(1 of 2\)/);
      expect(rms(audio.speaker)).toBeGreaterThan(0.02); // the file plugin keeps the latest clip
      await waitForLine(daemon, /said timer #1 \(2 of 2\)/);
    } finally {
      daemon.kill('SIGTERM');
    }
  });

  it('reports a missing microphone, retries, and still answers text', async () => {
    const { vars } = await daemonEnv('[audio]\ninput = "hw:9,9"\noutput = "tofile"\n', new Int16Array(0));
    const daemon = startIris(['daemon', '--log-level', 'info'], vars);
    try {
      const line = await waitForLine(daemon, /no microphone: .*hw:9,9.*retrying in \d+ s/);
      expect(line).toMatch(/microphone "hw:9,9" stopped/);
      const status = await iris(['status', '--json'], vars);
      expect(JSON.parse(status.stdout)).toMatchObject({ voice: { state: 'no_microphone' } });
      expect((await iris(['status'], vars)).stdout).toMatch(/^voice: no microphone \(microphone "hw:9,9" stopped/m);
      const ask = await iris(['ask', 'what is 2 plus 2'], vars);
      expect(ask).toMatchObject({ code: 0, stdout: "That's 4.\n" });
    } finally {
      daemon.kill('SIGTERM');
    }
  });
});

describe('iris listen', () => {
  /** `iris listen --json` on `file` with an empty config (every default) and no daemon; its report, and the reply WAV. */
  async function listen(file: string, ...stages: string[]): Promise<{ report: Record<string, unknown>; out: string }> {
    const dir = tempDir();
    const out = join(dir, 'reply.wav');
    writeFileSync(join(dir, 'config'), ''); // a named config must exist
    const vars = { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 's') };
    const run = await iris(['listen', '--file', file, '--out', out, '--json', ...stages], vars);
    expect(run.code).toBe(0);
    return { report: JSON.parse(run.stdout) as Record<string, unknown>, out };
  }

  it('runs the pipeline over "hey jarvis, what time is it in tokyo" and writes the spoken time', async () => {
    const { report, out } = await listen(commandWav('hey jarvis, what time is it in tokyo'));
    expect(report).toMatchObject({ wake: { detected: true, word: 'hey_jarvis' }, transcript: 'what time is it in tokyo', outcome: 'answered', out, route: 'local' });
    expect(report.reply).toMatch(/^It's \d{1,2}:\d{2} [AP]M in Tokyo\.$/);
    expect(report).toHaveProperty('timings_ms.first_audio');
    const { length, rms: level } = soxStat(out);
    expect(length).toBeGreaterThan(1);
    expect(level).toBeGreaterThan(0.02);
    // The WAV is that reply spoken, sample for sample (espeak-ng is deterministic), as written for the ear ("3:04" → "3 oh 4").
    const spoken = await createEspeak({ voice: 'en-us', rateWpm: 175 }).synthesize(forTheEar(report.reply as string));
    expect(decodeWav(readFileSync(out))).toEqual(decodeWav(spoken));
  });

  it('has ask\'s fields when nothing was understood: what IRIS said back, no tool, and the confidence', async () => {
    const { report } = await listen(speechWav('hey jarvis, play some jazz music'));
    expect(report).toMatchObject({ wake: { detected: true }, outcome: 'not_understood', reply: "Sorry, I didn't catch that.", route: 'local', tool_calls: [] });
    expect(report.confidence).toBeLessThan(0.5);
  });

  it('runs part of the pipeline: from stt the recording is the command; ending at stt gives the words, at conversation the answer unspoken', async () => {
    const words = await listen(commandWav('what time is it in tokyo'), '--start', 'stt', '--end', 'stt');
    expect(words.report).toMatchObject({ wake: { detected: false, skipped: true }, transcript: 'what time is it in tokyo', outcome: 'answered' });
    expect(words.report).not.toHaveProperty('reply');
    expect(existsSync(words.out)).toBe(false);
    const answer = await listen(commandWav('hey jarvis, what time is it in tokyo'), '--end', 'conversation');
    expect(answer.report).toMatchObject({ wake: { detected: true }, transcript: 'what time is it in tokyo', outcome: 'answered', route: 'local' });
    expect(answer.report.reply).toMatch(/in Tokyo\.$/);
    expect(existsSync(answer.out)).toBe(false); // nothing spoken
    const dir = tempDir();
    writeFileSync(join(dir, 'config'), '');
    const refused = await iris(['listen', '--file', commandWav('what time is it'), '--start', 'stt', '--end', 'wake'], { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 's') });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('cannot end at the wake word');
  });

  it('has ask\'s fields when the wake word was heard and nothing followed', async () => {
    const { report } = await listen(commandWav('hey jarvis', { padS: [0.3, 1.5] }));
    expect(report).toMatchObject({ wake: { detected: true }, outcome: 'no_speech', reply: '', route: 'local', tool_calls: [] });
  });

  it('says when no wake word was heard, with exit code 0', async () => {
    const { report } = await listen(speechWav('what time is it'));
    expect(report).toMatchObject({ wake: { detected: false }, outcome: 'no_wake' });
    expect(report).not.toHaveProperty('transcript');
  });
});
