import type { AddressInfo } from 'node:net';
import { build, preview } from 'vite';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    baseUrl: string;
  }
}

/** Builds the app once and serves it with `vite preview` on a free loopback port for the e2e suite. */
export default async function setup(project: TestProject) {
  await build({ logLevel: 'warn', build: { outDir: 'dist' } });
  const server = await preview({
    preview: { host: '127.0.0.1', port: 0, strictPort: false },
    logLevel: 'warn',
  });
  const address = server.httpServer.address() as AddressInfo;
  project.provide('baseUrl', `http://127.0.0.1:${address.port}/`);
  return async () => {
    await server.close();
  };
}
