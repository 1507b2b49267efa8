// What the wave bench says a refused node patch lost to (bench/wave-report.ts conflictSources): a marking in the
// 5 s before it wins over the conditions patch its drain makes right after, which is often the last write before.
import { describe, expect, it } from 'vitest';
import { budgetRefusals, conflictSources } from '../../../bench/wave-report.js';
import { auditEntry, recordPatch } from './audit-entry.js';

const entry = auditEntry;

describe('what a refused node patch lost to', () => {
  it('names the marking, not the conditions patch its drain made just after it', () => {
    const requests = [
      // A drain's own record that adopted a marking ahead: still a drain's record, not a marking ahead.
      entry({ atMs: 1_000, requestObject: recordPatch('own', { aheadOf: 'i-0a' }) }),
      entry({ atMs: 1_020, subresource: 'status' }),
      entry({ atMs: 1_060, receivedMs: 1_050, code: 409 }),
    ];
    expect(conflictSources(requests)).toEqual({ 'a marking or record of a drain': 1 });
  });

  it("tells a sibling's marking ahead, a conditions patch alone, and nothing of ours", () => {
    const requests = [
      entry({ atMs: 1_000, requestObject: recordPatch('marked-ahead', { aheadOf: 'i-0a' }) }),
      entry({ atMs: 1_100, receivedMs: 1_090, code: 409 }),
      entry({ atMs: 20_000, subresource: 'status', name: 'node-c' }),
      entry({ atMs: 20_100, receivedMs: 20_090, code: 409, name: 'node-c' }),
      entry({ atMs: 40_000, receivedMs: 39_990, code: 409, name: 'node-d' }),
      // Older than 5 s: not what it lost to.
      entry({ atMs: 50_000, name: 'node-e' }),
      entry({ atMs: 56_000, receivedMs: 55_990, code: 409, name: 'node-e' }),
    ];
    expect(conflictSources(requests)).toEqual({
      "a sibling's marking ahead": 1,
      'a conditions patch (status)': 1,
      'no write of ours within 5 s': 2,
    });
  });
});

describe("a budget's refusals, by ask and by time", () => {
  const eviction = (name: string, receivedMs: number, code: number) =>
    entry({
      atMs: receivedMs + 5,
      receivedMs,
      verb: 'create',
      resource: 'pods',
      subresource: 'eviction',
      namespace: 'shop',
      name,
      code,
      message: code === 429 ? "Cannot evict pod as it would violate the pod's disruption budget." : '',
    });

  it("splits the refusals at a pod's first ask from those of a pod asked again, and counts them by seconds", () => {
    const requests = [
      eviction('web-1', 1_000, 429),
      eviction('web-2', 1_200, 201),
      eviction('web-1', 7_000, 429),
      eviction('web-3', 12_000, 429),
      eviction('web-1', 25_000, 201),
      entry({ atMs: 26_000, code: 429, message: 'Too many requests, please try again later.' }),
    ];
    expect(budgetRefusals(requests)).toEqual({
      firstAsk: 2,
      askedAgain: 1,
      bySeconds: { '0-5 s': 1, '5-10 s': 1, '10-20 s': 1 },
    });
  });
});
