import { FailuresPanel } from '../../../components/failures.tsx';
import { PageError } from '../../../components/page-error.tsx';
import { getFailureGroups } from '../../../lib/dal/index.ts';
import { load } from '../../../lib/page.ts';

export default async function FailuresPage() {
  const loaded = await load(() => getFailureGroups({ fresh: true }));
  if (!loaded.ok) return <PageError message={loaded.message} />;
  return (
    <>
      <h1>Failures</h1>
      <p className="muted">
        The latest 10,000 dead jobs of the last 7 days, grouped by failure class and error (numbers and ids folded).
        “Retry this group” takes every dead job of the group in those 7 days, up to 1,000.
      </p>
      <FailuresPanel initial={loaded.value} />
    </>
  );
}
