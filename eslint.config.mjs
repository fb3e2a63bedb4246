// ESLint flat config: @eslint/js and typescript-eslint recommended over the TypeScript and the
// few JavaScript files (lib, functions, test, bench, scripts, types, deploy). Type-aware rules
// (recommendedTypeChecked) are off: they took ~100 s on the 2-core CI machine.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores([
    'node_modules/',
    '.serverless/',
    '.esbuild/',
    '.build/',
    'dist/',
    'coverage/',
    '.data/',
    '.tmp/',
    'test-artifacts/',
  ]),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // best-effort cleanup (killing a process group that may be gone, a probe that may fail)
      // ignores errors with `catch {}`, often with a comment saying why
      'no-empty': ['error', { allowEmptyCatch: true }],
      // Prettier wraps code at 120 columns; comments are held to it here (strings, templates,
      // regular expressions and URLs may run longer: breaking them hides what a test or a log says)
      'max-len': [
        'error',
        {
          code: 120,
          ignorePattern: 'eslint-disable',
          ignoreStrings: true,
          ignoreTemplateLiterals: true,
          ignoreRegExpLiterals: true,
          ignoreUrls: true,
        },
      ],
      // a leading underscore marks a parameter or binding kept for its position: `(_req, res) =>`
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
        },
      ],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    // CommonJS on purpose: serverless.yml loads these with ${file(...)}, which uses require
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
