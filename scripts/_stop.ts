import { StopWord } from '../src/pipeline/stopword.js';
import { speechSamples } from '../test/helpers/speech.js';
const texts = ['Please stop the music. I said stop.', 'Playing your music now. Say stop when you want me to stop.', 'Stop. Stop right there.', 'The bus stop is on the corner. Non stop flights to Boston.'];
for (const th of [1e-5, 1, 1e5]) {
  const sw = await StopWord.create({ threshold: th });
  for (const t of texts) {
    for (const voice of ['en-us', 'en-gb']) {
    const s = speechSamples(t, { voice, padS: [0.3, 0.5] });
    let n = 0;
    for (let i = 0; i + 1280 <= s.length; i += 1280) if (sw.push(s.subarray(i, i + 1280), new Int16Array(1280), i / 16000 + 100)) n++;
    sw.reset();
    console.log(th, voice, t.slice(0, 30), n);
    }
  }
  sw.free();
}
