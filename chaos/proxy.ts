/**
 * A TCP proxy between workers and PostgreSQL that can cut connections silently: bytes stop
 * flowing both ways but neither side sees a close (a half-open connection, as after a NAT or
 * firewall drops state). Connections are picked by what their startup packet says, e.g. the
 * application_name `leasehold-listen`.
 */
import net from 'node:net';

interface Pair {
  client: net.Socket;
  server: net.Socket;
  startup: string;
  blackholed: boolean;
}

export class SilentCutProxy {
  private readonly pairs = new Set<Pair>();
  private readonly listener: net.Server;
  /** Connections opened later whose startup packet contains this are cut too (blackhole's `andNew`). */
  private cutNew: string | null = null;
  /** While down(): every connection is closed at once, as by a database that is away. */
  private refusing = false;
  port = 0;

  private constructor(targetHost: string, targetPort: number) {
    this.listener = net.createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const server = net.connect(targetPort, targetHost);
      const pair: Pair = { client, server, startup: '', blackholed: false };
      this.pairs.add(pair);
      client.on('data', (chunk) => {
        if (pair.startup.length < 2048) pair.startup += chunk.toString('latin1');
        if (this.cutNew !== null && pair.startup.includes(this.cutNew)) pair.blackholed = true;
        if (!pair.blackholed) server.write(chunk);
      });
      server.on('data', (chunk) => {
        if (!pair.blackholed) client.write(chunk);
      });
      const close = () => {
        this.pairs.delete(pair);
        client.destroy();
        server.destroy();
      };
      client.on('error', close).on('close', close);
      server.on('error', close).on('close', close);
    });
  }

  static async start(targetHost: string, targetPort: number): Promise<SilentCutProxy> {
    const proxy = new SilentCutProxy(targetHost, targetPort);
    await new Promise<void>((resolve) => proxy.listener.listen(0, '127.0.0.1', resolve));
    proxy.port = (proxy.listener.address() as net.AddressInfo).port;
    return proxy;
  }

  /**
   * Silently cuts every open connection whose startup packet contains `text`; returns how many.
   * With `andNew`, connections opened later that match are cut from their first byte (the
   * network stays gone, as after a firewall lost its state: a reconnect hangs too).
   */
  blackhole(text: string, options: { andNew?: boolean } = {}): number {
    if (options.andNew) this.cutNew = text;
    let n = 0;
    for (const pair of this.pairs) {
      if (!pair.blackholed && pair.startup.includes(text)) {
        pair.blackholed = true;
        n += 1;
      }
    }
    return n;
  }

  /**
   * The database is away for `ms`: every open connection is closed (its statement in flight
   * fails) and new ones are closed as they come. Resolves when it is back.
   */
  async down(ms: number): Promise<number> {
    this.refusing = true;
    const closed = this.pairs.size;
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.server.destroy();
    }
    await new Promise((resolve) => setTimeout(resolve, ms));
    this.refusing = false;
    return closed;
  }

  async close(): Promise<void> {
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.server.destroy();
    }
    await new Promise((resolve) => this.listener.close(resolve));
  }
}
