'use client';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import { postJson } from './queries.ts';

/** Admin: sets one kind version's redacted paths (comma-separated), recorded in the audit log. */
export function KindRedaction(props: { kind: string; version: number; paths: string[] }) {
  const router = useRouter();
  const [text, setText] = useState(props.paths.join(', '));
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok?: boolean; message?: string } | null>(null);
  const save = async () => {
    const paths = text
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    setBusy(true);
    setResult(await postJson('/api/kinds/redaction', { kind: props.kind, version: props.version, paths }));
    setBusy(false);
    router.refresh();
  };
  return (
    <form
      className="actions"
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      <input
        aria-label={`Redacted paths of ${props.kind} v${props.version}`}
        value={text}
        onChange={(event) => setText(event.target.value)}
        placeholder="email, card.number, to[].email"
      />
      <button type="submit" disabled={busy}>
        Save (recorded in the audit log)
      </button>
      {result && (
        <p className={result.ok ? 'notice' : 'error'} role="status" data-testid="redaction-result">
          {result.message}
        </p>
      )}
    </form>
  );
}
