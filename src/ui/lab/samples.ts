/**
 * Bundled sample traces: `public/samples/index.json` lists them (name, file, description); the files are served
 * next to it. The list is read once at start-up; the first sample is the one the page opens with.
 */
import { create } from 'zustand';

export interface Sample {
  name: string;
  /** one file, or several read as one trace */
  urls: string[];
  description: string;
}

interface SamplesState {
  samples: Sample[] | null;
  error: string | null;
}

export const useSamples = create<SamplesState>(() => ({ samples: null, error: null }));

function checkManifest(v: unknown, base: string): Sample[] {
  const list = (v as { samples?: unknown })?.samples;
  if (!Array.isArray(list)) throw new Error('samples/index.json: expected {"samples": [...]}');
  const plain = (f: unknown) => typeof f === 'string' && !/[/\\]|^\./.test(f);
  return list.map((s, i) => {
    const o = s as Record<string, unknown>;
    const files = o?.files ?? (o?.file === undefined ? undefined : [o.file]);
    if (typeof o?.name !== 'string' || !Array.isArray(files) || files.length === 0 || !files.every(plain))
      throw new Error(`samples/index.json: samples[${i}] needs a name and a plain "file" name (or "files")`);
    return {
      name: o.name,
      urls: files.map((f) => `${base}samples/${f}`),
      description: typeof o.description === 'string' ? o.description : '',
    };
  });
}

export async function loadSamples(): Promise<void> {
  const base = import.meta.env.BASE_URL;
  try {
    const res = await fetch(`${base}samples/index.json`);
    if (!res.ok) throw new Error(`samples/index.json: HTTP ${res.status}`);
    useSamples.setState({ samples: checkManifest(await res.json(), base), error: null });
  } catch (e) {
    useSamples.setState({ samples: [], error: (e as Error).message });
  }
}

/** The sample a URL names, or the first one ('' or an unknown name). */
export function sampleNamed(samples: readonly Sample[], name: string): Sample | undefined {
  return samples.find((s) => s.name === name) ?? samples[0];
}
