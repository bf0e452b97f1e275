/**
 * onnxruntime-web as a rollout engine: the policy exported as a KV-cache causal LM (causalLm.ts) in an
 * InferenceSession on the wasm or the webgpu execution provider, decoding with the same host-side token choice
 * as our engine (sampling.ts), so that equal logits give equal tokens and any difference in ids or log-probs
 * comes from the engine's numerics (its kernels and the weight precision).
 *
 * The ORT module is passed in: `onnxruntime-web` (wasm EP; also in Node) or `onnxruntime-web/webgpu` (webgpu
 * EP, browser). The caller sets `env.wasm.wasmPaths` to files it serves (never a CDN).
 * On webgpu the KV cache stays on the GPU between steps (`preferredOutputLocation: gpu-buffer`); only the
 * logits of the last position are read back.
 */
import type * as OrtTypes from 'onnxruntime-common';
import { serialQueue } from '../../core/serial';
import type { PolicyConfig } from '../model';
import { decodeLoop } from '../policy/decode';
import { checkSampleRequest, checkVocabPositions, vocabLogSoftmax } from '../sampling';
import {
  exportCausalLm,
  pastKeyName,
  pastValueName,
  presentKeyName,
  presentValueName,
  type WeightPrecision,
} from './causalLm';
import type { RolloutSampler, SampleRequest, SampleResult, SyncCost } from './sampler';

/** The part of an onnxruntime-web entry this engine uses (both entries export it). */
export interface OrtModule {
  InferenceSession: {
    create(
      model: Uint8Array,
      options?: OrtTypes.InferenceSession.SessionOptions,
    ): Promise<OrtTypes.InferenceSession>;
  };
  Tensor: typeof OrtTypes.Tensor;
}

export type OrtEp = 'wasm' | 'webgpu';

export interface OrtLmOptions {
  ort: OrtModule;
  ep: OrtEp;
  config: PolicyConfig;
  precision?: WeightPrecision;
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

export class OrtCausalLm implements RolloutSampler {
  readonly backend: string;
  readonly precision: WeightPrecision;
  readonly vocabSize: number;
  readonly contextLength: number;
  /** bytes of the model the session runs */
  modelBytes = 0;
  /** where the last step left the KV cache: 'gpu-buffer' only when the webgpu EP computed it */
  cacheLocation = '';
  private session: OrtTypes.InferenceSession | null = null;
  /** calls on one session run one at a time (a sync waits for them) */
  private readonly serial = serialQueue();

  private constructor(private readonly opts: OrtLmOptions) {
    this.backend = `ort-${opts.ep}`;
    this.precision = opts.precision ?? 'f32';
    this.vocabSize = opts.config.vocabSize;
    this.contextLength = opts.config.contextLength;
  }

  static async create(opts: OrtLmOptions, params: Float32Array): Promise<OrtCausalLm> {
    const lm = new OrtCausalLm(opts);
    await lm.syncWeights(params);
    return lm;
  }

  /** Re-exports the weights at this engine's precision and replaces the session (the old one is released). */
  syncWeights(params: Float32Array): Promise<SyncCost> {
    return this.serial(async () => {
      const t0 = now();
      const model = exportCausalLm(this.opts.config, params, { precision: this.precision });
      const t1 = now();
      const { ort, ep, config } = this.opts;
      const present = Array.from({ length: config.layers }, (_, l) => [
        presentKeyName(l),
        presentValueName(l),
      ]).flat();
      const session = await ort.InferenceSession.create(model, {
        executionProviders: [ep],
        ...(ep === 'webgpu'
          ? { preferredOutputLocation: Object.fromEntries(present.map((n) => [n, 'gpu-buffer' as const])) }
          : {}),
      });
      const t2 = now();
      const old = this.session;
      this.session = session;
      this.modelBytes = model.length;
      if (old) await old.release();
      return { exportMs: t1 - t0, loadMs: t2 - t1, totalMs: now() - t0, bytes: model.length };
    });
  }

