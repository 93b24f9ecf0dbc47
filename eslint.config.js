import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import folderLayers from './src/bin/folder-layers.mjs';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'src/generated/', 'dist/', 'dist-*/', 'coverage/', '.tmp/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    // Folders of src/ form layers: an import that closes a cycle between folders fails lint.
    files: ['src/**/*.ts'],
    plugins: { tidegate: folderLayers },
    rules: { 'tidegate/no-folder-cycles': ['error', { root: 'src' }] },
  },
  {
    files: ['src/bin/*.mjs', 'test/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
