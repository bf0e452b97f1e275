import { useEffect } from 'react';
import { referenceStackOf } from '../core/pipeline/options';
import { AdvantagesPanel } from './advantages/AdvantagesPanel';
import { describeGpu, useGpu } from './gpuStatus';
import { ImportBar } from './ImportBar';
import { useLab, warmLabWorker } from './lab/labStore';
import { resolveOptions, useActiveRunSettings } from './lab/options';
import { loadSamples, sampleNamed, useSamples } from './lab/samples';
import { ModelsPanel } from './models/ModelsPanel';
import { RemotePanel } from './remote/RemotePanel';
import { SchedulingView } from './sched/SchedulingView';
import { type Tab, useView } from './store';
import { type TabDef, Tabs } from './Tabs';
import { TracePanel } from './trace/TracePanel';
import { initialPresetLink } from './train/TrainPresets';
import { TrainTab } from './train/TrainTab';
import { UrlNotes } from './UrlNotes';

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
    render: () => <TrainTab />,
  },
  {
    id: 'remote',
    label: 'Remote',
    render: () => <RemotePanel />,
  },
  { id: 'models', label: 'Models', render: () => <ModelsPanel /> },
  { id: 'scheduling', label: 'Scheduling', render: () => <SchedulingView /> },
];

/** Loads the sample the URL names (the first bundled one by default) at start-up and when it changes. */
function useSampleLoader() {
  const sample = useView((s) => s.sample);
  const samples = useSamples((s) => s.samples);
  const importSource = useLab((s) => s.importSource);
  useEffect(() => {
    warmLabWorker();
    void loadSamples();
  }, []);
  useEffect(() => {
    const s = samples && sampleNamed(samples, sample);
    if (s) importSource({ kind: 'url', urls: s.urls, name: s.name });
  }, [samples, sample, importSource]);
}

/**
 * Recomputes the batch and weights in the worker whenever the trace or an algorithm option changes. A component
 * of its own (rendering nothing), so a view change re-renders it alone, not the whole page.
 */
function ComputeSync() {
  const run = useActiveRunSettings();
  const key = useView((v) => JSON.stringify(resolveOptions(v, run)));
  const trace = useLab((s) => s.trace);
  const compute = useLab((s) => s.compute);
  useEffect(() => {
    if (trace) compute(JSON.parse(key));
  }, [trace, key, compute]);
  return null;
}

export function App() {
  const tab = useView((s) => s.tab);
  const set = useView((s) => s.set);
  const sample = useView((s) => s.sample);
  const samples = useSamples((s) => s.samples) ?? [];
  const samplesError = useSamples((s) => s.error);
  const importSource = useLab((s) => s.importSource);
  const run = useActiveRunSettings();
  const stack = useView((v) => referenceStackOf(resolveOptions(v, run)));
  useSampleLoader();
  const gpu = useGpu((s) => s.status);
  const probe = useGpu((s) => s.probe);
  useEffect(() => {
    void probe();
  }, [probe]);
  // a preset's link (`?preset=…`) opens the Train tab unless the hash names another tab
  useEffect(() => {
    if (initialPresetLink().link && !new URLSearchParams(location.hash.replace(/^#/, '')).has('tab'))
      set({ tab: 'train' });
  }, [set]);
  return (
    <div className="app">
      <header className="header">
        <h1>Harness Lab</h1>
        <span className="reference" data-testid="reference-stack" title="the upstream releases reproduced">
          numbers as {stack.label} compute them
        </span>
        <output
          className="gpu-status"
          data-testid="gpu-status"
          data-available={gpu ? String(gpu.available) : ''}
          title={describeGpu(gpu)}
        >
          {describeGpu(gpu)}
        </output>
      </header>
      <UrlNotes />
      <main>
        <ComputeSync />
        <ImportBar
          samples={samples}
          samplesError={samplesError}
          sample={sampleNamed(samples, sample)?.name ?? ''}
          onSample={(name) => {
            const next = name === samples[0]?.name ? '' : name;
            const s = sampleNamed(samples, name);
            // re-selecting the sample the URL already names (after a file import) reloads it explicitly
            if (next === sample && s) importSource({ kind: 'url', urls: s.urls, name: s.name });
            set({ sample: next, rollout: '', call: 0 });
          }}
        />
        <Tabs tabs={tabs} selected={tab} onSelect={(id) => set({ tab: id })} />
      </main>
    </div>
  );
}
