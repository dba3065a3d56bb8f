/**
 * Payload fields that viewers and operators see masked, per kind (dot paths). Admins may
 * reveal a payload; each reveal is audited.
 */
export const REDACTED_PATHS: Record<string, readonly string[]> = {
  'receipt.send': ['email'],
};
export const DEFAULT_REDACTED_KEYS = ['password', 'token', 'secret', 'apiKey', 'authorization', 'card', 'ssn'];

export const MASK = '••••••';

export function redact(kind: string, payload: unknown): { payload: unknown; redacted: string[] } {
  const paths = new Set(REDACTED_PATHS[kind] ?? []);
  const redacted: string[] = [];
  const walk = (value: unknown, path: string): unknown => {
    if (Array.isArray(value)) return value.map((v, i) => walk(v, `${path}[${i}]`));
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value).map(([key, v]) => {
          const here = path ? `${path}.${key}` : key;
          if (paths.has(here) || DEFAULT_REDACTED_KEYS.some((k) => k.toLowerCase() === key.toLowerCase())) {
            redacted.push(here);
            return [key, MASK];
          }
          return [key, walk(v, here)];
        }),
      );
    }
    return value;
  };
  return { payload: walk(payload, ''), redacted };
}