  private feedsFor(ids: number[], pos: number, past: Record<string, OrtTypes.Tensor>) {
    const { Tensor } = this.opts.ort;
    const n = ids.length;
    return {
      input_ids: new Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]),
      attention_mask: new Tensor('int64', new BigInt64Array(pos + n).fill(1n), [1, pos + n]),
      position_ids: new Tensor(
        'int64',
        BigInt64Array.from(ids, (_, i) => BigInt(pos + i)),
        [1, n],
      ),
      ...past,
    };
  }

  private emptyPast(): Record<string, OrtTypes.Tensor> {
    const { Tensor } = this.opts.ort;
    const { layers: L, heads: H, width: C } = this.opts.config;
    const out: Record<string, OrtTypes.Tensor> = {};
    for (let l = 0; l < L; l++)
      for (const name of [pastKeyName(l), pastValueName(l)])
        out[name] = new Tensor('float32', new Float32Array(0), [1, H, 0, C / H]);
    return out;
  }

  /**
   * Runs `ids` at positions pos.. on top of `past`; returns the logits (n, V) read back and the new cache.
   * GPU-resident caches of the previous step are released once the new one exists.
   */
  private async forward(ids: number[], pos: number, past: Record<string, OrtTypes.Tensor>) {
    const session = this.session;
    if (!session) throw new Error('ORT engine has no session (disposed?)');
    const out = await session.run(this.feedsFor(ids, pos, past));
    for (const t of Object.values(past)) if (t.location === 'gpu-buffer') t.dispose();
    this.cacheLocation = out[presentKeyName(0)].location;
    const next: Record<string, OrtTypes.Tensor> = {};
    for (let l = 0; l < this.opts.config.layers; l++) {
      next[pastKeyName(l)] = out[presentKeyName(l)];
      next[pastValueName(l)] = out[presentValueName(l)];
    }
    const logits = (await out.logits.getData()) as Float32Array;
    return { logits, past: next };
  }

  sample(req: SampleRequest): Promise<SampleResult> {
    return this.serial(async () => {
      checkSampleRequest(req, this.vocabSize, this.contextLength);
      const V = this.vocabSize;
      let past = this.emptyPast();
      let last: Float32Array = new Float32Array(V);
      try {
        return await decodeLoop(
          req,
          this.contextLength,
          async (id, pos) => {
            const r = await this.forward([id], pos, past);
            past = r.past;
            last = r.logits;
          },
          async () => last,
          async (prompt) => {
            const r = await this.forward(prompt, 0, past);
            past = r.past;
            return r.logits.subarray((prompt.length - 1) * V, prompt.length * V);
          },
        );
      } finally {
        for (const t of Object.values(past)) if (t.location === 'gpu-buffer') t.dispose();
      }
    });
  }

  /**
   * The whole next-token distribution at chosen positions of one sequence, under this engine's numerics and
   * precision: one forward over `ids` from an empty cache, log softmax(logits / temperature) of the row before
   * each position p (1 ≤ p < ids.length).
   */
  vocabLogProbs(ids: number[], positions: number[], temperature: number): Promise<Float32Array[]> {
    return this.serial(async () => {
      if (ids.length > this.contextLength)
        throw new Error(
          `vocabLogProbs: ${ids.length} tokens exceed the context length ${this.contextLength}`,
        );
      for (const id of ids)
        if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize)
          throw new Error(`vocabLogProbs: token ${id} is outside the vocabulary (${this.vocabSize})`);
      checkVocabPositions(positions, ids.length, 'vocabLogProbs');
      const V = this.vocabSize;
      const r = await this.forward(ids, 0, this.emptyPast());
      for (const t of Object.values(r.past)) if (t.location === 'gpu-buffer') t.dispose();
      return positions.map((p) => vocabLogSoftmax(r.logits.subarray((p - 1) * V, p * V), temperature));
    });
  }

  async dispose(): Promise<void> {
    await this.serial(async () => {
      const s = this.session;
      this.session = null;
      if (s) await s.release();
    });
  }
}
