/**
 * What a failed attempt records besides its one-line error (docs/contract.md, "What a failed
 * attempt records"): the thrown error's stack and its `cause` chain, bounded, with the job's
 * secret payload values scrubbed out. Written to `job_attempts.error_detail` on failure only.
 *
 * Invariants:
 * - bounded whatever is thrown: at most MAX_STACK_FRAMES frames per stack, MAX_CAUSE_DEPTH
 *   causes, MAX_DETAIL_CHARS characters of text in all; a cause chain that loops ends at the
 *   first error seen twice (`chainEnd: 'cycle'`), one that goes deeper ends at the limit
 *   (`chainEnd: 'depth'`); reading a throwing getter (`stack`, `cause`, `message`) is caught;
 * - no secret of the payload survives in the text: every string (or number) of at least
 *   MIN_SCRUBBED_LENGTH characters at a redacted path (the kind's paths, and the well-known
 *   secret keys at any depth, both as redaction-rules.ts matches them; every value when the
 *   kind's paths are unknown) is replaced by MASK, also in its JSON-escaped and URL-encoded
 *   forms, and so is the value of a secret-looking key the text spells out itself
 *   (`"accessToken":"…"`). Text is scrubbed before it is cut, so a secret across a cut is gone too.
 *
 * The worker scrubs with its handler's `redact` when it writes; the dashboard scrubs again with
 * the registry's paths when it reads (paths added later, rows written by other clients).
 */
import { z } from 'zod';
import { LEASEHOLD_CODES, LeaseholdError } from '../errors.ts';
import { MAX_PAYLOAD_DEPTH } from '../schema.ts';
import { LeaseholdInputError } from './errors.ts';
import { DEFAULT_REDACTED_KEYS, MASK, redactionMatcher, scrubSecretPatterns } from './redaction-rules.ts';
import { storableText } from './validate.ts';

// The matcher lives in redaction-rules.ts; the list and the mark are re-exported where they always were.
export { DEFAULT_REDACTED_KEYS, MASK };

/** Stack frames kept per error (the `at …` lines). */
export const MAX_STACK_FRAMES = 50;
/** Characters kept per stack. */
export const MAX_STACK_CHARS = 6000;
/** Characters kept of one frame line. */
export const MAX_FRAME_CHARS = 500;
/** Causes kept, the direct cause first. */
export const MAX_CAUSE_DEPTH = 5;
/** Characters kept of one cause's message, and of a name or code. */
export const MAX_CAUSE_MESSAGE_CHARS = 1000;
export const MAX_NAME_CHARS = 200;
/** Characters of text (stacks, names, messages, codes) in one attempt's detail, in all. */
export const MAX_DETAIL_CHARS = 16_000;
/** Shorter payload values are not scrubbed: they would erase ordinary text, and hide little. */
export const MIN_SCRUBBED_LENGTH = 3;

export interface ErrorCause {
  name: string;
  message: string;
  /** `error.code` when it is a string or number (ECONNRESET, 23505). */
  code?: string;
  stack: string | null;
}

export interface ErrorDetail {
  /** The thrown error's `code`, as for a cause. */
  code?: string;
  /** The thrown error's stack frames, one per line (its message is the attempt's `error`). */
  stack: string | null;
  /** The `cause` chain, the direct cause first. */
  causes: ErrorCause[];
  /** Why the chain stops before its end: deeper than MAX_CAUSE_DEPTH, a loop, or out of room. */
  chainEnd?: 'depth' | 'cycle' | 'size';
  /** Something was cut to fit the bounds. */
  truncated: boolean;
}

const text = (max: number) => z.string().max(max);
const causeSchema = z.strictObject({
  name: text(MAX_NAME_CHARS),
  message: text(MAX_CAUSE_MESSAGE_CHARS),
  code: text(MAX_NAME_CHARS).optional(),
  stack: text(MAX_STACK_CHARS).nullable(),
});

/** An ErrorDetail as failIfLeaseHeld accepts it: within the bounds above. */
export const errorDetailSchema = z
  .strictObject({
    code: text(MAX_NAME_CHARS).optional(),
    stack: text(MAX_STACK_CHARS).nullable(),
    causes: z.array(causeSchema).max(MAX_CAUSE_DEPTH),
    chainEnd: z.enum(['depth', 'cycle', 'size']).optional(),
    truncated: z.boolean(),
  })
  .refine((d) => detailChars(d) <= MAX_DETAIL_CHARS, `at most ${MAX_DETAIL_CHARS} characters of text in all`);

