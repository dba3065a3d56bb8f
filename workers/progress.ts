/**
 * A handler's progress reports (`ctx.progress(0.4, 'copied 400 of 1,000 rows')`), written to
 * `job_progress` at most once a second per attempt: the first report goes at once, later ones
 * within the second are coalesced into one write of the latest when it ends, and the attempt's
 * last report is written when its handler ends (docs/jobs.md, "Results, progress and waiting").
 * A write is lease-guarded, never awaited by the handler, and a failed one is logged, not thrown.
 */
import type { Logger } from 'pino';
import type { ClaimedJob, Executor } from '../db/queue/index.ts';
import { PROGRESS_EVERY_MS, progressInput, writeProgress } from '../db/queue/results.ts';

export class ProgressReporter {
  private latest: { fraction: number; message: string | null } | null = null;
  private lastWrite = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  /** Writes sent (tests and the metrics read it). */
  writes = 0;

  constructor(
    private readonly db: Executor,
    private readonly job: ClaimedJob,
    private readonly log: () => Logger,
  ) {}

  /** A report: checked at the call (a fraction outside 0..1 throws LeaseholdInputError), written soon. */
  report(fraction: unknown, message?: unknown): void {
    this.latest = progressInput(fraction, message);
    if (this.timer) return; // a write is due: it takes the latest
    const wait = this.lastWrite + PROGRESS_EVERY_MS - performance.now();
    if (wait <= 0) this.write();
    else this.timer = setTimeout(() => this.write(), wait);
  }

  /** The handler ended: the report still waiting is written now; resolves once writes are through. */
  async finish(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.write();
    }
    await this.writing;
  }

  private write(): void {
    this.timer = null;
    const report = this.latest;
    if (!report) return;
    this.latest = null;
    this.lastWrite = performance.now();
    this.writes += 1;
    this.writing = this.writing
      .then(() => writeProgress(this.db, this.job, report.fraction, report.message))
      .then(
        () => {},
        (error: unknown) => this.log().warn({ err: error }, 'could not record a progress report'),
      );
  }
}
