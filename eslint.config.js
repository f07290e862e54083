// Type-aware lint: in a daemon an unhandled rejection is an outage, so floating and
// misused promises are errors.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // scripts/lib/*.cjs: small plain-JS probes run inside the daemon or the test container;
  // src/pipeline/player-feed.mjs: the speaker stream's worker, plain JS so Node runs it as it is
  // (checked with `// @ts-check`).
  { ignores: ['node_modules/', 'dist/', 'scratch/', 'debian/', 'eslint.config.js', 'scripts/lib/*.cjs', 'src/pipeline/player-feed.mjs'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  { files: ['src/cli/**', 'scripts/**', 'test/**'], rules: { 'no-console': 'off' } },
  // vitest's asymmetric matchers (expect.stringMatching, …) are typed `any`.
  { files: ['test/**'], rules: { '@typescript-eslint/no-unsafe-assignment': 'off' } },
);
