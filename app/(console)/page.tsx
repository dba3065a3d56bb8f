import { OverviewPanel } from '../../components/overview';

export default function OverviewPage() {
  return (
    <>
      <h1>Overview</h1>
      <OverviewPanel />
    </>
  );
}
