import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'test/fixtures/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Layering (docs/architecture.md): the Action bundles only client + rendering code.
    files: ['src/action/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: ['@oclif/*', 'fastify', '**/server/**', '**/store/**', '**/commands/**', 'better-sqlite3', 'kysely'] },
      ],
    },
  },
  {
    // The engine is a pure core: no I/O, no clock.
    files: ['src/engine/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['node:*', 'fs', 'child_process', '**/server/**', '**/store/**'] }],
    },
  },
);
