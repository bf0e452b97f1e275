/**
 * The Llama-family decoder's configuration, read from a Hugging Face `config.json` of `model_type` `llama`
 * (Llama 2/3, SmolLM2), `qwen2` (Qwen2 / Qwen2.5) or `qwen3`. The three share one decoder: RMSNorm, rotary
 * embeddings, grouped-query attention, a SwiGLU MLP; they differ in qkv biases (qwen2, or llama's
 * `attention_bias`), per-head RMSNorm of queries and keys (qwen3's `q_norm` / `k_norm`), an explicit
 * `head_dim`, and tied or untied output heads. Anything the decoder does not implement is refused with the
 * field that asks for it, never ignored.
 */

export type LlamaModelType = 'llama' | 'qwen2' | 'qwen3';

export type RopeScaling =
  | { type: 'default' }
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    };

export interface LlamaConfig {
  modelType: LlamaModelType;
  vocabSize: number;
  /** residual width C (`hidden_size`) */
  hidden: number;
  /** MLP width F (`intermediate_size`) */
  intermediate: number;
  layers: number;
  /** query heads H */
  heads: number;
  /** key/value heads (grouped-query attention; heads is a multiple of it) */
  kvHeads: number;
  /** per-head width D (`head_dim`, else hidden / heads) */
  headDim: number;
  maxPositions: number;
  rmsEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling;
  /** q/k/v projections carry biases (qwen2; llama's attention_bias) */
  qkvBias: boolean;
  /** the output projection carries a bias (llama's attention_bias) */
  oBias: boolean;
  /** per-head RMSNorm of queries and keys before the rotation (qwen3) */
  qkNorm: boolean;
  /** lm_head is the token embedding */
  tiedEmbeddings: boolean;
}

type Json = Record<string, unknown>;

const SUPPORTED: LlamaModelType[] = ['llama', 'qwen2', 'qwen3'];

/** A config.json this decoder cannot run; `field` names the key. */
export class LlamaConfigError extends Error {
  constructor(
    readonly field: string,
    readonly detail: string,
    readonly file = 'config.json',
  ) {
    super(`${file}: ${field}: ${detail}`);
    this.name = 'LlamaConfigError';
  }
}

function posInt(c: Json, key: string, fallback?: number): number {
  const v = c[key] ?? fallback;
  if (v === undefined) throw new LlamaConfigError(key, 'is missing');
  if (!Number.isInteger(v) || (v as number) < 1)
    throw new LlamaConfigError(key, `must be a positive integer, got ${JSON.stringify(v)}`);
  return v as number;
}

function posNum(c: Json, key: string, fallback: number, where = key): number {
  const v = c[key] ?? fallback;
  if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v))
    throw new LlamaConfigError(where, `must be a positive number, got ${JSON.stringify(v)}`);
  return v;
}

