/**
 * The runner needs a direct connection: its advisory lock is a session lock, and steps outside
 * a transaction (CREATE INDEX CONCURRENTLY) run statement by statement on one session. Through
 * a transaction pooler (PgBouncer in transaction mode, a cloud "pooled" URL) each transaction
 * may run on another server session: the lock would guard nothing, and a concurrent build
 * could run beside a second runner.
 *
 * How it tells, over TCP: the server names the address and port it sees this session come from
 * (`inet_client_addr()`, `inet_client_port()`); without anything in between that is this
 * process's own socket (its local address and port). Through a pooler the server sees the
 * pooler's socket instead. Anything that rewrites the source port (a NAT, a container's
 * userland port proxy, an SSH tunnel) looks the same; when such a path keeps one server session
 * per connection, `allowProxy` says so and skips the check.
 */
import type pg from 'pg';
import { MigrationRefused } from './journal.ts';
import { field, runText } from '../queue/executor.ts';

interface Endpoint {
  address: string | null;
  port: number | null;
}

/** This client's end of its socket (null port: a Unix-domain socket). */
function localEndpoint(client: pg.Client): Endpoint {
  // pg's types do not declare the connection or its socket: read with checks.
  const stream = field(field(client, 'connection'), 'stream');
  const address = field(stream, 'localAddress');
  const port = field(stream, 'localPort');
  return { address: typeof address === 'string' ? address : null, port: typeof port === 'number' ? port : null };
}

function normalise(address: string | null): string | null {
  return address === null ? null : address.replace(/^::ffff:/, '');
}

/** Throws MigrationRefused when `client` does not reach PostgreSQL directly. */
export async function refuseIndirectConnection(client: pg.Client): Promise<void> {
  const local = localEndpoint(client);
  const [row] = await runText<{ address: string | null; port: number | null }>(
    client,
    'SELECT host(inet_client_addr()) AS address, inet_client_port() AS port',
    [],
  );
  const seen: Endpoint = { address: row?.address ?? null, port: row?.port ?? null };
  // Unix-domain socket on both ends: nothing in between.
  if (local.port === null && seen.port === null) return;
  if (local.port === seen.port && normalise(local.address) === normalise(seen.address)) return;
  const at = (e: Endpoint) => (e.port === null ? 'a Unix-domain socket' : `${e.address}:${e.port}`);
  throw new MigrationRefused(
    'Leasehold migrate needs a direct connection to PostgreSQL (this one goes through a pooler or proxy: ' +
      `the server sees this session come from ${at(seen)}, and this process is at ${at(local)}); its lock ` +
      'and its steps outside a transaction need one server session for the whole run: set DATABASE_URL ' +
      "for migrations to PostgreSQL's own host and port, not the pooler's (with PgBouncer: the server it " +
      'forwards to). If this is a tunnel or port mapping that keeps one session per connection, not a ' +
      'pooler, pass { allowProxy: true } (npx leasehold migrate --allow-proxy).',
  );
}
