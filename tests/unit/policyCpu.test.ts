import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/core/random';
import {
  decodeCheckpoint,
  encodeCheckpoint,
  loadCheckpointFile,
  saveCheckpointFile,
} from '../../src/engine/checkpoint';
import { initParams, layoutOf, resolveConfig } from '../../src/engine/model';
import { CpuPolicy } from '../../src/engine/policy/cpuPolicy';
import { pickToken } from '../../src/engine/sampling';

const cfg = { vocabSize: 40, contextLength: 12, layers: 1, width: 16, heads: 2, seed: 11 };

function fixedBatch() {
  const B = 2;
  const T = 10;
  const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 13 + 5) % cfg.vocabSize);
  const mask = Float32Array.from({ length: B * T }, (_, i) => (i < T + 7 ? 1 : 0));
  return { tokens, mask, batchSize: B, seqLen: T };
}

describe('policy model layout and init', () => {
  it('lays every tensor out once, matrices before vectors', () => {
    const c = resolveConfig(cfg);
    const l = layoutOf(c);
    let next = 0;
    for (const t of l.tensors) {
      expect(t.offset).toBe(next);
      next += t.size;
    }
    expect(l.total).toBe(next);
    const C = 16;
    // qkv 3C², proj C², fc 4C², fc-proj 4C²; ln1 2C, qkv bias 3C, proj bias C, ln2 2C, fc bias 4C, fc-proj bias C
    const perLayer = 12 * C * C + 13 * C;
    expect(l.total).toBe(40 * C + 12 * C + perLayer + 2 * C);
    expect(l.decayEnd).toBe(l.byName.get('h0.ln1.w')?.offset);
  });

  it('initialises deterministically from the seed', () => {
    const c = resolveConfig(cfg);
    expect(initParams(c)).toEqual(initParams(c));
    expect(initParams({ ...c, seed: 12 })).not.toEqual(initParams(c));
  });

  it('rejects bad configs and batches with specific messages', () => {
    expect(() => resolveConfig({ width: 10, heads: 3 })).toThrow('width 10 is not divisible by heads 3');
    expect(() => resolveConfig({ layers: 0 })).toThrow('layers must be a positive integer');
    const p = new CpuPolicy(cfg);
    const b = fixedBatch();
    b.tokens[13] = 99;
    return expect(p.logProbs(b)).rejects.toThrow(
      'token 99 at row 1, position 3 is outside the vocabulary (40)',
    );
  });
});

describe('CPU policy engine', () => {
  it('overfits a fixed batch', async () => {
    const p = new CpuPolicy(cfg, { lr: 1e-2, weightDecay: 0 });
    const b = fixedBatch();
    const w = Float32Array.from(b.mask, (m, i) => (m && i % b.seqLen ? 1 / 15 : 0));
    const first = await p.trainStep(b, w);
    let last = first;
    for (let s = 0; s < 30; s++) last = await p.trainStep(b, w);
    expect(first.loss).toBeGreaterThan(3);
    expect(last.loss).toBeLessThan(0.3 * first.loss);
    expect(last.step).toBe(31);
  });

  it('a negative weight pushes a log-prob down, a positive one up', async () => {
    const b = fixedBatch();
    for (const sign of [1, -1]) {
      const p = new CpuPolicy(cfg, { lr: 1e-2 });
      const w = new Float32Array(b.tokens.length);
      w[5] = sign;
      const before = (await p.logProbs(b)).logProbs[5];
      await p.trainStep(b, w);
      const after = (await p.logProbs(b)).logProbs[5];
      expect(Math.sign(after - before)).toBe(sign);
    }
  });

  it('samples reproducibly and stops on a stop id', async () => {
    const p = new CpuPolicy(cfg);
    const req = { promptIds: [1, 2], temperature: 1, topP: 1, maxTokens: 6, seed: 9 };
    const a = await p.sample(req);
    expect(await p.sample(req)).toEqual(a);
    expect(a.tokenIds).toHaveLength(6);
    const s = await p.sample({ ...req, stopIds: [a.tokenIds[1]] });
    expect(s.finishReason).toBe('stop');
    expect(s.tokenIds.at(-1)).toBe(a.tokenIds[1]);
    // The context (12) bounds the generation: 10-token prompt, at most 2 new tokens.
    const long = await p.sample({
      ...req,
      promptIds: Array.from({ length: 10 }, (_, i) => i),
      maxTokens: 50,
    });
    expect(long.tokenIds.length).toBeLessThanOrEqual(3);
    expect(long.finishReason).toBe('length');
    await expect(p.sample({ ...req, topP: 0 })).rejects.toThrow('topP must be in (0, 1]');
    await expect(p.sample({ ...req, promptIds: [1, 40] })).rejects.toThrow('promptIds[1] = 40');
  });
});