function detailChars(d: ErrorDetail): number {
  let n = (d.code?.length ?? 0) + (d.stack?.length ?? 0);
  for (const c of d.causes) n += c.name.length + c.message.length + (c.code?.length ?? 0) + (c.stack?.length ?? 0);
  return n;
}

/**
 * The values to scrub from error text: the strings and numbers at the redacted `paths` of
 * `payload` (`a.b`, `items[].x`, `items[2].x`, as lib/redaction.ts masks them) and under the
 * well-known secret keys; every value when `paths` is null (the kind's paths are unknown).
 * Longest first, each with its JSON-escaped and URL-encoded forms.
 */
export function redactedValues(payload: unknown, paths: readonly string[] | null): string[] {
  const masked = redactionMatcher(paths ?? []);
  const found = new Set<string>();
  // Every string and number under `root`, without recursion: any depth is walked, none throws.
  const leaves = (root: unknown): void => {
    const stack: unknown[] = [root];
    while (stack.length > 0) {
      const value = stack.pop();
      if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) {
        const s = String(value);
        if (s.length >= MIN_SCRUBBED_LENGTH) found.add(s);
      } else if (Array.isArray(value)) for (const v of value) stack.push(v);
      else if (value && typeof value === 'object') for (const v of Object.values(value)) stack.push(v);
    }
  };
  // At most MAX_PAYLOAD_DEPTH + 1 frames deep: below that level every value is scrubbed (a row
  // that deep was written past the enqueues' check; scrubbing too much hides no secret).
  const walk = (value: unknown, path: string, level: number): void => {
    if (level > MAX_PAYLOAD_DEPTH) leaves(value);
    else if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${path}[${i}]`, level + 1));
    else if (value && typeof value === 'object') {
      for (const [key, v] of Object.entries(value)) {
        const here = path ? `${path}.${key}` : key;
        if (masked(key, here)) leaves(v);
        else walk(v, here, level + 1);
      }
    }
  };
  if (paths === null) leaves(payload);
  else walk(payload, '', 0);
  const forms = new Set<string>();
  for (const s of found) {
    forms.add(s);
    const json = JSON.stringify(s).slice(1, -1);
    if (json.length >= MIN_SCRUBBED_LENGTH) forms.add(json);
    try {
      forms.add(encodeURIComponent(s));
    } catch {
      // a lone surrogate cannot be URL-encoded: nothing to add
    }
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/**
 * `text` with every occurrence of each value (longest first) replaced by MASK, then the values
 * of secret-looking keys the text itself spells out (`"accessToken":"…"`, `api_key=…`,
 * `Bearer …`: redaction-rules.ts scrubSecretPatterns).
 */
export function scrubText(text: string, values: readonly string[]): string {
  let out = text;
  for (const v of values) if (out.includes(v)) out = out.split(v).join(MASK);
  return scrubSecretPatterns(out);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text jsonb and text columns accept: no U+0000, no lone surrogate (a cut can leave one). */
function storable(s: string): string {
  return storableText(s).replace(LONE_SURROGATE, '\uFFFD');
}

/**
 * Scrubs `raw`, then cuts it to `max` characters (`…` marks a cut). Only `max` plus the longest
 * secret is scrubbed, so a megabyte of text costs little, and a secret across the cut is whole
 * in what is scrubbed.
 */
export function boundedScrub(raw: string, max: number, values: readonly string[]): { text: string; cut: boolean } {
  // One character more than fits, so a cut is still seen after the slice.
  const keep = max + (values[0]?.length ?? 0) + 1;
  const scrubbed = scrubText(raw.length > keep ? raw.slice(0, keep) : raw, values);
  if (scrubbed.length <= max) return { text: storable(scrubbed), cut: false };
  return { text: storable(`${scrubbed.slice(0, Math.max(0, max - 1))}…`), cut: true };
}

/** Reads a property without letting a throwing getter (or a Proxy) escape. */
function read(value: object, key: string): unknown {
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function describeThrown(value: unknown): { name: string; message: string } {
  if (value instanceof Error || (value !== null && typeof value === 'object')) {
    const name = read(value, 'name');
    const message = read(value, 'message');
    if (typeof message === 'string') return { name: typeof name === 'string' && name ? name : 'Error', message };
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      json = undefined;
    }
    return { name: 'thrown', message: json ?? Object.prototype.toString.call(value) };
  }
  return { name: 'thrown', message: String(value) };
}

/** The frame lines of a V8 stack (from the first `at …`), or the stack itself when it has none. */
function framesOf(stack: string): { lines: string[]; more: boolean } | string {
  const at = stack.search(/\n[ \t]+at /);
  if (at < 0) return stack;
  const lines: string[] = [];
  let from = at + 1;
  while (from < stack.length && lines.length < MAX_STACK_FRAMES) {
    const end = stack.indexOf('\n', from);
    const line = stack.slice(from, end < 0 ? stack.length : end);
    if (line.trim()) lines.push(line);
    if (end < 0) return { lines, more: false };
    from = end + 1;
  }
  return { lines, more: from < stack.length };
}

class Budget {
  left = MAX_DETAIL_CHARS;
  truncated = false;
  constructor(private readonly values: readonly string[]) {}
  /** `raw`, scrubbed and cut to `max` and to what is left of the budget. */
  take(raw: string, max: number): string {
    const room = Math.min(max, this.left);
    if (room <= 0) {
      if (raw) this.truncated = true;
      return '';
    }
    const { text, cut } = boundedScrub(raw, room, this.values);
    if (cut) this.truncated = true;
    this.left -= text.length;
    return text;
  }
}

function stackOf(error: object, budget: Budget): string | null {
  const stack = read(error, 'stack');
  if (typeof stack !== 'string' || stack === '') return null;
  const frames = framesOf(stack);
  if (typeof frames === 'string') return budget.take(frames, MAX_STACK_CHARS);
  if (frames.more) budget.truncated = true;
  const joined = frames.lines
    .map((l) => (l.length > MAX_FRAME_CHARS ? `${l.slice(0, MAX_FRAME_CHARS - 1)}…` : l))
    .join('\n');
  return joined ? budget.take(joined, MAX_STACK_CHARS) : null;
}

function codeOf(error: object, budget: Budget): { code?: string } {
  // A Leasehold class's own code (db/errors.ts) names the class, which the recorded name says
  // already: the detail keeps every other code (ECONNRESET, 23505, a handler's own subclass's),
  // and the queue's input refusal's, which it recorded before every class had one.
  const code = read(error, 'code');
  if (typeof code !== 'string' && typeof code !== 'number') return {};
  if (
    error instanceof LeaseholdError &&
    LEASEHOLD_CODES.has(String(code)) &&
    !(error instanceof LeaseholdInputError && code === 'invalid_input')
  )
    return {};
  return { code: budget.take(String(code), MAX_NAME_CHARS) };
}

/**
 * The stack and cause chain of `error`, bounded and scrubbed of `secrets` (redactedValues);
 * null when there is neither (a thrown string, an error without stack or cause).
 */
export function errorDetail(error: unknown, secrets: readonly string[] = []): ErrorDetail | null {
  if (error === null || typeof error !== 'object') return null;
  const budget = new Budget(secrets);
  const detail: ErrorDetail = { ...codeOf(error, budget), stack: stackOf(error, budget), causes: [], truncated: false };
  const seen = new Set<unknown>([error]);
  let current: unknown = error;
  for (;;) {
    if (typeof current !== 'object' || current === null) break;
    if (!('cause' in current)) break;
    const cause = read(current, 'cause');
    if (cause === undefined) break;
    if (seen.has(cause)) {
      detail.chainEnd = 'cycle';
      break;
    }
    if (detail.causes.length === MAX_CAUSE_DEPTH) {
      detail.chainEnd = 'depth';
      break;
    }
    if (budget.left <= 0) {
      detail.chainEnd = 'size';
      break;
    }
    seen.add(cause);
    const { name, message } = describeThrown(cause);
    const entry: ErrorCause = {
      name: budget.take(name, MAX_NAME_CHARS),
      message: budget.take(message, MAX_CAUSE_MESSAGE_CHARS),
      stack: null,
    };
    if (cause !== null && typeof cause === 'object') {
      Object.assign(entry, codeOf(cause, budget));
      entry.stack = stackOf(cause, budget);
    }
    detail.causes.push(entry);
    current = cause;
  }
  detail.truncated = budget.truncated;
  if (detail.stack === null && detail.causes.length === 0 && detail.code === undefined) return null;
  return detail;
}

/** `detail` with every text scrubbed of `values` (the dashboard's pass, with the registry's paths). */
export function scrubDetail(detail: ErrorDetail, values: readonly string[]): ErrorDetail {
  const s = (t: string) => scrubText(t, values);
  return {
    ...detail,
    ...(detail.code !== undefined ? { code: s(detail.code) } : {}),
    stack: detail.stack === null ? null : s(detail.stack),
    causes: detail.causes.map((c) => ({
      ...c,
      name: s(c.name),
      message: s(c.message),
      ...(c.code !== undefined ? { code: s(c.code) } : {}),
      stack: c.stack === null ? null : s(c.stack),
    })),
  };
}
