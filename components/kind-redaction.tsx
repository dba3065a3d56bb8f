'use client';
import { useQueryClient } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { useRef, useState } from 'react';
import { postJson, queryKeys } from './queries.ts';

/**
 * Admin: the paths admins added to a kind (each removable) and a form to add one. The paths
 * the workers declared are listed beside it, without a remove button: the server refuses to
 * unmask them anyway. Each change is recorded in the audit log. A removed path takes its button
 * with it, so the focus moves to the form's field rather than to the page's start.
 */
export function KindRedaction(props: { kind: string; version: number; added: string[] }) {
  const router = useRouter();
  const client = useQueryClient();
  const [path, setPath] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok?: boolean; message?: string } | null>(null);
  const field = useRef<HTMLInputElement>(null);
  const send = async (url: string, body: { kind: string; path: string }) => {
    setBusy(true);
    const answer = await postJson(url, body);
    setResult(answer);
    setBusy(false);
    if (answer.ok) setPath('');
    if (answer.ok && url.endsWith('/remove')) field.current?.focus();
    // The kinds panel holds its first render as React Query data: refetched now, not in 30 s.
    await client.invalidateQueries({ queryKey: queryKeys.kinds });
    router.refresh();
  };
  return (
    <div>
      {props.added.length > 0 && (
        <ul className="plain" aria-label={`Admin-added paths of ${props.kind}`}>
          {props.added.map((p) => (
            <li key={p}>
              <code>{p}</code>{' '}
              <button
                type="button"
                disabled={busy}
                aria-label={`Unmask ${p} in ${props.kind}`}
                onClick={() => void send('/api/kinds/redaction/remove', { kind: props.kind, path: p })}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <form
        className="actions"
        onSubmit={(event) => {
          event.preventDefault();
          void send('/api/kinds/redaction', { kind: props.kind, path: path.trim() });
        }}
      >
        <input
          ref={field}
          aria-label={`Add a redacted path to ${props.kind} v${props.version}`}
          value={path}
          onChange={(event) => setPath(event.target.value)}
          placeholder="card.number, to[].email"
          required
        />
        <button type="submit" disabled={busy}>
          Add (every version; recorded in the audit log)
        </button>
      </form>
      {result && (
        <p className={result.ok ? 'notice' : 'error'} role="status" data-testid="redaction-result">
          {result.message}
        </p>
      )}
    </div>
  );
}
