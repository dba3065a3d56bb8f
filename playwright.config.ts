import { defineConfig } from '@playwright/test';
import { e2ePorts } from './e2e/ports.ts';

// Free ports (or the E2E_*_PORT variables), picked here once: the global setup and the workers
// inherit them through process.env (e2e/ports.ts).
const PORT = e2ePorts().web;

/**
 * End-to-end tests of the dashboard in Debian's Chromium (no browser download): the global
 * setup builds the app if needed, makes a fresh database, starts `next start` and a real
 * worker process, and tears them down after.
 */
export default defineConfig({
  testDir: './e2e',
  testMatch: '**/*.spec.ts',
  globalSetup: './e2e/global-setup.ts',
  workers: 1,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  outputDir: 'test-results/e2e',
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    screenshot: 'only-on-failure',
    trace: 'retain-on-failure',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    },
  },
});
