'use client';
import { useRouter } from 'next/navigation';
import { useRef, useState, type FormEvent } from 'react';
import type { PurgePreviewDTO } from '../lib/dto.ts';
import { DialogFormEnd, ReasonField } from './dialog-form.tsx';
import { ModalDialog } from './modal-dialog.tsx';
import { postJson } from './queries.ts';

/**
 * Admin: purge a queue's dead jobs that finished before a date. A preview first (how many, and
 * the frozen set of at most 1,000 the purge takes, as the bulk actions do); then a confirm
 * dialog with the reason for the audit log. The purge removes exactly the previewed jobs that
 * are still dead; the answer is a sentence on the page.
 */
export function PurgeDead(props: { queue: string }) {
  const router = useRouter();
  const [date, setDate] = useState('');
  const [preview, setPreview] = useState<PurgePreviewDTO | null>(null);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string | null>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const reasonField = useRef<HTMLInputElement>(null);
  const base = `/api/queues/${encodeURIComponent(props.queue)}/purge`;

  const ask = async (event: FormEvent) => {
    event.preventDefault();
    setMessage(null);
    setPreview(null);
    // The start of the day in the browser's time zone.
    const before = date ? new Date(`${date}T00:00:00`).toISOString() : '';
    const answer = await postJson<PurgePreviewDTO>(`${base}/preview`, { before });
    if (answer.ok === false) setMessage({ ok: false, text: answer.message ?? 'The preview was refused.' });
    else setPreview(answer);
  };
  const purge = async (event: FormEvent) => {
    event.preventDefault();
    if (!preview) return;
    setBusy(true);
    const answer = await postJson(base, {
      before: preview.before,
      ids: preview.ids,
      confirm: true,
      ...(reason.trim() ? { reason: reason.trim() } : {}),
    });
    setBusy(false);
    if (answer.ok === false && answer.message?.startsWith('That ')) {
      setError(answer.message);
      return;
    }
    setOpen(false);
    setPreview(null);
    setMessage({ ok: answer.ok === true, text: answer.message ?? 'The server answered without a message.' });
    router.refresh();
  };
  const count = (n: number) => n.toLocaleString('en');
  return (
    <section aria-labelledby="purge-title">
      <h2 id="purge-title">Purge old dead jobs</h2>
      <form className="limit-form" aria-label="Preview a purge" onSubmit={(event) => void ask(event)}>
        <label>
          Dead jobs that finished before (a date, your browser&apos;s time zone)
          <input type="date" name="before" required value={date} onChange={(event) => setDate(event.target.value)} />
        </label>
        <button type="submit">Preview the purge</button>
      </form>
      {preview && (
        <div data-testid="purge-preview">
          <p>
            {count(preview.matched)}
            {preview.moreThanCounted ? '+' : ''} dead job{preview.matched === 1 ? '' : 's'} of {props.queue} finished
            before then.
            {preview.overCap
              ? ` The purge takes the first ${count(preview.ids.length)} (at most ${count(preview.cap)} at once); preview again for the rest.`
              : ''}
          </p>
          {preview.ids.length > 0 && (
            <button
              type="button"
              ref={opener}
              className="danger"
              onClick={() => {
                setReason('');
                setError(null);
                setOpen(true);
              }}
            >
              Purge {count(preview.ids.length)} dead job{preview.ids.length === 1 ? '' : 's'}…
            </button>
          )}
        </div>
      )}
      {open && preview && (
        <ModalDialog
          title={`Purge ${count(preview.ids.length)} dead jobs of ${props.queue}?`}
          testId="purge-dialog"
          initialFocus={reasonField}
          returnFocus={opener}
          onClose={() => setOpen(false)}
        >
          <p>
            They are removed with their attempts, results and progress, and cannot be retried or shown again. Jobs of
            the preview that are no longer dead are left alone.
          </p>
          <form className="limit-form" onSubmit={(event) => void purge(event)}>
            <ReasonField value={reason} onChange={setReason} inputRef={reasonField} />
            <DialogFormEnd
              error={error}
              errorTestId="purge-error"
              busy={busy}
              submitLabel="Purge them"
              danger
              onCancel={() => setOpen(false)}
            />
          </form>
        </ModalDialog>
      )}
      {message && (
        <p
          className={message.ok ? 'notice' : 'error'}
          role={message.ok ? 'status' : 'alert'}
          data-testid="purge-result"
        >
          {message.text}
        </p>
      )}
    </section>
  );
}
