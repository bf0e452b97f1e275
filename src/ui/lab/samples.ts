/** Bundled sample traces (served from public/samples/). */
export const SAMPLES: readonly { name: string; url: string }[] = [];

export function sampleNamed(name: string): { name: string; url: string } | undefined {
  return SAMPLES.find((s) => s.name === name) ?? SAMPLES[0];
}
