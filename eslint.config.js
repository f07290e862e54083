// Type-aware lint: in a daemon an unhandled rejection is an outage, so floating and
// misused promises are errors.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // heap-probe.cjs: ten lines of plain JS preloaded into the daemon by the soak (--require).
  { ignores: ['node_modules/', 'dist/', 'scratch/', 'debian/', 'eslint.config.js', 'scripts/lib/heap-probe.cjs'] },
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
