/**
 * One worker process of a benchmark case (forked by bench/run.ts, same Node binary).
 *
 *   child.ts <system> <mode> <url> [<pickup JSON> | <hold JSON>]
 *
 * It loads everything, says `loaded`, and starts its worker only on `go`, so process start-up is
 * not timed. While draining it reports how many handlers ran; for pickup it enqueues one job
 * (or a burst of `burst` jobs in one statement) every `intervalMs` itself (a separate
 * connection) and reports each job's delay from the enqueue's commit to its handler's start. `cpu` asks for the CPU time it has used (µs);
 * `stop` stops the worker and exits.
 */
import { type HoldOptions, SYSTEMS, type SystemName, type WorkerMode } from './systems/index.ts';

const [systemName, mode, url, extra] = process.argv.slice(2) as [
  SystemName,
  WorkerMode | 'hold',
  string,
  string | undefined,
];
const system = SYSTEMS[systemName];
const send = (message: unknown) => process.send!(message);

let handled = 0;
let reported = 0;
const started = new Map<number, number>();

process.on('message', (message: { type: string }) => void onMessage(message));

async function onMessage(message: { type: string }) {
  try {
    if (message.type === 'go') await go();
    if (message.type === 'cpu') {
      const { user, system } = process.cpuUsage();
      send({ type: 'cpu', micros: user + system });
    }
    if (message.type === 'stop') {
      await worker?.stop();
      process.exit(0);
    }
  } catch (error) {
    console.error(`[bench ${systemName} ${mode}]`, error);
    process.exit(1);
  }
}

let worker: Awaited<ReturnType<typeof system.startWorker>> | undefined;
/** The drain modes report handled counts; the others time each job's pickup. */
const draining = mode === 'drain' || mode === 'drain-limited' || mode === 'drain-rated' || mode === 'drain-grouped';

async function go() {
  if (mode === 'hold') {
    let startedCount = 0;
    worker = await system.hold!.start(url, JSON.parse(extra!) as HoldOptions, {
      onStart: () => void startedCount++,
      onHandled: () => {},
    });
    let sent = -1;
    setInterval(() => {
      if (startedCount !== sent) send({ type: 'started', total: (sent = startedCount) });
    }, 50).unref();
    return;
  }
  worker = await system.startWorker(url, mode, {
    onStart: (seq) => {
      if (!draining) started.set(seq, performance.now());
    },
    onHandled: (n) => {
      handled += n;
    },
  });
  if (draining) {
    setInterval(() => {
      if (handled !== reported) send({ type: 'handled', total: (reported = handled) });
    }, 10).unref();
    return;
  }
  const {
    durationMs,
    intervalMs,
    settleMs,
    burst = 1,
  } = JSON.parse(extra!) as {
    durationMs: number;
    intervalMs: number;
    settleMs: number;
    burst?: number;
  };
  await new Promise((r) => setTimeout(r, 1000)); // the worker is idle and listening by now
  const enqueuer = await system.enqueuer(url, 1, mode !== 'poll');
  const committed = new Map<number, number>();
  const ticks = Math.floor(durationMs / intervalMs);
  const count = ticks * burst;
  const t0 = performance.now();
  for (let tick = 0; tick < ticks; tick++) {
    const wait = t0 + tick * intervalMs - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const seqs = Array.from({ length: burst }, (_, i) => tick * burst + i);
    if (burst === 1) await enqueuer.send(seqs[0]!);
    else await enqueuer.sendMany(seqs);
    const at = performance.now();
    for (const seq of seqs) committed.set(seq, at);
  }
  const deadline = performance.now() + settleMs;
  while (started.size < count && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await enqueuer.close();
  // A handler can start a hair before the client hears the commit; such a delay counts as 0.
  // A job that never started counts as waiting the whole settle time (a lower bound), so
  // missing jobs cannot flatter the percentiles.
  const delays = [...committed].map(([seq, at]) => (started.has(seq) ? Math.max(0, started.get(seq)! - at) : settleMs));
  send({ type: 'pickup', delays, missing: count - [...committed.keys()].filter((seq) => started.has(seq)).length });
}

send({ type: 'loaded' });
