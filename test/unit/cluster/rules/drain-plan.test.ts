// The one reading of the drain rules (cluster/rules/drain-plan.ts): a node's pods in, the plan out, and the named
// readings every consumer branches on. Every behaviour string the drain rules produce is checked here against
// what each reading says of it.
import { describe, expect, it } from 'vitest';
import {
  drainPlan,
  evictionOrder,
  isEvicted,
  isWaitedFor,
  mustLeave,
  planRank,
  waitEndMs,
  waitsUntilDeadline,
} from '../../../../lambda/cluster/rules/drain-plan.js';
import { defaultDrainRuleSettings, podRule, type PodRule } from '../../../../lambda/cluster/rules/drain-rules.js';
import { pod } from '../../../fakes/fake-world.js';

const now = Date.parse('2026-11-27T12:00:00Z');
const settings = {
  drainRules: [
    { name: 'keep-cache', behavior: 'Skip' as const, pods: [{ selector: { matchLabels: { app: 'cache' } } }] },
  ],
  evictDaemonSetPods: false,
};
const ruleOf = (p: Parameters<typeof pod>[0]): PodRule => podRule(pod(p), settings, now);

// One pod of every kind the rules tell apart.
const web = pod({ name: 'web' });
const coredns = pod({ name: 'coredns', priorityClassName: 'system-cluster-critical' });
const early = pod({ name: 'early', labels: { 'graceful-node-termination/drain-order': '-10' } });
const job = pod({ name: 'job', controllerKind: 'Job' });
const capiWait = pod({ name: 'export', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } });
const dnd = pod({ name: 'dnd', annotations: { 'karpenter.sh/do-not-disrupt': '1h' }, startedAt: new Date(now) });
const cache = pod({ name: 'cache', labels: { app: 'cache' } });
const agent = pod({ name: 'agent', controllerKind: 'DaemonSet' });
const done = pod({ name: 'done', phase: 'Succeeded' });

describe('the drain plan', () => {
  const plan = drainPlan([web, coredns, early, job, capiWait, dnd, cache, agent, done], settings, now);
  const names = (xs: readonly { pod: { name: string } }[]) => xs.map((x) => x.pod.name);

  it('evicts the Drain pods lowest order first, the pods of one order in the order given', () => {
    expect(names(plan.evict)).toEqual(['early', 'web', 'coredns']);
  });

  it('waits for the WaitCompleted pods, leaves the Skip pods a user named, and ignores the built-in ones untold', () => {
    expect(names(plan.waitFor)).toEqual(['job', 'export', 'dnd']);
    expect(names(plan.leave)).toEqual(['cache']);
    expect(names(plan.ignore)).toEqual(['agent', 'done']);
  });

  it('puts every pod in exactly one place, and answers each pod’s rule as it read it', () => {
    const all = [...plan.evict, ...plan.waitFor, ...plan.leave, ...plan.ignore];
    expect(all).toHaveLength(9);
    for (const { pod: p, rule } of all) expect(plan.ruleOf(p)).toBe(rule);
  });

  it('is read at one moment: an elapsed do-not-disrupt duration drains', () => {
    const later = drainPlan([dnd], settings, now + 2 * 3_600_000);
    expect(names(later.evict)).toEqual(['dnd']);
  });
});

describe('the named readings, over every behaviour', () => {
  const drain = ruleOf({ name: 'web' });
  const batch = ruleOf({ name: 'job', controllerKind: 'Job' });
  const untilDeadline = ruleOf({ name: 'x', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } });
  const skip = ruleOf({ name: 'cache', labels: { app: 'cache' } });

  it('mustLeave: everything but what is left running', () => {
    expect([drain, batch, untilDeadline, skip].map(mustLeave)).toEqual([true, true, true, false]);
  });

  it('isEvicted: Drain pods, and pods waited for within the batch wait; never the rest', () => {
    expect([drain, batch, untilDeadline, skip].map(isEvicted)).toEqual([true, true, false, false]);
  });

  it('isWaitedFor and waitsUntilDeadline tell the two WaitCompleted bounds apart', () => {
    expect([drain, batch, untilDeadline, skip].map(isWaitedFor)).toEqual([false, true, true, false]);
    expect([drain, batch, untilDeadline, skip].map(waitsUntilDeadline)).toEqual([false, false, true, false]);
  });

  it('waitEndMs: the batch wait, a shorter do-not-disrupt time, or never', () => {
    const dnd = ruleOf({
      name: 'dnd',
      annotations: { 'karpenter.sh/do-not-disrupt': '30m' },
      startedAt: new Date(now),
    });
    if (!isWaitedFor(batch) || !isWaitedFor(untilDeadline) || !isWaitedFor(dnd)) throw new Error('not waited for');
    expect(waitEndMs(batch, now + 600_000)).toBe(now + 600_000);
    expect(waitEndMs(dnd, now + 3_600_000)).toBe(now + 1_800_000);
    expect(waitEndMs(untilDeadline, now + 600_000)).toBe(Number.POSITIVE_INFINITY);
  });

  it('evictionOrder: a Drain rule’s order, the first tier for a pod waited for, never for a pod left', () => {
    const critical = podRule(
      pod({ name: 'c', priorityClassName: 'system-node-critical' }),
      defaultDrainRuleSettings,
      now,
    );
    expect([drain, critical, batch, skip].map(evictionOrder)).toEqual([0, 2000, 0, Number.POSITIVE_INFINITY]);
  });

  it('planRank: waited for, then evicted, then left', () => {
    expect([batch, drain, skip].map(planRank)).toEqual([0, 1, 2]);
  });

  it('refuses a behaviour it does not know rather than guessing', () => {
    const unknown = { behavior: 'Evict', source: 'x' } as unknown as PodRule;
    for (const reading of [mustLeave, isEvicted, evictionOrder, planRank])
      expect(() => reading(unknown)).toThrow(/Evict/);
    expect(() => drainPlan([web], { drainRules: [], evictDaemonSetPods: false }, now)).not.toThrow();
  });
});
