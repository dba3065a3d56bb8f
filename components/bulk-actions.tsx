'use client';
import { useQueryClient } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { createContext, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import type { BulkPreviewDTO } from '../lib/dto.ts';
import { ModalDialog } from './modal-dialog.tsx';
import { applyBulk, previewBulk, previewGroup } from './queries.ts';

type Source =
  | { kind: 'filter'; filter: Record<string, string> }
  | { kind: 'group'; failureClass: string; fingerprint: string };

type Message = { ok: boolean; text: string };

/** Where a bulk action inside a list says its result, when the list gives it a place (BulkResults). */
const ResultPlace = createContext<((message: Message) => void) | null>(null);

/**
 * A place for the results of the bulk actions inside `children` (the failure groups' retry, one
 * per row): a row a retry empties goes with the refresh, and its result with it, so the result is
 * said here instead, outside the rows. It is announced (role="status"), and it takes the focus
 * when the refresh took the focused button away, rather than leaving it on the page's start.
 */
export function BulkResults({ children }: { children: ReactNode }) {
  const [message, setMessage] = useState<Message | null>(null);
  const line = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    if (!message) return;
    const id = setInterval(() => {
      const active = document.activeElement;
      if (!active || active === document.body) line.current?.focus();
    }, 100);
    const stop = setTimeout(() => clearInterval(id), 3_000);
    return () => {
      clearInterval(id);
      clearTimeout(stop);
    };
  }, [message]);
  return (
    <ResultPlace.Provider value={setMessage}>
      <div role="status">
        {message && (
          <p ref={line} tabIndex={-1} className={message.ok ? 'notice' : 'error'} data-testid="bulk-result">
            {message.text}
          </p>
        )}
      </div>
      {children}
    </ResultPlace.Provider>
  );
}

/**
 * Admin bulk retry/cancel: a preview counts what matches and freezes at most 1,000 ids; the
 * confirmation applies the action to exactly those ids (each through the guarded SQL). The
 * preview is a modal dialog: focus moves into it (on Close, the harmless choice), stays there,
 * Escape closes it, and focus goes back to the button that opened it.
 */
export function BulkActions({ source, actions }: { source: Source; actions: ('retry' | 'cancel')[] }) {
  const router = useRouter();
  const client = useQueryClient();
  const [preview, setPreview] = useState<(BulkPreviewDTO & { ok?: boolean; message?: string }) | null>(null);
  const [ownMessage, setOwnMessage] = useState<Message | null>(null);
  const place = useContext(ResultPlace);
  const message = place ? null : ownMessage;
  const setMessage = (next: Message | null) => (place && next ? place(next) : setOwnMessage(next));
  const [busy, setBusy] = useState(false);
  const closeButton = useRef<HTMLButtonElement>(null);
  const opener = useRef<HTMLButtonElement | null>(null);

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
    // The live panels (failures, jobs) hold their first render as React Query data: refetched
    // now (the server's shared cache dropped what the action changed), not at the next poll.
    await client.invalidateQueries();
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
        <ModalDialog
          title={preview.action === 'retry' ? 'Bulk retry' : 'Bulk cancel'}
          testId="bulk-preview"
          initialFocus={closeButton}
          returnFocus={opener}
          onClose={() => setPreview(null)}
        >
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
        </ModalDialog>
      )}
      {message && (
        <p className={message.ok ? 'notice' : 'error'} role="status" data-testid="bulk-result">
          {message.text}
        </p>
      )}
    </div>
  );
}
