import { useEffect, useState } from 'react';
import { HARNESSES, type HarnessName } from '../../harness/registry';
import { Options } from '../components/Options';
import { useView } from '../store';
import { formKey } from '../train/formConfig';
import { FolderInput } from './FolderInput';
import { type ModelRunOptions, useModels } from './modelStore';
import { useFolderPick } from './useFolderPick';

const HARNESS_NAMES = HARNESSES.names() as HarnessName[];
const hasWebGpu = typeof navigator !== 'undefined' && 'gpu' in navigator;

function NumberField(props: {
  id: string;
  label: string;
  value: number;
  min: number;
  max?: number;
  step?: number;
  onChange: (v: number) => void;
}) {
  return (
    <span className="field">
      <label htmlFor={props.id}>{props.label}</label>
      <input
        id={props.id}
        data-testid={props.id}
        type="number"
        value={props.value}
        min={props.min}
        max={props.max}
        step={props.step ?? 1}
        onChange={(e) => {
          const v = Number(e.target.value);
          if (Number.isFinite(v) && v >= props.min && (props.max === undefined || v <= props.max))
            props.onChange(v);
        }}
      />
    </span>
  );
}

/**
 * Bring your own model: a local Hugging Face folder runs as the rollout engine of a harness in this page
 * (inference only), and its trace opens in the Trace view. A Llama-family folder (config.json, safetensors,
 * tokenizer) samples from our engine and is kept in OPFS for the next visit; an ONNX chat model
 * (onnx/model*.onnx) runs in transformers.js.
 */
