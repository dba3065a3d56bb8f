'use client';
import { useState } from 'react';
import { postJson } from './queries.ts';

/** Admin: fetches the unredacted payload with a POST (audited) and shows it in place. */
export function RevealPayload({ id }: { id: string }) {
  const [payload, setPayload] = useState<unknown>(undefined);
  const [message, setMessage] = useState<string | null>(null);
  const reveal = async () => {
    const result = await postJson<{ payload: unknown }>(`/api/jobs/${id}/reveal`, {});
    if (result.ok === false) return setMessage(result.message ?? 'Not revealed.');
    setPayload(result.payload);
  };
  if (payload !== undefined) {
    return (
      <>
        <p className="notice">Revealed: this view was recorded in the audit log.</p>
        <pre data-testid="revealed-payload" tabIndex={0}>
          {JSON.stringify(payload, null, 2)}
        </pre>
      </>
    );
  }
  return (
    <>
      <button type="button" onClick={() => void reveal()}>
        Reveal (recorded in the audit log)
      </button>
      {message && <p className="error">{message}</p>}
    </>
  );
}
