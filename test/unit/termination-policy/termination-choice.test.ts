// The termination policy end to end in the fake world: the router answers Auto Scaling with
// the cheapest departures, defers, fails open, and tells the story in Events and metrics.
import { beforeEach, describe, expect, it } from 'vitest';
import { deferralAnnotation } from '../../../lambda/cluster/marks/mark-keys.js';
import { handlerWorld } from '../../fakes/fake-world.js';
import { choicePayload, costPod } from '../../fixtures/choice.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate',
  TERMINATION_DEFERRAL_MAX_SECONDS: '300',
};
const [busy, idle, batch] = ['i-0000000000000000a', 'i-0000000000000000b', 'i-0000000000000000c'];

describe('the termination policy', () => {
  let world: ReturnType<typeof handlerWorld>;
  beforeEach(() => {
    world = handlerWorld(env);
    for (const [id, name] of [
      [busy, 'node-busy'],
      [idle, 'node-idle'],
      [batch, 'node-batch'],
    ] as const) {
      world.cluster.addNode(name, id);
      world.groups.set(id, 'workers');
    }
    world.cluster.choicePods.set('node-busy', [
      costPod('api', { owner: { kind: 'ReplicaSet', name: 'api', readyReplicas: 1 } }),
      costPod('web'),
    ]);
    world.cluster.choicePods.set('node-idle', [costPod('ds', { kind: 'DaemonSet' })]);
    world.cluster.choicePods.set('node-batch', [costPod('report', { kind: 'Job' })]);
  });
  const ask = (
    ids: readonly string[],
    o: Parameters<typeof choicePayload>[1] = {},
    extra: Record<string, string> = {},
  ) => world.invokeChoice(world.handler(extra), choicePayload(ids, o));
  const events = (reason: string) =>
    world.cluster.events.filter((e) => e.reason === reason).map((e) => `${e.regarding.name}: ${e.message}`);

  it('gives the idle node where Auto Scaling suggested the busy and the batch ones first', async () => {
    expect(await ask([busy, batch, idle])).toEqual({ InstanceIDs: [idle] });
    expect(events('ChosenForTermination')).toEqual([
      'node-idle: Chosen for SCALE_IN (the cheapest departure: rank 1 of 3): 0 pods to evict.',
    ]);
    expect(events('PassedOverForTermination').join('\n')).toMatch(
      /node-busy: .*ReplicaSet default\/api has no ready replica elsewhere/,
    );
    expect(events('PassedOverForTermination').join('\n')).toMatch(/node-batch: .*is a running Job pod/);
    expect(world.metrics.find((m) => m.values['TerminationsChosen'])?.values['TerminationsChosen']?.value).toBe(1);
  });

  it('defers when every candidate is costly, marks where it began, then answers the suggestion past the maximum', async () => {
    expect(await ask([busy, batch])).toEqual({ InstanceIDs: [] });
    expect(world.cluster.nodes.get('node-busy')?.deferral?.sinceMs).toBe(world.clock.now());
    expect(events('TerminationDeferred')).toHaveLength(2);
    expect(world.metrics.find((m) => m.values['TerminationsDeferred'])?.values['TerminationsDeferred']?.value).toBe(1);
    await world.clock.sleep(200_000);
    expect(await ask([busy, batch])).toEqual({ InstanceIDs: [] });
    // The deferral began at the first call: its marks are not moved on.
    expect(events('TerminationDeferred')).toHaveLength(2);
    await world.clock.sleep(100_000);
    expect(await ask([busy, batch])).toEqual({ InstanceIDs: [busy, batch] });
    expect(events('TerminationDeferralExpired')).toHaveLength(2);
    expect(world.metrics.some((m) => m.values['TerminationDeferralsExpired'])).toBe(true);
  });

  it('a long-past deferral mark (another scale-in) does not shorten a new one', async () => {
    world.cluster.nodes.set('node-busy', {
      ...world.cluster.nodes.get('node-busy')!,
      deferral: { sinceMs: world.clock.now() - 3_600_000, group: 'workers' },
    });
    expect(await ask([busy, batch])).toEqual({ InstanceIDs: [] });
    expect(world.cluster.nodes.get('node-busy')?.deferral?.sinceMs).toBe(world.clock.now());
  });

  it('outside the maintenance windows gives nothing, even the idle node, and says why', async () => {
    // The fake clock starts at 2026-11-22T10:00Z, a Sunday.
    expect(await ask([idle], {}, { MAINTENANCE_WINDOWS: '0 22 * * SAT for 2h' })).toEqual({ InstanceIDs: [] });
    expect(events('TerminationDeferred')[0]).toContain('outside the maintenance windows (0 22 * * SAT for 2h, UTC)');
    expect(await ask([idle], {}, { MAINTENANCE_WINDOWS: '0 9 * * SUN for 2h' })).toEqual({ InstanceIDs: [idle] });
  });

  it("answers Auto Scaling's own suggestion when the cluster cannot be read, logged and counted", async () => {
    const handle = world.handler({}, async () => {
      throw new Error('connect ECONNREFUSED');
    });
    expect(await world.invokeChoice(handle, choicePayload([busy, batch]))).toEqual({ InstanceIDs: [busy, batch] });
    expect(world.metrics.some((m) => m.values['TerminationPolicyFailedOpen'])).toBe(true);
    expect(world.log.lines.some((l) => l.message.startsWith('termination policy could not decide'))).toBe(true);
  });

  it('answers the suggestion for a malformed payload, a group it does not serve and instances not in service', async () => {
    const p = choicePayload([busy]);
    delete p['Cause'];
    expect(await world.invokeChoice(world.handler(), p)).toEqual({ InstanceIDs: [busy] });
    expect(await ask([busy], { group: 'other' })).toEqual({ InstanceIDs: [busy] });
    world.terminating.add(busy);
    expect(await ask([busy])).toEqual({ InstanceIDs: [busy] });
    expect(world.cluster.events).toEqual([]);
  });

  it('observe mode says what it would choose and answers the suggestion, writing no mark', async () => {
    expect(await ask([busy, batch, idle], {}, { MODE: 'observe' })).toEqual({ InstanceIDs: [busy, batch, idle] });
    expect(events('TerminationChoiceObserved').join('\n')).toContain(
      'node-idle: Observe mode: for SCALE_IN the termination policy would choose this node',
    );
    expect([...world.cluster.nodes.values()].some((n) => n.deferral !== undefined)).toBe(false);
  });

  it('the reconciler takes a stale deferral mark back', async () => {
    await ask([busy, batch]);
    await world.clock.sleep(300_000 + 15 * 60_000);
    await world.invokeRaw(world.handler(), {
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      id: 'r1',
      time: new Date(world.clock.now()).toISOString(),
      detail: {},
      resources: [],
    });
    expect(world.cluster.nodes.get('node-busy')?.deferral).toBeUndefined();
    expect(deferralAnnotation).toBe('graceful-node-termination/deferred');
  });
});
