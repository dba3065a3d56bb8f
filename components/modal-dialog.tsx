'use client';
import { useEffect, useId, useLayoutEffect, useRef, type KeyboardEvent, type ReactNode, type RefObject } from 'react';

const FOCUSABLE =
  'button:not([disabled]), a[href], input:not([disabled]), select, textarea, [tabindex]:not([tabindex="-1"])';

/** Tab and Shift+Tab wrap around inside the dialog: focus never leaves it while it is open. */
function trapTab(event: KeyboardEvent<HTMLDialogElement>) {
  if (event.key !== 'Tab') return;
  const items = [...event.currentTarget.querySelectorAll<HTMLElement>(FOCUSABLE)];
  const first = items[0];
  const last = items.at(-1);
  if (!first || !last) return;
  const active = document.activeElement;
  if (event.shiftKey && (active === first || !event.currentTarget.contains(active))) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && (active === last || !event.currentTarget.contains(active))) {
    event.preventDefault();
    first.focus();
  }
}

/**
 * The dashboard's one modal dialog (bulk actions, a job's cancel): rendered only while open. On
 * mount it opens as a modal `<dialog>` (the rest of the page inert) and puts the focus on
 * `initialFocus` (the harmless choice); Tab and Shift+Tab wrap inside it; Escape closes it
 * (`onClose`); when it goes, the focus goes back to `returnFocus` (the button that opened it)
 * if that is still on the page and enabled.
 */
export function ModalDialog(props: {
  title: string;
  onClose: () => void;
  initialFocus: RefObject<HTMLElement | null>;
  returnFocus: RefObject<HTMLElement | null>;
  testId?: string;
  children: ReactNode;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const { initialFocus, returnFocus } = props;
  useLayoutEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    initialFocus.current?.focus();
  }, [initialFocus]);
  useEffect(() => {
    // The opener as it was when the dialog opened: the ref may be pointed elsewhere later.
    const opener = returnFocus.current;
    const element = dialog.current;
    return () => {
      // After React removed the dialog (not a development double run, which keeps it): the
      // opener is focusable again, no longer inert.
      queueMicrotask(() => {
        if (element?.isConnected) return;
        if (opener?.isConnected && !opener.matches(':disabled')) opener.focus();
      });
    };
  }, [returnFocus]);
  return (
    <dialog
      ref={dialog}
      className="confirm"
      aria-labelledby={titleId}
      data-testid={props.testId}
      onKeyDown={trapTab}
      // Escape: the browser closes the dialog; the parent's state follows, and focus goes back.
      onClose={props.onClose}
    >
      <h2 id={titleId}>{props.title}</h2>
      {props.children}
    </dialog>
  );
}
