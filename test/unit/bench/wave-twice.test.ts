// The wave bench's trace of a pod evicted twice (bench/wave-twice.ts): where it was bound, and whether its node was
// marked before or after, ahead by a sibling's drain or by its own.
import { describe, expect, it } from 'vitest';
import { markCoverage, traceTwiceEvicted } from '../../../bench/wave-twice.js';
import { auditEntry, recordPatch } from './audit-entry.js';

const entry = auditEntry;
const binding = (pod: string, node: string, atMs: number) =>
  entry({
    atMs,
    verb: 'create',
    resource: 'pods',
    subresource: 'binding',
    name: pod,
    code: 201,
    namespace: 'w',
    requestObject: { target: { name: node } },
  });
const eviction = (pod: string, atMs: number) =>
  entry({ atMs, verb: 'create', resource: 'pods', subresource: 'eviction', name: pod, code: 201, namespace: 'w' });

describe('a pod evicted twice, traced', () => {
  it('tells the node it was bound to, when, and the first mark that came after, with the conflicts before it', () => {
    const requests = [
      entry({ atMs: 2_000, code: 409, requestObject: recordPatch('marked-ahead', { aheadOf: 'i-1' }) }),
      entry({ atMs: 2_500, subresource: 'status' }),
      entry({ atMs: 3_000, requestObject: recordPatch('marked-ahead', { aheadOf: 'i-1' }) }),
      entry({ atMs: 9_000, requestObject: recordPatch('own', { aheadOf: 'i-1' }) }),
      entry({ atMs: 4_000, name: 'node-c' }),
    ];
    const traced = traceTwiceEvicted(
      {
        evictedTwice: [eviction('web-2', 12_000), eviction('web-3', 13_000)],
        bindings: [binding('web-2', 'node-b', 1_500), binding('web-1', 'node-c', 1_000)],
        requests,
        notifiedMsByNode: new Map([['node-b', 8_000]]),
      },
      1_000,
    );
    expect(traced).toEqual([
      {
        pod: 'web-2',
        node: 'node-b',
        boundSeconds: 0.5,
        notifiedSeconds: 7,
        firstMarkSeconds: 2,
        markedAhead: true,
        conflictsBeforeMark: 1,
      },
      // Its binding not in the audit log: nothing is made up.
      {
        pod: 'web-3',
        node: undefined,
        boundSeconds: undefined,
        notifiedSeconds: undefined,
        firstMarkSeconds: undefined,
        markedAhead: undefined,
        conflictsBeforeMark: 0,
      },
    ]);
  });

  it('tells a node its own drain marked first, and one never marked', () => {
    const traced = traceTwiceEvicted(
      {
        evictedTwice: [eviction('a', 5_000), eviction('b', 6_000)],
        bindings: [binding('a', 'node-b', 1_000), binding('b', 'node-x', 1_000)],
        // Its own record, first, though it names a drain that marked it ahead once (an earlier termination's).
        requests: [entry({ atMs: 2_000, requestObject: recordPatch('own', { aheadOf: 'i-9' }) })],
        notifiedMsByNode: new Map(),
      },
      0,
    );
    expect(traced.map((t) => [t.pod, t.firstMarkSeconds, t.markedAhead])).toEqual([
      ['a', 2, false],
      ['b', undefined, undefined],
    ]);
  });
});

describe("how fast a wave's nodes were marked", () => {
  it('tells the first eviction and the first mark of half, 90 % and all of the nodes; a node never marked has none', () => {
    const requests = [
      entry({ atMs: 1_500, name: 'a', code: 409 }),
      entry({ atMs: 2_000, name: 'a' }),
      entry({ atMs: 2_500, name: 'a' }),
      entry({ atMs: 3_000, name: 'b', subresource: 'status' }),
      entry({ atMs: 3_200, name: 'b' }),
      entry({ atMs: 3_600, verb: 'create', resource: 'pods', subresource: 'eviction', name: 'p', receivedMs: 3_500 }),
    ];
    expect(markCoverage(requests, ['a', 'b'], 1_000)).toEqual({
      firstEvictionSeconds: 2.5,
      markedSeconds: { '50 %': 1, '90 %': 2.2, all: 2.2 },
    });
    expect(markCoverage(requests, ['a', 'b', 'c'], 1_000).markedSeconds).toEqual({
      '50 %': 2.2,
      '90 %': undefined,
      all: undefined,
    });
  });
});
