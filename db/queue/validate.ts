/**
 * Input checks for the queue API. Everything is checked before the first statement, so a bad
 * call writes nothing and says which field is wrong.
 */
import { z } from 'zod';
import { MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH } from '../schema.ts';
import { LeaseholdInputError } from './errors.ts';

/** Queue and kind names: letters, digits and `_ . : -`, up to 128 characters. */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

export const nameSchema = z
  .string()
  .regex(NAME_PATTERN, 'expected 1-128 of A-Z a-z 0-9 _ . : - (starting with a letter or digit)');
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const uuidSchema = z.string().regex(UUID_PATTERN, 'expected a UUID');
/** Text for a `text` column: PostgreSQL cannot store U+0000 in text. */
export const textSchema = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => !s.includes('\u0000'), 'contains U+0000, which PostgreSQL text cannot store');
export const actorSchema = textSchema(256).pipe(z.string().min(1));
/** A fair group's key (a tenant, an account): 1 to 256 characters (docs/flow-control.md, "Fair groups"). */
export const groupKeySchema = textSchema(256).pipe(z.string().min(1));

/** Makes arbitrary text (an error message, a response body) storable: U+0000 becomes U+FFFD. */
export function storableText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

export function problemsOf(error: z.ZodError, prefix = ''): string[] {
  return error.issues.map((issue) => {
    const path = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
    return `${path || 'input'}: ${issue.message}`;
  });
}

/** Parses `input` with `schema`, or throws a LeaseholdInputError naming every problem. */
export function parseInput<S extends z.ZodType>(operation: string, schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new LeaseholdInputError(operation, problemsOf(result.error));
  return result.data;
}

/**
 * Encodes a payload as JSON text for a `jsonb` column, refusing what JSON.stringify would
 * silently change (NaN → null, a Date → a string, an undefined field dropped) and what
 * PostgreSQL would refuse later with a less helpful message (U+0000, lone surrogates).
 * Returns the text or a list of problems.
 */
export function encodePayload(payload: unknown): { text: string } | { problems: string[] } {
  if (payload === undefined) return { text: '{}' };
  // The walk that names problems builds a path per value; most payloads have none, and a walk
  // that only answers yes or no is several times cheaper (it matters for 100,000-job calls).
  if (!isPlainJson(payload, 0)) return { problems: payloadProblems(payload) };
  const text = JSON.stringify(payload);
  // UTF-8 takes at most 3 bytes per UTF-16 unit: short text needs no count.
  const bytes = text.length * 3 <= MAX_PAYLOAD_BYTES ? text.length : Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_PAYLOAD_BYTES) {
    return {
      problems: [
        `payload: ${bytes} bytes of JSON, more than the ${MAX_PAYLOAD_BYTES} allowed (store large data elsewhere and enqueue a reference)`,
      ],
    };
  }
  return { text };
}

/** What is wrong with a payload that isPlainJson refused, each with its path (at most five). */
function payloadProblems(payload: unknown): string[] {
  const problems: string[] = [];
  const seen = new Set<object>();
  const visit = (value: unknown, path: string, depth: number): void => {
    if (problems.length >= 5) return;
    if (depth > MAX_PAYLOAD_DEPTH) {
      problems.push(`${path}: nested deeper than ${MAX_PAYLOAD_DEPTH} levels`);
      return;
    }
    if (value === null || typeof value === 'boolean') return;
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) problems.push(`${path}: ${value} is not a JSON number`);
      return;
    }
    if (typeof value === 'string') {
      checkText(value, path);
      return;
    }
    if (typeof value !== 'object') {
      problems.push(`${path}: a ${typeof value} is not JSON`);
      return;
    }
    if (seen.has(value)) {
      problems.push(`${path}: circular reference`);
      return;
    }
    seen.add(value);
    if (Array.isArray(value)) {
      value.forEach((item, i) => visit(item, `${path}[${i}]`, depth + 1));
    } else {
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        problems.push(`${path}: a ${value.constructor?.name ?? 'non-plain object'} is not JSON (convert it first)`);
      } else {
        for (const [key, item] of Object.entries(value)) {
          checkText(key, `${path}.${key}`);
          if (item === undefined) problems.push(`${path}.${key}: undefined is not JSON (omit the field or use null)`);
          else visit(item, `${path}.${key}`, depth + 1);
        }
      }
    }
    seen.delete(value);
  };
  const checkText = (text: string, path: string) => {
    if (text.includes('\u0000')) problems.push(`${path}: contains U+0000, which PostgreSQL jsonb cannot store`);
    else if (!isWellFormed(text)) problems.push(`${path}: contains a lone UTF-16 surrogate`);
  };
  visit(payload, 'payload', 0);
  return problems;
}

/**
 * True when `value` is JSON that encodePayload takes as it is: the same rules as its visitor
 * (finite numbers, storable well-formed strings and keys, plain objects and arrays, no
 * undefined fields, at most MAX_PAYLOAD_DEPTH levels, so a cycle also fails), without naming anything.
 */
function isPlainJson(value: unknown, depth: number): boolean {
  if (depth > MAX_PAYLOAD_DEPTH) return false;
  if (value === null || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value === 'string') return isStorable(value);
  if (typeof value !== 'object') return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isPlainJson(value[i], depth + 1)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key of Object.keys(value)) {
    // Reflect.get: a plain object's own key, read without asserting a record type on it.
    if (!isStorable(key) || !isPlainJson(Reflect.get(value, key), depth + 1)) return false;
  }
  return true;
}

function isStorable(text: string): boolean {
  return !text.includes('\u0000') && isWellFormed(text);
}

/** No lone surrogates. String.prototype.isWellFormed is ES2024 (Node 20 has it); tsconfig's lib is ES2023. */
function isWellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}
