import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScratchDatabase } from '../../test/db.ts';
import { MigrationRefused, migrateDatabase } from './index.ts';
import { journal, scratchDatabase, writeMigrations } from '../../test/migrations.ts';

/**
 * A TCP proxy piping each client connection to the server: as through a transaction pooler,
 * the server sees the session come from the proxy's socket, not from the client's.
 */
async function tcpProxy(
  target: URL,
): Promise<{ url: (u: string) => string; connections: () => number; close(): Promise<void> }> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    connections += 1;
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: (u) => {
      const proxied = new URL(u);
      proxied.host = `127.0.0.1:${port}`;
      return proxied.toString();
    },
    connections: () => connections,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('migrating through a pooler', () => {
  let db: ScratchDatabase;
  let proxy: Awaited<ReturnType<typeof tcpProxy>>;
  const folder = writeMigrations([{ name: '0000_a', sql: 'CREATE TABLE leasehold.a (id integer);' }]);
  beforeAll(async () => {
    db = await scratchDatabase('leasehold_pooler');
    proxy = await tcpProxy(new URL(db.url));
  });
  afterAll(async () => {
    await proxy?.close();
    await db?.drop();
  });

  it('refuses through a TCP proxy (the server sees another port, as through a transaction pooler), with a sentence', async () => {
    const error = await migrateDatabase(proxy.url(db.url), { migrationsFolder: folder }).catch((e: unknown) => e);
    // The proxy carried the runner's connection: the refusal is about what the server saw.
    expect(proxy.connections()).toBe(1);
    expect(error).toBeInstanceOf(MigrationRefused);
    expect((error as Error).message).toMatch(
      /^Leasehold migrate needs a direct connection to PostgreSQL \(this one goes through a pooler or proxy: the server sees this session come from 127\.0\.0\.1:\d+, and this process is at 127\.0\.0\.1:\d+\); .*: set DATABASE_URL for migrations to PostgreSQL's own host and port/,
    );
    expect(await journal(db.url)).toEqual([]);
  });

  it('migrates through the proxy when told it keeps one session per connection (allowProxy)', async () => {
    const before = proxy.connections();
    const { applied } = await migrateDatabase(proxy.url(db.url), { migrationsFolder: folder, allowProxy: true });
    expect(proxy.connections()).toBe(before + 1);
    expect(applied).toEqual(['0000_a']);
  });
});
