'use client';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { ReasonField } from './dialog-form.tsx';
import { postJson } from './queries.ts';

/**
 * An operator's Pause or Resume of one group of a queue (audited). The server answers in a
 * sentence, shown beside the button; the page then shows the group's new state.
 */
export function GroupPause(props: { queue: string; group: string; paused: boolean }) {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; message: string } | null>(null);
  const toggle = async () => {
    setBusy(true);
    const answer = await postJson(`/api/groups/${props.paused ? 'resume' : 'pause'}`, {
      queue: props.queue,
      group: props.group,
    });
    setBusy(false);
    setResult({ ok: answer.ok === true, message: answer.message ?? 'The server answered without a message.' });
    router.refresh();
  };
  return (
    <span>
      <button type="button" disabled={busy} onClick={() => void toggle()}>
        {props.paused ? 'Resume' : 'Pause'}
        <span className="visually-hidden"> group {props.group}</span>
      </button>
      {result && (
        <span
          className={result.ok ? 'notice' : 'error'}
          role={result.ok ? 'status' : 'alert'}
          data-testid="group-result"
        >
          {' '}
          {result.message}
        </span>
      )}
    </span>
  );
}

/**
 * Admin: a queue's default group maximum, or one group's own: the group (empty: the default for
 * every group), the maximum (empty clears it) and a reason for the audit log. The server checks
 * everything and answers in a sentence; nothing is written on a refusal.
 */
export function GroupMaxForm(props: { queue: string }) {
  const router = useRouter();
  const [group, setGroup] = useState('');
  const [max, setMax] = useState('');
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; message: string } | null>(null);
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    const answer = await postJson('/api/groups', {
      queue: props.queue,
      ...(group.trim() ? { group: group.trim() } : {}),
      max: max.trim(),
      ...(reason.trim() ? { reason: reason.trim() } : {}),
    });
    setBusy(false);
    setResult({ ok: answer.ok === true, message: answer.message ?? 'The server answered without a message.' });
    if (answer.ok) router.refresh();
  };
  return (
    <form className="limit-form" aria-label="Set a group maximum" onSubmit={(event) => void save(event)}>
      <label>
        Group (empty: the default for every group of the queue)
        <input name="group" autoComplete="off" value={group} onChange={(event) => setGroup(event.target.value)} />
      </label>
      <label>
        Maximum running at once (1 to 1,000,000; empty clears it)
        <input
          name="max"
          inputMode="numeric"
          autoComplete="off"
          value={max}
          onChange={(event) => setMax(event.target.value)}
        />
      </label>
      <ReasonField value={reason} onChange={setReason} />
      <button type="submit" className="danger" disabled={busy}>
        Save the group maximum
      </button>
      {result && (
        <p
          className={result.ok ? 'notice' : 'error'}
          role={result.ok ? 'status' : 'alert'}
          data-testid="group-max-result"
        >
          {result.message}
        </p>
      )}
    </form>
  );
}
