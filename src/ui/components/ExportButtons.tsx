import { exportName, saveText } from '../lab/exportView';

/** "Export CSV · JSON" for the numbers of one view. */
export function ExportButtons(props: {
  source: string;
  what: string;
  csv: () => string;
  json: () => unknown;
  testId?: string;
}) {
  const { source, what } = props;
  return (
    <span className="export" data-testid={props.testId}>
      <span className="muted">export {what}</span>
      <button
        type="button"
        className="small"
        onClick={() => saveText(exportName(source, what, 'csv'), 'text/csv', props.csv())}
      >
        CSV
      </button>
      <button
        type="button"
        className="small"
        onClick={() =>
          saveText(
            exportName(source, what, 'json'),
            'application/json',
            `${JSON.stringify(props.json(), null, 1)}\n`,
          )
        }
      >
        JSON
      </button>
    </span>
  );
}
