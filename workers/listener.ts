/**
 * Wake-ups through LISTEN on a dedicated connection. Polling stays the correctness path: a
 * lost notification only delays a job until the next poll. The connection has TCP keepalive,
 * a periodic health query (a connection cut silently answers nothing: the query times out and
 * the connection is replaced) and reconnects with jittered backoff; after every (re)connect
 * the worker is woken once, for notifications missed while disconnected.
 *
 * The health query also reads how full the server's NOTIFY queue is
 * (`pg_notification_queue_usage()`, 0 to 1), at connect and every health round, and hands it
 * to `onQueueUsage`: a LISTENing session that stops reading fills it, and above
 * NOTIFY_QUEUE_LIMIT enqueues stop sending wake-ups (db/queue/wake.ts).
 */
import pg from 'pg';
import type { Logger } from 'pino';

export interface WakeListenerOptions {
  /** A URL, or a `pg` client config (an embedder's pool's own options: its SSL, its password function). */
  url: string | pg.ClientConfig;
  channel: string;
  onWake(payload: string): void;
  logger: Logger;
  healthIntervalMs?: number;
  healthTimeoutMs?: number;
  /** The NOTIFY queue's usage (0 to 1), read at connect and on every health round. */
  onQueueUsage?: (usage: number) => void;
}

export class WakeListener {
  private client: pg.Client | null = null;
  private stopped = false;
  private failures = 0;
  private healthTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  connected = false;

  constructor(private readonly options: WakeListenerOptions) {}

  async start(): Promise<void> {
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.healthTimer) clearInterval(this.healthTimer);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    this.connected = false;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const { logger } = this.options;
    const { url } = this.options;
    const client = new pg.Client({
      ...(typeof url === 'string' ? { connectionString: url } : url),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      application_name: 'leasehold-listen',
      connectionTimeoutMillis: 10_000,
    });
    client.on('notification', (message) => this.options.onWake(message.payload ?? ''));
    client.on('error', (error) => this.drop(client, `connection error: ${error.message}`));
    client.on('end', () => this.drop(client, 'connection ended'));
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.options.channel)}`);
    } catch (error) {
      this.drop(client, `could not LISTEN: ${(error as Error).message}`);
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.connected = true;
    // Forget past failures only once the connection has stayed up a while: a server that
    // drops us right after LISTEN must not cause a reconnect loop.
    const stable = setTimeout(() => {
      if (this.client === client) this.failures = 0;
    }, 30_000);
    stable.unref();
    logger.info({ channel: this.options.channel }, 'listening for wake-ups');
    this.options.onWake('*'); // anything enqueued while we were not listening
    void this.checkHealth(client);
    if (this.healthTimer) clearInterval(this.healthTimer);
    this.healthTimer = setInterval(() => void this.checkHealth(client), this.options.healthIntervalMs ?? 15_000);
    this.healthTimer.unref();
  }

  private async checkHealth(client: pg.Client): Promise<void> {
    const timeoutMs = this.options.healthTimeoutMs ?? 5_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const result = await Promise.race([
        client.query<{ usage: number }>('SELECT pg_catalog.pg_notification_queue_usage() AS usage'),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
      const usage = Number(result.rows[0]?.usage);
      if (Number.isFinite(usage)) this.options.onQueueUsage?.(usage);
    } catch (error) {
      this.drop(client, `health check failed: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Forgets `client` (once) and schedules a reconnect. */
  private drop(client: pg.Client, why: string): void {
    if (this.stopped) return;
    if (this.client !== null && this.client !== client) return; // an older connection's late event
    if (this.reconnectTimer) return; // already reconnecting
    this.client = null;
    this.connected = false;
    if (this.healthTimer) clearInterval(this.healthTimer);
    // A connection cut silently may never finish closing: destroy the socket, do not wait.
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    void client.end().catch(() => {});
    this.failures += 1;
    const delay = Math.min(30_000, 250 * 2 ** Math.min(this.failures - 1, 7)) * (0.5 + Math.random() / 2);
    this.options.logger.warn({ why, retryInMs: Math.round(delay) }, 'LISTEN connection lost; polling continues');
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.connect();
    }, delay);
    this.reconnectTimer.unref();
  }
}
