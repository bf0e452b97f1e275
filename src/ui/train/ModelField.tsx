/**
 * The Train tab's model field: actor_rollout_ref.model.path as a choice of the GPT-2 policy's starts ('sft',
 * 'init'), the Hugging Face folders the app ships (`shipped:<name>`) and a brought folder (picked or dropped,
 * kept in OPFS: `opfs:<name>`). For a folder it shows the model's shape and the memory one training step needs
 * by term (the LoRA keys of the form decide adapter, gradients and AdamW), its largest single buffer, against
 * where the run will train (modelFit.ts pageLimits: this browser's WebGPU adapter's limits, or the page's CPU
 * budget), and reports a step that cannot fit — naming the buffer or total, the limit and which setting would
 * make it fit — which the form refuses to start.
 */
import { useEffect, useState } from 'react';
import type { LlamaConfig } from '../../engine/llama/config';
import { MEMORY_TERMS, mib } from '../../engine/llama/memoryFit';
import { largestBuffer, runMemoryRefusal, runStepShape } from '../../train/broughtModel';
import type { TrainConfig } from '../../train/config';
import { useGpu } from '../gpuStatus';
import { FolderInput } from '../models/FolderInput';
import type { PickedFolder } from '../models/folderInput';
import { cachedFolder, cacheFolder } from '../models/opfsCache';
import { pageModelFolder, pageModelOf, shippedModelNames } from '../models/shippedModels';
import { useFolderPick } from '../models/useFolderPick';
import { folderLlamaConfig, pageLimits, pageMemoryFit } from './modelFit';

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

