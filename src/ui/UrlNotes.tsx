import { useEffect } from 'react';
import { useLab } from './lab/labStore';
import { useSamples } from './lab/samples';
import { useUrlNotes } from './store';

/**
 * The link's parameters the page could not use as given, each named with what is shown instead: malformed values
 * and unknown keys (found when the hash is read), an option value core refuses, a sample or rollout that is not
 * there (found once the sample list or the trace has loaded).
 */
export function UrlNotes() {
  const { problems, linkSample, linkRollout, add, dismiss } = useUrlNotes();
  const samples = useSamples((s) => s.samples);
  const trace = useLab((s) => s.trace);
  const shownKind = useLab((s) => s.shownKind);
  useEffect(() => {
    if (!samples || linkSample === null) return;
    if (samples.length > 0 && !samples.some((s) => s.name === linkSample))
      add({
        key: 'sample',
        raw: linkSample,
        message: `names no bundled sample; showing ${samples[0].name}`,
      });
    useUrlNotes.setState({ linkSample: null });
  }, [samples, linkSample, add]);
  useEffect(() => {
    // checked against the first trace the link loads (its sample), not against files opened later
    if (!trace || linkRollout === null || shownKind !== 'url') return;
    if (!trace.rollouts.some((r) => r.rolloutId === linkRollout))
      add({
        key: 'r',
        raw: linkRollout,
        message: `names no rollout of this trace; showing ${trace.rollouts[0]?.rolloutId ?? 'none'}`,
      });
    useUrlNotes.setState({ linkRollout: null });
  }, [trace, linkRollout, shownKind, add]);
  if (problems.length === 0) return null;
  return (
    <section className="url-notes" data-testid="url-notes" aria-label="Link problems" role="status">
      <span>This link has {problems.length === 1 ? 'a setting' : 'settings'} the page cannot use:</span>
      <ul>
        {problems.map((p) => (
          <li key={p.key} data-testid="url-note" data-key={p.key}>
            <code>
              {p.key}={p.raw}
            </code>{' '}
            {p.message}
          </li>
        ))}
      </ul>
      <button type="button" className="small" onClick={dismiss}>
        Dismiss
      </button>
    </section>
  );
}
