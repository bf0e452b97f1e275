/**
 * "Run this on the cluster": a template's parameters pre-filled from the Advantages settings in the URL. Each
 * template parameter sets one key of core's config table; a parameter whose key the analysis also reads takes
 * the page's value for that key. A value the template does not accept (an estimator it does not offer, a length
 * beyond the policy's context) keeps the template's default; the caller shows which fields were taken.
 */
import { findConfigField } from '../../core/config/fields';
import type { TrainerSettings } from '../../core/pipeline/options';
import { checkParam, defaultParams, type ParamValues } from '../../server/protocol/params';
import type { JobTemplate } from '../../server/protocol/templates';
import { resolveOptions } from '../lab/options';
import type { ViewState } from '../store';

export function paramsFromView(v: ViewState, t: JobTemplate): { params: ParamValues; taken: string[] } {
  const o = resolveOptions(v);
  const params = defaultParams(t.params);
  const wanted: Record<string, unknown> = {};
  for (const spec of t.params) {
    const option = spec.upstream ? findConfigField(spec.upstream)?.option : undefined;
    if (option) wanted[spec.name] = o[option as keyof TrainerSettings];
  }
  const taken: string[] = [];
  for (const spec of t.params) {
    if (!(spec.name in wanted)) continue;
    try {
      params[spec.name] = checkParam(spec, wanted[spec.name]);
      taken.push(spec.name);
    } catch {
      // not accepted by this template: its default stays
    }
  }
  try {
    t.crossCheck?.(params);
  } catch {
    const defaults = defaultParams(t.params);
    for (const k of ['max_prompt_length', 'max_response_length']) {
      params[k] = defaults[k];
      const i = taken.indexOf(k);
      if (i >= 0) taken.splice(i, 1);
    }
  }
  return { params, taken };
}
