'use client';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useRef, useState, type FormEvent, type RefObject } from 'react';
import type { QueueAlertDTO, QueueAlertsDTO } from '../lib/dto.ts';
import { DialogFormEnd, ReasonField } from './dialog-form.tsx';
import { Time } from './time.tsx';
import { ModalDialog } from './modal-dialog.tsx';
import { fetchQueueAlerts, poll, POLL, postJson, queryKeys } from './queries.ts';
import { TableScroll } from './table-scroll.tsx';

type Figure = QueueAlertDTO['alert'];

/** Each figure as the table names it, and its short form on the overview's badge. Exhaustive. */
export const ALERT_LABEL: Record<Figure, { long: string; short: string; unit: string }> = {
  oldest_ready_age_seconds: {
    long: 'oldest ready job’s age',
    short: 'oldest ready',
    unit: 'a duration such as 90s, 5m, 2h or 1d',
  },
  dead: { long: 'dead jobs', short: 'dead', unit: 'a count' },
  waiting_for_kind: {
    long: 'jobs waiting for a kind no live worker runs',
    short: 'no worker for kind',
    unit: 'a count',
  },
};
const FIGURES: Figure[] = ['oldest_ready_age_seconds', 'dead', 'waiting_for_kind'];

/** The threshold as the form takes it back: the age in seconds as `300s`, a count as it is. */
const typed = (a: QueueAlertDTO) => (a.alert === 'oldest_ready_age_seconds' ? `${a.threshold}s` : String(a.threshold));

/**
 * The backlog alerts (docs/operations.md, "Reading the health page"), a section of the Health
 * page: each queue's thresholds in force (an admin's run-time one over the configured one), the
 * figure now and whether it fires. Polled every POLL.alerts ms while the tab is visible. Admins
 * set or clear a threshold in the dialog (audited as `set_queue_alert`).
 */
