// A question that must be answered before something that cannot be undone
// (ending a session): in the page, so it is styled, translated and
// reachable by tests and screen readers, unlike window.confirm. The safe
// answer has the focus, and Esc or a click outside is that answer.
import { useEffect, useRef } from 'preact/hooks';

export interface ConfirmDialogProps {
  title: string;
  text: string;
  confirmLabel: string;
  cancelLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
}

export function ConfirmDialog({ title, text, confirmLabel, cancelLabel, onConfirm, onCancel }: ConfirmDialogProps) {
  const cancelRef = useRef<HTMLButtonElement>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const prev = document.activeElement as HTMLElement | null;
    cancelRef.current?.focus();
    return () => prev?.focus?.();
  }, []);
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'Escape') {
      // Not the pane's Esc (cancel the turn): only this question's.
      e.preventDefault();
      e.stopPropagation();
      onCancel();
    } else if (e.key === 'Tab') {
      // Two buttons: focus stays on them.
      e.preventDefault();
      (document.activeElement === cancelRef.current ? confirmRef : cancelRef).current?.focus();
    }
  };
  return (
    <div class="modal" onMouseDown={(e) => e.target === e.currentTarget && onCancel()}>
      <div class="modal__box modal__box--small" role="alertdialog" aria-modal="true" aria-labelledby="confirm-title" aria-describedby="confirm-text" onKeyDown={onKeyDown}>
        <h2 id="confirm-title">{title}</h2>
        <p id="confirm-text">{text}</p>
        <div class="modal__actions">
          <button ref={cancelRef} type="button" class="btn" onClick={onCancel}>
            {cancelLabel}
          </button>
          <button ref={confirmRef} type="button" class="btn btn--danger" onClick={onConfirm}>
            {confirmLabel}
          </button>
        </div>
      </div>
    </div>
  );
}
