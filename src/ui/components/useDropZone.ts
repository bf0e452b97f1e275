import { type DragEvent, useState } from 'react';

/**
 * A drop zone: whether something is dragged over it, and its drag handlers (spread onto the zone's element).
 * `onDrop` gets the drop after the default is prevented and the highlight is cleared.
 */
export function useDropZone(onDrop: (e: DragEvent) => unknown): {
  dragging: boolean;
  zone: { onDragOver: (e: DragEvent) => void; onDragLeave: () => void; onDrop: (e: DragEvent) => void };
} {
  const [dragging, setDragging] = useState(false);
  return {
    dragging,
    zone: {
      onDragOver: (e) => {
        e.preventDefault();
        setDragging(true);
      },
      onDragLeave: () => setDragging(false),
      onDrop: (e) => {
        e.preventDefault();
        setDragging(false);
        void onDrop(e);
      },
    },
  };
}