export function QueueAlertsPanel({ initial }: { initial: QueueAlertsDTO }) {
  const client = useQueryClient();
  const [result, setResult] = useState<string | null>(null);
  const { data, error } = useQuery({
    queryKey: queryKeys.alerts,
    queryFn: fetchQueueAlerts,
    initialData: initial,
    initialDataUpdatedAt: Date.parse(initial.generatedAt),
    refetchInterval: poll(POLL.alerts),
  });
  const saved = async (message: string) => {
    setResult(message);
    await Promise.all([
      client.invalidateQueries({ queryKey: queryKeys.alerts }),
      client.invalidateQueries({ queryKey: queryKeys.overview }),
    ]);
  };
  const canSet = data.can.set;
  return (
    <section>
      <h2>Backlog alerts</h2>
      <p className="muted">
        Per queue, a threshold for its oldest ready job&apos;s age, its dead jobs and its jobs waiting for a kind no
        live worker runs: configured (LEASEHOLD_QUEUE_ALERTS) or set here by an admin, which wins until cleared. A queue
        at or over a threshold fires, and the overview marks it.
      </p>
      {error && (
        <p className="error" role="alert">
          Could not refresh the alerts: {error.message}
        </p>
      )}
      {canSet && <AlertEditor queues={data.queues} preset={null} onSaved={saved} />}
      {result && (
        <p className="notice" role="status" data-testid="alert-result">
          {result}
        </p>
      )}
      <TableScroll label="Backlog alerts">
        <table data-testid="alerts-table">
          <thead>
            <tr>
              <th>queue</th>
              <th>figure</th>
              <th className="num">threshold</th>
              <th>source</th>
              <th className="num">now</th>
              <th>firing</th>
              {canSet && <th>change</th>}
            </tr>
          </thead>
          <tbody>
            {data.alerts.map((a) => (
              <tr key={`${a.queue}:${a.alert}`} data-testid={`alert-${a.queue}-${a.alert}`}>
                <td className="mono">{a.queue}</td>
                <td>{ALERT_LABEL[a.alert].long}</td>
                <td className="num" data-testid="alert-threshold">
                  {a.thresholdText}
                </td>
                <td data-testid="alert-source">
                  {a.source}
                  {a.setBy !== null && (
                    <>
                      {' '}
                      (by {a.setBy}, <Time at={a.setAt} />)
                    </>
                  )}
                </td>
                <td className="num" data-testid="alert-value">
                  {a.valueText}
                </td>
                <td data-testid="alert-firing">
                  {a.firing ? (
                    <span className="badge health-critical" title={a.sentence ?? undefined}>
                      firing
                    </span>
                  ) : (
                    'no'
                  )}
                </td>
                {canSet && (
                  <td>
                    <AlertEditor queues={data.queues} preset={a} onSaved={saved} />
                  </td>
                )}
              </tr>
            ))}
            {data.alerts.length === 0 && (
              <tr>
                <td colSpan={canSet ? 7 : 6}>
                  No thresholds: none is configured (LEASEHOLD_QUEUE_ALERTS) and no admin has set one.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}

/**
 * Admin: a queue's run-time threshold for one figure, in the dashboard's modal dialog: the
 * queue, the figure, the threshold (empty clears the run-time one: a configured one applies
 * again) and a reason for the audit log. Opened from a row, the queue and figure are that row's.
 * The server checks everything (a threshold not more than 0 or not a duration, a queue that does
 * not exist): its sentence shows in the dialog, which stays open, and nothing is written.
 */
function AlertEditor(props: {
  queues: string[];
  preset: QueueAlertDTO | null;
  onSaved: (message: string) => Promise<void>;
}) {
  const { preset } = props;
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [queue, setQueue] = useState('');
  const [alert, setAlert] = useState<Figure>('oldest_ready_age_seconds');
  const [threshold, setThreshold] = useState('');
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string | null>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const first = useRef<HTMLInputElement>(null);
  const title = preset
    ? `Change the alert of ${preset.queue} on the ${ALERT_LABEL[preset.alert].long}`
    : 'Set a backlog alert';

  const start = () => {
    setQueue(preset?.queue ?? '');
    setAlert(preset?.alert ?? 'oldest_ready_age_seconds');
    setThreshold(preset && preset.source === 'run time' ? typed(preset) : '');
    setReason('');
    setError(null);
    setOpen(true);
  };
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    const answer = await postJson('/api/alerts', {
      queue: queue.trim(),
      alert,
      threshold: threshold.trim() === '' ? null : threshold.trim(),
      ...(reason.trim() ? { reason: reason.trim() } : {}),
    });
    setBusy(false);
    if (!answer.ok) {
      setError(answer.message ?? 'The server refused the change; nothing was written.');
      return;
    }
    setOpen(false);
    await props.onSaved(answer.message ?? 'Saved.');
  };

  return (
    <div>
      <button type="button" ref={opener} aria-label={title} onClick={start}>
        {preset ? 'Change…' : 'Set a backlog alert…'}
      </button>
      {open && (
        <ModalDialog
          title={title}
          testId="alert-dialog"
          initialFocus={first}
          returnFocus={opener}
          onClose={() => setOpen(false)}
        >
          <p>
            The alert fires while the queue&apos;s figure is at or over the threshold. Leave the threshold empty to
            clear the run-time one (a configured one applies again). Recorded in the audit log.
          </p>
          <form className="limit-form" onSubmit={(event) => void save(event)}>
            <QueueAndFigure
              queues={props.queues}
              fixed={preset !== null}
              queue={queue}
              alert={alert}
              queueRef={preset ? undefined : first}
              onQueue={setQueue}
              onAlert={setAlert}
            />
            <label>
              Threshold ({ALERT_LABEL[alert].unit}; empty clears it)
              <input
                ref={preset ? first : undefined}
                name="threshold"
                autoComplete="off"
                value={threshold}
                onChange={(event) => setThreshold(event.target.value)}
              />
            </label>
            <ReasonField value={reason} onChange={setReason} />
            <DialogFormEnd
              error={error}
              errorTestId="alert-error"
              busy={busy}
              submitLabel="Save the alert"
              danger={false}
              onCancel={() => setOpen(false)}
            />
          </form>
        </ModalDialog>
      )}
    </div>
  );
}

/** The dialog's queue (typed, the known ones offered) and figure; fixed when opened from a row. */
function QueueAndFigure({
  queueRef,
  ...props
}: {
  queues: string[];
  fixed: boolean;
  queue: string;
  alert: Figure;
  queueRef: RefObject<HTMLInputElement | null> | undefined;
  onQueue: (queue: string) => void;
  onAlert: (alert: Figure) => void;
}) {
  const listId = useId();
  return (
    <>
      <label>
        Queue
        <input
          ref={queueRef}
          name="queue"
          autoComplete="off"
          list={listId}
          value={props.queue}
          readOnly={props.fixed}
          onChange={(event) => props.onQueue(event.target.value)}
        />
      </label>
      <datalist id={listId}>
        {props.queues.map((q) => (
          <option key={q} value={q} />
        ))}
      </datalist>
      <label>
        Figure
        <select
          name="alert"
          value={props.alert}
          disabled={props.fixed}
          onChange={(event) => props.onAlert(FIGURES.find((f) => f === event.target.value) ?? props.alert)}
        >
          {FIGURES.map((f) => (
            <option key={f} value={f}>
              {ALERT_LABEL[f].long}
            </option>
          ))}
        </select>
      </label>
    </>
  );
}
