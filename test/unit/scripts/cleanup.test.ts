// cleanup (scripts/cleanup.ts) with Auto Scaling stubbed at the SDK edge and the nodes in memory:
// which group tags it takes back (the deployment's, by its hooks, or named), that a dry run
// writes nothing, and what it says. The node writes themselves run on the real plane
// (test/cluster/cleanup.test.ts).
import {
  AutoScalingClient,
  DeleteTagsCommand,
  DescribeLifecycleHooksCommand,
  DescribeTagsCommand,
} from '@aws-sdk/client-auto-scaling';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../../lambda/cluster/model.js';
import { marksOnNode } from '../../../lambda/cluster/marks/mark-inventory.js';
import { autoScalingGroupTags, renderCleanup, runCleanup, type CleanupDeps } from '../../../scripts/cleanup.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

const asg = mockClient(AutoScalingClient);
const tag = 'graceful-node-termination/refresh-strategy';
const hooksOf: Record<string, string[]> = {
  'group-a': ['gnt-launch', 'gnt-terminate'],
  'group-b': ['other-launch', 'other-terminate'],
  'group-c': [],
};

const node = (name: string, o: Partial<NodeInfo> = {}): NodeInfo => ({
  name,
  uid: `uid-${name}`,
  providerId: `aws:///eu-west-1a/i-${name}`,
  unschedulable: false,
  ready: true,
  taints: [],
  ...o,
  labels: { 'graceful-node-termination/owner': 'gnt', ...o.labels },
});

function deps(nodes: NodeInfo[]) {
  const writes: string[] = [];
  const d: CleanupDeps = {
    nodes: {
      listMarked: async () => nodes,
      unmark: async (n) => (writes.push(`unmark ${n.name}`), 'patched'),
      unmarkOutdated: async (group, select) => (
        writes.push(`unmarkOutdated ${group} ${select.nodes?.map((n) => n.name).join(',')}`),
        []
      ),
      unmarkMigrating: async (n) => (writes.push(`unmarkMigrating ${n.name}`), { result: 'patched', removed: [] }),
    },
    removeLeftovers: async (n) => (writes.push(`leftovers ${n.name}`), 'patched'),
    groups: autoScalingGroupTags(new AutoScalingClient({ region: 'eu-west-1' })),
  };
  return { d, writes };
}

describe('cleanup', () => {
  beforeEach(() => {
    asg.reset();
    asg.on(DescribeTagsCommand).resolves({
      Tags: ['group-a', 'group-b', 'group-c'].map((g) => ({
        ResourceId: g,
        ResourceType: 'auto-scaling-group',
        Key: tag,
        Value: 'minimal:r-1',
      })),
    });
    for (const [group, hooks] of Object.entries(hooksOf)) {
      asg.on(DescribeLifecycleHooksCommand, { AutoScalingGroupName: group }).resolves({
        LifecycleHooks: hooks.map((h) => ({
          LifecycleHookName: h,
          LifecycleTransition: `autoscaling:EC2_INSTANCE_${h.endsWith('launch') ? 'LAUNCHING' : 'TERMINATING'}`,
        })),
      });
    }
    asg.on(DeleteTagsCommand).resolves({});
  });

  it('a dry run lists the marks and the group tags of the deployment, and writes nothing', async () => {
    const marked = node('n-1', {
      unschedulable: true,
      handOffClaim: 'sha256:x/1/r',
      labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' },
    });
    const { d, writes } = deps([marked]);

    const result = await runCleanup({ deployment: 'gnt', dryRun: true, groups: ['group-c'] }, d);

    expect(writes).toEqual([]);
    expect(asg.commandCalls(DeleteTagsCommand)).toHaveLength(0);
    expect(result).toEqual({
      deployment: 'gnt',
      dryRun: true,
      nodes: [{ node: 'n-1', marks: marksOnNode(marked) }],
      groups: ['group-a', 'group-c'],
      groupsLeft: ['group-b'],
    });
    expect(renderCleanup(result).split('\n')).toEqual([
      'node n-1:',
      '  annotation graceful-node-termination/hand-off: removed',
      '  label graceful-node-termination/owner=gnt: removed',
      `group group-a: tag ${tag}: removed`,
      `group group-c: tag ${tag}: removed`,
      `group group-b: tag ${tag} left alone (its hooks do not name gnt; pass --group group-b to include it)`,
      'dry run: would take back 2 mark(s) on 1 node(s) and 2 group tag(s) of deployment gnt; nothing was changed',
    ]);
  });

  it("takes back a drain's marks first, then a refresh's, then what is left; and untags only the deployment's groups", async () => {
    const drained = node('n-1', {
      drain: {
        source: lifecycleAction('sha256:a', 'gnt-terminate'),
        notifiedAtMs: 0,
        startedAtMs: 0,
        updatedAtMs: 0,
        set: ['cordon'],
      },
    });
    const refreshed = node('n-2', { refreshGroup: 'group-a', labels: { 'graceful-node-termination/refresh': 'r-1' } });
    const { d, writes } = deps([drained, refreshed]);

    await runCleanup({ deployment: 'gnt', dryRun: false, groups: [] }, d);

    expect(writes).toEqual(['unmark n-1', 'unmarkOutdated group-a n-2', 'leftovers n-1', 'leftovers n-2']);
    expect(asg.commandCalls(DeleteTagsCommand).map((c) => c.args[0].input.Tags)).toEqual([
      [{ ResourceId: 'group-a', ResourceType: 'auto-scaling-group', Key: tag }],
    ]);
  });
});
