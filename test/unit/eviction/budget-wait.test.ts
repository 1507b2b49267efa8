// Pods a PodDisruptionBudget refused wait on the budget (its watch) instead of asking again on
// the retry cadence (issue 40): asked again only when it allows a disruption, never more of the
// node's pods at once than it allows, told once per (pod, budget); when the budget cannot be
// watched the retry cadence is today's, and the deadline and the force policy do not move.
import { describe, expect, it } from 'vitest';
import { BudgetWaits } from '../../../lambda/eviction/budget-waits.js';
import type { Attempt } from '../../../lambda/eviction/rules.js';
import { DeadlinePolicy } from '../../../lambda/shared/deadline-policy.js';
import { drain } from '../../../lambda/termination/drain.js';
import { mark } from '../../../lambda/termination/mark.js';
import type { Marked } from '../../../lambda/termination/state.js';
import { budgetRefuses, pdbBlocks, pod } from '../../fakes/fake-world.js';
import { instanceId, phaseWorld } from '../../fakes/phase-world.js';

function world() {
  const w = phaseWorld();
  w.cluster.addNode('node-a', instanceId);
  Object.assign(w.deps, { random: () => 0.5 });
  const t0 = w.clock.now();
  const evictions = (name?: string) =>
    w.cluster.calls
      .filter((c) => c.op === 'evict' && (name === undefined || c.target === `default/${name}`))
      .map((c) => (c.atMs - t0) / 1000);
  const drainIt = async (settings: Parameters<typeof w.run>[0] = {}) => {
    const m = (await mark(w.run(settings), w.verified())) as Marked;
    return drain(w.run(settings), m);
  };
  return { w, t0, evictions, drainIt };
}

