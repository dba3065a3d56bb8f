'use client';
import { useEffect, useRef, useState } from 'react';
import { postJson } from './queries.ts';

/**
 * Admin: fetches the unredacted payload with a POST (audited) and shows it in place. The button
 * goes, so the focus moves onto the payload shown (focusable, to scroll it by keyboard).
 */
export function RevealPayload({ id }: { id: string }) {
  const [payload, setPayload] = useState<unknown>(undefined);
  const [message, setMessage] = useState<string | null>(null);
  const shown = useRef<HTMLPreElement>(null);
  const revealed = payload !== undefined;
  useEffect(() => {
    if (revealed) shown.current?.focus();
  }, [revealed]);
  const reveal = async () => {
    const result = await postJson<{ payload: unknown }>(`/api/jobs/${id}/reveal`, {});
    if (result.ok === false) return setMessage(result.message ?? 'Not revealed.');
    setPayload(result.payload);
  };
  if (revealed) {
    return (
      <>
        <p className="notice">Revealed: this view was recorded in the audit log.</p>
        <pre ref={shown} data-testid="revealed-payload" tabIndex={0} aria-label="Unredacted payload">
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
