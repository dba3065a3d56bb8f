'use client';
import { useRouter } from 'next/navigation';
import { useRef, useState, type FormEvent, type ReactNode, type RefObject } from 'react';
import type { JobLiveDTO, SupportResultDTO } from '../lib/dto.ts';
import { withBasePath } from './base-path.ts';
import { DialogFormEnd, ReasonField } from './dialog-form.tsx';
import { useJobLive } from './job-live.tsx';
import { ModalDialog } from './modal-dialog.tsx';
import { postJson } from './queries.ts';
import { Time } from './time.tsx';

/** A time as a datetime-local input holds it: the browser's own zone, to the minute. */
function localInput(iso: string): string {
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

type Outcome = { ok: boolean; message: string; copyId?: string };

/**
 * One support action of a job page: its button, and its confirm dialog (the action's own fields,
 * the optional reason, the refusal of bad input said in the dialog, which stays open). The page
 * sends what it showed of the job when the dialog opened (state, attempts, updatedAt): an answer,
 * applied or refused because the job changed since, closes the dialog and is said on the page,
 * which then refreshes.
 */
function ActionButton(props: {
  label: string;
  title: string;
  testId: string;
  submitLabel: string;
  path: string;
  live: JobLiveDTO;
  /** The action's own fields, and the one that takes the focus (else the reason). */
  fields?: ReactNode;
  focus?: RefObject<HTMLInputElement | null>;
  body?: () => Record<string, unknown>;
  children: ReactNode;
  onOutcome: (outcome: Outcome) => void;
}) {
  const router = useRouter();
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string | null>(null);
  // What the operator saw when they opened the dialog: the guard compares the job with it.
  const [seen, setSeen] = useState<Pick<JobLiveDTO, 'state' | 'attempts' | 'updatedAt'> | null>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const reasonField = useRef<HTMLInputElement>(null);
  const focus = props.focus ?? reasonField;
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    const answer = await postJson<SupportResultDTO>(props.path, {
      seen,
      ...props.body?.(),
      ...(reason.trim() ? { reason: reason.trim() } : {}),
    });
    setBusy(false);
    const message = answer.message ?? 'The server answered without a message.';
    if (!answer.ok && !answer.refused) {
      setError(message);
      return;
    }
    setOpen(false);
    props.onOutcome({ ok: answer.ok === true, message, ...(answer.copyId ? { copyId: answer.copyId } : {}) });
    router.refresh();
  };
  return (
    <>
      <button
        type="button"
        ref={opener}
        onClick={() => {
          const { live } = props;
          setSeen({ state: live.state, attempts: live.attempts, updatedAt: live.updatedAt });
          setReason('');
          setError(null);
          setOpen(true);
        }}
      >
        {props.label}
      </button>
      {open && (
        <ModalDialog
          title={props.title}
          testId={props.testId}
          initialFocus={focus}
          returnFocus={opener}
          onClose={() => setOpen(false)}
        >
          {props.children}
          <form className="limit-form" onSubmit={(event) => void submit(event)}>
            {props.fields}
            <ReasonField value={reason} onChange={setReason} inputRef={reasonField} />
            <DialogFormEnd
              error={error}
              errorTestId={`${props.testId}-error`}
              busy={busy}
              submitLabel={props.submitLabel}
              danger={false}
              onCancel={() => setOpen(false)}
            />
          </form>
        </ModalDialog>
      )}
    </>
  );
}

/**
 * A job's support actions (docs/dashboard.md, "Support actions"), as the viewer's role and the
 * job's live state allow: run now and reschedule (a scheduled or retrying job), change the
 * priority (a ready job), re-run (a done job of a re-run-safe kind version: `rerun`).
 */
export function SupportActions(props: { id: string; initial: JobLiveDTO; rerun: boolean }) {
  const live = useJobLive(props.id, props.initial).data;
  const [runAt, setRunAt] = useState('');
  const [priority, setPriority] = useState('');
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const runAtField = useRef<HTMLInputElement>(null);
  const priorityField = useRef<HTMLInputElement>(null);
  const path = (action: string) => `/api/jobs/${props.id}/${action}`;
  const { can } = live;
  const rerun = props.rerun && live.state === 'done';
  if (!can.runNow && !can.reschedule && !can.priority && !rerun && !outcome) return null;
  return (
    <div className="actions" data-testid="support-actions">
      {can.runNow && (
        <ActionButton
          label="Run now…"
          title="Run this job now?"
          testId="run-now-dialog"
          submitLabel="Run it now"
          path={path('run-now')}
          live={live}
          onOutcome={setOutcome}
        >
          <p>
            It waits until <Time at={live.runAt} />. It will be due at once, and a worker of its queue takes it at its
            next claim.
          </p>
        </ActionButton>
      )}
      {can.reschedule && (
        <ActionButton
          label="Reschedule…"
          title="Reschedule this job"
          testId="reschedule-dialog"
          submitLabel="Reschedule"
          path={path('reschedule')}
          live={live}
          onOutcome={setOutcome}
          body={() => ({ runAt: new Date(runAt || localInput(live.runAt)).toISOString() })}
          focus={runAtField}
          fields={
            <label>
              New run time (your browser&apos;s time zone; in the future, at most 365 days ahead)
              <input
                ref={runAtField}
                type="datetime-local"
                name="runAt"
                required
                value={runAt || localInput(live.runAt)}
                onChange={(event) => setRunAt(event.target.value)}
              />
            </label>
          }
        >
          <p>
            It waits until <Time at={live.runAt} /> now.
          </p>
        </ActionButton>
      )}
      {can.priority && (
        <ActionButton
          label="Change priority…"
          title="Change this job's priority"
          testId="priority-dialog"
          submitLabel="Change the priority"
          path={path('priority')}
          live={live}
          onOutcome={setOutcome}
          body={() => ({ priority: Number(priority === '' ? live.priority : priority) })}
          focus={priorityField}
          fields={
            <label>
              Priority (0, the lowest, to 100; a higher one is claimed ahead of older lower ones)
              <input
                ref={priorityField}
                type="number"
                name="priority"
                min={0}
                max={100}
                required
                value={priority === '' ? String(live.priority) : priority}
                onChange={(event) => setPriority(event.target.value)}
              />
            </label>
          }
        >
          <p>Its priority is {live.priority} now.</p>
        </ActionButton>
      )}
      {rerun && (
        <ActionButton
          label="Re-run…"
          title="Re-run this job?"
          testId="rerun-dialog"
          submitLabel="Re-run it"
          path={path('rerun')}
          live={live}
          onOutcome={setOutcome}
        >
          <p>
            A copy is enqueued (a new job, with the same payload), due now. This job stays as it is: a done job never
            changes.
          </p>
        </ActionButton>
      )}
      {outcome && <SupportResult outcome={outcome} />}
    </div>
  );
}

/** The last action's answer, on the page: applied, or why not; a re-run links its copy. */
function SupportResult({ outcome }: { outcome: Outcome }) {
  return (
    <p className={outcome.ok ? 'notice' : 'error'} role={outcome.ok ? 'status' : 'alert'} data-testid="support-result">
      {outcome.message}
      {outcome.copyId && (
        <>
          {' '}
          <a href={withBasePath(`/jobs/${outcome.copyId}`)} data-testid="rerun-copy">
            Open the copy
          </a>
        </>
      )}
    </p>
  );
}
