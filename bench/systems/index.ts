import { bareSql } from './bare-sql.ts';
import { floor } from './floor.ts';
import { graphileWorker } from './graphile-worker.ts';
import { leasehold } from './leasehold.ts';
import { pgBoss } from './pg-boss.ts';
import type { BenchSystem, SystemName } from './types.ts';

export const SYSTEMS: Record<SystemName, BenchSystem> = {
  leasehold,
  'pg-boss': pgBoss,
  'graphile-worker': graphileWorker,
  'bare-sql': bareSql,
  floor,
};
export const ANCHORS: SystemName[] = ['pg-boss', 'graphile-worker'];
export * from './types.ts';