describe('token picking', () => {
  it('top-p keeps the smallest prefix reaching the mass, greedy takes the argmax', () => {
    const logits = Float32Array.from([Math.log(0.5), Math.log(0.3), Math.log(0.15), Math.log(0.05)]);
    const rand = mulberry32(1);
    const seen = new Set<number>();
    for (let i = 0; i < 300; i++) seen.add(pickToken(logits, 1, 0.75, rand).id);
    expect([...seen].sort()).toEqual([0, 1]);
    const g = pickToken(logits, 0, 1, rand);
    expect(g.id).toBe(0);
    expect(g.logProb).toBeCloseTo(Math.log(0.5), 6);
    const hot = pickToken(logits, 2, 1, () => 0.99);
    expect(hot.id).toBe(3);
    const z = Array.from(logits, (v) => v / 2);
    const lse = Math.log(z.reduce((a, v) => a + Math.exp(v), 0));
    expect(hot.logProb).toBeCloseTo(z[3] - lse, 6);
  });
});

describe('safetensors checkpoints', () => {
  it('round-trips through a file and follows the format', async () => {
    const p = new CpuPolicy(cfg);
    const bytes = encodeCheckpoint(p.config, p.params, { step: '3' });
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect(n % 8).toBe(0);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
    expect(header.wte).toEqual({ dtype: 'F32', shape: [40, 16], data_offsets: [0, 40 * 16 * 4] });
    const wte0 = new DataView(bytes.buffer).getFloat32(8 + n, true);
    expect(wte0).toBe(p.params[0]);
    const dir = mkdtempSync(join(tmpdir(), 'ckpt-'));
    try {
      const path = join(dir, 'p.safetensors');
      await saveCheckpointFile(path, bytes);
      const back = await loadCheckpointFile(path);
      expect(back.params).toEqual(p.params);
      expect(back.config).toEqual(p.config);
      expect(back.metadata).toEqual({ step: '3' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects damaged files with a specific message', () => {
    const p = new CpuPolicy(cfg);
    const bytes = encodeCheckpoint(p.config, p.params);
    expect(() => decodeCheckpoint(bytes.subarray(0, 5), 'x.safetensors')).toThrow(
      'x.safetensors: 5 bytes is too short',
    );
    expect(() => decodeCheckpoint(bytes.subarray(0, bytes.length - 4), 'x')).toThrow(
      "tensor 'lnf.b' data_offsets",
    );
    const bad = new Uint8Array(bytes);
    bad[9] = 0xff;
    expect(() => decodeCheckpoint(bad, 'x')).toThrow('header is not valid UTF-8 JSON');
  });
});

describe('CPU engine: fast kernels, accumulation, optimizer state', () => {
  const weightsOf = (b: ReturnType<typeof fixedBatch>) =>
    Float32Array.from(b.mask, (m, i) => (m && i % b.seqLen ? ((i % 5) - 2) / 7 : 0));

  it('fast kernels give the reference engine’s log-probs and gradients', async () => {
    const b = fixedBatch();
    const w = weightsOf(b);
    const fast = new CpuPolicy(cfg);
    const ref = new CpuPolicy(cfg, {}, undefined, { kernels: 'reference' });
    const a = await fast.logProbs(b);
    const r = await ref.logProbs(b);
    for (let i = 0; i < a.logProbs.length; i++) expect(a.logProbs[i]).toBeCloseTo(r.logProbs[i], 5);
    fast.computeGrads(b, w);
    ref.computeGrads(b, w);
    let err = 0;
    for (let i = 0; i < fast.grads.length; i++) err = Math.max(err, Math.abs(fast.grads[i] - ref.grads[i]));
    expect(err).toBeLessThanOrEqual(1e-5);
  });

  it('two accumulated micro-batches equal one batch, and weights may depend on the log-probs', async () => {
    const b = fixedBatch();
    const w = weightsOf(b);
    const T = b.seqLen;
    const row = (r: number) => ({
      tokens: b.tokens.slice(r * T, (r + 1) * T),
      mask: b.mask.slice(r * T, (r + 1) * T),
      batchSize: 1,
      seqLen: T,
    });
    const whole = new CpuPolicy(cfg);
    whole.computeGrads(b, w);
    const parts = new CpuPolicy(cfg);
    const seen: number[] = [];
    for (const r of [0, 1])
      await parts.accumulateGrads(row(r), (lp) => {
        seen.push(lp.logProbs.length);
        return w.slice(r * T, (r + 1) * T);
      });
    expect(seen).toEqual([T, T]);
    let err = 0;
    for (let i = 0; i < whole.grads.length; i++)
      err = Math.max(err, Math.abs(whole.grads[i] - parts.grads[i]));
    expect(err).toBeLessThanOrEqual(1e-6);
    const s = await parts.optimizerStep();
    expect(s).toMatchObject({ step: 1, skipped: false });
    expect(parts.grads.every((g) => g === 0)).toBe(true);
  });

  it('skips the update on a non-finite gradient norm and zeroes the gradient', async () => {
    const p = new CpuPolicy(cfg);
    const before = await p.getParams();
    p.grads[3] = Number.POSITIVE_INFINITY;
    const s = await p.optimizerStep();
    expect(s.skipped).toBe(true);
    expect(s.step).toBe(0);
    expect(await p.getParams()).toEqual(before);
    expect(p.grads[3]).toBe(0);
  });

  it('restores AdamW state so the next step is identical', async () => {
    const b = fixedBatch();
    const w = weightsOf(b);
    const a = new CpuPolicy(cfg, { lr: 1e-2 });
    await a.trainStep(b, w);
    const params = await a.getParams();
    const state = await a.getOptimizerState();
    const next = await a.trainStep(b, w);
    const c = new CpuPolicy(cfg, { lr: 1e-2 }, params);
    await c.setOptimizerState(state);
    const again = await c.trainStep(b, w);
    expect(again.step).toBe(next.step);
    expect(again.gradNorm).toBe(next.gradNorm);
    expect(await c.getParams()).toEqual(await a.getParams());
    await expect(c.setOptimizerState({ ...state, m: new Float32Array(3) })).rejects.toThrow(
      'moments have 3 and',
    );
  });

  it('rejects non-finite weights from a weights function', async () => {
    const p = new CpuPolicy(cfg);
    const b = fixedBatch();
    await expect(
      p.accumulateGrads(b, () => new Float32Array(b.tokens.length).fill(Number.NaN)),
    ).rejects.toThrow('weights[0] is NaN');
  });

  it('batched prefill samples the same tokens as the reference kernels', async () => {
    const req = { promptIds: [1, 2, 3, 4, 5], temperature: 1, topP: 1, maxTokens: 5, seed: 9 };
    const fast = await new CpuPolicy(cfg).sample(req);
    const ref = await new CpuPolicy(cfg, {}, undefined, { kernels: 'reference' }).sample(req);
    expect(fast.tokenIds).toEqual(ref.tokenIds);
    for (let i = 0; i < fast.logProbs.length; i++) expect(fast.logProbs[i]).toBeCloseTo(ref.logProbs[i], 5);
  });
});
