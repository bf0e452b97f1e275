import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { command as sft } from '../../../src/cli/commands/sft';
import { loadTokenizer } from '../../../src/cli/tokenizers';
import { decodeCheckpoint } from '../../../src/engine/checkpoint';
import { CpuPolicy } from '../../../src/engine/policy/cpuPolicy';
import { answerText } from '../../../src/harness/harness';
import { instructionHarness, scoreInstruction } from '../../../src/harness/instruction';
import { runSearchTool, SEARCH_CORPUS, searchHarness } from '../../../src/harness/search';
import { expertRollouts, expertRows, runSft } from '../../../src/train/sft';

const dir = mkdtempSync(join(tmpdir(), 'sft-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const tok = loadTokenizer('policy');
const model = { vocabSize: 1024, contextLength: 1024, layers: 1, width: 32, heads: 2, seed: 4 };

describe('SFT warm start', () => {
  it('lowers the loss on the expert rows and is bit-reproducible from its seed', async () => {
    const opts = {
      harness: 'instruction-short' as const,
      seed: 2,
      tasks: 16,
      steps: 6,
      batchRows: 8,
      lr: 3e-3,
    };
    const a = new CpuPolicy(model);
    const ra = await runSft(a, tok, opts);
    const b = new CpuPolicy(model);
    await runSft(b, tok, opts);
    expect(ra.rows).toBe(16);
    expect(ra.failedExperts).toBe(0);
    expect(ra.losses[ra.losses.length - 1]).toBeLessThan(ra.losses[0]);
    expect(Buffer.from(a.params.buffer).equals(Buffer.from(b.params.buffer))).toBe(true);
  });

  it('lab sft writes a policy checkpoint with its recipe, the same bytes for the same seed', async () => {
    const args = (out: string) => [
      '--harness',
      'instruction-short',
      '--tasks',
      '8',
      '--steps',
      '3',
      '--batch-rows',
      '4',
      '--out',
      out,
    ];
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(await sft.run(args(join(dir, 'a.safetensors')))).toBe(0);
      expect(await sft.run(args(join(dir, 'b.safetensors')))).toBe(0);
    } finally {
      log.mockRestore();
    }
    const a = readFileSync(join(dir, 'a.safetensors'));
    expect(a.equals(readFileSync(join(dir, 'b.safetensors')))).toBe(true);
    const ck = decodeCheckpoint(new Uint8Array(a));
    expect(JSON.parse(ck.metadata['harness_lab.sft'])).toMatchObject({
      harness: 'instruction-short',
      steps: 3,
      seed: 1,
    });
    expect(ck.config).toMatchObject({ layers: 2, width: 64, heads: 4, contextLength: 1024 });
    await expect(sft.run(['--harness', 'nope', '--out', 'x'])).rejects.toThrow('--harness must be one of');
    await expect(sft.run(['--harness', 'coding'])).rejects.toThrow('--out is required');
  });

  it('a --save-every snapshot is the checkpoint of the shorter run; --init continues from a checkpoint', async () => {
    const base = ['--harness', 'instruction-short', '--tasks', '8', '--batch-rows', '4'];
    const constant = ['--schedule', 'constant', '--warmup', '1'];
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      const long = join(dir, 'long.safetensors');
      expect(await sft.run([...base, ...constant, '--steps', '3', '--save-every', '2', '--out', long])).toBe(
        0,
      );
      const short = join(dir, 'short.safetensors');
      expect(await sft.run([...base, ...constant, '--steps', '2', '--out', short])).toBe(0);
      const snap = readFileSync(join(dir, 'long.step2.safetensors'));
      expect(snap.equals(readFileSync(short))).toBe(true);
      expect(snap.equals(readFileSync(long))).toBe(false);
      const cont = join(dir, 'cont.safetensors');
      expect(await sft.run([...base, '--steps', '1', '--init', short, '--out', cont])).toBe(0);
      const a = decodeCheckpoint(new Uint8Array(readFileSync(short)));
      const c = decodeCheckpoint(new Uint8Array(readFileSync(cont)));
      expect(c.config).toEqual(a.config);
      expect(Buffer.from(c.params.buffer).equals(Buffer.from(a.params.buffer))).toBe(false);
      const rec = JSON.parse(c.metadata['harness_lab.sft']);
      expect(rec.init).toEqual({ file: short, sft: JSON.parse(a.metadata['harness_lab.sft']) });
      expect(rec).toMatchObject({ steps: 1, preset: 'tiny' });
    } finally {
      log.mockRestore();
    }
    await expect(
      sft.run([...base, '--init', join(dir, 'short.safetensors'), '--model-preset', 'small', '--out', 'x']),
    ).rejects.toThrow('--init takes the shape from its checkpoint');
    await expect(sft.run([...base, '--init', join(dir, 'missing'), '--out', 'x'])).rejects.toThrow(
      '--init: cannot read',
    );
    await expect(sft.run([...base, '--schedule', 'linear', '--out', 'x'])).rejects.toThrow(
      '--schedule must be cosine or constant',
    );
  });

  it('the shipped checkpoints load and were made by lab sft for their harness', () => {
    for (const h of ['instruction-short', 'instruction', 'coding', 'search']) {
      const ck = decodeCheckpoint(
        new Uint8Array(
          readFileSync(new URL(`../../../public/checkpoints/${h}.safetensors`, import.meta.url)),
        ),
      );
      expect(JSON.parse(ck.metadata['harness_lab.sft']).harness).toBe(h);
      expect(ck.config.contextLength).toBe(1024);
    }
  });

  it('pre-training tasks ask over generated content neither split uses, and the expert solves them', async () => {
    const titles = new Set(SEARCH_CORPUS.map((d) => d.title));
    const pre = searchHarness.pretrainTasks?.(1, 24) ?? [];
    expect(pre).toHaveLength(24);
    expect(searchHarness.pretrainTasks?.(1, 24)).toEqual(pre);
    expect(new Set(pre.map((t) => t.id)).size).toBe(24);
    expect(new Set(pre.map((t) => t.world)).size).toBe(24);
    // the entities asked about are (almost all) not the fixed corpus's; the generated world's article answers
    expect(pre.filter((t) => titles.has(t.hops[0])).length).toBeLessThan(3);
    const t = pre[0];
    expect(runSearchTool('search', JSON.stringify({ query: t.hops[0] }))).not.toMatch(
      new RegExp(`^\\[1\\] ${t.hops[0]}\n`),
    );
    for (const level of [1, 2, 3])
      for (const task of searchHarness.pretrainTasks?.(2, 4, level) ?? [])
        expect(searchHarness.levelOf(task)).toBe(level);
    const rollouts = await expertRollouts('search', tok, 'pretrain', 1, 12);
    expect(rollouts.map((r) => r.finalReward)).toEqual(Array(12).fill(1));
    // instruction: invented topics, none of the splits' own
    const topics = new Set(
      [...instructionHarness.makeTasks('train', 0, 64), ...instructionHarness.makeTasks('val', 0, 64)].map(
        (x) => x.topic,
      ),
    );
    const ins = instructionHarness.pretrainTasks?.(1, 16) ?? [];
    for (const x of ins) {
      expect(topics.has(x.topic)).toBe(false);
      expect(scoreInstruction(x, answerText(instructionHarness.expert(x, [])))).toBe(1);
    }
    // the rows: the split's tasks' and the pre-training tasks'
    const { rows } = await expertRows('search', tok, 1, 3, { pretrainTasks: 2 });
    expect(rows.nRows).toBe(5);
    expect(rows.dataIds.filter((d) => d.startsWith('search-pretrain-')).sort()).toEqual(
      pre.slice(0, 2).map((x) => x.id),
    );
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      const out = join(dir, 'pre.safetensors');
      const args = ['--harness', 'search', '--tasks', '2', '--pretrain-tasks', '2', '--steps', '1'];
      expect(await sft.run([...args, '--batch-rows', '2', '--out', out])).toBe(0);
      const meta = JSON.parse(
        decodeCheckpoint(new Uint8Array(readFileSync(out))).metadata['harness_lab.sft'],
      );
      expect(meta).toMatchObject({ harness: 'search', pretrain_tasks: 2, expert_rows: 4 });
    } finally {
      log.mockRestore();
    }
    await expect(sft.run(['--harness', 'coding', '--pretrain-tasks', '4', '--out', 'x'])).rejects.toThrow(
      "harness 'coding' has no pre-training tasks",
    );
    await expect(sft.run(['--harness', 'search', '--pretrain-tasks', '-1', '--out', 'x'])).rejects.toThrow(
      '--pretrain-tasks must be an integer ≥ 0',
    );
  });
});
