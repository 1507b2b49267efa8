// The drain's named rules, one moment at a time, and the tier rule through a whole drain:
// critical pods get their own fair window once their tier is reached.
import { describe, expect, it } from 'vitest';
import * as rules from '../../../lambda/eviction/rules.js';
import type { DrainMoment } from '../../../lambda/eviction/rules.js';
import { defaultDrainRuleSettings, podRule } from '../../../lambda/cluster/rules/drain-rules.js';
import { evictionOrder } from '../../../lambda/cluster/rules/drain-plan.js';
import { phaseWorld, instanceId } from '../../fakes/phase-world.js';
import { drain } from '../../../lambda/termination/drain.js';
import { mark } from '../../../lambda/termination/mark.js';
import type { Marked } from '../../../lambda/termination/state.js';
import { DeadlinePolicy } from '../../../lambda/shared/deadline-policy.js';
import { pdbBlocks, pod } from '../../fakes/fake-world.js';

const t0 = 1_000_000;
const moment = (o: Partial<DrainMoment> = {}): DrainMoment => ({
  nowMs: t0,
  force: true,
  drainDeadlineMs: t0 + 120_000,
  windowEndMs: t0 + 60_000,
  windowMs: 60_000,
  latestDrainEndMs: t0 + 3_600_000,
  tier: 0,
  orderOf: (p) => evictionOrder(podRule(p, defaultDrainRuleSettings, t0)),
  tierReachedMs: new Map([[0, t0]]),
  attempts: new Map(),
  accepted: new Set(),
  ...o,
});
const web = pod({ name: 'web', terminationGracePeriodSeconds: 30 });
const coredns = pod({
  name: 'coredns',
  priorityClassName: 'system-cluster-critical',
  terminationGracePeriodSeconds: 30,
});

describe('drain rules', () => {
  it('forces a pod at its deadline minus its grace, never inside the window', () => {
    expect(rules.forceAtMs(web, moment())).toBe(t0 + 90_000);
    expect(rules.forceAtMs(web, moment({ drainDeadlineMs: t0 + 30_000 }))).toBe(t0 + 60_000);
    expect(rules.forceAtMs(web, moment({ force: false }))).toBe(Number.POSITIVE_INFINITY);
  });

  it('never forces a pod of a tier not reached yet, and gives a tier reached late its own window', () => {
    expect(rules.forceAtMs(coredns, moment())).toBe(Number.POSITIVE_INFINITY);
    expect(rules.isEligible(coredns, moment({ nowMs: t0 + 500_000 }))).toBe(false);
    const reached = moment({
      nowMs: t0 + 110_000,
      tier: 2000,
      tierReachedMs: new Map([
        [0, t0],
        [2000, t0 + 110_000],
      ]),
    });
    expect(rules.podWindowEndMs(coredns, reached)).toBe(t0 + 170_000);
    expect(rules.forceAtMs(coredns, reached)).toBe(t0 + 170_000);
    expect(rules.podDeadlineMs(coredns, reached)).toBe(t0 + 200_000);
    expect(rules.isEligible(coredns, reached)).toBe(true);
  });

  it('forces only what was asked once and would outlast its deadline', () => {
    const asked = moment({
      attempts: new Map([
        [web.uid, { count: 1, nextAtMs: t0, lastBlock: undefined, blockedSinceMs: undefined, reportedLong: false }],
      ]),
    });
    expect(rules.isForceCandidate(web, moment())).toBe(false);
    expect(rules.isForceCandidate(web, asked)).toBe(true);
    const leaving = { ...web, deletionTimestamp: new Date(t0 + 10_000) };
    expect(rules.isForceCandidate(leaving, asked)).toBe(false);
  });

  it('backs off from 500 ms to 10 s, never sooner than Retry-After', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => rules.retryDelayMs(n, undefined))).toEqual([
      500, 1000, 2000, 4000, 8000, 10000,
    ]);
    expect(rules.retryDelayMs(1, 30)).toBe(30_000);
  });
});

