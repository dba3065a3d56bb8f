import { OverviewPanel } from '../../components/overview.tsx';

export default function OverviewPage() {
  return (
    <>
      <h1>Overview</h1>
      <OverviewPanel />
    </>
  );
}
