-- Failed attempts only (hand-written: INCLUDE): the dashboard's failure-class panels read the
-- failures of the last day without walking every completed attempt.
CREATE INDEX IF NOT EXISTS "job_attempts_failed_idx" ON "job_attempts" USING btree ("ended_at")
  INCLUDE ("failure_class", "queue")
  WHERE outcome <> 'completed';
