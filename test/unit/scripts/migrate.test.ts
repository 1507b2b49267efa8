// The migrate command's flow (scripts/migrate.ts) with Auto Scaling stubbed at the SDK edge and
// the cluster in memory: served groups checked in the plan, nothing changed without --approve,
// the old group shrunk a batch at a time with decrement, stopped on a drain that timed out,
// and the marks taken back on the nodes still there whatever the end.
import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeLifecycleHooksCommand,
  TerminateInstanceInAutoScalingGroupCommand,
  UpdateAutoScalingGroupCommand,
  type AutoScalingGroup,
} from '@aws-sdk/client-auto-scaling';
import type { CoreV1Api, CoreV1Event } from '@kubernetes/client-node';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ClusterEvent, NodeInfo, MigrationRecord } from '../../../lambda/cluster/model.js';
import { migratingTaintKey, migrationLabel } from '../../../lambda/cluster/marks/mark-keys.js';

import { runMigrate, type MigrateDeps } from '../../../scripts/migrate.js';
import { renderMigratePlan, type MigratePlan, type MigrateRequest } from '../../../scripts/migrate-plan.js';

const asg = mockClient(AutoScalingClient);
const request: MigrateRequest = {
  from: 'old',
  to: 'new',
  maxUnavailable: 1,
  cordonAll: false,
  leaseSeconds: 300,
  readyTimeoutSeconds: 0,
  batchTimeoutSeconds: 0,
  approve: true,
  region: 'eu-west-1',
};
const hooks = (group: string, deployment: string) => ({
  LifecycleHooks: [
    {
      LifecycleHookName: `${deployment}-launch`,
      AutoScalingGroupName: group,
      LifecycleTransition: 'autoscaling:EC2_INSTANCE_LAUNCHING',
    },
    {
      LifecycleHookName: `${deployment}-terminate`,
      AutoScalingGroupName: group,
      LifecycleTransition: 'autoscaling:EC2_INSTANCE_TERMINATING',
    },
  ],
});

function world(o: { timedOutOn?: string } = {}) {
  const groups = new Map<string, string[]>([
    ['old', ['i-o1', 'i-o2']],
    ['new', ['i-n1', 'i-n2']],
  ]);
  const nameOf = (id: string) => `node-${id.slice(2)}`;
  const nodes = new Map<string, NodeInfo>(
    [...groups.values()].flat().map((id) => [
      nameOf(id),
      {
        name: nameOf(id),
        uid: id,
        providerId: id,
        unschedulable: false,
        labels: {},
        ready: true,
        taints: [],
        resourceVersion: '1',
      },
    ]),
  );
  const recorded: ClusterEvent[] = [];
  const lines: string[] = [];
  const plans: MigratePlan[] = [];
  const terminated: string[] = [];
  const group = (name: string): AutoScalingGroup => ({
    AutoScalingGroupName: name,
    MinSize: name === 'old' ? 2 : 0,
    MaxSize: 4,
    DesiredCapacity: groups.get(name)!.length,
    DefaultCooldown: 300,
    AvailabilityZones: [],
    HealthCheckType: 'EC2',
    CreatedTime: new Date(),
    Instances: groups.get(name)!.map((InstanceId) => ({
      InstanceId,
      AvailabilityZone: 'a',
      LifecycleState: 'InService',
      HealthStatus: 'Healthy',
      ProtectedFromScaleIn: false,
    })),
  });
  asg.on(DescribeAutoScalingGroupsCommand).callsFake(async (input: { AutoScalingGroupNames: string[] }) => ({
    AutoScalingGroups: input.AutoScalingGroupNames.map(group),
  }));
  asg.on(TerminateInstanceInAutoScalingGroupCommand).callsFake(async (input: { InstanceId: string }) => {
    terminated.push(input.InstanceId);
    // Auto Scaling runs the hook; the drain ends and the instance and its node go, unless it is the one whose drain times out.
    if (nameOf(input.InstanceId) !== o.timedOutOn) {
      groups.set(
        'old',
        groups.get('old')!.filter((i) => i !== input.InstanceId),
      );
      nodes.delete(nameOf(input.InstanceId));
    }
    return {};
  });
  asg.on(UpdateAutoScalingGroupCommand).resolves({});
  const events: CoreV1Event[] = o.timedOutOn
    ? [
        {
          metadata: { resourceVersion: '9' },
          involvedObject: { kind: 'Node', name: o.timedOutOn },
          reason: 'DrainTimedOut',
          message: 'Drain deadline reached after 600 s',
          lastTimestamp: new Date(Date.now() + 60_000),
        },
      ]
    : [];
  const deps: MigrateDeps = {
    autoScaling: new AutoScalingClient({ region: 'eu-west-1' }),
    cluster: {
      getNode: async (name) => nodes.get(name),
      markMigrating: async (node, marks) => {
        const n = nodes.get(node.name)!;
        nodes.set(node.name, {
          ...n,
          labels: { ...n.labels, [migrationLabel]: marks.record.id },
          migration: marks.record,
          taints: marks.taint
            ? [...n.taints, { key: migratingTaintKey, effect: 'PreferNoSchedule', value: marks.record.id }]
            : n.taints,
          unschedulable: n.unschedulable || marks.cordon,
        });
        return 'patched';
      },
      unmarkMigrating: async (node) => {
        const { [migrationLabel]: _id, ...labels } = nodes.get(node.name)!.labels;
        nodes.set(node.name, { ...nodes.get(node.name)!, labels, migration: undefined, taints: [] });
        return { result: 'patched', removed: [] };
      },
      record: async (e) => void recorded.push(e),
    },
    core: {
      listPodForAllNamespaces: async () => ({ items: [] }),
      listEventForAllNamespaces: async () => ({ items: events }),
    } as unknown as CoreV1Api,
    nodesOf: async (ids) => new Map(ids.filter((id) => nodes.has(nameOf(id))).map((id) => [id, nameOf(id)])),
    out: (line) => lines.push(line),
    showPlan: (plan) => plans.push(plan),
    pollMs: 0,
    sleep: async () => {},
  };
  return { deps, nodes, recorded, lines, plans, terminated };
}

