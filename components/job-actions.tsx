'use client';
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState } from 'react';
import { ModalDialog } from './modal-dialog.tsx';
import { postJson } from './queries.ts';

/**
 * Retry and cancel of one job. Cancel asks first in the dashboard's modal dialog (not the
 * browser's confirm(), which a page cannot style, name or test like the rest): the focus starts
 * on "Keep the job", Escape keeps it, and the focus goes back to Cancel. After a cancel the
 * button is gone, so the focus moves to the result sentence instead of the page's start.
 */
export function JobActions(props: {
  id: string;
  leaseToken: string | null;
  canRetry: boolean;
  canCancel: boolean;
  state: string;
}) {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [asking, setAsking] = useState(false);
  const [result, setResult] = useState<{ ok?: boolean; message?: string } | null>(null);
  const cancelButton = useRef<HTMLButtonElement>(null);
  const keepButton = useRef<HTMLButtonElement>(null);
  const resultLine = useRef<HTMLParagraphElement>(null);
  const act = async (action: 'retry' | 'cancel') => {
    setAsking(false);
    setBusy(true);
    const body = action === 'cancel' ? { leaseToken: props.leaseToken } : {};
    setResult(await postJson(`/api/jobs/${props.id}/${action}`, body));
    setBusy(false);
    router.refresh();
  };
  // A result with the focus nowhere (its button went with the refresh): the focus goes to it.
  useEffect(() => {
    if (!result) return;
    const id = setTimeout(() => {
      const active = document.activeElement;
      if (!active || active === document.body) resultLine.current?.focus();
    }, 0);
    return () => clearTimeout(id);
  }, [result, props.canCancel, props.canRetry]);
  // The result stays after the refresh even when the job has already moved on (a retried job
  // a worker finished at once has no actions left, but the operator must still see "Retried").
  if (!props.canRetry && !props.canCancel && !result) return null;
  return (
    <div className="actions">
      {props.canRetry && (
        <button type="button" disabled={busy} onClick={() => void act('retry')}>
          Retry
        </button>
      )}
      {props.canCancel && (
        <button type="button" ref={cancelButton} disabled={busy} className="danger" onClick={() => setAsking(true)}>
          Cancel
        </button>
      )}
      {asking && (
        <ModalDialog
          title={props.state === 'running' ? 'Cancel this running job?' : 'Cancel this job?'}
          testId="cancel-dialog"
          initialFocus={keepButton}
          returnFocus={cancelButton}
          onClose={() => setAsking(false)}
        >
          <p>
            {props.state === 'running'
              ? 'Its worker will be stopped at its next heartbeat. The job will not run again unless it is retried.'
              : 'It will not run unless it is retried.'}
          </p>
          <button type="button" className="danger" disabled={busy} onClick={() => void act('cancel')}>
            Cancel the job
          </button>
          <button type="button" ref={keepButton} onClick={() => setAsking(false)}>
            Keep the job
          </button>
        </ModalDialog>
      )}
      {result && (
        <p
          ref={resultLine}
          tabIndex={-1}
          className={result.ok ? 'notice' : 'error'}
          role="status"
          data-testid="action-result"
        >
          {result.message}
        </p>
      )}
    </div>
  );
}