describe('tiers through a drain', () => {
  it('gives critical pods their own eviction window once the others are gone, instead of forcing them after one attempt', async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId);
    const start = w.clock.now();
    const stuck = w.cluster.addPod(pod({ name: 'stuck', terminationGracePeriodSeconds: 5 }));
    const critical = w.cluster.addPod(
      pod({
        name: 'coredns',
        namespace: 'kube-system',
        priorityClassName: 'system-cluster-critical',
        terminationGracePeriodSeconds: 5,
      }),
    );
    // Both are held by budgets: the first until forced, coredns's until 40 s after it is asked.
    w.cluster.evictionRules.push(pdbBlocks('stuck-pdb', (p) => p.uid === stuck.uid));
    let corednsAskedAt: number | undefined;
    w.cluster.evictionRules.push((p) => {
      if (p.uid !== critical.uid) return 'accept';
      corednsAskedAt ??= w.clock.now();
      return w.clock.now() - corednsAskedAt >= 40_000 ? 'accept' : pdbBlocks('dns-pdb', () => true)(p);
    });
    const o = {
      settings: { deadlinePolicy: DeadlinePolicy.FORCE },
      deadlinesFrom: () => w.deadlines({ drainDeadlineMs: start + 60_000, minEvictionWindowMs: 60_000 }),
    };
    const m = (await mark(w.run(o), w.verified())) as Marked;

    const step = await drain(w.run(o), m);

    // The stuck pod is forced at the deadline minus its grace; coredns is asked only then and
    // gets its window (60 s), so its budget lets it go by eviction at +40 s: never deleted.
    expect(w.cluster.deletions.map((d) => d.pod)).toEqual(['default/stuck']);
    expect(corednsAskedAt! - start).toBeGreaterThanOrEqual(55_000);
    expect(w.cluster.podsOn('node-a')).toEqual([]);
    expect(step).toMatchObject({ outcome: 'timed-out' });
  });
});

// Found by the mutation score: the small rules of a pass, each at its edges.
describe("a pass's small rules", () => {
  it('a budget block is one of the two budget reasons; everything else is retried at the same pace', () => {
    expect(rules.isBudgetBlock('disruption-budget')).toBe(true);
    expect(rules.isBudgetBlock('multiple-budgets')).toBe(true);
    for (const reason of ['throttled', 'namespace-terminating', 'admission-denied', 'conflict'] as const)
      expect(rules.isBudgetBlock(reason)).toBe(false);
  });

  it('a pod is bound since a moment when it started after it, within the whole second the server keeps', () => {
    const startedAt = new Date(t0);
    expect(rules.boundSince(pod({ name: 'ds' }), t0)).toBe(false);
    expect(rules.boundSince(pod({ name: 'ds', startedAt }), t0 - 5_000)).toBe(true);
    expect(rules.boundSince(pod({ name: 'ds', startedAt }), t0 + 999)).toBe(true);
    expect(rules.boundSince(pod({ name: 'ds', startedAt }), t0 + 1_000)).toBe(false);
  });

  it('a terminating pod outlives a deadline only when its deletion ends more than a second after it', () => {
    expect(rules.outlivesDeadline(web, t0)).toBe(true);
    expect(rules.outlivesDeadline(pod({ name: 'x', deletionTimestamp: new Date(t0 + 1_000) }), t0)).toBe(false);
    expect(rules.outlivesDeadline(pod({ name: 'x', deletionTimestamp: new Date(t0 + 1_001) }), t0)).toBe(true);
  });

  it('a terminating pod cannot leave once its grace period ended by the margin, or at once without a kubelet', () => {
    const stuck = pod({ name: 'x', deletionTimestamp: new Date(t0) });
    expect(rules.cannotLeave(stuck, t0 + rules.stuckTerminatingMarginMs - 1, false)).toBe(false);
    expect(rules.cannotLeave(stuck, t0 + rules.stuckTerminatingMarginMs, false)).toBe(true);
    expect(rules.cannotLeave(stuck, t0, true)).toBe(true);
    expect(rules.cannotLeave(web, t0 + 3_600_000, true)).toBe(false);
  });
});

// Found by the mutation score: the next wake-up, each bound in turn the earliest.
describe('the next wake-up', () => {
  const asked = (nextAtMs: number) =>
    moment({
      attempts: new Map([
        [web.uid, { count: 1, nextAtMs, lastBlock: undefined, blockedSinceMs: undefined, reportedLong: false }],
      ]),
    });
  const bounds = (o: { batchUntilMs?: number; stopMs?: number } = {}) => ({
    lastPodDeadlineMs: t0 + 120_000,
    stopMs: o.stopMs ?? t0 + 600_000,
    batchUntilMs: o.batchUntilMs,
    reportAtMs: () => undefined,
  });
  const pods = { remaining: [web], evictable: [web] };

  it("wakes for a pod's retry, else its force time (its deadline less its grace), else the deadline", () => {
    expect(rules.nextWakeMs(pods, asked(t0 + 5_000), bounds())).toBe(t0 + 5_000);
    expect(rules.nextWakeMs(pods, asked(t0 + 100_000), bounds())).toBe(t0 + 90_000);
    expect(rules.nextWakeMs({ remaining: [], evictable: [] }, asked(t0 + 100_000), bounds())).toBe(t0 + 120_000);
  });

  it('wakes for no force time of a pod the force policy will not delete', () => {
    // Shutting down, done by its deadline: its give-up time (30 s past its deletion) lies past the deadline.
    const leaving = pod({ name: 'leaving', deletionTimestamp: new Date(t0 + 100_000) });
    expect(rules.nextWakeMs({ remaining: [leaving], evictable: [] }, moment(), bounds())).toBe(t0 + 120_000);
    const accepted = moment({ accepted: new Set([web.uid]) });
    expect(rules.nextWakeMs({ remaining: [], evictable: [web] }, accepted, bounds())).toBe(t0 + 120_000);
  });

  it('wakes at the end of the batch wait or the stop when they come first', () => {
    expect(rules.nextWakeMs(pods, asked(t0 + 100_000), bounds({ batchUntilMs: t0 + 30_000 }))).toBe(t0 + 30_000);
    expect(rules.nextWakeMs(pods, asked(t0 + 100_000), bounds({ stopMs: t0 + 20_000 }))).toBe(t0 + 20_000);
  });
});

