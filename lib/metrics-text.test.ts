import { describe, expect, it } from 'vitest';
import { metricsText } from './metrics-text.ts';

const queue = {
  queue: 'mail',
  paused: true,
  ready: 1,
  scheduled: 2,
  retrying: 3,
  running: 4,
  leaseExpired: 5,
  dead: 6,
  cancelled: 7,
  doneLastHour: 8,
  oldestReadyAgeSeconds: 9.5,
  waitingForKind: 10,
};

describe('Prometheus text for /api/metrics', () => {
  it('renders every family in the order and spelling scrapers query', () => {
    expect(
      metricsText({
        queues: [queue],
        dead: [{ queue: 'mail', failureClass: 'permanent', count: 6 }],
        notifyQueueUsage: 0.25,
        limits: [
          { limit: 'resource:smtp', max: 5, running: 5, waiting: 12, startsLeft: 0, paused: true },
          { limit: 'kind:mail.send', max: null, running: 1, waiting: 0, startsLeft: null, paused: false },
        ],
        groups: [
          { queue: 'mail', group: 'acme', waiting: 40, running: 2, oldestWaitingSeconds: 12.5, max: 2, paused: false },
          { queue: 'mail', group: 'other', waiting: 1, running: 0, oldestWaitingSeconds: 0.5, max: null, paused: true },
          { queue: 'mail', group: null, waiting: 300, running: 9, oldestWaitingSeconds: 4, max: null, paused: false },
        ],
      }),
    ).toBe(
      [
        '# HELP leasehold_queue_jobs Jobs by queue and (sub-)state.',
        '# TYPE leasehold_queue_jobs gauge',
        'leasehold_queue_jobs{queue="mail",state="ready"} 1',
        'leasehold_queue_jobs{queue="mail",state="scheduled"} 2',
        'leasehold_queue_jobs{queue="mail",state="retrying"} 3',
        'leasehold_queue_jobs{queue="mail",state="running"} 4',
        'leasehold_queue_jobs{queue="mail",state="lease_expired"} 5',
        'leasehold_queue_jobs{queue="mail",state="dead"} 6',
        'leasehold_queue_jobs{queue="mail",state="cancelled"} 7',
        '# HELP leasehold_queue_done_last_hour Jobs completed in the last hour.',
        '# TYPE leasehold_queue_done_last_hour gauge',
        'leasehold_queue_done_last_hour{queue="mail"} 8',
        '# HELP leasehold_queue_oldest_ready_age_seconds Age of the oldest due ready job (queue lag).',
        '# TYPE leasehold_queue_oldest_ready_age_seconds gauge',
        'leasehold_queue_oldest_ready_age_seconds{queue="mail"} 9.5',
        '# HELP leasehold_queue_paused Whether the queue is paused.',
        '# TYPE leasehold_queue_paused gauge',
        'leasehold_queue_paused{queue="mail"} 1',
        '# HELP leasehold_queue_jobs_waiting_for_kind Ready jobs whose kind version no live worker runs.',
        '# TYPE leasehold_queue_jobs_waiting_for_kind gauge',
        'leasehold_queue_jobs_waiting_for_kind{queue="mail"} 10',
        '# HELP leasehold_dead_jobs Dead jobs by queue and failure class.',
        '# TYPE leasehold_dead_jobs gauge',
        'leasehold_dead_jobs{queue="mail",failure_class="permanent"} 6',
        '# HELP leasehold_notify_queue_usage Share of the server’s NOTIFY queue in use (0 to 1); at 0.5 or more enqueues send no wake-ups.',
        '# TYPE leasehold_notify_queue_usage gauge',
        'leasehold_notify_queue_usage 0.25',
        '# HELP leasehold_limit_max The maximum of attempts a limit lets hold a lease at once (absent: no maximum).',
        '# TYPE leasehold_limit_max gauge',
        'leasehold_limit_max{limit="resource:smtp"} 5',
        '# HELP leasehold_limit_running Attempts holding a lease under a limit.',
        '# TYPE leasehold_limit_running gauge',
        'leasehold_limit_running{limit="resource:smtp"} 5',
        'leasehold_limit_running{limit="kind:mail.send"} 1',
        '# HELP leasehold_limit_waiting Ready, due jobs that count toward a limit (counted up to 100,000).',
        '# TYPE leasehold_limit_waiting gauge',
        'leasehold_limit_waiting{limit="resource:smtp"} 12',
        'leasehold_limit_waiting{limit="kind:mail.send"} 0',
        "# HELP leasehold_limit_starts_left Starts a limit's rate leaves in its current window (absent: no rate).",
        '# TYPE leasehold_limit_starts_left gauge',
        'leasehold_limit_starts_left{limit="resource:smtp"} 0',
        '# HELP leasehold_limit_paused Whether a RateLimitedError paused the limit.',
        '# TYPE leasehold_limit_paused gauge',
        'leasehold_limit_paused{limit="resource:smtp"} 1',
        'leasehold_limit_paused{limit="kind:mail.send"} 0',
        '# HELP leasehold_group_waiting Ready, due jobs of a fair group.',
        '# TYPE leasehold_group_waiting gauge',
        'leasehold_group_waiting{queue="mail",group="acme"} 40',
        'leasehold_group_waiting{queue="mail",group="other"} 1',
        'leasehold_group_waiting{queue="mail",other="true"} 300',
        '# HELP leasehold_group_running Jobs of a fair group holding a lease.',
        '# TYPE leasehold_group_running gauge',
        'leasehold_group_running{queue="mail",group="acme"} 2',
        'leasehold_group_running{queue="mail",group="other"} 0',
        'leasehold_group_running{queue="mail",other="true"} 9',
        "# HELP leasehold_group_oldest_waiting_seconds Age of a fair group's oldest due ready job (the other series: the oldest of the rest).",
        '# TYPE leasehold_group_oldest_waiting_seconds gauge',
        'leasehold_group_oldest_waiting_seconds{queue="mail",group="acme"} 12.5',
        'leasehold_group_oldest_waiting_seconds{queue="mail",group="other"} 0.5',
        'leasehold_group_oldest_waiting_seconds{queue="mail",other="true"} 4',
        "# HELP leasehold_group_max The maximum of a fair group's jobs running at once (its own, else its queue's default; absent: none).",
        '# TYPE leasehold_group_max gauge',
        'leasehold_group_max{queue="mail",group="acme"} 2',
        '# HELP leasehold_group_paused Whether an operator paused the fair group.',
        '# TYPE leasehold_group_paused gauge',
        'leasehold_group_paused{queue="mail",group="acme"} 0',
        'leasehold_group_paused{queue="mail",group="other"} 1',
        '',
      ].join('\n'),
    );
  });

  it('escapes label values and reports no lag as 0', () => {
    const text = metricsText({
      queues: [{ ...queue, queue: 'a"b\\c\nd', paused: false, oldestReadyAgeSeconds: null }],
      dead: [],
      notifyQueueUsage: 0,
      limits: [],
      groups: [],
    });
    expect(text).toContain('leasehold_queue_paused{queue="a\\"b\\\\c\\nd"} 0\n');
    expect(text).toContain('leasehold_queue_oldest_ready_age_seconds{queue="a\\"b\\\\c\\nd"} 0\n');
    expect(text).toContain('# TYPE leasehold_dead_jobs gauge\n# HELP leasehold_notify_queue_usage');
  });
});
