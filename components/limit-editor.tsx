'use client';
import { useRouter } from 'next/navigation';
import { useRef, useState, type FormEvent } from 'react';
import type { LimitDTO } from '../lib/dto.ts';
import { DialogFormEnd, ReasonField } from './dialog-form.tsx';
import { ModalDialog } from './modal-dialog.tsx';
import { postJson } from './queries.ts';
import { Time } from './time.tsx';

const shown = (value: number | string | null) => (value === null ? 'none' : String(value));

/**
 * Admin: a limit's run-time maximum and rate, changed in the dashboard's modal dialog. The
 * fields start at the run-time values (empty: none set, the declaration applies); only the ones
 * changed are sent, and an emptied one clears its value. The server checks everything (a sentence
 * for what is wrong, shown in the dialog, which stays open; nothing is written) and records the
 * change in the audit log with the reason. The focus starts on the maximum: the dialog changes
 * nothing until Save, and Escape or "Keep it as it is" leave it; it goes back to Change after.
 */
export function LimitEditor({ limit }: { limit: LimitDTO }) {
  const router = useRouter();
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [max, setMax] = useState('');
  const [rate, setRate] = useState('');
  const [reason, setReason] = useState('');
  const [resume, setResume] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<string | null>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const maxField = useRef<HTMLInputElement>(null);
  const initialMax = limit.set.max === null ? '' : String(limit.set.max);
  const initialRate = limit.set.rate ?? '';

  const start = () => {
    setMax(initialMax);
    setRate(initialRate);
    setReason('');
    setResume(false);
    setError(null);
    setResult(null);
    setOpen(true);
  };
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    const answer = await postJson('/api/limits', {
      scope: limit.scope,
      name: limit.name,
      ...(max.trim() === initialMax ? {} : { max: max.trim() }),
      ...(rate.trim() === initialRate ? {} : { rate: rate.trim() }),
      ...(resume ? { resume: true } : {}),
      ...(reason.trim() ? { reason: reason.trim() } : {}),
    });
    setBusy(false);
    if (!answer.ok) {
      setError(answer.message ?? 'The server refused the change; nothing was written.');
      return;
    }
    setOpen(false);
    setResult(answer.message ?? 'Saved.');
    router.refresh();
  };

  return (
    <div>
      <button type="button" ref={opener} aria-label={`Change the limit ${limit.key}`} onClick={start}>
        Change…
      </button>
      {open && (
        <ModalDialog
          title={`Change the limit ${limit.key}`}
          testId="limit-dialog"
          initialFocus={maxField}
          returnFocus={opener}
          onClose={() => setOpen(false)}
        >
          <p>
            The handlers declare a maximum of {shown(limit.declared.max)} and a rate of {shown(limit.declared.rate)}. A
            run-time value wins over its declaration from the next claim on; running attempts finish. Leave a field
            empty to clear its run-time value (the declaration applies again).
          </p>
          <form className="limit-form" onSubmit={(event) => void save(event)}>
            <label>
              Run-time maximum (running at once, 1 to 1,000,000)
              <input
                ref={maxField}
                name="max"
                inputMode="numeric"
                autoComplete="off"
                value={max}
                onChange={(event) => setMax(event.target.value)}
              />
            </label>
            <label>
              Run-time rate (starts per interval: N/INTERVAL, such as 100/1s or 5/500ms)
              <input name="rate" autoComplete="off" value={rate} onChange={(event) => setRate(event.target.value)} />
            </label>
            {limit.pausedUntil !== null && (
              <ResumeField pausedUntil={limit.pausedUntil} checked={resume} onChange={setResume} />
            )}
            <ReasonField value={reason} onChange={setReason} />
            <DialogFormEnd
              error={error}
              errorTestId="limit-error"
              busy={busy}
              submitLabel="Save the limit"
              danger
              onCancel={() => setOpen(false)}
            />
          </form>
        </ModalDialog>
      )}
      {result && (
        <p className="notice" role="status" data-testid="limit-result">
          {result}
        </p>
      )}
    </div>
  );
}

/** Lifting a RateLimitedError's pause, offered while the limit is paused. */
function ResumeField(props: { pausedUntil: string; checked: boolean; onChange: (checked: boolean) => void }) {
  return (
    <label className="check">
      <input
        type="checkbox"
        name="resume"
        checked={props.checked}
        onChange={(event) => props.onChange(event.target.checked)}
      />
      Lift the pause (a handler&apos;s RateLimitedError paused it until <Time at={props.pausedUntil} />)
    </label>
  );
}
