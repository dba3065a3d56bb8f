import { HealthPanel } from '../../../components/health.tsx';
import { PageError } from '../../../components/page-error.tsx';
import { QueueAlertsPanel } from '../../../components/queue-alerts.tsx';
import { getHealth, getQueueAlerts } from '../../../lib/dal/index.ts';
import { load } from '../../../lib/page.ts';

export default async function HealthPage() {
  const [health, alerts] = await Promise.all([load(() => getHealth({ fresh: true })), load(() => getQueueAlerts())]);
  return (
    <>
      <h1>Health</h1>
      <p className="muted">
        What breaks a PostgreSQL queue long before throughput does: a transaction left open, a forgotten replication
        slot or prepared transaction holds the horizon, so vacuum cannot remove the dead rows every claim leaves, and
        each claim walks further. Each check has a state and a sentence naming the cause (docs/operations.md, “Reading
        the health page”, says what to do). A check this dashboard&apos;s database role cannot read says so, with the
        grant that fixes it.
      </p>
      {!health.ok ? <PageError message={health.message} /> : <HealthPanel initial={health.value} />}
      {!alerts.ok ? <PageError message={alerts.message} /> : <QueueAlertsPanel initial={alerts.value} />}
    </>
  );
}