export function ModelField(props: {
  path: string;
  config: TrainConfig | null;
  onChange: (path: string) => void;
  /** why a run on this model cannot start (null: it can) */
  onRefusal: (why: string | null) => void;
}) {
  const { path, config, onChange, onRefusal } = props;
  const [cached, setCached] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [model, setModel] = useState<{ path: string; config: LlamaConfig } | null>(null);
  const named = pageModelOf(path);
  const gpu = useGpu((s) => s.status);

  useEffect(() => {
    void cachedFolder()
      .then((f) => setCached(f?.name ?? null))
      .catch(() => setCached(null));
  }, []);

  // the chosen folder's config.json (its shape; the weights are read by the trainer)
  useEffect(() => {
    let live = true;
    setError(null);
    const named = pageModelOf(path);
    if (!named) {
      setModel(null);
      return;
    }
    void pageModelFolder(named)
      .then(folderLlamaConfig)
      .then((c) => live && setModel({ path, config: c }))
      .catch((e) => {
        if (!live) return;
        setModel(null);
        setError(`${named.name}: ${message(e)}`);
      });
    return () => {
      live = false;
    };
  }, [path]);

  const shown = model?.path === path ? model.config : null;
  const shape = shown && config ? runStepShape(config, shown.maxPositions) : null;
  const limits = shown && config ? pageLimits(config, shown, gpu) : null;
  const fit =
    shown && config && limits && !(limits instanceof Error) ? pageMemoryFit(config, shown, limits) : null;
  const stated = (): string | null => {
    if (!shown || !config) return 'reading the model folder…';
    if (limits instanceof Error) return limits.message;
    if (!limits || !fit) return 'probing WebGPU…';
    if (fit instanceof Error) return fit.message;
    try {
      return runMemoryRefusal(config, shown, limits);
    } catch (e) {
      return message(e);
    }
  };
  const refusal = named ? (error ?? stated()) : null;
  const largest =
    fit && !(fit instanceof Error) && config && shown ? largestBuffer(config, shown, fit) : null;
  useEffect(() => onRefusal(refusal), [refusal, onRefusal]);

  const bring = async (folder: PickedFolder) => {
    setError(null);
    setStatus(`reading ${folder.name}…`);
    try {
      await folderLlamaConfig(folder.reader);
      setStatus(`keeping ${folder.name} in this browser…`);
      await cacheFolder(folder);
      setCached(folder.name);
      setStatus(null);
      onChange(`opfs:${folder.name}`);
    } catch (e) {
      setStatus(null);
      setError(`${folder.name}: ${message(e)}`);
    }
  };
  const { dragging, zone, onInput } = useFolderPick(bring, (err) => setError(message(err)));

  const choices: [string, string][] = [
    ['sft', 'sft — GPT-2 policy, shipped SFT checkpoint'],
    ['init', 'init — GPT-2 policy, random init'],
    ...shippedModelNames().map((n): [string, string] => [
      `shipped:${n}`,
      `${n} — shipped Hugging Face folder`,
    ]),
  ];
  if (cached) choices.push([`opfs:${cached}`, `${cached} — brought folder (kept in this browser)`]);
  if (!choices.some(([v]) => v === path)) choices.push([path, path]);

  return (
    <section
      className={dragging ? 'train-model model-drop dragging' : 'train-model model-drop'}
      aria-label="Model"
      data-testid="train-model-field"
      {...zone}
    >
      <label htmlFor="train-model">Model</label>
      <select
        id="train-model"
        data-testid="train-model"
        value={path}
        onChange={(e) => onChange(e.target.value)}
      >
        {choices.map(([v, label]) => (
          <option key={v} value={v}>
            {label}
          </option>
        ))}
      </select>
      <label htmlFor="train-model-folder" className="muted">
        bring a Hugging Face folder (llama / qwen2 / qwen3, safetensors), or drop it here
      </label>
      <FolderInput id="train-model-folder" testId="train-model-folder" onChange={onInput} />
      {status && (
        <p className="muted" data-testid="train-model-status">
          {status}
        </p>
      )}
      {error && (
        <p className="error" role="alert" data-testid="train-model-error">
          {error}
        </p>
      )}
      {shown && (
        <p className="muted" data-testid="train-model-info">
          {shown.modelType} · {shown.layers} layers · hidden {shown.hidden} · vocabulary {shown.vocabSize} ·{' '}
          {config && config.actor_rollout_ref.model.lora_rank > 0
            ? `LoRA r=${config.actor_rollout_ref.model.lora_rank} alpha=${config.actor_rollout_ref.model.lora_alpha} (${config.actor_rollout_ref.model.target_modules})`
            : 'full fine-tuning'}{' '}
          · {engineNote(config?.lab.backend ?? 'cpu', config?.lab.lora_base_dtype ?? 'f32')}
        </p>
      )}
      {fit && !(fit instanceof Error) && (
        <table className="train-model-memory" data-testid="train-model-memory">
          <caption className="muted">
            one step, {shape?.rows} rows × {shape?.tokens} tokens, on{' '}
            {fit.limits.kind === 'webgpu' ? `the WebGPU engine (${fit.limits.label})` : 'the CPU engine'}
          </caption>
          <tbody>
            {MEMORY_TERMS.map((t) => (
              <tr key={t} data-term={t}>
                <th scope="row">{t}</th>
                <td>{mib(fit.memory[t])}</td>
              </tr>
            ))}
            <tr data-term="total">
              <th scope="row">total</th>
              <td>
                {mib(fit.memory.total)}
                {fit.limits.budget !== undefined
                  ? ` of ${mib(fit.limits.budget)} (${fit.limits.label}${fit.limits.budgetNote ? `; ${fit.limits.budgetNote}` : ''})`
                  : ''}
              </td>
            </tr>
            {largest && (
              <tr data-term="largest-buffer">
                <th scope="row">largest buffer</th>
                <td>
                  {largest.what}: {mib(largest.bytes)}
                  {largest.limit !== null ? ` of ${mib(largest.limit)} (${largest.limitName})` : ''}
                </td>
              </tr>
            )}
          </tbody>
        </table>
      )}
      {named && refusal && (fit || limits instanceof Error) && (
        <p className="error" role="alert" data-testid="train-model-refusal">
          {refusal}
        </p>
      )}
    </section>
  );
}

/** Where the folder run trains (the trainer worker picks the device when the run starts). */
function engineNote(backend: 'cpu' | 'webgpu' | 'auto', baseDtype: 'f32' | 'f16' | 'bf16'): string {
  const base = baseDtype === 'f32' ? '' : `, ${baseDtype} base`;
  if (backend === 'cpu') return 'CPU engine';
  if (backend === 'webgpu')
    return `WebGPU engine${base} (this browser's adapter limits; the trainer checks its own again)`;
  return `WebGPU engine${base} on a hardware adapter that holds the step, else the CPU engine`;
}
