'use client';
import { useRouter } from 'next/navigation';
import { useRef, useState, type FormEvent } from 'react';
import type { PurgePreviewDTO } from '../lib/dto.ts';
import { DialogFormEnd, ReasonField } from './dialog-form.tsx';
import { ModalDialog } from './modal-dialog.tsx';
import { postJson } from './queries.ts';

/**
 * The start of a YYYY-MM-DD day in the browser's time zone; text that is no such date goes as
 * it is, for the server to refuse in a sentence.
 */
function startOfDay(date: string): string {
  const text = date.trim();
  const day = new Date(`${text}T00:00:00`);
  return /^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(day.getTime()) ? day.toISOString() : text;
}

const count = (n: number) => n.toLocaleString('en');

/** How many the preview found, and how many of them the purge takes. */
function PreviewLine({ preview, queue }: { preview: PurgePreviewDTO; queue: string }) {
  return (
    <p>
      {count(preview.matched)}
      {preview.moreThanCounted ? '+' : ''} dead job{preview.matched === 1 ? '' : 's'} of {queue} finished before then.
      {preview.overCap
        ? ` The purge takes the first ${count(preview.ids.length)} (at most ${count(preview.cap)} at once); preview again for the rest.`
        : ''}
    </p>
  );
}

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
    const answer = await postJson<PurgePreviewDTO>(`${base}/preview`, { before: startOfDay(date) });
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
  return (
    <section aria-labelledby="purge-title">
      <h2 id="purge-title">Purge old dead jobs</h2>
      <form className="limit-form" aria-label="Preview a purge" onSubmit={(event) => void ask(event)}>
        <label>
          Dead jobs that finished before (a date, YYYY-MM-DD, your browser&apos;s time zone)
          <input
            name="before"
            required
            autoComplete="off"
            placeholder="2026-01-31"
            value={date}
            onChange={(event) => setDate(event.target.value)}
          />
        </label>
        <button type="submit">Preview the purge</button>
      </form>
      {preview && (
        <div data-testid="purge-preview">
          <PreviewLine preview={preview} queue={props.queue} />
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
