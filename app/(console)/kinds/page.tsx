import { KindsPanel } from '../../../components/kinds.tsx';
import { PageError } from '../../../components/page-error.tsx';
import { getKinds } from '../../../lib/dal/index.ts';
import { load } from '../../../lib/page.ts';

export default async function KindsPage() {
  const loaded = await load(() => getKinds({ fresh: true }));
  return (
    <>
      <h1>Kinds</h1>
      <p className="muted">
        What the workers run, as each recorded it at start. Viewers and operators see masked: the paths the workers
        declared (which the dashboard cannot unmask), the paths an admin added for a kind (every version of it), the
        configured defaults and the usual secret keys. A kind version not listed here shows its payloads hidden whole.
      </p>
      {!loaded.ok ? <PageError message={loaded.message} /> : <KindsPanel initial={loaded.value} />}
    </>
  );
}
