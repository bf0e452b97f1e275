/** True when a key press belongs to a form control or editable text rather than to page shortcuts. */
export function isTypingTarget(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || typeof el.closest !== 'function') return false;
  if (el.isContentEditable) return true;
  return el.closest('input, select, textarea, [role="tab"], [role="slider"]') !== null;
}
