// The scale-in of the termination policy's demo and bench (issue 29): a group of three nodes
// where Auto Scaling's own suggestion (its default policy knows nothing of pods) comes in the
// order busy, web, idle. The busy node runs a 20-second batch Job and the only replica of a
// checkout service, with one nginx pod; the web node both replicas of an nginx service; the idle node only
// DaemonSets. The policy should give the idle node; Auto Scaling alone would take the busy one.
import {
  createDaemonSet,
  createDeployment,
  ensureNamespace,
  newInstanceId,
  podsOn,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from '../test/cluster/kube.js';
import { groupArnOf } from '../test/fixtures/choice.js';
import type { Environment } from './environment.js';
import { groupName } from './environment.js';

export interface ChoiceNode {
  readonly name: string;
  readonly instanceId: string;
  readonly role: 'busy' | 'web' | 'idle';
}

export const jobSeconds = 20;
const zone = 'eu-west-1a';

export async function createChoiceWorld(env: Environment, prefix = 'choice'): Promise<ChoiceNode[]> {
  const a = env.admin;
  const nodes: ChoiceNode[] = (['busy', 'web', 'idle'] as const).map((role) => ({
    name: `${prefix}-${role}`,
    instanceId: newInstanceId(),
    role,
  }));
  for (const n of nodes) await env.addNode(n.name, n.instanceId, { 'choice-slot': n.role });
  for (const n of nodes) await waitNodeReady(a, n.name);
  await ensureNamespace(a, 'shop');
  await createDaemonSet(a, 'kube-system', 'kube-proxy');
  await createDeployment(a, 'shop', 'checkout', 1, { nodeSelector: { 'choice-slot': 'busy' }, deleteDelay: '1s' });
  await createDeployment(a, 'shop', 'nginx-a', 1, { nodeSelector: { 'choice-slot': 'busy' }, deleteDelay: '1s' });
  await createDeployment(a, 'shop', 'nginx-b', 2, { nodeSelector: { 'choice-slot': 'web' }, deleteDelay: '1s' });
  await waitDeploymentReady(a, 'shop', 'checkout', 1);
  await waitDeploymentReady(a, 'shop', 'nginx-a', 1);
  await waitDeploymentReady(a, 'shop', 'nginx-b', 2);
  await startJob(env, nodes[0]!, 'nightly-report');
  return nodes;
}

/** What Auto Scaling sends the policy for a scale-in by one: every instance suggested, in its order. */
export function scaleInPayload(nodes: readonly ChoiceNode[]): Record<string, unknown> {
  return {
    AutoScalingGroupARN: groupArnOf(groupName),
    AutoScalingGroupName: groupName,
    CapacityToTerminate: [{ AvailabilityZone: zone, Capacity: 1, InstanceMarketOption: 'on-demand' }],
    Instances: nodes.map((n) => ({
      AvailabilityZone: zone,
      InstanceId: n.instanceId,
      InstanceType: 'm7g.large',
      InstanceMarketOption: 'on-demand',
    })),
    Cause: 'SCALE_IN',
  };
}

/** A batch Job of `jobSeconds` on the node (kwok ends it then), Running when this returns. */
export async function startJob(env: Environment, node: ChoiceNode, name: string): Promise<void> {
  const a = env.admin;
  await a.batch.createNamespacedJob({
    namespace: 'shop',
    body: {
      metadata: { name },
      spec: {
        backoffLimit: 0,
        template: {
          // kwok reads the jitter as the latest end: both set, the Job runs exactly this long once Running.
          metadata: {
            annotations: {
              'pod-complete.stage.kwok.x-k8s.io/delay': `${jobSeconds}s`,
              'pod-complete.stage.kwok.x-k8s.io/jitter-delay': `${jobSeconds}s`,
            },
          },
          spec: {
            restartPolicy: 'Never',
            nodeSelector: { 'choice-slot': node.role },
            containers: [{ name: 'report', image: 'registry.k8s.io/pause:3.10' }],
            automountServiceAccountToken: false,
          },
        },
      },
    },
  });
  await until(`the batch Job ${name} Running`, 30_000, async () =>
    (await podsOn(a, node.name)).some(
      (p) => p.metadata?.labels?.['job-name'] === name && p.status?.phase === 'Running',
    ),
  );
}
