import type { ChangeEvent } from 'react';

/** A file input that picks a whole folder (every file under it, with its relative path). */
export function FolderInput(props: {
  id: string;
  testId: string;
  onChange: (e: ChangeEvent<HTMLInputElement>) => void;
}) {
  return (
    <input
      id={props.id}
      data-testid={props.testId}
      type="file"
      multiple
      {...{ webkitdirectory: '' }}
      onChange={props.onChange}
    />
  );
}
