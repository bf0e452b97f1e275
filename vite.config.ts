/// <reference types="vitest/config" />
import { existsSync } from 'node:fs';
import react from '@vitejs/plugin-react';
import { playwright } from '@vitest/browser-playwright';
import { defineConfig } from 'vite';
import { chromiumArgs, chromiumPath } from './tests/tools/chromium.mjs';

// Cross-origin isolation: threaded WASM (SharedArrayBuffer) needs COOP/COEP on every response.
const isolationHeaders = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

// Dawn in Node (tests on the WebGPU engines): without a GPU driver it runs on Chromium's SwiftShader Vulkan
// driver, whose loader and ICD must be in the environment the test process starts with (src/cli/webgpuNode.ts).
const swiftShaderIcd = '/usr/lib/chromium/vk_swiftshader_icd.json';
const dawnEnv: Record<string, string> =
  !process.env.VK_ICD_FILENAMES && existsSync(swiftShaderIcd)
    ? {
        VK_ICD_FILENAMES: swiftShaderIcd,
        LD_LIBRARY_PATH: ['/usr/lib/chromium', process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
      }
    : {};

export default defineConfig({
  plugins: [react()],
  server: { headers: isolationHeaders, host: '127.0.0.1' },
  preview: { headers: isolationHeaders, host: '127.0.0.1' },
  worker: { format: 'es' },
  build: { target: 'es2022', chunkSizeWarningLimit: 4096 },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          environment: 'node',
          include: ['tests/unit/**/*.test.ts'],
          testTimeout: 60_000,
          env: dawnEnv,
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: ['tests/browser/**/*.test.{ts,tsx}'],
          testTimeout: 120_000,
          browser: {
            enabled: true,
            headless: true,
            screenshotFailures: false,
            provider: playwright({
              launchOptions: { executablePath: chromiumPath(), args: chromiumArgs() },
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          environment: 'node',
          include: ['tests/e2e/**/*.test.ts'],
          globalSetup: ['tests/e2e/serve.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          // a real local Ray head (token auth) and the cluster venv; see tests/remote/setup.ts
          name: 'remote',
          environment: 'node',
          include: ['tests/remote/**/*.test.ts'],
          globalSetup: ['tests/remote/setup.ts'],
          testTimeout: 600_000,
          hookTimeout: 900_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
