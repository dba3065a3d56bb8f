'use client';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import type { BulkPreviewDTO } from '../lib/dto.ts';
import { applyBulk, previewBulk, previewGroup } from './queries.ts';

type Source =
  | { kind: 'filter'; filter: Record<string, string> }
  | { kind: 'group'; failureClass: string; fingerprint: string };

/**
 * Admin bulk retry/cancel: a preview counts what matches and freezes at most 1,000 ids; the
 * confirmation applies the action to exactly those ids (each through the guarded SQL).
 */
export function BulkActions({ source, actions }: { source: Source; actions: ('retry' | 'cancel')[] }) {
  const router = useRouter();
  const [preview, setPreview] = useState<(BulkPreviewDTO & { ok?: boolean; message?: string }) | null>(null);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);

  const ask = async (action: 'retry' | 'cancel') => {
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
        <button key={a} disabled={busy} onClick={() => void ask(a)}>
          {a === 'retry' ? 'Bulk retry…' : 'Bulk cancel…'}
        </button>
      ))}
      {preview && (
        <div className="confirm" role="dialog" data-testid="bulk-preview">
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
            <button className="danger" disabled={busy} onClick={() => void confirm()}>
              Confirm {preview.action} of {preview.matched}
            </button>
          )}
          <button onClick={() => setPreview(null)}>Close</button>
        </div>
      )}
      {message && (
        <p className={message.ok ? 'notice' : 'error'} role="status" data-testid="bulk-result">
          {message.text}
        </p>
      )}
    </div>
  );
}
