'use client';
import { useRouter } from 'next/navigation';
import { useRef, useState, type FormEvent } from 'react';
import { DialogFormEnd, ReasonField } from './dialog-form.tsx';
import { ModalDialog } from './modal-dialog.tsx';
import { postJson } from './queries.ts';

/** A sentence the server answered, or ours when it answered without one. */
const said = (answer: { message?: string }, otherwise: string) => answer.message ?? otherwise;

/**
 * Admin: pause or resume one schedule (audited), asked in the dashboard's modal dialog with an
 * optional reason for the audit log. The focus starts on the reason: the dialog changes nothing
 * until its button is pressed, and Escape or "Keep it as it is" leave it; it goes back to the
 * opener after (the same button, relabelled once the page shows the new state). A refusal (the
 * schedule is gone) is said in the dialog, which stays open; nothing is written.
 */
export function SchedulePause(props: { name: string; paused: boolean }) {
  const router = useRouter();
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<string | null>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const reasonField = useRef<HTMLInputElement>(null);
  const verb = props.paused ? 'Resume' : 'Pause';

  const start = () => {
    setReason('');
    setError(null);
    setResult(null);
    setOpen(true);
  };
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    const answer = await postJson(`/api/schedules/${props.paused ? 'resume' : 'pause'}`, {
      name: props.name,
      ...(reason.trim() ? { reason: reason.trim() } : {}),
    });
    setBusy(false);
    if (!answer.ok) {
      setError(said(answer, 'The server refused; nothing was written.'));
      return;
    }
    setOpen(false);
    setResult(said(answer, `${verb}d.`));
    router.refresh();
  };

  return (
    <div>
      <button type="button" ref={opener} className={props.paused ? undefined : 'danger'} onClick={start}>
        {verb} the schedule…
      </button>
      {open && (
        <ModalDialog
          title={`${verb} the schedule ${props.name}?`}
          testId="schedule-pause-dialog"
          initialFocus={reasonField}
          returnFocus={opener}
          onClose={() => setOpen(false)}
        >
          <p>
            {props.paused
              ? 'Its ticks are enqueued again from the next one; the ticks of the pause are not run.'
              : 'No tick of it is enqueued until it is resumed; jobs already enqueued still run.'}
          </p>
          <form className="limit-form" onSubmit={(event) => void save(event)}>
            <ReasonField value={reason} onChange={setReason} inputRef={reasonField} />
            <DialogFormEnd
              error={error}
              errorTestId="schedule-pause-error"
              busy={busy}
              submitLabel={`${verb} the schedule`}
              danger={!props.paused}
              onCancel={() => setOpen(false)}
            />
          </form>
        </ModalDialog>
      )}
      {result && (
        <p className="notice" role="status" data-testid="schedule-pause-result">
          {result}
        </p>
      )}
    </div>
  );
}

/**
 * Admin: a schedule's cron expression and time zone, changed in the dashboard's modal dialog
 * (audited). The fields start at the schedule's values; only the ones changed are sent. The
 * server checks them as the queue does (croner reads the expression, the zone is IANA's): a
 * sentence for what is wrong, shown in the dialog, which stays open; nothing is written. The
 * focus starts on the expression; it goes back to the opener after.
 */
export function ScheduleTimingEditor(props: { name: string; cron: string; timezone: string }) {
  const router = useRouter();
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [cron, setCron] = useState('');
  const [timezone, setTimezone] = useState('');
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<string | null>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const cronField = useRef<HTMLInputElement>(null);

  const start = () => {
    setCron(props.cron);
    setTimezone(props.timezone);
    setReason('');
    setError(null);
    setResult(null);
    setOpen(true);
  };
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    const answer = await postJson('/api/schedules', {
      name: props.name,
      ...(cron.trim() === props.cron ? {} : { cron: cron.trim() }),
      ...(timezone.trim() === props.timezone ? {} : { timezone: timezone.trim() }),
      ...(reason.trim() ? { reason: reason.trim() } : {}),
    });
    setBusy(false);
    if (!answer.ok) {
      setError(said(answer, 'The server refused the change; nothing was written.'));
      return;
    }
    setOpen(false);
    setResult(said(answer, 'Saved.'));
    router.refresh();
  };

  return (
    <div>
      <button type="button" ref={opener} onClick={start}>
        Change the cron expression…
      </button>
      {open && (
        <ModalDialog
          title={`Change the schedule ${props.name}`}
          testId="schedule-timing-dialog"
          initialFocus={cronField}
          returnFocus={opener}
          onClose={() => setOpen(false)}
        >
          <p>
            The new expression&apos;s ticks start after the change, without a restart. From then on the code&apos;s
            declaration does not apply to this schedule until an admin resets it.
          </p>
          <form className="limit-form" onSubmit={(event) => void save(event)}>
            <label>
              Cron expression (5 fields, or 6 with seconds first: 0 3 * * *)
              <input
                ref={cronField}
                name="cron"
                autoComplete="off"
                spellCheck={false}
                value={cron}
                onChange={(event) => setCron(event.target.value)}
              />
            </label>
            <label>
              Time zone (IANA: Europe/Berlin, UTC)
              <input
                name="timezone"
                autoComplete="off"
                spellCheck={false}
                value={timezone}
                onChange={(event) => setTimezone(event.target.value)}
              />
            </label>
            <ReasonField value={reason} onChange={setReason} />
            <DialogFormEnd
              error={error}
              errorTestId="schedule-timing-error"
              busy={busy}
              submitLabel="Save the schedule"
              danger
              onCancel={() => setOpen(false)}
            />
          </form>
        </ModalDialog>
      )}
      {result && (
        <p className="notice" role="status" data-testid="schedule-timing-result">
          {result}
        </p>
      )}
    </div>
  );
}
