'use client';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import { postJson } from './queries.ts';

export function JobActions(props: {
  id: string;
  leaseToken: string | null;
  canRetry: boolean;
  canCancel: boolean;
  state: string;
}) {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok?: boolean; message?: string } | null>(null);
  const act = async (action: 'retry' | 'cancel') => {
    if (
      action === 'cancel' &&
      !window.confirm(
        props.state === 'running'
          ? 'Cancel this running job? Its worker will be stopped at its next heartbeat.'
          : 'Cancel this job?',
      )
    )
      return;
    setBusy(true);
    const body = action === 'cancel' ? { leaseToken: props.leaseToken } : {};
    setResult(await postJson(`/api/jobs/${props.id}/${action}`, body));
    setBusy(false);
    router.refresh();
  };
  // The result stays after the refresh even when the job has already moved on (a retried job
  // a worker finished at once has no actions left, but the operator must still see "Retried").
  if (!props.canRetry && !props.canCancel && !result) return null;
  return (
    <div className="actions">
      {props.canRetry && (
        <button disabled={busy} onClick={() => void act('retry')}>
          Retry
        </button>
      )}
      {props.canCancel && (
        <button disabled={busy} className="danger" onClick={() => void act('cancel')}>
          Cancel
        </button>
      )}
      {result && (
        <p className={result.ok ? 'notice' : 'error'} role="status" data-testid="action-result">
          {result.message}
        </p>
      )}
    </div>
  );
}
