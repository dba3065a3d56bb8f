import 'server-only';
/**
 * What the dashboard shows of text that can quote a payload: error messages and stacks,
 * idempotency keys, trace ids, tags, failure-group examples, audit reasons, and a job's result
 * and progress message. Each is scrubbed of
 * the values its job's payload masks (the kind version's rules: redactionRulesFor; every value
 * when the version is not registered) and of the values of secret-looking keys the text spells
 * out itself (db/queue/redaction-rules.ts). For every role, admins too: the one way to see a
 * masked value is the audited payload reveal.
 */
import { redactedValues, scrubText } from '../../db/queue/error-detail.ts';
import type { Executor } from '../../db/queue/executor.ts';
import type { Job } from '../../db/queue/index.ts';
import { jobsByIds } from '../../db/queries/jobs.ts';
import type { JobDTO } from '../dto.ts';
import { redactionRulesFor } from './kinds.ts';

export type Scrub = (text: string) => string;

/** Scrubs only the secret-looking pairs: text that belongs to no job whose payload is known. */
export const scrubPatterns: Scrub = (text) => scrubText(text, []);

/** A job's scrub, for text of that job. */
export function scrubFor(payload: unknown, paths: string[] | null): Scrub {
  const values = redactedValues(payload, paths);
  return (text) => scrubText(text, values);
}

/** The redaction rules of each kind version, looked up once per read however many jobs share it. */
export function rulesLookup(executor: Executor): (kind: string, version: number) => Promise<string[] | null> {
  const cache = new Map<string, Promise<string[] | null>>();
  return (kind, version) => {
    const key = `${version}:${kind}`;
    let rules = cache.get(key);
    if (!rules) {
      rules = redactionRulesFor(executor, kind, version);
      cache.set(key, rules);
    }
    return rules;
  };
}

/** Each job's scrub, by job id. */
export async function scrubsFor(executor: Executor, jobs: readonly Job[]): Promise<Map<string, Scrub>> {
  const rules = rulesLookup(executor);
  const entries = await Promise.all(
    jobs.map(async (j) => [j.id, scrubFor(j.payload, await rules(j.kind, j.kindVersion))] as const),
  );
  return new Map(entries);
}

/** Scrubs by the jobs with these ids (loaded here); a job that is gone gets the patterns only. */
export async function scrubsForIds(executor: Executor, ids: readonly string[]): Promise<Map<string, Scrub>> {
  return scrubsFor(executor, await jobsByIds(executor, [...new Set(ids)]));
}

const orNull = (scrub: Scrub, text: string | null) => (text === null ? null : scrub(text));

/** The job's fields that can quote its payload, scrubbed. */
export function scrubJobDto(dto: JobDTO, scrub: Scrub): JobDTO {
  return {
    ...dto,
    lastError: orNull(scrub, dto.lastError),
    idempotencyKey: orNull(scrub, dto.idempotencyKey),
    traceId: orNull(scrub, dto.traceId),
    // A producer's text, as the key is: `customer:alice@example.com` can quote a masked value.
    tags: dto.tags.map(scrub),
  };
}

/**
 * A JSON value with every string in it, keys and values, scrubbed: a handler's result can quote
 * its payload anywhere. Called on a value lib/redaction.ts has masked, which is at most
 * MAX_PAYLOAD_DEPTH + 1 levels deep (TOO_DEEP below that), so the recursion is bounded.
 */
export function scrubValue(value: unknown, scrub: Scrub): unknown {
  if (typeof value === 'string') return scrub(value);
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, scrub));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, v]) => [scrub(key), scrubValue(v, scrub)]));
  }
  return value;
}

/** Text about several jobs (an audit reason): scrubbed by each of their payloads in turn. */
export function scrubByAll(text: string, scrubs: readonly Scrub[]): string {
  let out = scrubPatterns(text);
  for (const s of scrubs) out = s(out);
  return out;
}
