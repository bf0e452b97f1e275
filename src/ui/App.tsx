import { useEffect } from 'react';
import { describeGpu, useGpu } from './gpuStatus';
import { type Tab, useView } from './store';
import { type TabDef, Tabs } from './Tabs';

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
    render: () => (
      <Placeholder title="Trace">
        Step through a rollout call by call and token by token: messages, tool calls, engine versus
        retokenized ids, and where sample merging breaks.
      </Placeholder>
    ),
  },
  {
    id: 'advantages',
    label: 'Advantages',
    render: () => (
      <Placeholder title="Advantages">
        Toggle advantage estimators, loss aggregation modes and merge levels and see every token's gradient
        weight change.
      </Placeholder>
    ),
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

export function App() {
  const tab = useView((s) => s.tab);
  const set = useView((s) => s.set);
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
        <Tabs tabs={tabs} selected={tab} onSelect={(id) => set({ tab: id })} />
      </main>
    </div>
  );
}
