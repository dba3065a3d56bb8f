/**
 * The probes' figures (bench/probes/run.sh wrote them into DIR): medians per layout, sessions
 * and step, and the drain's WAL by relation and record type. Prints markdown; also writes it to
 * DIR/summary.md.
 *
 *   npx tsx bench/probes/summarize.ts DIR
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { median } from '../lib.ts';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: summarize.ts DIR');
  process.exit(2);
}

interface Row {
  layout: string;
  sessions: number;
  repeat: number;
  step: string;
  jobs: number;
  cpuNs: number;
  wallNs: number;
  walBytes: number;
  fpiBytes: number;
  otherBytes: number;
  load1: number;
}

const rows: Row[] = readFileSync(path.join(dir, 'results.tsv'), 'utf8')
  .trim()
  .split('\n')
  .slice(1)
  .map((line) => {
    const [layout, sessions, repeat, step, jobs, cpuNs, wallNs, walBytes, fpiBytes, otherBytes, load1] =
      line.split(/\s+/);
    return {
      layout: layout!,
      sessions: Number(sessions),
      repeat: Number(repeat),
      step: step!,
      jobs: Number(jobs),
      cpuNs: Number(cpuNs),
      wallNs: Number(wallNs),
      walBytes: Number(walBytes),
      fpiBytes: Number(fpiBytes),
      otherBytes: Number(otherBytes),
      load1: Number(load1),
    };
  });

const LAYOUTS: Record<string, string> = { v0: 'previous (3ede191)', v1: 'schema v1 (HOT lifecycle)' };
const fmt = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits });

function figures(layout: string, step: string, sessions?: number) {
  const runs = rows.filter(
    (r) => r.layout === layout && r.step === step && (sessions === undefined || r.sessions === sessions),
  );
  if (runs.length === 0) return null;
  const per = (pick: (r: Row) => number) => runs.map((r) => pick(r) / r.jobs);
  // The server's WAL is shared: what is not this database's is someone else's (run.sh, wal_detail).
  // Full-page images come from a checkpoint that began in the window (another client's, on a
  // shared server): real, but a property of the timing, so left out and shown apart.
  const own = (r: Row) => r.walBytes - r.otherBytes - r.fpiBytes;
  return {
    n: runs.length,
    cpuUs: median(per((r) => r.cpuNs / 1000)),
    cpuRange: [Math.min(...per((r) => r.cpuNs / 1000)), Math.max(...per((r) => r.cpuNs / 1000))],
    wallUs: median(per((r) => r.wallNs / 1000)),
    wal: median(per(own)),
    walRange: [Math.min(...per(own)), Math.max(...per(own))],
    fpi: Math.max(...runs.map((r) => r.fpiBytes)),
    other: Math.max(...runs.map((r) => r.otherBytes)),
    load: median(runs.map((r) => r.load1)),
  };
}

const out: string[] = [
  'WAL: the records of the window that are this database’s (its blocks, and its transactions’ commits), without',
  'full-page images (FPI: a checkpoint began in the window). FPI and the window’s other bytes (other databases on',
  'the shared server) are shown apart, the most of any run.',
  'load: the machine’s 1-minute load average when the step ended (2 cores).',
  '',
];
const steps: [string, string, number | undefined][] = [
  ['drain', 'drain, 1 session (claim 1,000 + ack, ×20)', 1],
  ['claims', 'of which the claims, 1 session', 1],
  ['drain', 'drain, 4 sessions at once (×5 each)', 4],
  ['claims', 'of which the claims, 4 sessions', 4],
  ['pickup', 'pickup, 1 session (claim 1 + ack, ×200)', 1],
  ['enqueue', 'bulk enqueue, 100,000 in one statement', undefined],
  ['heartbeat1', 'heartbeat of 1,000 running jobs (1st)', 1],
  ['heartbeat2', 'heartbeat (2nd in a row)', 1],
  ['heartbeat3', 'heartbeat (3rd in a row)', 1],
  ['held1', 'heartbeat, another transaction open (1st)', 1],
  ['held2', 'heartbeat, another transaction open (2nd)', 1],
  ['held3', 'heartbeat, another transaction open (3rd)', 1],
  ['vacuum', 'VACUUM after the drain (per drained job)', 1],
];

/** The share of the jobs table's updates that were HOT in a step's windows (from the WAL), or null. */
function hotShare(layout: string, step: string, sessions: number | undefined): number | null {
  const table = layout === 'v0' ? 'jobs' : 'leasehold.jobs';
  let hot = 0;
  let all = 0;
  for (const file of readdirSync(path.join(dir!, 'wal'))) {
    const m = /^(v\d)-(\d)s-r\d+-(.+)\.relations\.tsv$/.exec(file);
    if (!m || m[1] !== layout || m[3] !== step || (sessions !== undefined && Number(m[2]) !== sessions)) continue;
    for (const line of readFileSync(path.join(dir!, 'wal', file), 'utf8')
      .trim()
      .split('\n')) {
      const [relation, record, count] = line.split('|');
      if (relation !== table) continue;
      if (record === 'Heap/HOT_UPDATE') hot += Number(count);
      if (record === 'Heap/HOT_UPDATE' || record === 'Heap/UPDATE' || record === 'Heap/UPDATE+INIT')
        all += Number(count);
    }
  }
  return all > 0 ? hot / all : null;
}
out.push(
  '| per job | layout | backend CPU µs (min–max) | WAL bytes (min–max) | HOT | wall µs | runs | load | FPI / other bytes |',
  '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
);
for (const [step, label, sessions] of steps) {
  for (const layout of Object.keys(LAYOUTS)) {
    const f = figures(layout, step, sessions);
    if (!f) continue;
    const hot = hotShare(layout, step, sessions);
    out.push(
      `| ${label} | ${LAYOUTS[layout]} | ${fmt(f.cpuUs, 2)} (${fmt(f.cpuRange[0]!, 2)}–${fmt(f.cpuRange[1]!, 2)}) | ${step === 'claims' ? '–' : `${fmt(f.wal, 0)} (${fmt(f.walRange[0]!, 0)}–${fmt(f.walRange[1]!, 0)})`} | ${hot === null ? '–' : `${fmt(100 * hot, 0)}%`} | ${step === 'claims' ? '–' : fmt(f.wallUs, 2)} | ${f.n} | ${fmt(f.load, 2)} | ${f.fpi} / ${f.other} |`,
    );
  }
}

