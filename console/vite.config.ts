import { defineConfig } from 'vite'
import preact from '@preact/preset-vite'

// The console is served by the API server at /console (plugins/console.ts), from console/dist.
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  plugins: [preact({ prerender: { enabled: false } })],
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', reportCompressedSize: false }
})