function bool(c: Json, key: string, fallback: boolean): boolean {
  const v = c[key] ?? fallback;
  if (typeof v !== 'boolean')
    throw new LlamaConfigError(key, `must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

function ropeScalingOf(c: Json): RopeScaling {
  const raw = c.rope_scaling;
  if (raw === undefined || raw === null) return { type: 'default' };
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new LlamaConfigError('rope_scaling', `must be an object or null, got ${JSON.stringify(raw)}`);
  const r = raw as Json;
  const type = r.rope_type ?? r.type;
  const f = (key: string, fallback?: number) => {
    const v = r[key] ?? fallback;
    if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v))
      throw new LlamaConfigError(
        `rope_scaling.${key}`,
        `must be a positive number, got ${JSON.stringify(v)}`,
      );
    return v;
  };
  if (type === 'default') return { type: 'default' };
  if (type === 'linear') return { type: 'linear', factor: f('factor') };
  if (type === 'llama3') {
    const s = {
      type: 'llama3' as const,
      factor: f('factor'),
      lowFreqFactor: f('low_freq_factor'),
      highFreqFactor: f('high_freq_factor'),
      originalMaxPositionEmbeddings: f('original_max_position_embeddings'),
    };
    if (s.highFreqFactor <= s.lowFreqFactor)
      throw new LlamaConfigError(
        'rope_scaling.high_freq_factor',
        `must exceed low_freq_factor (${s.lowFreqFactor}), got ${s.highFreqFactor}`,
      );
    return s;
  }
  throw new LlamaConfigError(
    'rope_scaling.rope_type',
    `'${String(type)}' is not supported (supported: default, linear, llama3)`,
  );
}

/** Reads and checks a config.json object; throws LlamaConfigError naming the first field it cannot run. */
export function parseLlamaConfig(c: Json): LlamaConfig {
  const modelType = c.model_type;
  if (typeof modelType !== 'string' || !SUPPORTED.includes(modelType as LlamaModelType))
    throw new LlamaConfigError(
      'model_type',
      `${JSON.stringify(modelType)} is not a supported architecture (supported: ${SUPPORTED.join(', ')})`,
    );
  const mt = modelType as LlamaModelType;
  const hidden = posInt(c, 'hidden_size');
  const heads = posInt(c, 'num_attention_heads');
  const kvHeads = posInt(c, 'num_key_value_heads', heads);
  if (heads % kvHeads !== 0)
    throw new LlamaConfigError(
      'num_key_value_heads',
      `${kvHeads} does not divide num_attention_heads (${heads})`,
    );
  if (c.head_dim === undefined || c.head_dim === null) {
    if (hidden % heads !== 0)
      throw new LlamaConfigError(
        'head_dim',
        `is missing and hidden_size ${hidden} is not divisible by ${heads} heads`,
      );
  }
  const headDim = c.head_dim === undefined || c.head_dim === null ? hidden / heads : posInt(c, 'head_dim');
  if (headDim % 2 !== 0)
    throw new LlamaConfigError('head_dim', `must be even for rotary embeddings, got ${headDim}`);
  const act = c.hidden_act ?? 'silu';
  if (act !== 'silu')
    throw new LlamaConfigError('hidden_act', `'${String(act)}' is not supported (the SwiGLU MLP uses silu)`);
  if (mt !== 'llama' && c.use_sliding_window === true)
    throw new LlamaConfigError('use_sliding_window', 'sliding-window attention is not supported');
  if (Array.isArray(c.layer_types) && c.layer_types.some((t) => t !== 'full_attention'))
    throw new LlamaConfigError('layer_types', 'only full_attention layers are supported');
  if (mt === 'llama' && c.mlp_bias === true)
    throw new LlamaConfigError('mlp_bias', 'MLP biases are not supported');
  if (c.pretraining_tp !== undefined && c.pretraining_tp !== 1 && c.pretraining_tp !== null)
    throw new LlamaConfigError('pretraining_tp', `must be 1, got ${JSON.stringify(c.pretraining_tp)}`);
  const attentionBias = mt === 'llama' || mt === 'qwen3' ? bool(c, 'attention_bias', false) : false;
  if (mt === 'qwen3' && attentionBias)
    throw new LlamaConfigError('attention_bias', 'qwen3 with attention biases is not supported');
  return {
    modelType: mt,
    vocabSize: posInt(c, 'vocab_size'),
    hidden,
    intermediate: posInt(c, 'intermediate_size'),
    layers: posInt(c, 'num_hidden_layers'),
    heads,
    kvHeads,
    headDim,
    maxPositions: posInt(c, 'max_position_embeddings', 2048),
    rmsEps: posNum(c, 'rms_norm_eps', 1e-6),
    ropeTheta: posNum(c, 'rope_theta', 10000),
    ropeScaling: ropeScalingOf(c),
    qkvBias: mt === 'qwen2' || attentionBias,
    oBias: mt === 'llama' && attentionBias,
    qkNorm: mt === 'qwen3',
    tiedEmbeddings: bool(c, 'tie_word_embeddings', mt !== 'qwen2'),
  };
}

/**
 * The rotary inverse frequencies (D/2 of them) as transformers computes them (modeling_rope_utils): θ^(−2i/D),
 * divided by `factor` for linear scaling; llama3 scaling divides the low frequencies by `factor`, keeps the high
 * ones and interpolates smoothly between them.
 */
export function ropeInvFreq(cfg: LlamaConfig): Float64Array {
  const D = cfg.headDim;
  const inv = new Float64Array(D / 2);
  for (let i = 0; i < D / 2; i++) inv[i] = Math.fround(1 / Math.fround(cfg.ropeTheta ** ((2 * i) / D)));
  const s = cfg.ropeScaling;
  if (s.type === 'linear') for (let i = 0; i < inv.length; i++) inv[i] /= s.factor;
  else if (s.type === 'llama3') {
    const old = s.originalMaxPositionEmbeddings;
    const lowWavelen = old / s.lowFreqFactor;
    const highWavelen = old / s.highFreqFactor;
    for (let i = 0; i < inv.length; i++) {
      const wavelen = (2 * Math.PI) / inv[i];
      let f = wavelen > lowWavelen ? inv[i] / s.factor : inv[i];
      if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
        const smooth = (old / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        f = ((1 - smooth) * f) / s.factor + smooth * f;
      }
      inv[i] = f;
    }
  }
  return inv;
}
