// Generates src/gen from the contract. Run with `npm run generate` (or
// `make generate` at the repo root). The output is committed and must be
// deterministic: `make check-generated` regenerates it and compares.
import { defineConfig } from '@hey-api/openapi-ts';

export default defineConfig({
  input: '../api/openapi.yaml',
  output: {
    path: 'src/gen',
    tsConfigPath: './tsconfig.json',
    module: { extension: '.js' },
    postProcess: [],
  },
  logs: { file: false, level: 'warn' },
  plugins: [
    '@hey-api/client-fetch',
    { name: '@hey-api/typescript', enums: 'javascript' },
    '@hey-api/sdk',
  ],
});
