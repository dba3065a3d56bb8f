/**
 * The e2e suite's ports, free ones unless the environment names them: the dashboard of the
 * global setup (E2E_PORT), the specs' second and third servers (E2E_APP_PORT, E2E_PROXY_PORT,
 * E2E_SECOND_PORT) and the test identity provider (E2E_OIDC_PORT). playwright.config.ts picks
 * them first and writes them into process.env, so the global setup and the workers, which
 * inherit the runner's environment, read the same ones: anything else on this machine may hold
 * any fixed port.
 */
import { execFileSync } from 'node:child_process';

export const E2E_PORT_VARIABLES = {
  web: 'E2E_PORT',
  app: 'E2E_APP_PORT',
  proxy: 'E2E_PROXY_PORT',
  second: 'E2E_SECOND_PORT',
  oidc: 'E2E_OIDC_PORT',
} as const;

export type E2ePorts = Record<keyof typeof E2E_PORT_VARIABLES, number>;

/** `count` ports the system gave out as free just now, all held at once so they differ (synchronous: the config is). */
function freePorts(count: number): number[] {
  const script = `
    const net = require('node:net');
    const servers = Array.from({ length: ${count} }, () => net.createServer());
    Promise.all(servers.map((s) => new Promise((r) => s.listen(0, '127.0.0.1', r)))).then(() => {
      console.log(JSON.stringify(servers.map((s) => s.address().port)));
      for (const s of servers) s.close();
    });`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as number[];
}

/** The suite's ports: each variable that is set, else a free port (written into process.env). */
export function e2ePorts(): E2ePorts {
  const unset = Object.values(E2E_PORT_VARIABLES).filter((name) => !process.env[name]);
  if (unset.length > 0) {
    const ports = freePorts(unset.length);
    unset.forEach((name, i) => (process.env[name] = String(ports[i])));
  }
  return Object.fromEntries(
    Object.entries(E2E_PORT_VARIABLES).map(([key, name]) => [key, Number(process.env[name])]),
  ) as E2ePorts;
}
