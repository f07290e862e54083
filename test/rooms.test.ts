/**
 * Rooms: IRIS as the brain of Wyoming satellites that behave as wyoming-satellite does on a
 * Raspberry Pi (test/helpers/wyoming-satellite.ts, written from the protocol). Each satellite's
 * microphone plays a flite command at real-time pace once the test says go; its speaker keeps
 * what IRIS sends back, and its event commands what it was told (transcript, synthesize, timers).
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeWav } from '../src/pipeline/wav.js';
import { iris, startIris, waitForLine } from './helpers/cli.js';
import { closedPort } from './helpers/net.js';
import { commandSamples, commandWav, soxStat } from './helpers/speech.js';
import { tempDir } from './helpers/tmp.js';
import { WyomingSatellite, type SatelliteOptions } from './helpers/wyoming-satellite.js';

const children: ChildProcess[] = [];
const servers: Server[] = [];
const satellites: WyomingSatellite[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const server of servers.splice(0)) server.close();
  for (const sat of satellites.splice(0)) sat.kill();
});

/** A satellite listening on a free port (or `port`), its microphone playing `speech` once told to go. */
async function satellite(name: string, speech: Int16Array, options: Partial<SatelliteOptions> = {}): Promise<WyomingSatellite> {
  const sat = new WyomingSatellite({ name: `${name} satellite`, speech, ...options });
  satellites.push(sat);
  return sat.start();
}

/** What a satellite's speaker played, as a WAV in `dir`. */
const heard = (dir: string, sat: WyomingSatellite): string => sat.heard(join(dir, `${sat.options.name.replace(/\W+/g, '-')}-${Date.now()}.wav`));

