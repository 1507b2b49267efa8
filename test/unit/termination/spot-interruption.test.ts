// A Spot interruption warning (termination/spot-interruption.ts) is believed only when EC2 says so: the instance's
// Spot request is marked for termination, stop or hibernation (or terminated for capacity), read again when the
// warning outran it; anyone who may invoke the function cannot make it cordon or delete by forging one.
import { describe, expect, it } from 'vitest';
import { ServiceBusyError } from '../../../lambda/shared/errors.js';
import { handlerWorld, pdbBlocks, pod } from '../../fakes/fake-world.js';
import { spotInterruptionWarning } from '../../fixtures/deliveries.js';
import { handOffDeploymentEnv, instanceId } from '../../fixtures/notifications.js';

const env = handOffDeploymentEnv;
type World = ReturnType<typeof handlerWorld>;

// From the adversarial review of issue 19 ("Found": broke e12925a; was test/unit/review/attacks.test.ts).
describe('a Spot warning EC2 did not give', () => {
  // Found (high). A Spot warning was "confirmed" only by the instance's group: nothing asked
  // AWS whether EC2 really scheduled an interruption, or whether the instance is Spot at all.
  // Anyone who may invoke the function (the threat the terminate hook's heartbeat answers)
  // cordoned any InService node of the group and, under force, deleted its pods past their
  // budgets ~105 s later. Being Spot is no confirmation either: EC2 marks the Spot request
  // (marked-for-termination, or instance-terminated-no-capacity at once) when it gives notice.
  // Found again by the second review (high): any failure to ask EC2 let the warning stand, but
  // EC2's request rate is per account and Region: whoever can invoke the function (sending
  // forged warnings in bulk, each up to six EC2 calls) or holds any ec2:Describe* right can make
  // it throttle. Throttled or failing (5xx) through every retry, EC2 is busy, not absent.
  it.each([
    ['On-Demand', () => {}],
    [
      'Spot that EC2 never warned (its request read three times, 2 s apart)',
      (w: World) => w.ec2.spot.set(instanceId, 'fulfilled'),
    ],
    [
      'On-Demand while EC2 throttles the drainer',
      (w: World) =>
        (w.ec2.failure = new ServiceBusyError(
          'ec2:DescribeInstances failed after 4 attempts: HTTP 503 RequestLimitExceeded: Request limit exceeded.',
        )),
    ],
  ])(
    'a forged Spot warning for an InService %s instance writes nothing',
    async (_what, setUp: (w: World) => unknown) => {
      const world = handlerWorld(env);
      world.cluster.addNode('node-a', instanceId);
      world.groups.set(instanceId, 'workers');
      setUp(world);
      const web = world.cluster.addPod(pod({ name: 'web' }));
      world.cluster.evictionRules.push(pdbBlocks('web-pdb', (p) => p.uid === web.uid));

      const result = await world.invokeRaw(
        world.handler(),
        spotInterruptionWarning(instanceId, new Date(world.clock.now()).toISOString()),
      );

      expect({
        status: result.records[0]!.status,
        cordoned: world.cluster.nodes.get('node-a')!.unschedulable,
        forceDeleted: world.cluster.deletions.map((d) => d.pod),
      }).toEqual({ status: 'refused', cordoned: false, forceDeleted: [] });
    },
  );
});

// From the second adversarial review (these held; was test/unit/review/attacks-2.test.ts).
describe('a Spot warning EC2 gave, and one for a group we do not serve', () => {
  it.each([
    ['terminate', 'marked-for-termination'],
    ['stop', 'marked-for-stop'],
    ['hibernate', 'marked-for-hibernation'],
    ['terminate', 'instance-terminated-no-capacity'],
  ])('a real Spot warning (%s, request %s) is believed and drains', async (action, status) => {
    const world = handlerWorld(env);
    world.cluster.addNode('node-a', instanceId);
    world.groups.set(instanceId, 'workers');
    world.ec2.spot.set(instanceId, status);
    world.cluster.addPod(pod({ name: 'web' }));
    const warning = spotInterruptionWarning(instanceId, new Date(world.clock.now()).toISOString());
    (warning['detail'] as Record<string, unknown>)['instance-action'] = action;
    const result = await world.invokeRaw(world.handler(), warning);
    expect(result.records[0]!.status).not.toBe('refused');
    expect(world.cluster.nodes.get('node-a')!.unschedulable).toBe(true);
    expect(world.cluster.podsOn('node-a')).toEqual([]);
  });

  it('a real Spot warning that outran its request status (fulfilled on the first read only) is believed', async () => {
    const world = handlerWorld(env);
    world.cluster.addNode('node-a', instanceId);
    world.groups.set(instanceId, 'workers');
    world.ec2.spot.set(instanceId, 'fulfilled');
    world.clock.after(1_000, () => world.ec2.spot.set(instanceId, 'marked-for-termination'));
    const result = await world.invokeRaw(
      world.handler(),
      spotInterruptionWarning(instanceId, new Date(world.clock.now()).toISOString()),
    );
    expect(result.records[0]!.status).not.toBe('refused');
    expect(world.cluster.nodes.get('node-a')!.unschedulable).toBe(true);
  });

  it('a forged Spot warning for an instance of a group we do not serve, or with SPOT_INTERRUPTIONS=false, asks EC2 nothing and writes nothing', async () => {
    const world = handlerWorld(env);
    world.cluster.addNode('node-a', instanceId);
    world.ec2.spot.set(instanceId, 'marked-for-termination');
    world.groups.set(instanceId, 'someone-elses');
    const warning = () => spotInterruptionWarning(instanceId, new Date(world.clock.now()).toISOString());
    expect((await world.invokeRaw(world.handler(), warning())).records[0]!.status).toBe('refused');
    world.groups.set(instanceId, 'workers');
    expect((await world.invokeRaw(world.handler({ SPOT_INTERRUPTIONS: 'false' }), warning())).records[0]!.status).toBe(
      'refused',
    );
    expect(world.ec2.calls).toEqual([]);
    expect(world.cluster.calls.filter((c) => c.op !== 'list-nodes' && c.op !== 'get-nodes')).toEqual([]);
  });
});
