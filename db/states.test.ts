import { describe, expect, it } from 'vitest';
import {
  FAILURE_CLASSES,
  JOB_STATES,
  LIST_STATES,
  oneOf,
  readySubstate,
  runningSubstate,
  subStateOf,
} from './states.ts';

const now = new Date('2026-12-01T12:00:00Z');
const at = (ms: number) => new Date(now.getTime() + ms);

describe('readySubstate', () => {
  it('is ready once due, scheduled before, and retrying after any attempt whatever the run time', () => {
    expect(readySubstate({ runAt: at(0), attempts: 0 }, now)).toBe('ready');
    expect(readySubstate({ runAt: at(-1), attempts: 0 }, now)).toBe('ready');
    expect(readySubstate({ runAt: at(1), attempts: 0 }, now)).toBe('scheduled');
    expect(readySubstate({ runAt: at(60_000), attempts: 1 }, now)).toBe('retrying');
    expect(readySubstate({ runAt: at(-60_000), attempts: 3 }, now.getTime())).toBe('retrying');
  });
});

describe('runningSubstate', () => {
  it('is lease_expired from the lease deadline on', () => {
    expect(runningSubstate({ leaseUntil: at(1) }, now)).toBe('running');
    expect(runningSubstate({ leaseUntil: at(0) }, now)).toBe('lease_expired');
  });
});

describe('subStateOf', () => {
  it('splits ready and running and keeps terminal states, one list state each', () => {
    const job = { runAt: at(1), attempts: 0, leaseUntil: null };
    expect(subStateOf({ ...job, state: 'ready' }, now)).toBe('scheduled');
    expect(subStateOf({ ...job, state: 'running', leaseUntil: at(-1) }, now)).toBe('lease_expired');
    expect(subStateOf({ ...job, state: 'dead' }, now)).toBe('dead');
    expect(new Set(LIST_STATES).size).toBe(LIST_STATES.length);
  });
});

describe('oneOf', () => {
  it('gives back a member of the list and names an unknown value, the list and what it is', () => {
    for (const state of JOB_STATES) expect(oneOf(state, JOB_STATES, 'job state')).toBe(state);
    expect(() => oneOf('frozen', JOB_STATES, 'job state')).toThrow(
      'Leasehold: job state "frozen" from the database is not one of ready, running, done, dead, cancelled',
    );
    expect(() => oneOf(null, FAILURE_CLASSES, 'failure class')).toThrow(/failure class null /);
    expect(() => oneOf('Ready', JOB_STATES, 'job state')).toThrow(/"Ready"/);
  });
});