describe('a pod its budget refused', () => {
  it('waits on the budget and is asked again only once the budget allows a disruption', async () => {
    const { w, t0, evictions, drainIt } = world();
    w.cluster.addPod(pod({ name: 'web-1', labels: { app: 'web' } }));
    w.cluster.budgets.set('default/web', { disruptionsAllowed: 0, processed: true });
    w.cluster.evictionRules.push(budgetRefuses(w.cluster, 'web', (p) => p.labels?.['app'] === 'web'));
    // A replacement becomes Ready elsewhere 30 s on: the budget allows one disruption.
    w.clock.at(t0 + 30_000, () => w.cluster.budgets.set('default/web', { disruptionsAllowed: 1, processed: true }));

    const step = await drainIt();

    expect(step).toMatchObject({ outcome: 'drained', evictedTotal: 1 });
    // Refused (the namespace's budgets are watched from then on), then asked once more after the
    // opening (within a look: at most 10 s), not every few seconds.
    const at = evictions('web-1');
    expect(at).toHaveLength(2);
    expect(at[0]).toBe(0);
    expect(at[1]).toBeGreaterThanOrEqual(30);
    expect(at[1]).toBeLessThanOrEqual(40);
    expect(w.cluster.calls.filter((c) => c.op === 'watch-budget').map((c) => c.target)).toEqual(['default']);
    expect(w.cluster.budgetWatches.every((b) => b.closed)).toBe(true);
    expect(w.cluster.reasons().filter((r) => r.endsWith('/EvictionBlocked'))).toEqual([
      'Pod/EvictionBlocked',
      'Node/EvictionBlocked',
    ]);
  });

  it('asks no more of the node’s pods at once than the budget allows, each evicted once', async () => {
    const { w, evictions, drainIt } = world();
    for (const name of ['web-1', 'web-2', 'web-3', 'web-4'])
      w.cluster.addPod(pod({ name, labels: { app: 'web' }, terminationMs: 1_000 }));
    w.cluster.budgets.set('default/web', { disruptionsAllowed: 1, processed: true });
    w.cluster.evictionRules.push(budgetRefuses(w.cluster, 'web', (p) => p.labels?.['app'] === 'web'));
    // Each evicted pod's replacement is Ready 5 s later: one more disruption allowed.
    w.cluster.onEvicted = () =>
      w.clock.after(5_000, () => {
        const b = w.cluster.budgets.get('default/web')!;
        w.cluster.budgets.set('default/web', { ...b, disruptionsAllowed: b.disruptionsAllowed + 1 });
      });

    const step = await drainIt();

    expect(step).toMatchObject({ outcome: 'drained', evictedTotal: 4 });
    // The first pass asks all four (nothing known yet): one goes, three are refused (the watch
    // opens). After that every ask is granted: one per opening.
    expect(evictions()).toHaveLength(4 + 3);
    expect(w.cluster.calls.filter((c) => c.op === 'watch-budget')).toHaveLength(1);
  });

  it('watches a namespace’s budgets once for all its refused pods, each waiting on its own budget', async () => {
    const { w, t0, evictions, drainIt } = world();
    for (const app of ['web', 'cart']) {
      w.cluster.addPod(pod({ name: `${app}-1`, labels: { app } }));
      w.cluster.budgets.set(`default/${app}`, { disruptionsAllowed: 0, processed: true });
      w.cluster.evictionRules.push(budgetRefuses(w.cluster, app, (p) => p.labels?.['app'] === app));
    }
    w.clock.at(t0 + 20_000, () => w.cluster.budgets.set('default/cart', { disruptionsAllowed: 1, processed: true }));
    w.clock.at(t0 + 40_000, () => w.cluster.budgets.set('default/web', { disruptionsAllowed: 1, processed: true }));

    const step = await drainIt();

    expect(step).toMatchObject({ outcome: 'drained', evictedTotal: 2 });
    expect(w.cluster.calls.filter((c) => c.op === 'watch-budget').map((c) => c.target)).toEqual(['default']);
    const [cart, web] = [evictions('cart-1'), evictions('web-1')];
    expect([cart.length, web.length]).toEqual([2, 2]);
    expect(cart[1]).toBeGreaterThanOrEqual(20);
    expect(cart[1]).toBeLessThan(web[1]!);
    expect(web[1]).toBeGreaterThanOrEqual(40);
    expect(w.cluster.budgetWatches.every((b) => b.closed)).toBe(true);
  });

  it('is retried on today’s cadence when its budget cannot be watched (not seen, RBAC without watch)', async () => {
    const { w, evictions, drainIt } = world();
    w.cluster.addPod(pod({ name: 'web-1' }));
    w.cluster.evictionRules.push(pdbBlocks('web', () => true));

    await drainIt({ settings: { deadlinePolicy: DeadlinePolicy.LEAVE } });

    // 500 ms doubling to 10 s, as before the watch (rules.retryDelayMs).
    expect(evictions('web-1').slice(0, 7)).toEqual([0, 0.5, 1.5, 3.5, 7.5, 15.5, 25.5]);
  });

  // Found by the cluster suite: the pod was refused while another pod of the budget was leaving ("has 2 currently"),
  // then waited on the watch unasked; minutes later the long-block report told that old answer.
  it('tells a long block with the budget as its status says now, without asking the pod again', async () => {
    const { w, evictions, drainIt } = world();
    w.cluster.addPod(pod({ name: 'web-1', labels: { app: 'web' } }));
    w.cluster.budgets.set('default/web', {
      disruptionsAllowed: 0,
      processed: true,
      currentHealthy: 1,
      desiredHealthy: 1,
    });
    w.cluster.evictionRules.push(budgetRefuses(w.cluster, 'web', () => true));

    await drainIt({ settings: { deadlinePolicy: DeadlinePolicy.LEAVE, blockedReportSeconds: 60 } });

    const long = w.cluster.events.filter((e) => e.reason === 'EvictionBlockedLong' && e.regarding.kind === 'Node');
    expect(long).toHaveLength(1);
    expect(long[0]!.message).toContain('The disruption budget web needs 1 healthy pods and has 1 currently.');
    expect(long[0]!.message).not.toContain('has 2 currently');
    expect(evictions('web-1')).toHaveLength(1);
  });

  it('is forced at the same moment as without the watch when the budget never opens', async () => {
    const forcedAt = async (watched: boolean) => {
      const { w, evictions, drainIt } = world();
      w.cluster.addPod(pod({ name: 'web-1', labels: { app: 'web' }, terminationGracePeriodSeconds: 30 }));
      if (watched) w.cluster.budgets.set('default/web', { disruptionsAllowed: 0, processed: true });
      w.cluster.evictionRules.push(budgetRefuses(w.cluster, 'web', () => true));
      const step = await drainIt({ settings: { deadlinePolicy: DeadlinePolicy.FORCE } });
      expect(step).toMatchObject({ outcome: 'timed-out' });
      return { deletions: w.cluster.deletions.map((d) => d.atMs - w.clock.now()), asks: evictions('web-1').length };
    };
    const watched = await forcedAt(true);
    const unwatched = await forcedAt(false);

    expect(watched.deletions).toEqual(unwatched.deletions);
    expect(watched.deletions).toHaveLength(1);
    // Asked once while watched, against one ask every 10 s until the deadline without.
    expect(watched.asks).toBe(1);
    expect(unwatched.asks).toBeGreaterThan(25);
  });

  it('is told by an Event only when its budget refuses it a second time (or a look finds it closed)', async () => {
    const { w, evictions, drainIt } = world();
    w.cluster.addPod(pod({ name: 'web-1' }));
    let n = 0;
    w.cluster.evictionRules.push((p) => (++n === 1 ? pdbBlocks('web', () => true)(p) : 'accept'));

    await drainIt();

    expect(evictions('web-1')).toEqual([0, 0.5]);
    expect(w.cluster.reasons().filter((r) => r.endsWith('/EvictionBlocked'))).toEqual([]);
    expect(w.log.lines.filter((l) => l.message === 'eviction blocked, will retry')).toHaveLength(1);
    // The namespace's budgets were watched from the refusal on (this one was not seen there: asked on the retry
    // cadence), and the watch closed with the drain.
    expect(w.cluster.calls.filter((c) => c.op === 'watch-budget')).toHaveLength(1);
    expect(w.cluster.budgetWatches.every((b) => b.closed)).toBe(true);
  });

  it('is told once per budget even when the answers alternate (a budget, a server error, the budget)', async () => {
    const { w, drainIt } = world();
    w.cluster.addPod(pod({ name: 'web-1' }));
    let n = 0;
    w.cluster.evictionRules.push((p) => {
      n++;
      if (n >= 5) return 'accept';
      return n === 2
        ? {
            kind: 'blocked',
            reason: 'server-error',
            message: 'timeout',
            retryAfterSeconds: undefined,
            budgetName: undefined,
          }
        : pdbBlocks('web', () => true)(p);
    });

    await drainIt();

    expect(n).toBe(5);
    expect(w.cluster.reasons().filter((r) => r.endsWith('/EvictionBlocked'))).toEqual([
      'Pod/EvictionBlocked',
      'Node/EvictionBlocked',
    ]);
    expect(w.log.lines.filter((l) => l.message === 'eviction blocked, will retry')).toHaveLength(2);
  });
});

