export * from '../db/queue/index.ts';
