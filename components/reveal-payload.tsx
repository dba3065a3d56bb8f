'use client';
import { useEffect, useRef, useState } from 'react';
import { postJson } from './queries.ts';

/** What the reveal answers: the payload, and the job's stored result when it has one. */
interface Revealed {
  payload: unknown;
  result?: unknown;
}

/**
 * Admin: fetches the unredacted payload (and the job's result, when one is stored) with a POST
 * (audited) and shows it in place. The button goes, so the focus moves onto the payload shown
 * (focusable, to scroll it by keyboard).
 */
export function RevealPayload({ id }: { id: string }) {
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const shown = useRef<HTMLPreElement>(null);
  const isRevealed = revealed !== null;
  useEffect(() => {
    if (isRevealed) shown.current?.focus();
  }, [isRevealed]);
  const reveal = async () => {
    const result = await postJson<Revealed>(`/api/jobs/${id}/reveal`, {});
    if (result.ok === false) return setMessage(result.message ?? 'Not revealed.');
    setRevealed({ payload: result.payload, ...('result' in result ? { result: result.result } : {}) });
  };
  if (revealed) {
    return (
      <>
        <p className="notice">Revealed: this view was recorded in the audit log.</p>
        <pre ref={shown} data-testid="revealed-payload" tabIndex={0} aria-label="Unredacted payload">
          {JSON.stringify(revealed.payload, null, 2)}
        </pre>
        {'result' in revealed && (
          <>
            <p>Its result, unmasked:</p>
            <pre data-testid="revealed-result" tabIndex={0} aria-label="Unredacted result">
              {JSON.stringify(revealed.result, null, 2)}
            </pre>
          </>
        )}
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
