import { klPenalty } from '../../algos/kl';
import { registerFamily } from '../registry';
import { matrix, nested } from './tensors';

/** verl core_algos.kl_penalty with autograd ∂(Σkl)/∂logprob (golden family `kl_penalty`). */
registerFamily('kl_penalty', (c) => {
  const lp = matrix(c.input.logprob, 'logprob');
  const ref = matrix(c.input.ref_logprob, 'ref_logprob');
  if (lp.B !== ref.B || lp.T !== ref.T)
    throw new Error(`logprob is [${lp.B},${lp.T}] but ref_logprob is [${ref.B},${ref.T}]`);
  const out = klPenalty(lp.data, ref.data, String(c.params.kl_penalty));
  return { kl: nested(out.kl, lp.B, lp.T), grad_logprob: nested(out.gradLogprob, lp.B, lp.T) };
});
