import { useEffect } from 'react';
import { AdvantagesPanel } from './advantages/AdvantagesPanel';
import { describeGpu, useGpu } from './gpuStatus';
import { ImportBar } from './ImportBar';
import { useLab } from './lab/labStore';
import { resolveOptions } from './lab/options';
import { SAMPLES, sampleNamed } from './lab/samples';
import { type Tab, useView } from './store';
import { type TabDef, Tabs } from './Tabs';
import { TracePanel } from './trace/TracePanel';

function Placeholder(props: { title: string; children: string }) {
  return (
    <section className="placeholder">
      <h2>{props.title}</h2>
      <p>{props.children}</p>
    </section>
  );
}

const tabs: TabDef<Tab>[] = [
  {
    id: 'trace',
    label: 'Trace',
    render: () => <TracePanel />,
  },
  {
    id: 'advantages',
    label: 'Advantages',
    render: () => <AdvantagesPanel />,
  },
  {
    id: 'train',
    label: 'Train',
    render: () => (
      <Placeholder title="Train">
        Train a small policy live on WebGPU against the toy harnesses and compare runs.
      </Placeholder>
    ),
  },
  {
    id: 'remote',
    label: 'Remote',
    render: () => (
      <Placeholder title="Remote">
        Connect to a gateway that drives full-scale runs on a Ray cluster and stream their traces into these
        views.
      </Placeholder>
    ),
  },
];

/** Loads the sample the URL names (the first bundled one by default) at start-up and when it changes. */
function useSampleLoader() {
  const sample = useView((s) => s.sample);
  const importSource = useLab((s) => s.importSource);
  useEffect(() => {
    const s = sampleNamed(sample);
    if (s) importSource({ kind: 'url', url: s.url, name: s.name });
  }, [sample, importSource]);
}

/** Recomputes the batch and weights in the worker whenever the trace or an algorithm option changes. */
function useComputeSync() {
  const view = useView();
  const trace = useLab((s) => s.trace);
  const compute = useLab((s) => s.compute);
  const opts = resolveOptions(view);
  const key = JSON.stringify(opts);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` stands for `opts` by value
  useEffect(() => {
    if (trace) compute(opts);
  }, [trace, key, compute]);
}

export function App() {
  const tab = useView((s) => s.tab);
  const set = useView((s) => s.set);
  const sample = useView((s) => s.sample);
  useSampleLoader();
  useComputeSync();
  const gpu = useGpu((s) => s.status);
  const probe = useGpu((s) => s.probe);
  useEffect(() => {
    void probe();
  }, [probe]);
  return (
    <div className="app">
      <header className="header">
        <h1>Harness Lab</h1>
        <output
          className="gpu-status"
          data-testid="gpu-status"
          data-available={gpu ? String(gpu.available) : ''}
        >
          {describeGpu(gpu)}
        </output>
      </header>
      <main>
        <ImportBar
          samples={SAMPLES}
          sample={sampleNamed(sample)?.name ?? ''}
          onSample={(name) => set({ sample: name === SAMPLES[0]?.name ? '' : name, rollout: '', call: 0 })}
        />
        <Tabs tabs={tabs} selected={tab} onSelect={(id) => set({ tab: id })} />
      </main>
    </div>
  );
}
