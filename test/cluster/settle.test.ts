// Issue 20 on the real plane: the instance is released only when the volumes of the pods it
// drained are detached (VolumeAttachments, watched) and the load balancers let it go (ELB's
// Query APIs at a local stand-in, test/fakes/elb-stub.ts). The test plays the attach-detach
// controller and the CSI driver (it deletes the attachment) and the load balancer controller
// and ELB (it moves the target through draining), as no local component does either.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startElbStub, type ElbStub } from '../fakes/elb-stub.js';
import { startDrainer, statusOf, type Drainer } from './drainer.js';
import {
  attachVolume,
  bindTargetGroup,
  byDrainer,
  createBoundClaim,
  createKwokNode,
  detachVolume,
  ensureNamespace,
  eventsFor,
  installTargetGroupBindingCrd,
  newInstanceId,
  podSpec,
  podsOn,
  readAudit,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { testAws } from './plane/token-webhook.js';
import { a, plane } from './head.js';

const ns = 'settle';

/** `<name>-1` runs one pod of Deployment `name` whose volume is PersistentVolume `<name>-pv`; `<name>-2` takes the replacement. */
async function nodeWithVolume(name: string): Promise<{ instanceId: string; node: string; pv: string }> {
  const instanceId = newInstanceId();
  const pv = `${name}-pv`;
  await createKwokNode(a, `${name}-1`, instanceId, { scenario: name });
  await createKwokNode(a, `${name}-2`, newInstanceId(), { scenario: name });
  await waitNodeReady(a, `${name}-1`);
  await waitNodeReady(a, `${name}-2`);
  a.kubectl('cordon', `${name}-2`);
  await createBoundClaim(a, ns, `${name}-data`, pv);
  const spec = {
    ...podSpec({ nodeSelector: { scenario: name }, terminationGracePeriodSeconds: 2 }),
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName: `${name}-data` } }],
  };
  await a.apps.createNamespacedDeployment({
    namespace: ns,
    body: {
      metadata: { name },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec },
      },
    },
  });
  await waitDeploymentReady(a, ns, name, 1);
  a.kubectl('uncordon', `${name}-2`);
  return { instanceId, node: `${name}-1`, pv };
}

const attach = (pv: string, node: string, attacher?: string, o?: { inTree?: boolean }) =>
  attachVolume(a, pv, node, attacher, o);
const detach = (pv: string, node: string, attacher?: string, o?: { inTree?: boolean }) =>
  detachVolume(a, pv, node, attacher, o);

const podLeft = (node: string) =>
  until(`the pods left ${node}`, 60_000, async () =>
    (await podsOn(a, node)).every((p) => p.metadata?.namespace !== ns),
  );