// Found by the mutation score: force times and deadlines of pods leaving, held back or backing off.
describe('force times at their edges', () => {
  it('hurries a pod already shutting down only in the last 10 s before its deadline', () => {
    const m = moment({ accepted: new Set([web.uid]) });
    expect(rules.forceAtMs(web, m)).toBe(t0 + 110_000);
    expect(rules.forceAtMs(web, moment())).toBe(t0 + 90_000);
  });

  it("expects a tier not yet reached a window after the deadline, and gives its pod that window's time", () => {
    const dns = pod({ name: 'dns', priorityClassName: 'system-cluster-critical', terminationGracePeriodSeconds: 30 });
    expect(rules.podDeadlineMs(dns, moment())).toBe(t0 + 210_000);
  });

  it('is not due before its retry time, though eligible', () => {
    const m = moment({
      attempts: new Map([
        [web.uid, { count: 1, nextAtMs: t0 + 1, lastBlock: undefined, blockedSinceMs: undefined, reportedLong: false }],
      ]),
    });
    expect(rules.isEligible(web, m)).toBe(true);
    expect(rules.isDue(web, m)).toBe(false);
    expect(rules.isDue(web, { ...m, nowMs: t0 + 1 })).toBe(true);
  });
});

// Found by the mutation score: a long budget block is reported once, blockedReportMs after the budget first refused.
describe('the long-block report', () => {
  const attempt = (o: { blockedSinceMs?: number; reportedLong?: boolean } = {}) => ({
    count: 3,
    nextAtMs: t0,
    lastBlock: undefined,
    blockedSinceMs: o.blockedSinceMs,
    reportedLong: o.reportedLong ?? false,
  });
  it('comes blockedReportMs after the first refusal by a budget', () => {
    expect(rules.longBlockReportAtMs(attempt({ blockedSinceMs: t0 }), false, 60_000)).toBe(t0 + 60_000);
  });
  it('never comes for a pod no budget refused, one already told, or one whose eviction was accepted', () => {
    expect(rules.longBlockReportAtMs(undefined, false, 60_000)).toBeUndefined();
    expect(rules.longBlockReportAtMs(attempt(), false, 60_000)).toBeUndefined();
    expect(
      rules.longBlockReportAtMs(attempt({ blockedSinceMs: t0, reportedLong: true }), false, 60_000),
    ).toBeUndefined();
    expect(rules.longBlockReportAtMs(attempt({ blockedSinceMs: t0 }), true, 60_000)).toBeUndefined();
  });
});

// Found by the mutation score: a pod held back by its tier, whose own tier was reached before (a lower order came
// back since), is forced at its force time, and the next wake-up waits for it.
describe('a pod held back by its tier', () => {
  const dns = pod({ name: 'dns', priorityClassName: 'system-cluster-critical', terminationGracePeriodSeconds: 30 });
  const m = moment({
    tierReachedMs: new Map([
      [0, t0],
      [2000, t0],
    ]),
  });
  it('becomes eligible at its force time, not before', () => {
    expect(rules.forceAtMs(dns, m)).toBe(t0 + 90_000);
    expect(rules.isEligible(dns, { ...m, nowMs: t0 + 89_999 })).toBe(false);
    expect(rules.isEligible(dns, { ...m, nowMs: t0 + 90_000 })).toBe(true);
  });
  it('wakes the drain at that force time', () => {
    const bounds = {
      lastPodDeadlineMs: t0 + 120_000,
      stopMs: t0 + 600_000,
      batchUntilMs: undefined,
      reportAtMs: () => undefined,
    };
    expect(rules.nextWakeMs({ remaining: [dns], evictable: [dns] }, m, bounds)).toBe(t0 + 90_000);
  });
});
