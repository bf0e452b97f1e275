import type { ChangeEvent } from 'react';
import { useDropZone } from '../components/useDropZone';
import { folderFromDrop, folderFromInput, type PickedFolder } from './folderInput';

/**
 * One model folder brought by a directory input or dropped on a zone: `onFolder` gets the folder read, `onError`
 * what reading it (or, for a drop, taking it) threw. Returns the zone's state and handlers and the input's
 * change handler (an empty selection does nothing).
 */
export function useFolderPick(
  onFolder: (folder: PickedFolder) => unknown,
  onError: (err: unknown) => unknown,
): ReturnType<typeof useDropZone> & { onInput: (e: ChangeEvent<HTMLInputElement>) => void } {
  const drop = useDropZone(async (e) => {
    try {
      await onFolder(await folderFromDrop(e.dataTransfer.items));
    } catch (err) {
      await onError(err);
    }
  });
  const onInput = (e: ChangeEvent<HTMLInputElement>) => {
    const files = e.target.files;
    if (!files?.length) return;
    try {
      void onFolder(folderFromInput(files));
    } catch (err) {
      void onError(err);
    }
  };
  return { ...drop, onInput };
}