describe('settle: release only when volumes are detached', () => {
  beforeAll(() => ensureNamespace(a, ns));

  it('completes after the attachment of the drained pod’s volume is gone (8 s after the pod left), not before', async () => {
    const { instanceId, node, pv } = await nodeWithVolume('vol-wait');
    await attach(pv, node);
    const drainer = startDrainer(plane, { loadBalancerDelaySeconds: 0 });
    try {
      const done = drainer.terminate(instanceId);
      await podLeft(node);
      const leftMs = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 8_000));
      expect(drainer.completions).toEqual([]);
      const detachedMs = Date.now();
      await detach(pv, node);
      expect(statusOf(await done)).toBe('drained');
      expect(drainer.completions).toHaveLength(1);
      expect(drainer.completions[0]!.atMs).toBeGreaterThanOrEqual(detachedMs);
      expect(drainer.completions[0]!.atMs - leftMs).toBeLessThan(8_000 + 5_000);
      const reasons = (await eventsFor(a, 'Node', node)).map((e) => e.reason);
      expect(reasons).toEqual(expect.arrayContaining(['WaitingForVolumeDetach', 'VolumesDetached']));
    } finally {
      drainer.restore();
    }
  });

  it('an attachment of no pod it drained holds the release no longer than the drain deadline, and is named', async () => {
    const { instanceId, node } = await nodeWithVolume('vol-stray');
    // A volume some earlier pod left behind: the drainer did not drain its pod.
    await attach('vol-stray-leftover', node, 'efs.csi.aws.com');
    const drainer = startDrainer(plane, { loadBalancerDelaySeconds: 0, drainTimeoutSeconds: 15 });
    try {
      const start = Date.now();
      expect(statusOf(await drainer.terminate(instanceId))).toBe('drained');
      const seconds = (drainer.completions[0]!.atMs - start) / 1000;
      expect(seconds).toBeGreaterThanOrEqual(13);
      expect(seconds).toBeLessThan(15 + 5);
      const warning = (await eventsFor(a, 'Node', node)).find((e) => e.reason === 'VolumesNotDetached');
      expect(warning?.message).toContain('vol-stray-leftover (efs.csi.aws.com)');
    } finally {
      drainer.restore();
    }
  });

  it('a volume a DaemonSet’s pod still uses on the node does not hold the release (its claim read from the PersistentVolume)', async () => {
    const { instanceId, node } = await nodeWithVolume('vol-ds');
    await createBoundClaim(a, ns, 'vol-ds-cache', 'vol-ds-cache-pv');
    const spec = {
      ...podSpec({ nodeSelector: { scenario: 'vol-ds' } }),
      tolerations: [{ operator: 'Exists' }],
      volumes: [{ name: 'cache', persistentVolumeClaim: { claimName: 'vol-ds-cache' } }],
    };
    await a.apps.createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: 'vol-ds-agent' },
        spec: {
          selector: { matchLabels: { app: 'vol-ds-agent' } },
          template: { metadata: { labels: { app: 'vol-ds-agent' } }, spec },
        },
      },
    });
    await until('the agent running on the node', 60_000, async () =>
      (await podsOn(a, node)).some(
        (p) => p.metadata?.name?.startsWith('vol-ds-agent') && p.status?.phase === 'Running',
      ),
    );
    await attach('vol-ds-cache-pv', node);
    const drainer = startDrainer(plane, { loadBalancerDelaySeconds: 0, drainTimeoutSeconds: 60 });
    try {
      const since = Date.now();
      expect(statusOf(await drainer.terminate(instanceId))).toBe('drained');
      expect(drainer.completions[0]!.atMs - since).toBeLessThan(15_000);
      expect(
        readAudit(
          plane,
          (e) => byDrainer(e) && e.atMs >= since && e.resource === 'persistentvolumes' && e.verb === 'get',
        ).map((e) => e.name),
      ).toContain('vol-ds-cache-pv');
      expect((await eventsFor(a, 'Node', node)).map((e) => e.reason)).not.toContain('WaitingForVolumeDetach');
    } finally {
      drainer.restore();
    }
  });

  it('a drain that waited for a Job past its base deadline releases only after the Job’s volume detached (issue 27)', async () => {
    const node = 'vol-batch-1';
    const instanceId = newInstanceId();
    await createKwokNode(a, node, instanceId, { scenario: 'vol-batch' });
    await waitNodeReady(a, node);
    await createBoundClaim(a, ns, 'vol-batch-data', 'vol-batch-pv');
    await a.batch.createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name: 'vol-batch' },
        spec: {
          backoffLimit: 0,
          template: {
            // kwok completes it 12 s after it is Ready.
            metadata: {
              annotations: {
                'pod-complete.stage.kwok.x-k8s.io/delay': '12s',
                'pod-complete.stage.kwok.x-k8s.io/jitter-delay': '12s',
              },
            },
            spec: {
              restartPolicy: 'Never',
              nodeSelector: { scenario: 'vol-batch' },
              containers: [{ name: 'job', image: 'registry.k8s.io/pause:3.10' }],
              automountServiceAccountToken: false,
              volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'vol-batch-data' } }],
            },
          },
        },
      },
    });
    await until('the Job pod running', 60_000, async () =>
      (await podsOn(a, node)).some((p) => p.status?.phase === 'Running'),
    );
    await attach('vol-batch-pv', node);
    // The base drain deadline (5 s) passes while the Job runs; batch pods are waited for.
    const drainer = startDrainer(plane, { loadBalancerDelaySeconds: 0, drainTimeoutSeconds: 5 });
    try {
      const done = drainer.terminate(instanceId);
      await until('the Job finished', 60_000, async () =>
        (await podsOn(a, node)).every((p) => p.status?.phase === 'Succeeded' || p.metadata?.namespace !== ns),
      );
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      expect(drainer.completions).toEqual([]);
      const detachedMs = Date.now();
      await detach('vol-batch-pv', node);
      expect(statusOf(await done)).toBe('drained');
      expect(drainer.completions[0]!.atMs).toBeGreaterThanOrEqual(detachedMs);
      expect((await eventsFor(a, 'Node', node)).map((e) => e.reason)).toEqual(
        expect.arrayContaining(['WaitingForVolumeDetach', 'VolumesDetached']),
      );
    } finally {
      drainer.restore();
    }
  });

  it('a volume that is not CSI has no name to read: the cluster’s attachments are listed and watched instead (the fallback)', async () => {
    const { instanceId, node, pv } = await nodeWithVolume('vol-in-tree');
    await attach(pv, node, 'ebs.csi.aws.com', { inTree: true });
    const drainer = startDrainer(plane, { loadBalancerDelaySeconds: 0 });
    try {
      const since = Date.now();
      const done = drainer.terminate(instanceId);
      await podLeft(node);
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      expect(drainer.completions).toEqual([]);
      await detach(pv, node, 'ebs.csi.aws.com', { inTree: true });
      expect(statusOf(await done)).toBe('drained');
      const verbs = readAudit(plane, (e) => byDrainer(e) && e.atMs >= since && e.resource === 'volumeattachments').map(
        (e) => e.verb,
      );
      expect(verbs).toEqual(expect.arrayContaining(['list', 'watch']));
    } finally {
      drainer.restore();
    }
  });

  it('a hand-off in the middle of the wait resumes it, and completes only after the detach', async () => {
    const { instanceId, node, pv } = await nodeWithVolume('vol-hand-off');
    await attach(pv, node);
    const drainer = startDrainer(plane, { loadBalancerDelaySeconds: 0, handOff: true, drainTimeoutSeconds: 120 });
    try {
      // 9 s invocations (5 s margin): the drain ends in the first, the wait is handed on.
      expect(statusOf(await drainer.terminate(instanceId, { remainingMs: 9_000 }))).toBe('handed-off');
      expect(
        drainer.logs.some(
          (l) =>
            l['message'] === 'handed the termination on to a fresh invocation' &&
            l['phase'] === 'settle (volumes, load balancers)',
        ),
      ).toBe(true);
      const detachAtMs = Date.now() + 6_000;
      const detached = new Promise((resolve) => setTimeout(resolve, 6_000)).then(() => detach(pv, node));
      for (let i = 0; drainer.completions.length === 0 && i < 10; i++)
        await drainer.deliver(drainer.handOffs.at(-1)!, { remainingMs: 9_000 });
      await detached;
      expect(drainer.completions).toHaveLength(1);
      expect(drainer.completions[0]!.atMs).toBeGreaterThanOrEqual(detachAtMs);
    } finally {
      drainer.restore();
    }
  });
});

