// One place that says which Chromium the tests drive and how it is launched.
// WebGPU needs --enable-unsafe-webgpu (without it requestAdapter() returns null in headless Chromium);
// the other flags keep a closed-network machine from waiting on Google services.
export function chromiumPath() {
  return process.env.CHROMIUM_PATH || '/usr/bin/chromium';
}

export function chromiumArgs() {
  return [
    '--enable-unsafe-webgpu',
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-quic',
    '--disable-dev-shm-usage',
  ];
}
