// Phase 2, mark: one patch (owner, label, cordon, record), and where every later phase reads
// its deadlines from: the record, never the message.
import { describe, expect, it } from 'vitest';
import { actionIdOfToken } from '../../../lambda/cluster/marks/action-id.js';
import { excludeFromLoadBalancersLabel } from '../../../lambda/cluster/marks/mark-keys.js';
import { AwsCallCount, patient } from '../../../lambda/adapters/aws/aws-patience.js';
import { mark } from '../../../lambda/termination/mark.js';
import { surveyPatienceMs } from '../../../lambda/termination/siblings.js';
import { instanceId, phaseWorld, token } from '../../fakes/phase-world.js';
import { lifecycleAction, markedAhead } from '../../fixtures/drain-sources.js';

describe('mark', () => {
  it('labels, cordons and writes the record with its owner in one patch, and says so on the node', async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId);
    const step = await mark(w.run(), w.verified());
    expect(w.cluster.calls.map((c) => `${c.op} ${c.target}`)).toEqual(['mark node-a label cordon']);
    expect(w.cluster.nodes.get('node-a')).toMatchObject({
      unschedulable: true,
      labels: { [excludeFromLoadBalancersLabel]: 'true', 'graceful-node-termination/owner': 'gnt-test' },
      drain: { source: lifecycleAction(token, 'workers-terminate'), set: ['exclude-from-load-balancers', 'cordon'] },
    });
    expect(w.cluster.reasons()).toEqual(['Node/DrainStarted', 'Node/Cordoned']);
    expect(step).toMatchObject({ record: { source: { actionId: actionIdOfToken(token) } } });
  });

  it('never dates the notification in the future: a Time ahead of now is taken as now', async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId);
    await mark(w.run({ notifiedAtMs: w.clock.now() + 3_600_000 }), w.verified());
    expect(w.cluster.nodes.get('node-a')!.drain!.notifiedAtMs).toBe(w.clock.now());
  });

  it('on a hand-off keeps the record: the deadlines come from when it was first notified, not from the message', async () => {
    const w = phaseWorld();
    const first = w.clock.now();
    w.cluster.addNode('node-a', instanceId);
    await mark(w.run(), w.verified());
    w.clock.advanceTo(first + 600_000);
    const planned: number[] = [];
    // A forged or replayed hand-off with an old Time: the plan is still asked about the record's.
    const step = await mark(
      w.run({
        // Published under the claim the node holds (verify lets no other hand-off this far).
        handOff: { count: 1, claim: w.cluster.nodes.get('node-a')!.handOffClaim, byReconciler: false },
        notifiedAtMs: 0,
        deadlinesFrom: (ms) => (planned.push(ms), w.deadlines()),
      }),
      w.verified(),
    );
    expect(planned).toEqual([first]);
    expect(step).toMatchObject({ record: { notifiedAtMs: first, startedAtMs: first, updatedAtMs: first + 600_000 } });
    // The second write only dates the record (the reconciler sees the chain is alive); no new Events.
    const marks = w.cluster.calls.filter((c) => c.op === 'mark');
    expect(marks).toHaveLength(2);
    expect(w.cluster.nodes.get('node-a')!.drain).toMatchObject({ notifiedAtMs: first, updatedAtMs: first + 600_000 });
    expect(w.cluster.reasons()).toEqual(['Node/DrainStarted', 'Node/Cordoned']);
  });

  it('a resumed drain that puts back a cordon someone took off records it as ours, so it is taken back too (issue 27)', async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId, { unschedulable: true });
    await mark(w.run(), w.verified());
    expect(w.cluster.nodes.get('node-a')!.drain!.set).toEqual(['exclude-from-load-balancers']);
    w.cluster.updateNode('node-a', { unschedulable: false });
    const claim = w.cluster.nodes.get('node-a')!.handOffClaim;
    await mark(w.run({ handOff: { count: 1, claim, byReconciler: false } }), w.verified());
    expect(w.cluster.nodes.get('node-a')).toMatchObject({
      unschedulable: true,
      drain: { set: ['exclude-from-load-balancers', 'cordon'] },
    });
  });

  it('records the volumes the node has attached when the drain begins, before any pod leaves (issue 27)', async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId);
    w.cluster.attach('pv-data');
    await mark(w.run(), w.verified());
    expect(w.cluster.nodes.get('node-a')!.drain!.volumes).toEqual(['kubernetes.io/csi/ebs.csi.aws.com^pv-data']);
  });

  it('the best-effort sibling survey gives a throttled Auto Scaling seconds, not the minute, before the first eviction (issue 27)', async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId);
    const throttled = Object.assign(new Error('Rate exceeded'), { name: 'Throttling' });
    const instances = patient(
      { leavingGroup: async (): Promise<string[]> => Promise.reject(throttled) },
      'autoscaling',
      { clock: w.clock, count: new AwsCallCount() },
    );
    const started = w.clock.now();
    await mark(
      { ...w.run({ settings: { cordonDoomedSiblings: true } }), deps: { ...w.deps, instances } },
      w.verified(),
    );
    expect(w.clock.now() - started).toBeLessThanOrEqual(surveyPatienceMs);
    expect(
      w.log.messages('warn').some((m) => m.includes("could not look up the group's other leaving instances")),
    ).toBe(true);
  });

  it('remembers a load-balancer label an operator set to "false", so it is restored, not removed', async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId, { labels: { [excludeFromLoadBalancersLabel]: 'false' } });
    await mark(w.run(), w.verified());
    expect(w.cluster.nodes.get('node-a')!.drain).toMatchObject({
      priorLabel: 'false',
      set: ['exclude-from-load-balancers', 'cordon'],
    });
  });

  it("adopts marks a sibling's drain set ahead, keeping them ours to take back", async () => {
    const w = phaseWorld();
    const ahead = {
      source: markedAhead('workers-terminate'),
      notifiedAtMs: 0,
      startedAtMs: 0,
      updatedAtMs: 0,
      set: ['exclude-from-load-balancers' as const, 'cordon' as const],
      aheadOf: 'i-0bbbbbbbbbbbbbbbb',
    };
    w.cluster.addNode('node-a', instanceId, {
      unschedulable: true,
      labels: { [excludeFromLoadBalancersLabel]: 'true' },
      drain: ahead,
    });
    await mark(w.run(), w.verified());
    expect(w.cluster.nodes.get('node-a')!.drain).toMatchObject({
      source: { kind: 'lifecycle-action', actionId: actionIdOfToken(token) },
      set: ['exclude-from-load-balancers', 'cordon'],
      aheadOf: 'i-0bbbbbbbbbbbbbbbb',
    });
    expect(w.cluster.events.find((e) => e.reason === 'Cordoned')?.message).toMatch(
      /cordoned ahead by the drain of i-0bbbbbbbbbbbbbbbb/,
    );
  });

  it('completes when the node was deleted meanwhile', async () => {
    const w = phaseWorld();
    w.cluster.addNode('node-a', instanceId);
    const verified = w.verified();
    w.cluster.nodes.delete('node-a');
    expect(await mark(w.run(), verified)).toEqual({
      stop: { complete: expect.objectContaining({ outcome: 'node-gone', verdict: 'CONTINUE' }) },
    });
  });
});
