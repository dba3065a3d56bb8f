/**
 * Which payload keys and paths are secret: the one matcher the worker (scrubbing the error text
 * it writes) and the dashboard (masking payloads, scrubbing what it reads) share, so the two
 * never disagree on what counts as secret.
 *
 * Invariants:
 * - a key is secret when one of DEFAULT_REDACTED_KEYS matches it by words (`isSecretKey`): the
 *   key and the listed name are split into words at `_ - . space`, at lower-to-upper case
 *   changes and at letter-digit changes, and lowercased; the key matches when the listed
 *   name's words occur in it one after another (`cardNumber`, `credit_card`, `x-api-key`,
 *   `ACCESS_TOKEN`). A listed name of SUBSTRING_MIN_CHARS letters or more also matches inside
 *   one word, so the one-word spellings are caught too (`accesstoken`, `userpassword`,
 *   `APIKEY`); shorter ones (`card`, `ssn`, `pin`, `cvv`) only as whole words, so `discard`
 *   and `className` stay readable;
 * - a configured path (a kind's `redact`, an admin's, LEASEHOLD_REDACT_PATHS) matches a place
 *   in the payload case-insensitively, where `[]` in the path stands for any element
 *   (`recipients[].email`), `[n]` for element n, and a path without brackets also matches
 *   through arrays (`recipients.email` masks the email of every recipient).
 */

/** Payload keys masked at any depth, whatever the kind declares (matched by words: see above). */
export const DEFAULT_REDACTED_KEYS = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'token',
  'apiKey',
  'privateKey',
  'authorization',
  'credential',
  'cookie',
  'card',
  'creditCard',
  'cardNumber',
  'cvv',
  'cvc',
  'pin',
  'iban',
  'ssn',
];

/** A listed name this long (joined, in letters) also matches inside one word of a key. */
export const SUBSTRING_MIN_CHARS = 5;

/** `accessToken` → access, token; `X-API-Key` → x, api, key; `card2fa` → card, 2, fa. */
export function keyWords(key: string): string[] {
  return key
    .replace(/(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])/g, ' ')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

interface Term {
  words: string[];
  joined: string;
}

const TERMS: Term[] = DEFAULT_REDACTED_KEYS.map((name) => {
  const words = keyWords(name);
  return { words, joined: words.join('') };
});

function hasRun(words: readonly string[], run: readonly string[]): boolean {
  for (let i = 0; i + run.length <= words.length; i++) {
    if (run.every((w, j) => words[i + j] === w)) return true;
  }
  return false;
}

const secretKeyCache = new Map<string, boolean>();

/** Whether a payload key (or a key quoted in error text) names a secret: see the invariants. */
export function isSecretKey(key: string): boolean {
  const cached = secretKeyCache.get(key);
  if (cached !== undefined) return cached;
  const words = keyWords(key);
  const secret = TERMS.some(
    (t) =>
      hasRun(words, t.words) || (t.joined.length >= SUBSTRING_MIN_CHARS && words.some((w) => w.includes(t.joined))),
  );
  // Payloads repeat their keys; the cache stays small because keys are few (bounded anyway).
  if (secretKeyCache.size < 10_000) secretKeyCache.set(key, secret);
  return secret;
}

/** A path's comparable forms: lowercased, with indices kept, as `[]`, and dropped. */
function forms(path: string): string[] {
  const lower = path.toLowerCase();
  return [lower, lower.replace(/\[\d+\]/g, '[]'), lower.replace(/\[\d*\]/g, '')];
}

/**
 * A test for the concrete payload paths (`items[0].card`) that `paths` mask: case-insensitive,
 * `[]` for any element, a bracket-free path through arrays too.
 */
export function pathMatcher(paths: readonly string[]): (concretePath: string) => boolean {
  const rules = new Set<string>();
  for (const p of paths) {
    const lower = p.toLowerCase();
    rules.add(lower);
    // A rule without brackets also reaches into arrays: compared against the index-free form.
    if (!lower.includes('[')) rules.add(`~${lower}`);
  }
  if (rules.size === 0) return () => false;
  return (concrete) => {
    const [exact, any, bare] = forms(concrete);
    return rules.has(exact!) || rules.has(any!) || rules.has(`~${bare!}`);
  };
}

/** What a payload key at `path` is: masked by the configured paths, by the secret keys, or neither. */
export function redactionMatcher(paths: readonly string[]): (key: string, path: string) => boolean {
  const byPath = pathMatcher(paths);
  return (key, path) => byPath(path) || isSecretKey(key);
}

/** What replaces a masked value, in a payload and in error text. */
export const MASK = '••••••';

/**
 * What the dashboard shows in place of a value nested deeper than MAX_PAYLOAD_DEPTH (db/schema.ts):
 * a row written past the enqueues' check (by the migrator, or before the check) is shown to that
 * depth, and every walk over a payload stops there or walks without recursion, so no depth throws.
 */
export const TOO_DEEP = '[nested too deep]';

const KEY = String.raw`[A-Za-z0-9_$.-]{1,100}`;
/** `"key": "value"` or `"key": 123` (JSON, JS), and `'key': 'value'`. */
const QUOTED_PAIR = new RegExp(
  String.raw`(["'])(${KEY})\1(\s*:\s*)("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[-\w.+]+)`,
  'g',
);
/** The same inside a JSON string, where the quotes are escaped: `{\"token\":\"abc\"}`. */
const ESCAPED_PAIR = new RegExp(String.raw`\\"(${KEY})\\"(\s*:\s*)(\\"(?:(?!\\").)*\\"|[-\w.+]+)`, 'g');
/** `key=value` as in a query string, a form body or a log line. */
const ASSIGNMENT = new RegExp(String.raw`(?<![A-Za-z0-9_$.-])(${KEY})=("[^"]*"|[^\s&#;,"'<>]+)`, 'g');
/** An HTTP credential: `Bearer eyJ…`, `Basic dXNlcjpw…`. */
const CREDENTIAL = /\b(Bearer|Basic)(\s+)[A-Za-z0-9._~+/=-]{6,}/gi;

function maskQuoted(value: string): string {
  if (value.startsWith('\\"')) return `\\"${MASK}\\"`;
  const q = value[0];
  return q === '"' || q === "'" ? `${q}${MASK}${q}` : MASK;
}

/**
 * `text` with the values of secret-looking keys masked wherever the text spells a key and its
 * value (JSON, `key=value`, `Bearer …`): what a handler echoes of a request or a response that
 * is not the payload. The key is judged by isSecretKey; prose (`invalid token: expired`) is left
 * alone, since only a quoted key, an `=` or an HTTP credential scheme is taken as a pair.
 */
export function scrubSecretPatterns(text: string): string {
  if (!/[:=]|bearer|basic/i.test(text)) return text;
  return text
    .replace(QUOTED_PAIR, (all, q: string, key: string, sep: string, value: string) =>
      isSecretKey(key) ? `${q}${key}${q}${sep}${maskQuoted(value)}` : all,
    )
    .replace(ESCAPED_PAIR, (all, key: string, sep: string, value: string) =>
      isSecretKey(key) ? `\\"${key}\\"${sep}${maskQuoted(value)}` : all,
    )
    .replace(ASSIGNMENT, (all, key: string, value: string) => (isSecretKey(key) ? `${key}=${maskQuoted(value)}` : all))
    .replace(CREDENTIAL, (_all, scheme: string, space: string) => `${scheme}${space}${MASK}`);
}