describe('BudgetWaits', () => {
  const attempt = (count: number): Attempt => ({
    count,
    nextAtMs: 0,
    lastBlock: undefined,
    blockedSinceMs: 0,
    reportedLong: false,
  });

  it('looks at a closed budget again on the retry cadence, jittered between half and all of it', () => {
    const views = new Map([['default/web', { disruptionsAllowed: 0, processed: true }]]);
    const watchBudgets = (namespace: string) => ({
      current: (name: string) => views.get(`${namespace}/${name}`),
      close: () => {},
    });
    const p = pod({ name: 'web-1' });
    const attempts = new Map([[p.uid, attempt(1)]]);
    const at = (random: number) => {
      const waits = new BudgetWaits({ watchBudgets }, () => random);
      expect(waits.refused(p, 'web')).toBe(1);
      // The first look that finds it closed is not told; the second is, as a second refusal would have been.
      expect(waits.admit([p], attempts, 1_000)).toEqual({ ask: [], stillClosed: [] });
      const firstLookNextAtMs = attempts.get(p.uid)!.nextAtMs;
      expect(waits.admit([p], attempts, firstLookNextAtMs)).toEqual({ ask: [], stillClosed: [p] });
      attempts.get(p.uid)!.nextAtMs = 0;
      return firstLookNextAtMs;
    };
    // One refusal and one closed look: the delay of a second refusal (1 s).
    expect([at(0), at(0.999_999)]).toEqual([1_500, 2_000]);

    views.set('default/web', { disruptionsAllowed: 3, processed: false });
    expect(at(0)).toBe(1_500);
    views.set('default/web', { disruptionsAllowed: 1, processed: true });
    const waits = new BudgetWaits({ watchBudgets }, () => 0);
    waits.refused(p, 'web');
    expect(waits.admit([p], attempts, 1_000)).toEqual({ ask: [p], stillClosed: [] });
  });
});