describe('settle: release when the load balancers let go', () => {
  let elb: ElbStub;
  beforeAll(async () => (elb = await startElbStub()));
  afterAll(() => elb.close());

  /** Plays the AWS Load Balancer Controller and ELB: once the node is excluded, the target drains for `drainMs`, then is gone. */
  const deregisterWhenExcluded = (
    node: string,
    instanceId: string,
    groups: { targets: Map<string, string> }[],
    drainMs: number,
  ) =>
    until(`node ${node} excluded from load balancers`, 60_000, async () => {
      const labels = (await a.core.readNode({ name: node })).metadata?.labels ?? {};
      return 'node.kubernetes.io/exclude-from-external-load-balancers' in labels;
    }).then(async () => {
      for (const g of groups) g.targets.set(instanceId, 'draining');
      await new Promise((resolve) => setTimeout(resolve, drainMs));
      for (const g of groups) g.targets.delete(instanceId);
      return Date.now();
    });

  const run = async (drainer: Drainer, instanceId: string) => {
    try {
      const start = Date.now();
      expect(statusOf(await drainer.terminate(instanceId))).toBe('drained');
      return { start, completedMs: drainer.completions[0]!.atMs };
    } finally {
      drainer.restore();
    }
  };

  it('target groups tagged both ways, the instance draining for 8 s then gone: completes after it', async () => {
    const { instanceId, node } = await nodeWithVolume('lb-targets');
    const alb = elb.addTargetGroup('k8s-settle-web', {
      tags: { 'elbv2.k8s.aws/cluster': testAws.clusterName },
      targets: new Map([[instanceId, 'healthy']]),
    });
    const nlb = elb.addTargetGroup('k8s-settle-legacy', {
      tags: { [`kubernetes.io/cluster/${testAws.clusterName}`]: 'owned' },
      targets: new Map([[instanceId, 'healthy']]),
    });
    elb.addTargetGroup('other-cluster', {
      tags: { 'elbv2.k8s.aws/cluster': 'other' },
      targets: new Map([[instanceId, 'healthy']]),
    });
    const gone = deregisterWhenExcluded(node, instanceId, [alb, nlb], 8_000);
    const before = elb.calls.length;
    const { completedMs } = await run(
      // Made by other tools, found by their tags: the opt-in account scan.
      startDrainer(plane, {
        loadBalancerDelaySeconds: 60,
        waitForVolumeDetach: false,
        loadBalancers: { url: elb.url, minWaitSeconds: 2, tags: 'team=web' },
      }),
      instanceId,
    );
    const goneMs = await gone;
    expect(completedMs).toBeGreaterThanOrEqual(goneMs);
    expect(completedMs - goneMs).toBeLessThan(12_000);
    const calls = elb.calls.slice(before);
    expect(
      calls
        .filter((c) => c.action === 'DescribeTargetHealth')
        .every((c) => c.form['TargetGroupArn'] !== elb.targetGroups[2]!.arn),
    ).toBe(true);
    expect(calls.length).toBeLessThan(30);
    const deregistered = (await eventsFor(a, 'Node', node)).find((e) => e.reason === 'TargetsDeregistered');
    expect(deregistered?.message).toMatch(/k8s-settle-web \d/);
    expect(deregistered?.message).toMatch(/k8s-settle-legacy \d/);
  });

  /** A TargetGroupBinding's untagged group holding `instanceId`, among 50 other teams' groups; the Service's NodePort. */
  const boundGroup = async (name: string, instanceId: string) => {
    await installTargetGroupBindingCrd(a);
    // Terraform's: untagged; the account is full of other teams' groups, none read.
    const bound = elb.addTargetGroup(`tf-${name}`, { targets: new Map([[instanceId, 'healthy']]) });
    const others = Array.from({ length: 50 }, (_, i) =>
      elb.addTargetGroup(`${name}-other-team-${i}`, {
        tags: { team: 'other' },
        targets: new Map([[instanceId, 'healthy']]),
      }),
    );
    const nodePort = await bindTargetGroup(a, { namespace: ns, service: name, targetGroupArn: bound.arn });
    return { bound, others: new Set(others.map((g) => g.arn)), nodePort };
  };

  it('a TargetGroupBinding’s target group made outside Kubernetes (no cluster tag) holds the release until it lets go; shared, the whole group is read (issue 27)', async () => {
    const { instanceId, node } = await nodeWithVolume('lb-binding');
    const { bound, others } = await boundGroup('lb-binding', instanceId);
    const gone = deregisterWhenExcluded(node, instanceId, [bound], 8_000);
    const before = elb.calls.length;
    const since = Date.now();
    const { completedMs } = await run(
      startDrainer(plane, {
        loadBalancerDelaySeconds: 5,
        waitForVolumeDetach: false,
        loadBalancers: { url: elb.url, minWaitSeconds: 2 },
      }),
      instanceId,
    );
    const goneMs = await gone;
    expect(completedMs).toBeGreaterThanOrEqual(goneMs);
    const calls = elb.calls.slice(before);
    expect(calls.every((c) => c.action === 'DescribeTargetHealth')).toBe(true);
    expect(calls.some((c) => others.has(c.form['TargetGroupArn'] ?? ''))).toBe(false);
    // One reading of the group answers for every instance it holds: no Targets filter.
    const reads = calls.filter((c) => c.form['TargetGroupArn'] === bound.arn);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.every((c) => c.form['Targets.member.1.Id'] === undefined)).toBe(true);
    const lists = readAudit(plane, (e) => byDrainer(e) && e.atMs >= since && e.verb === 'list').map((e) => e.resource);
    expect(lists).toEqual(expect.arrayContaining(['targetgroupbindings', 'services', 'leases']));
    expect((await eventsFor(a, 'Node', node)).find((e) => e.reason === 'TargetsDeregistered')?.message).toMatch(
      /tf-lb-binding \d/,
    );
  });

  it('reading alone (no namespace for shared readings), the instance is read on the Service’s NodePort (issue 27)', async () => {
    const { instanceId, node } = await nodeWithVolume('lb-alone');
    const { bound, nodePort, others } = await boundGroup('lb-alone', instanceId);
    const gone = deregisterWhenExcluded(node, instanceId, [bound], 6_000);
    const before = elb.calls.length;
    const drainer = startDrainer(plane, {
      loadBalancerDelaySeconds: 5,
      waitForVolumeDetach: false,
      // RBAC of an older release: no namespace, no Role on its leases.
      deploymentName: 'gnt-without-readings',
      loadBalancers: { url: elb.url, minWaitSeconds: 2 },
    });
    const logs = drainer.logs;
    const { completedMs } = await run(drainer, instanceId);
    expect(completedMs).toBeGreaterThanOrEqual(await gone);
    const calls = elb.calls.slice(before);
    // Every instance target group bound in the cluster is a candidate (the earlier test's too); the others' never.
    expect(calls.every((c) => c.action === 'DescribeTargetHealth')).toBe(true);
    expect(calls.some((c) => others.has(c.form['TargetGroupArn'] ?? ''))).toBe(false);
    const reads = calls.filter((c) => c.form['TargetGroupArn'] === bound.arn);
    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads)
      expect(read.form).toMatchObject({ 'Targets.member.1.Id': instanceId, 'Targets.member.1.Port': String(nodePort) });
    expect(
      logs.filter((l) => String(l['message']).startsWith('shared load-balancer readings are not allowed')),
    ).toHaveLength(1);
  });

  it('two terminations behind one target group share its readings: one reading a round for both, kept in a Lease the reconciler takes back', async () => {
    const nodes = ['lb-shared-a', 'lb-shared-b'];
    const ids = nodes.map(() => newInstanceId());
    for (const [i, name] of nodes.entries()) await createKwokNode(a, name, ids[i]!, { scenario: 'lb-shared' });
    for (const name of nodes) await waitNodeReady(a, name);
    const group = elb.addTargetGroup('k8s-settle-shared', {
      tags: { 'elbv2.k8s.aws/cluster': testAws.clusterName },
      targets: new Map(ids.map((id) => [id, 'healthy'])),
    });
    const gone = nodes.map((name, i) => deregisterWhenExcluded(name, ids[i]!, [group], 6_000));
    const before = elb.calls.length;
    const startMs = Date.now();
    const drainer = startDrainer(plane, {
      loadBalancerDelaySeconds: 60,
      waitForVolumeDetach: false,
      loadBalancers: { url: elb.url, minWaitSeconds: 2, tags: 'team=web' },
    });
    try {
      const results = await Promise.all(ids.map((id) => drainer.terminate(id)));
      expect(results.map(statusOf)).toEqual(['drained', 'drained']);
      const goneMs = await Promise.all(gone);
      for (const [i, id] of ids.entries()) {
        const completedMs = drainer.completions.find((c) => c.instanceId === id)!.atMs;
        expect(completedMs).toBeGreaterThanOrEqual(goneMs[i]!);
        expect(completedMs - goneMs[i]!).toBeLessThan(8_000);
      }
      const reads = elb.calls
        .slice(before)
        .filter((c) => c.action === 'DescribeTargetHealth' && c.form['TargetGroupArn'] === group.arn);
      // At most one reading of the group every 2 s (minReadIntervalMs) for both; alone, each read its own.
      expect(reads.length).toBeGreaterThan(0);
      expect(reads.length).toBeLessThanOrEqual(Math.ceil((Date.now() - startMs) / 2_000) + 1);
    } finally {
      drainer.restore();
    }
    const namespace = 'graceful-node-termination';
    const leases = () =>
      (
        JSON.parse(a.kubectl('get', 'leases', '-n', namespace, '-o', 'json')) as {
          items: { metadata: { name: string; annotations?: Record<string, string> } }[];
        }
      ).items;
    const lease = leases().find((l) =>
      l.metadata.annotations?.['graceful-node-termination/load-balancer']?.includes(group.arn),
    );
    expect(lease?.metadata.annotations?.['graceful-node-termination/reading']).toMatch(/\d{4}-\d\d-\d\dT/);
    // Wanted by nobody for longer than the reconciler keeps a reading: the next pass deletes it.
    const longAgo = new Date(Date.now() - 11 * 60_000).toISOString();
    a.kubectl(
      'annotate',
      'lease',
      '-n',
      namespace,
      lease!.metadata.name,
      '--overwrite',
      `graceful-node-termination/wanted-until=${longAgo}`,
    );
    const reconciler = startDrainer(plane, { loadBalancers: { url: elb.url } });
    try {
      await reconciler.reconcile();
    } finally {
      reconciler.restore();
    }
    expect(leases().map((l) => l.metadata.name)).not.toContain(lease!.metadata.name);
  });

  it('in no target group: completes at the minimum wait, not the fixed delay', async () => {
    const { instanceId } = await nodeWithVolume('lb-none');
    const drainer = startDrainer(plane, {
      loadBalancerDelaySeconds: 60,
      waitForVolumeDetach: false,
      loadBalancers: { url: elb.url, minWaitSeconds: 3 },
    });
    const { start, completedMs } = await run(drainer, instanceId);
    expect(completedMs - start).toBeGreaterThanOrEqual(3_000);
    expect(completedMs - start).toBeLessThan(3_000 + 8_000);
  });

  it('the API denied: today’s fixed delay, and one warning', async () => {
    const { instanceId } = await nodeWithVolume('lb-denied');
    elb.denied = true;
    try {
      const drainer = startDrainer(plane, {
        loadBalancerDelaySeconds: 6,
        waitForVolumeDetach: false,
        loadBalancers: { url: elb.url, minWaitSeconds: 1 },
      });
      const logs = drainer.logs;
      const { start, completedMs } = await run(drainer, instanceId);
      expect(completedMs - start).toBeGreaterThanOrEqual(6_000);
      expect(
        logs.filter((l) => String(l['message']).startsWith('could not read the load balancers (access denied')),
      ).toHaveLength(1);
    } finally {
      elb.denied = false;
    }
  });
});