describe('migrate', () => {
  beforeEach(() => {
    asg.reset();
    asg
      .on(DescribeLifecycleHooksCommand)
      .callsFake(async (input: { AutoScalingGroupName: string }) => hooks(input.AutoScalingGroupName, 'gnt'));
  });

  it('refuses in one line when a group is not served by the deployment, before anything changes', async () => {
    asg
      .on(DescribeLifecycleHooksCommand)
      .callsFake(async (input: { AutoScalingGroupName: string }) =>
        input.AutoScalingGroupName === 'new' ? { LifecycleHooks: [] } : hooks('old', 'gnt'),
      );
    const w = world();
    const result = await runMigrate(request, w.deps);

    expect(result).toMatchObject({ exitCode: 3, status: 'refused' });
    expect(w.lines).toEqual([
      expect.stringMatching(/^refusing: no deployment serves both groups: new has no launch and terminate hooks/),
    ]);
    expect(w.terminated).toEqual([]);
  });

  it('shows the plan and changes nothing without --approve', async () => {
    const w = world();
    const result = await runMigrate({ ...request, approve: false }, w.deps);

    expect(result).toMatchObject({ exitCode: 0, status: 'planned' });
    const text = renderMigratePlan(w.plans[0]!).join('\n');
    expect(text).toMatch(/plan: migrate old -> new in eu-west-1 \(deployment gnt: both groups served\)/);
    expect(text).toMatch(/wait for: +2 Ready node\(s\) in new \(now 2\)/);
    expect(text).toMatch(/min size of old: +2 -> 0 first/);
    expect([...w.nodes.values()].every((n) => n.migration === undefined)).toBe(true);
    expect(w.lines.at(-1)).toMatch(/nothing was changed: run again with --approve/);
  });

  it('marks every old node, shrinks the old group one at a time with decrement, and ends at zero', async () => {
    const w = world();
    const result = await runMigrate(request, w.deps);

    expect(result).toMatchObject({ exitCode: 0, status: 'migrated', terminated: ['i-o1', 'i-o2'] });
    expect(asg.commandCalls(UpdateAutoScalingGroupCommand)[0]!.args[0].input).toEqual({
      AutoScalingGroupName: 'old',
      MinSize: 0,
    });
    expect(asg.commandCalls(TerminateInstanceInAutoScalingGroupCommand).map((c) => c.args[0].input)).toEqual([
      { InstanceId: 'i-o1', ShouldDecrementDesiredCapacity: true },
      { InstanceId: 'i-o2', ShouldDecrementDesiredCapacity: true },
    ]);
    expect(w.recorded.map((e) => [e.regarding.name, e.reason])).toEqual([
      ['node-o1', 'MarkedForMigration'],
      ['node-o2', 'MarkedForMigration'],
    ]);
    expect(w.lines.at(-1)).toMatch(/old is at zero/);
    // The new group's nodes were never marked.
    expect(w.nodes.get('node-n1')!.migration).toBeUndefined();
  });

  it('stops on the first drain that times out, terminates nothing more, and takes its marks back', async () => {
    const w = world({ timedOutOn: 'node-o1' });
    const result = await runMigrate(request, w.deps);

    expect(result).toMatchObject({ exitCode: 1, status: 'stopped', terminated: ['i-o1'] });
    expect(result.reason).toMatch(/^the drain of node-o1 timed out \(the DrainsTimedOut alarm\)/);
    for (const name of ['node-o1', 'node-o2'])
      expect(w.nodes.get(name)).toMatchObject({ migration: undefined, taints: [] });
  });

  it('cordons instead with --cordon-all, the record saying the cordon is ours', async () => {
    const w = world({ timedOutOn: 'node-o1' });
    const asked: { record: MigrationRecord; cordon: boolean; taint: boolean }[] = [];
    const mark = w.deps.cluster.markMigrating;
    w.deps.cluster.markMigrating = async (node, marks) => (asked.push(marks), mark(node, marks));
    await runMigrate({ ...request, cordonAll: true }, w.deps);

    expect(asked.map((m) => [m.cordon, m.taint, m.record.cordoned])).toEqual([
      [true, false, true],
      [true, false, true],
    ]);
  });

  it("Ctrl-C while the batch pods finish terminates nothing and leaves the old group's MinSize as it was", async () => {
    const w = world();
    let marked = false;
    const mark = w.deps.cluster.markMigrating;
    w.deps.cluster.markMigrating = async (node, marks) => ((marked = true), mark(node, marks));
    // Ctrl-C arrives once the old nodes are marked: during the wait for the batch pods.
    const result = await runMigrate(request, { ...w.deps, interrupted: () => marked });

    expect(result).toMatchObject({ exitCode: 130, status: 'interrupted' });
    expect(asg.commandCalls(UpdateAutoScalingGroupCommand)).toHaveLength(0);
    expect(w.terminated).toEqual([]);
    for (const name of ['node-o1', 'node-o2']) expect(w.nodes.get(name)).toMatchObject({ migration: undefined });
  });

  it("counts the new group's Ready nodes again before it shrinks: fewer than asked, it stops before terminating", async () => {
    const w = world();
    const mark = w.deps.cluster.markMigrating;
    // While the batch pods finish, the new group's nodes stop being Ready (scaled in, or NotReady).
    w.deps.cluster.markMigrating = async (node, marks) => {
      for (const name of ['node-n1', 'node-n2']) w.nodes.set(name, { ...w.nodes.get(name)!, ready: false });
      return mark(node, marks);
    };
    const result = await runMigrate(request, w.deps);

    expect(result).toMatchObject({
      exitCode: 1,
      status: 'stopped',
      reason: expect.stringMatching(/^new has fewer than 2 Ready node\(s\): stopped before the next batch/),
    });
    expect(w.terminated).toEqual([]);
    expect(asg.commandCalls(UpdateAutoScalingGroupCommand)).toHaveLength(0);
    for (const name of ['node-o1', 'node-o2']) expect(w.nodes.get(name)).toMatchObject({ migration: undefined });
  });

  /** The old nodes as another migration left them: its label, record, and its taint or cordon. */
  function markedBy(w: ReturnType<typeof world>, o: Pick<MigrationRecord, 'id' | 'renewedAtMs' | 'cordoned'>) {
    const other: MigrationRecord = { ...o, from: 'old', to: 'new', leaseSeconds: 300 };
    for (const name of ['node-o1', 'node-o2']) {
      const n = w.nodes.get(name)!;
      w.nodes.set(name, {
        ...n,
        labels: { ...n.labels, [migrationLabel]: other.id },
        migration: other,
        unschedulable: other.cordoned,
        taints: other.cordoned ? [] : [{ key: migratingTaintKey, effect: 'PreferNoSchedule', value: other.id }],
      });
    }
    return other;
  }

  it('refuses while another migrate still renews its lease on the old nodes, and changes nothing', async () => {
    const w = world();
    const other = markedBy(w, { id: 'm-1700000000-aaaa', renewedAtMs: Date.now() - 1_000, cordoned: false });
    // Its command renews the lease (every third of it) while this run watches.
    const sleep = async () => {
      for (const name of ['node-o1', 'node-o2']) {
        const n = w.nodes.get(name)!;
        w.nodes.set(name, { ...n, migration: { ...n.migration!, renewedAtMs: Date.now() } });
      }
    };
    const result = await runMigrate(request, { ...w.deps, sleep });

    expect(result).toMatchObject({
      exitCode: 3,
      status: 'refused',
      reason: expect.stringMatching(/^migration m-1700000000-aaaa is still running: its command renewed its lease/),
    });
    for (const name of ['node-o1', 'node-o2']) expect(w.nodes.get(name)!.labels[migrationLabel]).toBe(other.id);
    expect(w.terminated).toEqual([]);
    expect(asg.commandCalls(UpdateAutoScalingGroupCommand)).toHaveLength(0);
  });

  it("re-run inside a killed --cordon-all run's lease: takes its marks over, the record owning the cordon it set", async () => {
    const w = world({ timedOutOn: 'node-o1' });
    // Killed 200 s ago, lease 300 s: inside the lease, but quiet for longer than its command renews.
    const killed = markedBy(w, { id: 'm-1700000000-bbbb', renewedAtMs: Date.now() - 200_000, cordoned: true });
    const asked: { record: MigrationRecord; cordon: boolean }[] = [];
    const mark = w.deps.cluster.markMigrating;
    w.deps.cluster.markMigrating = async (node, marks) => (asked.push(marks), mark(node, marks));
    await runMigrate({ ...request, cordonAll: true }, w.deps);

    expect(w.lines).toContain(
      'migration m-1700000000-bbbb stopped renewing its lease: its command is gone; taking over its marks',
    );
    // Already cordoned (by the killed run): not cordoned again, but the cordon is this record's to lift.
    expect(asked.map((m) => [m.record.id === killed.id, m.cordon, m.record.cordoned])).toEqual([
      [false, false, true],
      [false, false, true],
    ]);
  });

  it('two runs that marked at the same moment: the one whose marks were overwritten refuses and leaves the group to the other', async () => {
    const w = world();
    const mark = w.deps.cluster.markMigrating;
    const other: MigrationRecord = {
      id: 'm-1700000000-cccc',
      from: 'old',
      to: 'new',
      renewedAtMs: Date.now(),
      leaseSeconds: 300,
      cordoned: false,
    };
    // The other run's write lands on node-o2 right after this run's.
    w.deps.cluster.markMigrating = async (node, marks) => {
      const result = await mark(node, marks);
      if (node.name === 'node-o2') {
        const n = w.nodes.get('node-o2')!;
        w.nodes.set('node-o2', { ...n, labels: { ...n.labels, [migrationLabel]: other.id }, migration: other });
      }
      return result;
    };
    const result = await runMigrate(request, w.deps);

    expect(result).toMatchObject({
      exitCode: 3,
      status: 'refused',
      reason: 'migration m-1700000000-cccc marked 1 old node(s) at the same time as this run: it moves the group',
    });
    expect(w.terminated).toEqual([]);
    expect(asg.commandCalls(UpdateAutoScalingGroupCommand)).toHaveLength(0);
    expect(w.nodes.get('node-o1')).toMatchObject({ migration: undefined });
    expect(w.nodes.get('node-o2')!.migration).toEqual(other);
  });
});