/** The daemon with `config` (no microphone of its own, pocketsphinx, Ollama unreachable: the local path answers). */
async function daemon(dir: string, config: string, stt = ''): Promise<{ child: ChildProcess; vars: { IRIS_CONFIG: string; IRIS_STATE_DIR: string; IRIS_SOCKET: string } }> {
  const ollama = await closedPort();
  writeFileSync(join(dir, 'config'), `[ollama]\nurl = "http://127.0.0.1:${ollama}"\n[assistant]\ntimezone = "UTC"\nfollow_up_s = 0\n[audio]\ninput = ""\noutput = "null"\n[stt]\nengine = "pocketsphinx"\n${stt}${config}`);
  const vars = { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') };
  const child = startIris(['daemon', '--log-level', 'info'], vars);
  if (process.env.ROOMS_DEBUG !== undefined) child.stderr?.on('data', (d: Buffer) => process.stderr.write(d));
  children.push(child);
  return { child, vars };
}

describe('rooms: IRIS as the brain of wyoming-satellite', () => {
  it('hears "hey jarvis, what time is it" on a satellite\'s stream and sends the spoken answer back; a satellite sending garbage is dropped without disturbing it', async () => {
    const dir = tempDir();
    const sat = await satellite('kitchen', commandSamples('hey jarvis, what time is it'));
    // A "satellite" that answers describe with bytes that are no Wyoming event.
    const bad = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.on('data', () => socket.write('this is not an event\n'));
    });
    servers.push(bad);
    await new Promise<void>((resolve) => bad.listen(0, '127.0.0.1', resolve));
    const badPort = (bad.address() as { port: number }).port;
    const { child, vars } = await daemon(dir, `[satellites.kitchen]\nuri = "tcp://127.0.0.1:${sat.port}"\narea = "kitchen"\n[satellites.garage]\nuri = "tcp://127.0.0.1:${badPort}"\n`);
    const dropped = waitForLine(child, /room:garage: .*sent a bad event/);
    await waitForLine(child, /room:kitchen: listening for "hey_jarvis" on its stream/);
    expect(await dropped).toMatch(/a header line that is not JSON.*reconnecting/);
    const answered = waitForLine(child, /room:kitchen: turn 1: answered/);
    sat.go();
    expect(await answered).toMatch(/"what time is it"/);
    const status = JSON.parse((await iris(['status', '--json'], vars)).stdout) as { rooms: Record<string, unknown>[] };
    expect(status.rooms).toEqual(expect.arrayContaining([
      expect.objectContaining({ name: 'kitchen', area: 'kitchen', state: 'connected', mode: 'wake', last_transcript: 'what time is it', last_heard: expect.any(String) }),
      expect.objectContaining({ name: 'garage', state: expect.stringMatching(/connecting|disconnected/), detail: expect.stringMatching(/bad event/) }),
    ]));
    expect(sat.events()).toEqual(expect.arrayContaining(['transcript what time is it', expect.stringMatching(/^synthesize It's \d+:\d\d [AP]M\.$/)]));
    // Pings both ways, as with wyoming-satellite: IRIS pings the satellite, which then pings IRIS too.
    await expect.poll(() => [sat.pingsAnswered > 0, sat.pongsReceived > 0], { timeout: 10_000 }).toEqual([true, true]);
    const reply = soxStat(heard(dir, sat));
    expect(reply.length).toBeGreaterThan(0.8); // "It's 3:04 PM." spoken
    expect(reply.rms).toBeGreaterThan(0.02);
    expect((await iris(['status'], vars)).stdout).toMatch(/^room kitchen \(kitchen, tcp:\/\/127\.0\.0\.1:\d+\): connected, \w+, IRIS hears the wake word, last heard .*"what time is it"/m);
  }, 60_000);

  it('a satellite that hears the wake word itself (through IRIS\'s Wyoming wake service) starts at the speech stage; the timer it sets is said in that room, not in another', async () => {
    const dir = tempDir();
    const wyoming = await closedPort();
    const command = join(dir, 'timer.wav'); // people pause after the wake word for a satellite's chime
    execFileSync('sox', [commandWav('hey jarvis', { padS: [0.5, 1] }), commandWav('set a timer for three seconds', { padS: [0, 1.5] }), command]);
    const study = await satellite('study', decodeWav(readFileSync(command)), { wakePort: wyoming, wakeWordName: 'hey_jarvis' });
    const hall = await satellite('hall', commandSamples('hey jarvis, what time is it'));
    const { child } = await daemon(dir, `[wyoming]\nlisten = "tcp://127.0.0.1:${wyoming}"\n[satellites.study]\nuri = "tcp://127.0.0.1:${study.port}"\n[satellites.hall]\nuri = "tcp://127.0.0.1:${hall.port}"\n`);
    const hallListens = waitForLine(child, /room:hall: listening for "hey_jarvis" on its stream/);
    await waitForLine(child, /room:study: connected/);
    await hallListens;
    await study.logged(/Connected to wake service/, 1); // it started before IRIS's wake service listened, and retries
    const answered = waitForLine(child, /room:study: turn 1: answered/);
    const announced = waitForLine(child, /room:study:announce: said timer #1 \(1 of/);
    study.go();
    expect(await answered).toMatch(/"set a timer for three seconds"/);
    await announced;
    const events = study.events();
    expect(events).toEqual(['transcript set a timer for three seconds', 'synthesize Timer set for 3 seconds.', expect.stringMatching(/^timer-started /), 'timer-finished 1']);
    expect(JSON.parse(events[2]?.slice('timer-started '.length) ?? '{}')).toEqual({ type: 'timer-started', data: { id: '1', total_seconds: 3 } });
    const said = soxStat(heard(dir, study)); // "Timer set for 3 seconds." then "Your timer is done."
    expect(said.length).toBeGreaterThan(2);
    expect(said.rms).toBeGreaterThan(0.02);
    expect(hall.events()).toEqual([]); // nothing said or signalled in the other room
  }, 60_000);

  it('a timer whose room is gone by the time it rings is said in every room left', async () => {
    const dir = tempDir();
    const study = await satellite('study', commandSamples('hey jarvis, set a timer for ten seconds'));
    const hall = await satellite('hall', commandSamples('hey jarvis'));
    // flite's "ten seconds" is heard right but at a confidence under the default 0.6.
    const { child, vars } = await daemon(dir, `[satellites.study]\nuri = "tcp://127.0.0.1:${study.port}"\n[satellites.hall]\nuri = "tcp://127.0.0.1:${hall.port}"\n`, 'min_confidence = 0.3\n');
    await Promise.all([waitForLine(child, /room:study: listening for/), waitForLine(child, /room:hall: listening for/)]);
    const answered = waitForLine(child, /room:study: turn 1: answered/);
    study.go();
    expect(await answered).toMatch(/"set a timer for ten seconds"/);
    writeFileSync(vars.IRIS_CONFIG, readFileSync(vars.IRIS_CONFIG, 'utf8').replace(/\[satellites\.study\][^[]*/, ''));
    const removed = waitForLine(child, /room study: removed/);
    const said = waitForLine(child, /room:hall:announce: said timer #1 \(1 of/);
    expect((await iris(['reload'], vars)).code).toBe(0);
    await removed;
    await said;
    expect(hall.events()).toEqual(['timer-finished 1']);
    expect(soxStat(heard(dir, hall)).rms).toBeGreaterThan(0.02); // "Your timer is done."
  }, 60_000);

  it('two rooms talk at once: each hears its own command and gets its own answer', async () => {
    const dir = tempDir();
    const a = await satellite('office', commandSamples('hey jarvis, what time is it'));
    const b = await satellite('lounge', commandSamples('hey jarvis, what is two plus two'));
    const { child } = await daemon(dir, `[satellites.office]\nuri = "tcp://127.0.0.1:${a.port}"\n[satellites.lounge]\nuri = "tcp://127.0.0.1:${b.port}"\n`);
    await Promise.all([waitForLine(child, /room:office: listening for/), waitForLine(child, /room:lounge: listening for/)]);
    const office = waitForLine(child, /room:office: turn 1: answered/);
    const lounge = waitForLine(child, /room:lounge: turn 1: answered/);
    const woken = a.logged(/Wake word detected/);
    a.go();
    await woken; // the office is mid-command while the lounge starts speaking
    b.go();
    expect(await office).toMatch(/"what time is it"/);
    expect(await lounge).toMatch(/"what is two plus two"/);
    expect(a.events()).toEqual(['transcript what time is it', expect.stringMatching(/^synthesize It's \d+:\d\d [AP]M\.$/)]);
    expect(b.events()).toEqual(['transcript what is two plus two', "synthesize That's 4."]);
    for (const sat of [a, b]) expect(soxStat(heard(dir, sat)).rms).toBeGreaterThan(0.02);
  }, 60_000);

  it('a satellite that heard its wake word but then no command is told so, and goes back to listening for it', async () => {
    const dir = tempDir();
    const wyoming = await closedPort();
    const sat = await satellite('porch', commandSamples('hey jarvis', { padS: [0.5, 0.5] }), { wakePort: wyoming, wakeWordName: 'hey_jarvis' });
    const { child } = await daemon(dir, `[wyoming]\nlisten = "tcp://127.0.0.1:${wyoming}"\n[satellites.porch]\nuri = "tcp://127.0.0.1:${sat.port}"\n`);
    await waitForLine(child, /room:porch: connected/);
    const nothing = waitForLine(child, /room:porch: turn 1: no_speech/);
    await sat.logged(/Waiting for wake word/, 1); // since IRIS told it to run
    await sat.logged(/Connected to wake service/, 1);
    sat.go();
    await nothing;
    await sat.logged(/Waiting for wake word/, 2); // again, after IRIS's error
    expect(sat.events()).toEqual(['error No speech was heard']);
  }, 60_000);

  it('a satellite with its own VAD (--vad) that stops streaming right after the command (audio-stop) is answered then, not left waiting for silence that never comes', async () => {
    const dir = tempDir();
    const text = 'hey jarvis, what time is it';
    // The satellite streams from the speech's start and stops (audio-stop) its
    // --vad-wake-word-timeout later: here 0.1 s after the last word, well under IRIS's 0.7 s
    // of silence; after that it streams nothing until it hears speech again.
    const samples = commandSamples(text);
    const loud = (s: number) => Math.abs(s) > 500; // the stand-in VAD's level
    const firstLoud = samples.findIndex(loud);
    const lastLoud = samples.length - 1 - [...samples].reverse().findIndex(loud);
    const timeoutS = Number(((lastLoud - firstLoud) / 16_000 + 0.1).toFixed(2));
    const sat = await satellite('attic', samples, { vad: { wakeWordTimeoutS: timeoutS } });
    const { child } = await daemon(dir, `[satellites.attic]\nuri = "tcp://127.0.0.1:${sat.port}"\n`);
    await waitForLine(child, /room:attic: connected/);
    await sat.logged(/Waiting for speech/, 1);
    const answered = waitForLine(child, /room:attic: turn 1: answered/);
    sat.go();
    await sat.logged(/Streaming audio/, 1);
    await sat.logged(/Waiting for speech/, 2); // it sent audio-stop and stopped streaming
    expect(await answered).toMatch(/"what time is it"/);
    expect(sat.events()).toEqual(['transcript what time is it', expect.stringMatching(/^synthesize It's \d+:\d\d [AP]M\.$/)]);
    expect(soxStat(heard(dir, sat)).rms).toBeGreaterThan(0.02);
  }, 60_000);

  it('the same wake word heard in two rooms is answered once, by the room that heard it best', async () => {
    const dir = tempDir();
    const wav = commandSamples('hey jarvis, what time is it');
    const near = await satellite('near', wav);
    const far = await satellite('far', wav, { micVolume: 0.3 });
    const { child } = await daemon(dir, `[satellites.near]\nuri = "tcp://127.0.0.1:${near.port}"\n[satellites.far]\nuri = "tcp://127.0.0.1:${far.port}"\n`);
    await Promise.all([waitForLine(child, /room:near: listening for/), waitForLine(child, /room:far: listening for/)]);
    const answered = waitForLine(child, /room:(near|far): turn 1: answered/);
    const yielded = waitForLine(child, /room:(near|far): turn 1: room \w+ heard the wake word better/);
    near.go();
    far.go();
    expect(await yielded).toMatch(/room:far:/);
    expect(await answered).toMatch(/room:near: .*"what time is it"/);
    expect(near.events()).toContain('transcript what time is it');
    expect(far.events()).toEqual([]);
    expect(far.playedAnything).toBe(false); // not a sound from the far room
  }, 60_000);

  it('a satellite that vanishes mid-turn: the daemon stays up, reconnects when it is back, answers there again; a reload removes the room', async () => {
    const dir = tempDir();
    const wav = commandSamples('hey jarvis, what time is it');
    let sat = await satellite('den', wav);
    const { child, vars } = await daemon(dir, `[satellites.den]\nuri = "tcp://127.0.0.1:${sat.port}"\n`);
    await waitForLine(child, /room:den: listening for/);
    const lost = waitForLine(child, /room:den: tcp:\/\/127\.0\.0\.1:\d+: .*reconnecting in/);
    const woken = sat.logged(/Wake word detected/); // IRIS told it: the command is being spoken now
    sat.go();
    await woken;
    sat.kill();
    await lost;
    const down = JSON.parse((await iris(['status', '--json'], vars)).stdout) as { rooms: { state: string }[] };
    expect(down.rooms[0]?.state).toMatch(/connecting|disconnected/);
    // Both waits set before the satellite is back: "connected" and "listening for" can arrive in
    // one read of the daemon's stderr, and a wait set after the first resolved never saw the
    // second (this test hung until its timeout once in 7 runs).
    const back = waitForLine(child, /room:den: connected/);
    const listening = waitForLine(child, /room:den: listening for/);
    const answered = waitForLine(child, /room:den: turn \d+: answered/);
    sat = await satellite('den2', wav, { port: sat.port });
    await back;
    await listening;
    sat.go();
    expect(await answered).toMatch(/"what time is it"/);
    writeFileSync(vars.IRIS_CONFIG, readFileSync(vars.IRIS_CONFIG, 'utf8').replace(/\[satellites\.den\][^[]*/, ''));
    const removed = waitForLine(child, /room den: removed/);
    expect((await iris(['reload'], vars)).code).toBe(0);
    await removed;
    expect(JSON.parse((await iris(['status', '--json'], vars)).stdout)).toMatchObject({ rooms: [] });
  }, 60_000);
});
