import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/args';
import { ANALYZE_FLAGS } from '../../src/cli/commands/analyze';
import { trainFlagSpec } from '../../src/cli/commands/train';
import { TRAINER_FLAG_ALIASES, trainerFlagSpec, trainerFlags } from '../../src/cli/trainerFlags';
import { CONFIG_TABLE, configField, configFieldByFlag, findConfigField } from '../../src/core/config/fields';
import { TRAINER_OPTIONS } from '../../src/core/pipeline/options';
import { jobTemplates } from '../../src/server/protocol/templates';
import { CONFIG_FIELDS, defaultTrainConfig, getPath } from '../../src/train/config';
import { trainerOptions } from '../../src/train/objective';
import { controlSpecs, resolveOptions } from '../../src/ui/lab/options';
import { viewSchema } from '../../src/ui/store';
import { formSections } from '../../src/ui/train/formConfig';
import { decodeHash } from '../../src/ui/urlState';

const byFlag = (flag: string) => configFieldByFlag(flag);

/**
 * The page's URL keys that are not settings: tab, sample, selection, colouring, the Train tab's view state, the
 * Scheduling view's scenario, mode and simulator inputs (core/sim's own parameter table, not a trainer's config).
 */
const VIEW_KEYS = [
  'sim',
  'smode',
  'sset',
  'tab',
  'sample',
  'r',
  'c',
  'tv',
  'color',
  'sign',
  'run',
  'trun',
  'tcmp',
  'tsmooth',
  'tview',
  'tstep',
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sourceFiles(p) : /\.tsx?$/.test(n) ? [p] : [];
  });
}

