'use client';
import { useRouter } from 'next/navigation';
import { useRef, useState } from 'react';
import type { KindDTO } from '../lib/dto.ts';
import { postJson } from './queries.ts';

const INDEX_TEXT: Record<KindDTO['searchPaths'][number]['index'], string> = {
  ready: 'index ready',
  building: 'index being built',
  missing: 'index not built yet: run leasehold search-index',
};

/**
 * A kind version's searchable payload paths, each with its index's state; for an admin, a form
 * to add one to the kind (every version) and a remove button on the ones an admin added (the
 * handlers' declarations are not the dashboard's to remove). Each change is audited.
 */
export function KindSearch(props: { kind: string; version: number; paths: KindDTO['searchPaths']; edit: boolean }) {
  const router = useRouter();
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
    router.refresh();
  };
  return (
    <div>
      {props.paths.length > 0 ? (
        <ul className="plain" aria-label={`Searchable paths of ${props.kind} v${props.version}`}>
          {props.paths.map((p) => (
            <li key={p.path} data-testid={`search-path-${p.path}`}>
              <code>{p.path}</code> <span className="muted">({INDEX_TEXT[p.index]})</span>
              {p.added && ' added by an admin'}
              {props.edit && p.added && (
                <>
                  {' '}
                  <button
                    type="button"
                    disabled={busy}
                    aria-label={`Stop searching ${p.path} in ${props.kind}`}
                    onClick={() => void send('/api/kinds/search/remove', { kind: props.kind, path: p.path })}
                  >
                    Remove
                  </button>
                </>
              )}
            </li>
          ))}
        </ul>
      ) : (
        '—'
      )}
      {props.edit && (
        <form
          className="actions"
          onSubmit={(event) => {
            event.preventDefault();
            void send('/api/kinds/search', { kind: props.kind, path: path.trim() });
          }}
        >
          <input
            ref={field}
            aria-label={`Add a searchable path to ${props.kind} v${props.version}`}
            value={path}
            onChange={(event) => setPath(event.target.value)}
            placeholder="orderId, customer.email"
            required
          />
          <button type="submit" disabled={busy}>
            Add (every version; audited)
          </button>
        </form>
      )}
      {result && (
        <p className={result.ok ? 'notice' : 'error'} role="status" data-testid="search-path-result">
          {result.message}
        </p>
      )}
    </div>
  );
}
