/**
 * The URL a user names in DATABASE_URL: checked to be a postgres:// URL, shown without its
 * password, and the sentences that name it when it is missing or its server cannot be reached.
 * DatabaseSettingError is the one error for a database setting that stops start-up (exit code
 * 2 in the CLI, cli/run.ts).
 *
 * cli/run.ts loads it only once a command has failed (to word a connection failure); the
 * embedded server (cli/database-select.ts) throws its error.
 */
import { LeaseholdRefusal } from '../db/errors.ts';
import { field } from '../db/queue/executor.ts';

/** A database setting that stops start-up (exit code 2): missing, unparseable, or --embedded unmet. */
export class DatabaseSettingError extends LeaseholdRefusal {
  override readonly name = 'DatabaseSettingError';
  readonly code = 'database_setting_invalid';
}

/** The sentence for an unset DATABASE_URL; `embeddedHint` says how to get a development server instead. */
export function missingDatabaseUrlSentence(embeddedHint = 'pass --embedded'): string {
  return (
    'DATABASE_URL is not set: set it (in the environment or in .env) to your PostgreSQL, ' +
    `e.g. DATABASE_URL=postgres://user:password@host:5432/dbname, or ${embeddedHint} ` +
    'to run a local embedded PostgreSQL for development'
  );
}

/** `url` when it is a postgres:// URL; else a DatabaseSettingError naming DATABASE_URL (without its password). */
export function checkedDatabaseUrl(url: string): string {
  if (!URL.canParse(url))
    throw new DatabaseSettingError('DATABASE_URL is not a URL: expected postgres://user:password@host:5432/dbname');
  const parsed = new URL(url);
  if (!/^postgres(ql)?:$/.test(parsed.protocol))
    throw new DatabaseSettingError(
      `DATABASE_URL must start with postgres:// or postgresql:// (${redactedUrl(url)} starts with ${parsed.protocol})`,
    );
  if (!parsed.hostname && !parsed.searchParams.has('host'))
    throw new DatabaseSettingError(`DATABASE_URL names no host (${redactedUrl(url)})`);
  return url;
}

/** `url` with its password replaced by `***`, for messages. */
export function redactedUrl(url: string): string {
  if (!URL.canParse(url)) return '(not a URL)';
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/** Error codes that mean "the server named by the URL could not be reached or refused us". */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  '28P01', // invalid_password
  '28000', // invalid_authorization_specification
  '3D000', // invalid_catalog_name: the database does not exist
  '57P03', // cannot_connect_now
]);

/**
 * A sentence naming DATABASE_URL when `error` (or its cause) is a failure to connect to
 * `url`'s server; null for any other error.
 */
export function connectionFailureSentence(error: unknown, url: string): string | null {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = field(e, 'cause'), depth++) {
    const code = field(e, 'code');
    const message = e instanceof Error ? e.message : typeof e === 'string' ? e : '';
    const known =
      (typeof code === 'string' && CONNECTION_CODES.has(code)) ||
      /timeout expired|Connection terminated|connect(ion)? timeout|getaddrinfo|self[- ]signed|SSL/i.test(message);
    if (known)
      return `could not connect to the database DATABASE_URL names (${redactedUrl(url)}): ${message || String(code)}`;
  }
  return null;
}

/** The URL of `database` on the same server as `url`. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}
