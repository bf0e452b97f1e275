/**
 * What the CPU engines share around their backward pass: the gradient buffer, AdamW's moments and step over
 * the trainable flat buffer (cpu/adamw.ts), the train step (zero → backward → optimizer step), the optimizer
 * state of a checkpoint, and the check of a batch's per-token weights.
 */
import { type AdamWHyper, checkedOptimizerState, cpuOptimizerStep } from '../cpu/adamw';
import { type Batch, defaultOptimizer } from '../model';
import type {
  AccumulateResult,
  OptimizerState,
  OptimizerStepResult,
  TrainStepResult,
  WeightsFn,
} from './types';

/** Refuses per-token weights of the wrong length or with a non-finite value. */
export function checkWeights(weights: Float32Array, n: number): void {
  if (weights.length !== n)
    throw new Error(`trainStep: weights has ${weights.length} values, expected one per token (${n})`);
  for (let i = 0; i < weights.length; i++)
    if (!Number.isFinite(weights[i])) throw new Error(`trainStep: weights[${i}] is ${weights[i]}`);
}

export abstract class CpuTrainer {
  optimizer: AdamWHyper;
  /** the gradient of the trainable buffer */
  readonly grads: Float32Array;
  m: Float32Array;
  v: Float32Array;
  step = 0;

  /** `n`: the size of the trainable buffer. */
  constructor(n: number, optimizer: Partial<AdamWHyper>) {
    this.optimizer = { ...defaultOptimizer, ...optimizer };
    this.grads = new Float32Array(n);
    this.m = new Float32Array(n);
    this.v = new Float32Array(n);
  }

  /** The buffer the optimizer updates (not a copy) and where its weight decay ends. */
  protected abstract trainableBuffer(): { params: Float32Array; decayEnd: number };

  /** Gradient of −Σ w·logp into this.grads (added when `accumulate`, else overwritten). */
  protected abstract backward(
    batch: Batch,
    weights: Float32Array | WeightsFn,
    accumulate: boolean,
  ): AccumulateResult;

  /** Gradient of −Σ w·logp into this.grads (overwritten), without an update (tests and gradient checks). */
  computeGrads(batch: Batch, weights: Float32Array): AccumulateResult {
    return this.backward(batch, weights, false);
  }

  async accumulateGrads(batch: Batch, weights: Float32Array | WeightsFn): Promise<AccumulateResult> {
    return this.backward(batch, weights, true);
  }

  async optimizerStep(): Promise<OptimizerStepResult> {
    const { params, decayEnd } = this.trainableBuffer();
    const slots = { params, grads: this.grads, m: this.m, v: this.v, step: this.step };
    const r = cpuOptimizerStep(slots, decayEnd, this.optimizer);
    this.step = slots.step;
    return r;
  }

  async trainStep(batch: Batch, weights: Float32Array): Promise<TrainStepResult> {
    this.grads.fill(0);
    const r = this.backward(batch, weights, true);
    const s = await this.optimizerStep();
    return { ...r, gradNorm: s.gradNorm, step: s.step };
  }

  async getOptimizerState(): Promise<OptimizerState> {
    return { m: new Float32Array(this.m), v: new Float32Array(this.v), step: this.step };
  }

  async setOptimizerState(state: OptimizerState): Promise<void> {
    const s = checkedOptimizerState(state, this.grads.length);
    this.m = s.m;
    this.v = s.v;
    this.step = s.step;
  }

  /** Fresh moments, a zero gradient and step 0 (new parameters were set). */
  protected resetOptimizer(): void {
    this.m = new Float32Array(this.grads.length);
    this.v = new Float32Array(this.grads.length);
    this.grads.fill(0);
    this.step = 0;
  }
}
