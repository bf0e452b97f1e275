/**
 * The trainer settings the numbers on screen use (Trace and Advantages views): those that differ from the
 * defaults, each with its upstream key and where it comes from — the user's own (the URL's) or the run whose
 * batch is shown ("from run X, step 7 · revert"); every setting on request.
 */
import { useActiveRunSettings } from './lab/options';
import { settingsInSight, useRunSettings } from './lab/runSettings';
import { useView } from './store';

export function SettingsInSight() {
  const view = useView();
  const run = useActiveRunSettings();
  const revert = useRunSettings((s) => s.revert);
  const all = settingsInSight(view, run);
  const changed = all.filter((s) => s.changed);
  return (
    <details className="settings-in-sight" data-testid="settings-in-sight">
      <summary>
        Trainer settings{run ? ` from run ${run.runName}, step ${run.step}` : ''}:{' '}
        {changed.length === 0
          ? 'all at the defaults'
          : changed.map((s) => `${s.label.toLowerCase()} ${s.value}`).join(', ')}
        {run && (
          <>
            {' · '}
            <button type="button" className="linkish" onClick={revert}>
              revert
            </button>{' '}
            (use your own for this batch)
          </>
        )}
      </summary>
      <table>
        <tbody>
          {all.map((s) => (
            <tr key={s.name} className={s.changed ? 'changed' : undefined}>
              <td>{s.label}</td>
              <td>
                <code>{s.key}</code>
              </td>
              <td>{s.value}</td>
              <td>
                {s.changed
                  ? s.origin === 'run'
                    ? `from run ${run?.runName}, step ${run?.step}`
                    : 'yours'
                  : 'default'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}
