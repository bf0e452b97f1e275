/** True when a key press belongs to a form control or editable text rather than to page shortcuts. */
export function isTypingTarget(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || typeof el.closest !== 'function') return false;
  if (el.isContentEditable) return true;
  return el.closest('input, select, textarea, [role="tab"], [role="slider"]') !== null;
}

/** Input types that take typed text (arrow keys move the caret, letters are typed). */
const TEXT_INPUTS = new Set(['text', 'number', 'search', 'email', 'url', 'tel', 'password', 'date', 'time']);

/** True when a key press goes into a text field (an input that takes text, a textarea, editable content). */
export function isTextField(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || typeof el.closest !== 'function') return false;
  if (el.isContentEditable || el.tagName === 'TEXTAREA') return true;
  return el.tagName === 'INPUT' && TEXT_INPUTS.has((el as HTMLInputElement).type);
}
