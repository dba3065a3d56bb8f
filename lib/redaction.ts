/**
 * Payload masking for viewers and operators (admins may reveal a payload; each reveal is
 * audited). Which paths a kind masks comes from the kinds registry (`leasehold.kinds`, which
 * workers fill at start from their handlers' `redact`), never from handler code: the web
 * process does not load handlers. A kind version no worker has registered has no known paths,
 * so its payload is hidden whole rather than guessed at.
 */
import { DEFAULT_REDACTED_KEYS, MASK, redactionMatcher, TOO_DEEP } from '../db/queue/redaction-rules.ts';
import { MAX_PAYLOAD_DEPTH } from '../db/schema.ts';

// One list, one matcher and one mark for the payload and for error text (db/queue/error-detail.ts
// scrubs the latter, in the worker and here).
export { DEFAULT_REDACTED_KEYS, MASK, TOO_DEEP };

export interface Redaction {
  payload: unknown;
  /** The paths masked, as they occur in this payload (`items[0].card`). */
  redacted: string[];
  /** The payload is MASK as a whole: its kind version is not in the registry. */
  hidden: boolean;
}

/**
 * Masks `payload`: the registered `paths` (null: not registered, everything is hidden), matched
 * case-insensitively, where `recipients[].email` (or `recipients.email`) matches that key in
 * every element, and the well-known secret keys at any depth, matched by words
 * (db/queue/redaction-rules.ts: `accessToken`, `card_number`, `API-KEY`). A value nested
 * deeper than MAX_PAYLOAD_DEPTH is shown as TOO_DEEP: however deep the row, this never throws.
 */
export function redact(payload: unknown, paths: readonly string[] | null): Redaction {
  if (paths === null) return { payload: MASK, redacted: [], hidden: true };
  const masked = redactionMatcher(paths);
  const redacted: string[] = [];
  // At most MAX_PAYLOAD_DEPTH + 1 frames deep: a value below that level is shown as TOO_DEEP.
  const walk = (value: unknown, path: string, level: number): unknown => {
    if (level > MAX_PAYLOAD_DEPTH) return TOO_DEEP;
    if (Array.isArray(value)) return value.map((v, i) => walk(v, `${path}[${i}]`, level + 1));
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value).map(([key, v]) => {
          const here = path ? `${path}.${key}` : key;
          if (masked(key, here)) {
            redacted.push(here);
            return [key, MASK];
          }
          return [key, walk(v, here, level + 1)];
        }),
      );
    }
    return value;
  };
  return { payload: walk(payload, '', 0), redacted, hidden: false };
}
