/**
 * Every test starts with the dashboard's live cache empty (lib/live-cache.ts), as a fresh web
 * process would: a test that writes a fixture and reads it through the DAL must not be served
 * what an earlier test of its file read within the freshness. lib/live-cache.test.ts tests the
 * cache itself within its tests.
 */
import { beforeEach } from 'vitest';
import { invalidateLive } from '../lib/live-cache.ts';

beforeEach(() => invalidateLive());