describe('the config table', () => {
  it('has one key per field and one flag per key, each key a Hydra path or lab.*', () => {
    expect(new Set(CONFIG_TABLE.map((f) => f.key)).size).toBe(CONFIG_TABLE.length);
    expect(new Set(CONFIG_TABLE.map((f) => f.flag)).size).toBe(CONFIG_TABLE.length);
    for (const f of CONFIG_TABLE) {
      expect(f.key).toMatch(/^(lab|algorithm|data|actor_rollout_ref|agentlightning|trainer)\.[a-z0-9_.]+$/);
      expect(f.scopes.length).toBeGreaterThan(0);
      expect(f.help.length).toBeGreaterThan(0);
      if (f.scopes.includes('analysis')) expect(f.option && f.urlKey && f.page !== undefined).toBeTruthy();
      else expect(f.option ?? f.urlKey).toBeUndefined();
      // the default passes the field's own bounds
      if (typeof f.default === 'number') {
        if (f.min !== undefined) expect(f.minExclusive ? f.default > f.min : f.default >= f.min).toBe(true);
        if (f.max !== undefined) expect(f.default).toBeLessThanOrEqual(f.max);
      }
      if (f.default === null) expect(f.nullable).toBe(true);
      if (f.kind === 'enum' && f.choices && f.default !== null)
        expect(f.choices().map((c) => c.value)).toContain(f.default);
    }
    expect(() => configField('algorithm.bogus')).toThrow(
      /unknown config key 'algorithm.bogus' \(known: lab.harness/,
    );
  });

  it('is where every trainer option, run-config leaf and default comes from', () => {
    expect(TRAINER_OPTIONS.map((o) => o.key)).toEqual(
      CONFIG_TABLE.filter((f) => f.scopes.includes('analysis')).map((f) => f.key),
    );
    for (const o of TRAINER_OPTIONS) {
      expect(o.field).toBe(configField(o.key));
      expect(o.flag).toBe(o.field.flag);
    }
    expect(CONFIG_FIELDS.map((f) => f.path)).toEqual(
      CONFIG_TABLE.filter((f) => f.scopes.includes('run')).map((f) => f.key),
    );
    const d = defaultTrainConfig();
    for (const f of CONFIG_FIELDS) {
      expect(f.def).toBe(configField(f.path));
      expect(getPath(d, f.path)).toEqual(f.def.default);
    }
    // a key both read: one default, so a run at its defaults analyses as a trace at the defaults (but for the
    // mini-batch, which a run counts in tasks, and the trimming seed, which is the run's step)
    const fromRun = trainerOptions(d);
    const fromTrace = resolveOptions(decodeHash(viewSchema, ''));
    for (const o of TRAINER_OPTIONS)
      if (o.field.scopes.includes('run'))
        expect([o.key, fromRun[o.name]]).toEqual([o.key, fromTrace[o.name]]);
    expect([fromRun.maxPromptLength, fromRun.maxResponseLength, fromRun.lossMode]).toEqual([
      fromTrace.maxPromptLength,
      fromTrace.maxResponseLength,
      fromTrace.lossMode,
    ]);
  });

  it('gives every CLI flag one meaning in every command', () => {
    const train = trainFlagSpec();
    const analyze = trainerFlagSpec(ANALYZE_FLAGS);
    const own = new Set(['out', 'resume', 'config', 'console', 'quiet', 'preset', 'steps']);
    for (const flag of Object.keys(train)) {
      if (own.has(flag)) {
        expect(byFlag(flag)).toBeUndefined();
        continue;
      }
      const f = byFlag(flag) ?? byFlag(flag.replace(/^no-/, ''));
      expect(f, `lab train --${flag}`).toBeDefined();
      expect(f?.scopes).toContain('run');
      expect(CONFIG_FIELDS.find((x) => x.flag === f?.flag)?.path).toBe(f?.key);
    }
    for (const flag of Object.keys(analyze)) {
      if (flag in ANALYZE_FLAGS) {
        expect(byFlag(flag), `lab analyze --${flag} must not name a config key`).toBeUndefined();
        continue;
      }
      const alias = TRAINER_FLAG_ALIASES[flag];
      if (alias) {
        // an older spelling: never a flag of another key
        expect(byFlag(flag)).toBeUndefined();
        expect(byFlag(alias.flag)?.scopes).toContain('analysis');
        continue;
      }
      const f = byFlag(flag) ?? byFlag(flag.replace(/^no-/, ''));
      expect(f, `lab analyze --${flag}`).toBeDefined();
      const o = TRAINER_OPTIONS.find((x) => x.flag === f?.flag);
      // a run-only key's flag is known only to be refused with what it is
      if (!o) {
        expect(() => trainerFlags({ [flag]: f?.kind === 'bool' ? true : '1' })).toThrow(UsageError);
        expect(() => trainerFlags({ [flag]: f?.kind === 'bool' ? true : '1' })).toThrow(
          new RegExp(`${f?.key.replace(/\./g, '\\.')}, a setting of a training run`),
        );
      } else expect(o.key).toBe(f?.key);
    }
    // both commands take the same flag for each key both read
    for (const o of TRAINER_OPTIONS)
      if (o.field.scopes.includes('run')) expect(train[o.flag], `--${o.flag}`).toBeDefined();
    expect(() => trainerFlags({ 'ppo-mini-batch-size': '4' })).toThrow(/--mini-batch-rows/);
  });

  it('is where every form control, URL key and template parameter comes from', () => {
    // the Train form: one control per run field
    const form = formSections().flatMap((s) => s.fields);
    expect(form.map((f) => f.path).sort()).toEqual(CONFIG_FIELDS.map((f) => f.path).sort());
    for (const f of form) expect(f.def).toBe(configField(f.path));
    // the Advantages controls: the page's analysis fields
    const controls = controlSpecs(resolveOptions(decodeHash(viewSchema, '')));
    expect(controls.map((c) => c.field)).toEqual(TRAINER_OPTIONS.filter((o) => o.page).map((o) => o.name));
    for (const c of controls) expect(c.label).toBe(TRAINER_OPTIONS.find((o) => o.name === c.field)?.label);
    // the URL: the view's own keys, the analysis fields' short keys, the run fields' paths
    const urlKeys = Object.values(viewSchema).map((x) => (x as { key: string }).key);
    expect(new Set(urlKeys).size).toBe(urlKeys.length);
    for (const k of urlKeys) {
      if (VIEW_KEYS.includes(k)) continue;
      const f = CONFIG_TABLE.find((x) => x.urlKey === k) ?? findConfigField(k);
      expect(f, `URL key ${k}`).toBeDefined();
      if (f?.urlKey === k) expect(f.scopes).toContain('analysis');
      else expect(f?.scopes).toContain('run');
    }
    expect(urlKeys.length).toBe(VIEW_KEYS.length + TRAINER_OPTIONS.length + CONFIG_FIELDS.length);
    // the templates: every parameter sets a template key, with the table's kind, label and bounds
    const templates = jobTemplates({ harnesses: ['instruction'], behaviours: ['strip-think'] });
    for (const t of Object.values(templates))
      for (const p of t.params) {
        const f = configField(p.upstream ?? '');
        expect(f.scopes, `${t.name}.${p.name}`).toContain('template');
        expect(p.label).toBe(f.label);
        expect(p.help.startsWith(f.help)).toBe(true);
        if (p.kind === 'int' || p.kind === 'number') {
          if (f.min !== undefined) expect(p.min).toBeGreaterThanOrEqual(f.min);
          if (f.max !== undefined) expect(p.max).toBeLessThanOrEqual(f.max);
        }
      }
  });

  it('has no other declaration of a setting in src/', () => {
    const table = join('src', 'core', 'config', 'fields.ts');
    for (const file of sourceFiles('src')) {
      if (file === table) continue;
      const s = readFileSync(file, 'utf8');
      // option / field / parameter literals: a flag, a URL key or an upstream key declared by hand
      expect(s, file).not.toMatch(/\burlKey:\s*'/);
      expect(s, file).not.toMatch(/\bupstream:\s*'/);
      expect(s, file).not.toMatch(
        /\bpath:\s*'(lab|algorithm|data|actor_rollout_ref|agentlightning|trainer)\./,
      );
      if (!file.endsWith(join('cli', 'trainerFlags.ts'))) expect(s, file).not.toMatch(/\bflag:\s*'/);
      // defaults of the analysis written again
      expect(s, file).not.toMatch(/DEFAULT_TRAINER_OPTIONS\s*[:=]\s*[{]/);
    }
  });
});
