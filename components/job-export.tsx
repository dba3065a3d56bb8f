'use client';
import { useState } from 'react';
import { postForFile } from './queries.ts';

/**
 * Operator: exports what the Jobs page's filter finds as CSV (at most 10,000 jobs, masked as the
 * pages show them). The server records the export in the audit log before it sends the file;
 * over the cap it refuses with a sentence, shown here.
 */
export function JobExport({ filter }: { filter: Record<string, string> }) {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const download = async () => {
    setBusy(true);
    setMessage(null);
    const answer = await postForFile('/api/jobs/export', { filter }, 'leasehold-jobs.csv');
    setBusy(false);
    if (!answer.ok) return setMessage({ ok: false, text: answer.message });
    const url = URL.createObjectURL(answer.blob);
    const link = document.createElement('a');
    link.href = url;
    link.download = answer.filename;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    setMessage({ ok: true, text: `Exported ${answer.filename} (recorded in the audit log).` });
  };
  return (
    <div className="actions" data-testid="job-export">
      <button type="button" disabled={busy} onClick={() => void download()}>
        Export CSV (at most 10,000 jobs)
      </button>
      {message && (
        <p className={message.ok ? 'notice' : 'error'} role="status" data-testid="export-result">
          {message.text}
        </p>
      )}
    </div>
  );
}
