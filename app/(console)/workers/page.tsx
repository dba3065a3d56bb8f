import { PageError } from '../../../components/page-error.tsx';
import { WorkersPanel } from '../../../components/workers.tsx';
import { getWorkers } from '../../../lib/dal/index.ts';
import { load } from '../../../lib/page.ts';

export default async function WorkersPage() {
  const loaded = await load(() => getWorkers({ fresh: true }));
  return (
    <>
      <h1>Workers</h1>
      <p className="muted">
        The worker processes that reported within the last minute: which Leasehold version each runs, the schema
        versions its code reads, the kind versions its handlers run, its queues and concurrency. During a rolling deploy
        both versions show; jobs of a kind version no live worker runs wait, and are listed below.
      </p>
      {!loaded.ok ? <PageError message={loaded.message} /> : <WorkersPanel initial={loaded.value} />}
    </>
  );
}