// The drain's WAL by relation and record type, averaged over the repeats (1 and 4 sessions).
for (const sessions of [1, 4]) {
  for (const layout of Object.keys(LAYOUTS)) {
    const files = readdirSync(path.join(dir, 'wal')).filter(
      (f) => f.startsWith(`${layout}-${sessions}s-`) && f.endsWith('-drain.relations.tsv'),
    );
    if (files.length === 0) continue;
    const sums = new Map<string, { count: number; bytes: number }>();
    for (const file of files) {
      for (const line of readFileSync(path.join(dir, 'wal', file), 'utf8')
        .trim()
        .split('\n')) {
        const [relation, record, count, bytes] = line.split('|');
        const key = `${relation}|${record}`;
        const s = sums.get(key) ?? { count: 0, bytes: 0 };
        s.count += Number(count) / files.length;
        s.bytes += Number(bytes) / files.length;
        sums.set(key, s);
      }
    }
    const jobsTable = layout === 'v0' ? 'jobs' : 'leasehold.jobs';
    const ofJobs = (rec: string) => sums.get(`${jobsTable}|${rec}`)?.count ?? 0;
    const hot = ofJobs('Heap/HOT_UPDATE');
    const cold = ofJobs('Heap/UPDATE') + ofJobs('Heap/UPDATE+INIT');
    out.push(
      '',
      `Drain WAL per job by relation and record, ${LAYOUTS[layout]}, ${sessions} session${sessions > 1 ? 's' : ''} (mean of ${files.length}; jobs updates HOT: ${fmt((100 * hot) / (hot + cold || 1), 1)}%):`,
      '',
      '| relation | record | per job | bytes per job |',
      '| --- | --- | ---: | ---: |',
    );
    for (const [key, s] of [...sums].sort((a, b) => b[1].bytes - a[1].bytes)) {
      if (s.bytes < 1) continue;
      const [relation, record] = key.split('|');
      out.push(`| ${relation} | ${record} | ${fmt(s.count, 3)} | ${fmt(s.bytes, 1)} |`);
    }
  }
}

const text = out.join('\n');
writeFileSync(path.join(dir, 'summary.md'), `${text}\n`);
console.log(text);