export function ModelsPanel() {
  const {
    folder,
    info,
    llama,
    cache,
    error,
    status,
    running,
    traceUrl,
    traceName,
    summary,
    pick,
    run,
    restore,
  } = useModels();
  useEffect(() => {
    void restore();
  }, [restore]);
  const [opts, setOpts] = useState<Omit<ModelRunOptions, 'dtype'> & { dtype: string | null }>({
    harness: 'instruction',
    n: 2,
    groupSize: 1,
    seed: 1,
    temperature: 1,
    maxTokens: 64,
    device: 'wasm',
    dtype: null,
    workers: 2,
    engine: 'ours',
  });
  const set = (patch: Partial<typeof opts>) => setOpts({ ...opts, ...patch });
  const dtype =
    opts.dtype !== null && info?.dtypes.includes(opts.dtype) ? opts.dtype : (info?.defaultDtype ?? '');
  const { dragging, zone, onInput } = useFolderPick(pick, (err) => pick(err as Error));
  const c = info?.config as Record<string, unknown> | undefined;
  return (
    <section className="models" aria-label="Bring your own model">
      <h2>Bring your own model</h2>
      <p className="muted">
        A local folder with an ONNX chat model in the Hugging Face layout — <code>config.json</code>,{' '}
        <code>onnx/model.onnx</code> (or another variant such as <code>model_q4.onnx</code>),{' '}
        <code>tokenizer.json</code>, <code>tokenizer_config.json</code> with its chat template — runs here in
        transformers.js as the rollout engine of a harness (inference only; nothing is fetched from a hub).
        Its calls are recorded with the model's own token ids and log-probs. A <code>llama</code> /{' '}
        <code>qwen2</code> / <code>qwen3</code> folder with <code>model.safetensors</code> (or shards) instead
        samples from our own engine — WebGPU where available, else the CPU engine — and stays in this browser
        (OPFS) for the next visit.
      </p>
      <section
        aria-label="Model folder drop zone"
        className={dragging ? 'model-drop dragging' : 'model-drop'}
        data-testid="model-drop"
        {...zone}
      >
        <label htmlFor="model-folder">Model folder</label>
        <FolderInput id="model-folder" testId="model-folder-input" onChange={onInput} />
        <span className="muted">or drop the folder here</span>
      </section>
      {error && (
        <p className="bad" data-testid="model-error" role="alert">
          {folder ? `${folder.name}: ` : ''}
          {error}
        </p>
      )}
      {llama && folder && (
        <p data-testid="model-info">
          <b>{folder.name}</b> · {llama.config.modelType} · vocabulary {llama.config.vocabSize} · safetensors{' '}
          {llama.storage.join(', ')} · {llama.layout.total} parameters · our engine
          {cache && (
            <span data-testid="model-cache"> · {cache === 'cached' ? 'kept in this browser' : cache}</span>
          )}
          {cache === 'cached' && (
            <>
              {' '}
              <button
                type="button"
                data-testid="model-train"
                title="open the Train tab with this folder as the run's model (actor_rollout_ref.model.path)"
                onClick={() => {
                  const view = useView.getState();
                  view.setForm({ [formKey('actor_rollout_ref.model.path')]: `opfs:${folder.name}` });
                  view.set({ tab: 'train' });
                }}
              >
                Train on this folder
              </button>
            </>
          )}
        </p>
      )}
      {(info || llama) && folder && (
        <>
          {info && (
            <p data-testid="model-info">
              <b>{folder.name}</b> · {info.modelType} · vocabulary {String(c?.vocab_size ?? '?')} · ONNX
              variants {info.dtypes.join(', ')}
              {info.weightPrecision && ` · exported policy, ${info.weightPrecision} weights`}
            </p>
          )}
          <div className="model-controls">
            <span className="field">
              <label htmlFor="model-harness">Harness</label>
              <select
                id="model-harness"
                data-testid="model-harness"
                value={opts.harness}
                onChange={(e) => set({ harness: e.target.value as HarnessName })}
              >
                <Options values={HARNESS_NAMES} />
              </select>
            </span>
            {llama && (
              <span className="field">
                <label htmlFor="model-engine-choice">Engine</label>
                <select
                  id="model-engine-choice"
                  data-testid="model-engine-choice"
                  value={opts.engine}
                  onChange={(e) => set({ engine: e.target.value as ModelRunOptions['engine'] })}
                >
                  <option value="ours">ours</option>
                  <option value="transformers.js">transformers.js (gap vs ours)</option>
                </select>
              </span>
            )}
            {(info || (llama && opts.engine === 'transformers.js')) && (
              <>
                {info && (
                  <span className="field">
                    <label htmlFor="model-dtype">ONNX variant</label>
                    <select
                      id="model-dtype"
                      data-testid="model-dtype"
                      value={dtype}
                      onChange={(e) => set({ dtype: e.target.value })}
                    >
                      <Options values={info?.dtypes ?? []} />
                    </select>
                  </span>
                )}
                <span className="field">
                  <label htmlFor="model-device">Device</label>
                  <select
                    id="model-device"
                    data-testid="model-device"
                    value={opts.device}
                    onChange={(e) => set({ device: e.target.value as ModelRunOptions['device'] })}
                  >
                    <option value="wasm">wasm</option>
                    {hasWebGpu && <option value="webgpu">webgpu</option>}
                  </select>
                </span>
              </>
            )}
            <NumberField
              id="model-n"
              label="Tasks"
              value={opts.n}
              min={1}
              max={256}
              onChange={(n) => set({ n })}
            />
            <NumberField
              id="model-group"
              label="Rollouts per task"
              value={opts.groupSize}
              min={1}
              max={64}
              onChange={(groupSize) => set({ groupSize })}
            />
            <NumberField
              id="model-seed"
              label="Seed"
              value={opts.seed}
              min={0}
              onChange={(seed) => set({ seed })}
            />
            <NumberField
              id="model-temperature"
              label="Temperature"
              value={opts.temperature}
              min={0}
              max={5}
              step={0.1}
              onChange={(temperature) => set({ temperature })}
            />
            <NumberField
              id="model-max-tokens"
              label="Max tokens per call"
              value={opts.maxTokens}
              min={1}
              max={8192}
              onChange={(maxTokens) => set({ maxTokens })}
            />
            <button
              type="button"
              data-testid="model-run"
              disabled={running}
              onClick={() => void run({ ...opts, dtype })}
            >
              Run rollouts
            </button>
          </div>
        </>
      )}
      <p className="muted" data-testid="model-status" aria-live="polite">
        {status ?? ''}
      </p>
      {summary && traceUrl && traceName && (
        <p data-testid="model-summary">
          {summary.rollouts} rollouts ({summary.failed} failed) · {summary.calls} calls ·{' '}
          {summary.responseTokens} response tokens · {summary.seconds.toFixed(1)} s ·{' '}
          <span data-testid="model-engine">{summary.engine}</span> ·{' '}
          {summary.gap && (
            <>
              <span data-testid="model-gap">log-prob gap {summary.gap}</span> ·{' '}
            </>
          )}
          <a href={traceUrl} download={traceName} data-testid="model-trace-download">
            download {traceName}
          </a>{' '}
          (open in the Trace view)
        </p>
      )}
    </section>
  );
}
