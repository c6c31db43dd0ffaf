/// <reference types="vitest/config" />
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The shell is served by tetherd under /shell/; `npm run dev` proxies the
// API to a daemon on TETHER_URL (default http://127.0.0.1:7777).
const daemon = process.env.TETHER_URL ?? 'http://127.0.0.1:7777';
const api = ['/session', '/sessions', '/tasks', '/agents', '/inbox', '/events', '/health', '/openapi.yaml'];

export default defineConfig({
  base: '/shell/',
  // Preact's automatic JSX runtime through Vite's own transformer (Oxc):
  // no Babel, no framework plugin needed.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: {
    alias: {
      react: 'preact/compat',
      'react-dom': 'preact/compat',
      // The shell is built from the SDK source of the same commit (not
      // from client-ts/dist, which may be stale or absent): the committed
      // bundle in dist/ then depends only on files in the repository.
      '@tether/client': fileURLToPath(new URL('../client-ts/src/index.ts', import.meta.url)),
    },
  },
  build: {
    outDir: 'dist',
    // dist/ is committed (go:embed serves it, so `go build` on a fresh
    // clone needs no npm step); `make check-web` rebuilds it and fails on
    // any difference, like generated code.
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    modulePreload: { polyfill: false },
  },
  server: {
    proxy: Object.fromEntries(api.map((p) => [p, { target: daemon, changeOrigin: false }])),
  },
  test: {
    environment: 'happy-dom',
    include: ['test/**/*.test.{ts,tsx}'],
    restoreMocks: true,
  },
});
