/**
 * Builds the web UI into ui/dist (`npm run build:ui`); the hub serves it at `/` and the executable
 * carries it (build/sea/assets.ts). Preact's JSX runtime; no CDN, no external fonts.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // One JS and one CSS file: the UI is small and ships inside a single executable.
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 300,
  },
  server: { proxy: { '/api': process.env.OUTPOST_HUB ?? 'http://127.0.0.1:7443' } },
});
