/**
 * The local answers of issue 26, spoken: place names, alarms, one timer's time left, a timer
 * named with an article, an unclear cancel. Spoken in a flite voice (commandWav), heard by
 * pocketsphinx through the grammar built from intents/sentences.ts, answered by `iris listen`
 * from the speech-to-text stage to the conversation (no wake word, nothing spoken back).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { iris } from './helpers/cli.js';
import { commandWav } from './helpers/speech.js';
import { tempDir } from './helpers/tmp.js';
import { closedPort } from './helpers/net.js';

async function setup() {
  const dir = tempDir();
  writeFileSync(join(dir, 'config'), `[ollama]\nurl = "http://127.0.0.1:${await closedPort()}"\n[assistant]\ntimezone = "Europe/Berlin"\n`);
  const vars = { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 's') };
  /** What IRIS heard and answered for `text` spoken. */
  return async (text: string): Promise<{ transcript: string; reply: string; route: string }> => {
    const run = await iris(['listen', '--file', commandWav(text), '--start', 'stt', '--end', 'conversation', '--json'], vars);
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as { transcript: string; reply: string; route: string };
  };
}

describe('spoken local answers (pocketsphinx, the grammar from the templates)', () => {
  it.each([
    ['what time is it in sao paulo', /^It's \d{1,2}:\d{2} [AP]M in Sao Paulo\.$/],
    ['what time is it in montreal', /^It's \d{1,2}:\d{2} [AP]M in Montréal\.$/],
    ['what time is it in krakow', /^It's \d{1,2}:\d{2} [AP]M in Kraków\.$/],
    ['set an alarm for six a.m.', /^Alarm set for 6:00 AM( tomorrow)?\.$/],
    ['wake me up at five thirty a.m.', /^Alarm set for 5:30 AM( tomorrow)?\.$/],
    ['wake me up at six a.m. tomorrow', /^Alarm set for 6:00 AM tomorrow\.$/],
  ])('"%s"', async (text, reply) => {
    const listen = await setup();
    const heard = await listen(text);
    expect(heard.transcript).toBe(text);
    expect(heard.route).toBe('local');
    expect(heard.reply).toMatch(reply);
  });

  it('a named timer: its time left, and an unclear cancel asks which', async () => {
    const listen = await setup();
    expect((await listen('set a pizza timer for five minutes')).reply).toBe('Pizza timer set for 5 minutes.');
    expect((await listen('how long until my pizza timer ends')).reply).toMatch(/^The pizza timer has (5 minutes|4 minutes and \d+ seconds) left\.$/);
    expect((await listen('set a tea timer for twenty minutes')).reply).toBe('Tea timer set for 20 minutes.');
    expect((await listen('how much time is left on the tea timer')).reply).toMatch(/^The tea timer has (20 minutes|19 minutes and \d+ seconds) left\.$/);
    expect((await listen('cancel the timer')).reply).toBe('The pizza or the tea timer?');
    expect((await listen('how long until my pizza timer ends')).reply).toMatch(/^The pizza timer has/); // still there
  });
});
