'use client';
import { useRouter } from 'next/navigation';
import { useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import type { BulkPreviewDTO } from '../lib/dto.ts';
import { applyBulk, previewBulk, previewGroup } from './queries.ts';

type Source =
  | { kind: 'filter'; filter: Record<string, string> }
  | { kind: 'group'; failureClass: string; fingerprint: string };

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
 * Admin bulk retry/cancel: a preview counts what matches and freezes at most 1,000 ids; the
 * confirmation applies the action to exactly those ids (each through the guarded SQL). The
 * preview is a modal dialog: focus moves into it (on Close, the harmless choice), stays there,
 * Escape closes it, and focus goes back to the button that opened it.
 */
export function BulkActions({ source, actions }: { source: Source; actions: ('retry' | 'cancel')[] }) {
  const router = useRouter();
  const [preview, setPreview] = useState<(BulkPreviewDTO & { ok?: boolean; message?: string }) | null>(null);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const dialog = useRef<HTMLDialogElement>(null);
  const closeButton = useRef<HTMLButtonElement>(null);
  const opener = useRef<HTMLButtonElement | null>(null);
  const restoreFocus = useRef(false);
  const titleId = useId();

  useEffect(() => {
    if (preview) {
      if (dialog.current && !dialog.current.open) dialog.current.showModal();
      closeButton.current?.focus();
      restoreFocus.current = true;
    } else if (restoreFocus.current) {
      restoreFocus.current = false;
      opener.current?.focus();
    }
  }, [preview]);

  const ask = async (action: 'retry' | 'cancel', from: HTMLButtonElement) => {
    opener.current = from;
    setBusy(true);
    setMessage(null);
    const result =
      source.kind === 'filter'
        ? await previewBulk({ action, filter: source.filter })
        : await previewGroup({ failureClass: source.failureClass, fingerprint: source.fingerprint });
    setBusy(false);
    if (result.ok === false) return setMessage({ ok: false, text: result.message ?? 'Preview refused.' });
    setPreview(result);
  };
  const confirm = async () => {
    if (!preview) return;
    setBusy(true);
    const result = await applyBulk({
      action: preview.action,
      jobs: preview.jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken })),
      confirm: true,
    });
    setBusy(false);
    setPreview(null);
    setMessage({ ok: result.ok === true, text: result.message ?? '' });
    router.refresh();
  };

  return (
    <div className="bulk" data-testid="bulk">
      {actions.map((a) => (
        <button key={a} type="button" disabled={busy} onClick={(event) => void ask(a, event.currentTarget)}>
          {a === 'retry' ? 'Bulk retry…' : 'Bulk cancel…'}
        </button>
      ))}
      {preview && (
        <dialog
          ref={dialog}
          className="confirm"
          aria-labelledby={titleId}
          data-testid="bulk-preview"
          onKeyDown={trapTab}
          // Escape: the browser closes the dialog; the state follows, and focus goes back.
          onClose={() => setPreview(null)}
        >
          <h2 id={titleId}>{preview.action === 'retry' ? 'Bulk retry' : 'Bulk cancel'}</h2>
          {preview.overCap ? (
            <p className="error">
              More than {preview.cap} jobs match, which is more than one bulk action may touch. Narrow the filter
              (queue, kind, failure class) and preview again.
            </p>
          ) : preview.matched === 0 ? (
            <p>No {preview.action === 'retry' ? 'dead or cancelled' : 'ready or running'} jobs match.</p>
          ) : (
            <p>
              {preview.action === 'retry' ? 'Retry' : 'Cancel'}{' '}
              <strong data-testid="bulk-count">{preview.matched}</strong> job{preview.matched === 1 ? '' : 's'}? Exactly
              these jobs will be
              {preview.action === 'retry' ? ' retried' : ' cancelled'}; any that change before you confirm are left
              alone.
            </p>
          )}
          {!preview.overCap && preview.matched > 0 && (
            <button type="button" className="danger" disabled={busy} onClick={() => void confirm()}>
              Confirm {preview.action} of {preview.matched}
            </button>
          )}
          <button type="button" ref={closeButton} onClick={() => setPreview(null)}>
            Close
          </button>
        </dialog>
      )}
      {message && (
        <p className={message.ok ? 'notice' : 'error'} role="status" data-testid="bulk-result">
          {message.text}
        </p>
      )}
    </div>
  );
}
