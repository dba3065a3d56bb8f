import { bareSql } from './bare-sql';
import { graphileWorker } from './graphile-worker';
import { leasehold } from './leasehold';
import { pgBoss } from './pg-boss';
import type { BenchSystem, SystemName } from './types';

export const SYSTEMS: Record<SystemName, BenchSystem> = {
  leasehold,
  'pg-boss': pgBoss,
  'graphile-worker': graphileWorker,
  'bare-sql': bareSql,
};
export const ANCHORS: SystemName[] = ['pg-boss', 'graphile-worker'];
export * from './types';
