import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getAdvEstimator, listAdvEstimators, registerAdvEstimator } from '../../src/core/algos/advantage';
import { getAggMode } from '../../src/core/algos/aggLoss';
import { getLossMode, listLossModes } from '../../src/core/algos/lossModes';
import { getPolicyLoss } from '../../src/core/algos/policyLoss';
import { createRegistry, UnknownNameError } from '../../src/core/registry';
import { getFramework } from '../../src/core/trace/io/frameworks';
import { getHarness, HARNESSES } from '../../src/harness/registry';
import { ROLLOUT_ENGINES } from '../../src/train/rolloutEngines';

describe('createRegistry', () => {
  it('keeps registration order, refuses a name twice, and names the valid ones for an unknown one', () => {
    const r = createRegistry<{ v: number }>('widget');
    r.register('b', { v: 1 });
    r.register('a', { v: 2 });
    expect(r.names()).toEqual(['b', 'a']);
    expect(r.list().map((x) => x.v)).toEqual([1, 2]);
    expect(r.get('a').v).toBe(2);
    expect(r.find('c')).toBeUndefined();
    expect(() => r.register('a', { v: 3 })).toThrow("widget 'a' is already registered");
    expect(r.get('a').v).toBe(2);
    expect(() => r.register('', { v: 0 })).toThrow('a widget needs a non-empty name');
    let e: unknown;
    try {
      r.get('c');
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(UnknownNameError);
    expect((e as Error).message).toBe("unknown widget 'c' (valid: b, a)");
    expect((e as UnknownNameError).valid).toEqual(['b', 'a']);
    const upstreamStyle = createRegistry<number>('mode', {
      unknown: (n, v) => `Invalid mode: ${n} (${v.length})`,
    });
    upstreamStyle.register('x', 1);
    expect(() => upstreamStyle.get('y')).toThrow('Invalid mode: y (1)');
  });

  it('is what the registries use: one message shape, upstream messages where upstream raises its own', () => {
    expect(() => getAdvEstimator('nope')).toThrow(
      `unknown advantage estimator 'nope' (valid: ${listAdvEstimators()
        .map((e) => e.name)
        .join(', ')})`,
    );
    expect(() => registerAdvEstimator('grpo', { rowScalars: () => new Float64Array(0) } as never)).toThrow(
      "advantage estimator 'grpo' is already registered",
    );
    expect(() => getLossMode('nope')).toThrow(
      `unknown loss mode 'nope' (valid: ${listLossModes()
        .map((m) => m.name)
        .join(', ')})`,
    );
    expect(() => getFramework('nope')).toThrow(/^unknown framework format 'nope' \(valid: /);
    expect(() => getHarness('nope' as never)).toThrow(
      `unknown harness 'nope' (valid: ${HARNESSES.names().join(', ')})`,
    );
    expect(() => ROLLOUT_ENGINES.get('vllm')).toThrow(
      "unknown rollout engine 'vllm' (valid: policy, onnxruntime-web, transformers.js)",
    );
    expect(() => getAggMode('mean')).toThrow(/^Invalid loss_agg_mode: mean \(known: token-mean, /);
    expect(() => getPolicyLoss('gspo')).toThrow(
      /^Unsupported loss mode: gspo \(known: vanilla, per_rollout_mean\)/,
    );
  });

  it('no module in src/ keeps a registry of its own (a register function over a private Map)', () => {
    const root = join(import.meta.dirname, '../../src');
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.tsx?$/.test(e.name)) {
          const text = readFileSync(p, 'utf8');
          if (/\bfunction register[A-Z]\w*\(/.test(text) && !/\bcreateRegistry\b/.test(text))
            offenders.push(p.slice(root.length + 1));
        }
      }
    };
    walk(root);
    expect(offenders).toEqual([]);
  });
});
