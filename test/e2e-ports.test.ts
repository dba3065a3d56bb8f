/**
 * The e2e suite takes free ports (e2e/ports.ts): with the usual ones held by something else it
 * still gets five different ports it can listen on, the environment's choice wins, and no e2e
 * file names a fixed port of its own.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './cli.ts';

const TSX = import.meta.resolve('tsx');

/** e2e/ports.ts's answer in a fresh process with `env` (the E2E_* variables of this one removed). */
function portsIn(env: Record<string, string>): Record<string, number> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('E2E_')));
  const script = `import('${path.join(ROOT, 'e2e', 'ports.ts')}').then((m) => console.log(JSON.stringify(m.e2ePorts())))`;
  return JSON.parse(
    execFileSync(process.execPath, ['--import', TSX, '-e', script], {
      env: { ...clean, ...env } as NodeJS.ProcessEnv,
      encoding: 'utf8',
    }),
  ) as Record<string, number>;
}

/** Listens on `port` of 127.0.0.1 if it is free; resolves with the server, or null when it is taken. */
function hold(port: number): Promise<net.Server | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

describe('the e2e suite’s ports', () => {
  it('are free ones, all different, while the old fixed ports are held by something else', async () => {
    const held = (await Promise.all([3100, 3101, 3102, 3103, 9570].map(hold))).filter((s) => s !== null);
    try {
      const ports = portsIn({});
      const values = Object.values(ports);
      expect(Object.keys(ports).sort()).toEqual(['app', 'oidc', 'proxy', 'second', 'web']);
      expect(new Set(values).size).toBe(5);
      for (const port of values) expect([3100, 3101, 3102, 3103, 9570]).not.toContain(port);
      for (const port of values) {
        const server = await hold(port);
        expect(server, `port ${port} free to listen on`).not.toBeNull();
        await new Promise((r) => server!.close(r));
      }
    } finally {
      for (const server of held) await new Promise((r) => server!.close(r));
    }
  });

  it('are the environment’s where it names them', () => {
    const ports = portsIn({ E2E_PORT: '4321', E2E_OIDC_PORT: '4322' });
    expect(ports).toMatchObject({ web: 4321, oidc: 4322 });
    expect([ports.app, ports.proxy, ports.second]).not.toContain(4321);
  });

  it('are named in no e2e file but e2e/ports.ts', () => {
    const fixed: string[] = [];
    for (const file of readdirSync(path.join(ROOT, 'e2e'))) {
      if (file === 'ports.ts') continue;
      const text = readFileSync(path.join(ROOT, 'e2e', file), 'utf8');
      for (const m of text.matchAll(/\?\?\s*'?(\d{4,5})'?|E2E_PORT\s*\?\?|\+\s*\d\b.*(?:PORT|port)/g))
        fixed.push(`e2e/${file}: ${m[0]}`);
    }
    const config = readFileSync(path.join(ROOT, 'playwright.config.ts'), 'utf8');
    if (/\?\?\s*\d{4}/.test(config)) fixed.push('playwright.config.ts');
    expect(fixed).toEqual([]);
  });
});
