/**
 * `lab simulate SCENARIO [key=value…] [--mode M] [--json] [--per-step]`: runs the backend-scheduling simulator
 * (src/core/sim/) on a named scenario, in each of its modes (or `--mode`, or `mode=` among the overrides), and
 * prints per mode the step time by phase, utilisation per pool, staleness (`training/off_policy/*`), tokens/s and
 * dropped samples, with the speed-up over the scenario's first mode and upstream's published figures where the
 * scenario has them. `lab simulate list` names the scenarios with their sources.
 */
import {
  applySimOverrides,
  getScenario,
  PHASES,
  SCENARIOS,
  SIM_FIELDS,
  SIM_MODES,
  type SimMode,
  SimOverrideError,
  type SimResult,
  simulate,
} from '../../core/sim';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';

export const command: Command = {
  summary: 'simulate RL backend scheduling at cluster scale (colocated sync, one_step_off, fully async, …)',
  usage: `npm run lab -- simulate <scenario|list> [key=value…] [--mode ${SIM_MODES.join('|')}] [--json] [--per-step]
  scenarios: ${SCENARIOS.map((s) => s.name).join(', ')}
  keys: ${SIM_FIELDS.map((f) => f.key).join(', ')}`,
  async run(argv) {
    const { positionals, flags } = parseArgs(argv, {
      mode: { type: 'string' },
      json: { type: 'bool' },
      'per-step': { type: 'bool' },
    });
    const [name, ...overrides] = positionals;
    if (!name) throw new UsageError('expected a scenario name (or list)');
    if (name === 'list') {
      if (flags.json)
        console.log(
          JSON.stringify(
            SCENARIOS.map((s) => ({ name: s.name, title: s.title, modes: s.modes, source: s.source })),
            null,
            2,
          ),
        );
      else
        for (const s of SCENARIOS)
          console.log(`${s.name}\n  ${s.title}\n  modes: ${s.modes.join(', ')}\n  source: ${s.source}`);
      return 0;
    }
    if (!SCENARIOS.some((s) => s.name === name))
      throw new UsageError(`unknown scenario '${name}' (one of: ${SCENARIOS.map((s) => s.name).join(', ')})`);
    const sc = getScenario(name);
    for (const o of overrides) if (!o.includes('=')) throw new UsageError(`expected key=value, got '${o}'`);
    const modeOverride = overrides.find((o) => o.startsWith('mode='))?.slice(5);
    const flagMode = flags.mode as string | undefined;
    if (flagMode !== undefined && !(SIM_MODES as readonly string[]).includes(flagMode))
      throw new UsageError(`--mode must be one of ${SIM_MODES.join(', ')}, got '${flagMode}'`);
    if (flagMode && modeOverride && flagMode !== modeOverride)
      throw new UsageError(`--mode ${flagMode} and mode=${modeOverride} disagree`);
    const chosen = flagMode ?? modeOverride;
    const modes = (chosen ? [chosen] : sc.modes) as SimMode[];
    const rest = overrides.filter((o) => !o.startsWith('mode='));
    const results: SimResult[] = [];
    for (const mode of modes) {
      if (!(SIM_MODES as readonly string[]).includes(mode))
        throw new UsageError(`mode=${mode}: expected one of ${SIM_MODES.join(', ')}`);
      let cfg: ReturnType<typeof sc.config>;
      try {
        cfg = applySimOverrides(sc.config(mode), rest);
      } catch (e) {
        if (e instanceof SimOverrideError) throw new UsageError(e.message);
        throw e;
      }
      const t0 = performance.now();
      const r = simulate(cfg);
      results.push(r);
      (r as SimResult & { wall_ms?: number }).wall_ms = performance.now() - t0;
    }
    const base = results[0].summary.total_s;
    const out = {
      scenario: sc.name,
      title: sc.title,
      source: sc.source,
      published: sc.published ?? null,
      results: results.map((r) => ({
        mode: r.summary.mode,
        summary: r.summary,
        speedup_over_first: base / r.summary.total_s,
        phases_mean_s: meanPhases(r),
        simulated_in_ms: (r as SimResult & { wall_ms?: number }).wall_ms,
        ...(flags['per-step'] ? { steps: r.steps } : {}),
      })),
    };
    if (flags.json) {
      console.log(JSON.stringify(out, null, 2));
      return 0;
    }
    console.log(`${sc.title}\nsource: ${sc.source}\n`);
    const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');
    for (const r of out.results) {
      const s = r.summary;
      console.log(
        `${r.mode.padEnd(15)} ${f(s.mean_step_s)} s/step (${PHASES.filter((p) => r.phases_mean_s[p] > 0.05)
          .map((p) => `${p} ${f(r.phases_mean_s[p])}`)
          .join(', ')}); ${f(r.speedup_over_first, 2)}× over ${out.results[0].mode}`,
      );
      console.log(
        `${''.padEnd(15)} utilisation rollout ${f(100 * s.utilisation.rollout, 0)}% trainer ${f(100 * s.utilisation.trainer, 0)}% pool ${f(100 * s.utilisation.pool, 0)}%; staleness mean ${f(s.mean_staleness, 2)} worst ${f(s.mean_staleness_worst, 2)}; ${f(s.generated_tokens_per_s, 0)} gen tok/s, ${f(s.trained_tokens_per_s, 0)} trained tok/s; ${s.dropped_samples} dropped; ${s.steps} steps in ${f(r.simulated_in_ms ?? 0, 0)} ms`,
      );
    }
    if (sc.published)
      console.log(
        `\npublished: ${sc.published.speedup.toFixed(2)}× (${sc.published.speedup_of})${sc.published.notes ? `; ${sc.published.notes}` : ''}`,
      );
    return 0;
  },
};

function meanPhases(r: SimResult): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of PHASES) out[p] = r.steps.reduce((a, s) => a + s.phases[p], 0) / Math.max(1, r.steps.length);
  return out;
}
