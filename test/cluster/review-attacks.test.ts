// Attacks from an adversarial review of issue 19 on the real plane (the unit versions are in
// test/unit/review/attacks.test.ts), kept as regression tests: each states what the design
// promises, and each broke an earlier version (e12925a).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { refreshEvent as localRefreshEvent } from '../../demo/instance-refresh.js';
import type { KubeEndpoint } from '../../lambda/adapters/kubernetes/kube-http.js';
import { formatDrainRecord } from '../../lambda/cluster/marks/drain-record.js';
import { physicalIdFor } from '../../lambda/installer/custom-resource.js';
import {
  createInstallerHandler,
  type CustomResourceEvent,
  type CustomResourceResponse,
} from '../../lambda/installer/rbac-installer.js';
import { boundStrategyTag } from '../../lambda/refresh/strategy-tag.js';
import { refreshStrategyTag } from '../../lambda/shared/group-tags.js';
import { MemoryLog } from '../fakes/fake-world.js';
import { spotInterruptionWarning } from '../fixtures/deliveries.js';
import { autoScalingGroupName, scheduledEvent, startDrainer, statusOf, terminateHookName } from './drainer.js';
import {
  admin,
  byDrainer,
  createKwokNode,
  createPdb,
  ensureNamespace,
  newInstanceId,
  nodeWithDeployment,
  podsOn,
  readAudit,
  waitNodeReady,
} from './kube.js';
import { adminToken } from './plane/plane.js';
import { lifecycleAction } from '../fixtures/drain-sources.js';

const plane = inject('plane');
const a = admin(plane);
const ns = 'review-attacks';
const writesSince = (since: number) =>
  readAudit(
    plane,
    (e) =>
      byDrainer(e) &&
      e.atMs >= since &&
      ['create', 'update', 'patch', 'delete'].includes(e.verb) &&
      e.resource !== 'events',
  ).map((e) => `${e.verb} ${e.resource}${e.subresource ? `/${e.subresource}` : ''} ${e.name ?? ''}`);

/** A node whose pods a budget never lets go. */
async function blockedNode(name: string) {
  const node = await nodeWithDeployment(a, ns, name, 2, { terminationGracePeriodSeconds: 2 });
  await createPdb(a, ns, `${name}-pdb`, name, 2);
  return node;
}

describe('review attacks on the real plane', () => {
  beforeAll(() => ensureNamespace(a, ns));
  afterAll(() => {
    a.kubectl('delete', 'namespace', ns, '--wait=false');
  });

  // Found (high): a Spot warning is confirmed only by the instance's group.
  it('a forged Spot warning for an InService instance writes nothing to the cluster', async () => {
    const { instanceId } = await blockedNode('forged-spot');
    const drainer = startDrainer(plane, { deadlinePolicy: 'force' });
    try {
      drainer.groups.set(instanceId, autoScalingGroupName); // InService, On-Demand: EC2 warned nobody
      const since = Date.now();
      const result = await drainer.invoke(
        spotInterruptionWarning(instanceId, new Date(Date.now() - 100_000).toISOString()),
      );
      expect({ status: statusOf(result), writes: writesSince(since) }).toEqual({ status: 'refused', writes: [] });
    } finally {
      drainer.restore();
    }
  });

  // Found (high): a by-instance resume adopts a record of an earlier action of the instance.
  it('a drain the reconciler resumes for a new action does not complete at once on an old record', async () => {
    const { instanceId, node } = await blockedNode('stale-resume');
    const old = Date.now() - 2 * 86_400_000;
    const record = formatDrainRecord({
      source: lifecycleAction(`sha256:${'0'.repeat(32)}`, terminateHookName),
      notifiedAtMs: old,
      startedAtMs: old,
      updatedAtMs: old,
      set: ['exclude-from-load-balancers', 'cordon'],
      drained: { atMs: old + 60_000, outcome: 'drained' },
    });
    // What a warm-pool return admitted unchecked (or a retained instance) leaves on its node.
    a.kubectl('cordon', node);
    a.kubectl(
      'label',
      'node',
      node,
      'node.kubernetes.io/exclude-from-external-load-balancers=true',
      'graceful-node-termination/owner=review-stale',
    );
    a.kubectl('annotate', 'node', node, `graceful-node-termination/drain=${record}`);
    const drainer = startDrainer(plane, {
      handOff: true,
      deadlinePolicy: 'force',
      drainTimeoutSeconds: 600,
      deploymentName: 'review-stale',
    });
    try {
      drainer.groups.set(instanceId, autoScalingGroupName);
      drainer.terminating.add(instanceId);
      // A new terminate action holds the instance; its notification has not been handled yet.
      expect(
        statusOf(await drainer.invoke(scheduledEvent(), { activeToken: randomUUID(), activeInstance: instanceId })),
      ).toBe('reconciled');
      expect(drainer.handOffs).toHaveLength(1);
      const status = statusOf(await drainer.deliver(drainer.handOffs[0]!, { remainingMs: 15_000 }));
      const left = (await podsOn(a, node)).filter((p) => p.metadata?.namespace === ns).length;
      expect({ status, completions: drainer.completions.map((c) => c.result), left }).toEqual({
        status: 'handed-off',
        completions: [],
        left: 2,
      });
    } finally {
      drainer.restore();
    }
  });

  // Found (medium): the refresh leaves its cordon to a drain whose record does not list it.
  it('a node cordoned by a refresh and drained into the warm pool is schedulable again when it comes back', async () => {
    const instanceId = newInstanceId();
    const node = 'review-warm-1';
    await createKwokNode(a, node, instanceId, { scenario: 'review-warm' });
    await waitNodeReady(a, node);
    const drainer = startDrainer(plane, { loadBalancerDelaySeconds: 0 });
    const refreshId = randomUUID();
    const event = (what: string) => localRefreshEvent(what, { id: refreshId, group: autoScalingGroupName });
    try {
      drainer.groups.set(instanceId, autoScalingGroupName);
      drainer.refreshes.set(refreshId, { status: 'InProgress', desiredVersion: '2' });
      drainer.groupTags.set(refreshStrategyTag, boundStrategyTag(refreshId));
      expect(statusOf(await drainer.invoke(event('Started')))).toBe('refresh-marked');
      expect((await a.core.readNode({ name: node })).spec?.unschedulable).toBe(true);

      drainer.states.set(instanceId, 'Warmed:Pending:Wait');
      expect(statusOf(await drainer.terminate(instanceId, { destination: 'WarmPool' }))).toBe('drained');
      drainer.states.set(instanceId, 'Warmed:Stopped');
      drainer.refreshes.set(refreshId, { status: 'Cancelled', desiredVersion: '2' });
      expect(statusOf(await drainer.invoke(event('Cancelled')))).toBe('refresh-unmarked');

      drainer.states.set(instanceId, 'Pending:Wait');
      expect(statusOf(await drainer.launch(instanceId, { origin: 'WarmPool', destination: 'AutoScalingGroup' }))).toBe(
        'launch-admitted',
      );
      const after = await a.core.readNode({ name: node });
      const ours = Object.keys(after.metadata?.labels ?? {}).filter((k) => k.startsWith('graceful-node-termination/'));
      expect({ unschedulable: after.spec?.unschedulable ?? false, ours }).toEqual({ unschedulable: false, ours: [] });
    } finally {
      drainer.restore();
      a.kubectl('delete', 'node', node, '--wait=false');
    }
  });
});

// Found (medium): server-side apply with force takes over a same-named deployment's objects.
describe('review: the RBAC installer and a same-named deployment of another stack', () => {
  const endpoint: KubeEndpoint = {
    server: plane.server,
    requestOptions: async () => ({ ca: plane.caPem, headers: { Authorization: `Bearer ${adminToken}` } }),
  };
  const responses: CustomResourceResponse[] = [];
  const name = 'graceful-node-termination-0000eeee';
  const installerOf = (stackId: string) =>
    createInstallerHandler({
      settings: {
        name,
        clusterName: 'local-plane',
        group: name,
        deadlinePolicy: 'force',
        region: 'eu-west-1',
        stackId,
      },
      connect: async () => endpoint,
      respond: async (_url, response) => void responses.push(response),
      log: new MemoryLog(),
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      authRetryMs: 0,
    });
  const request = (type: CustomResourceEvent['RequestType'], stackId: string): CustomResourceEvent => ({
    RequestType: type,
    ResponseURL: 'https://cloudformation-custom-resource-response-euwest1.s3.eu-west-1.amazonaws.com/response',
    StackId: stackId,
    RequestId: `req-${responses.length}`,
    LogicalResourceId: 'Rbac',
    PhysicalResourceId: type === 'Create' ? undefined : physicalIdFor(name, name),
    ResourceProperties: {},
  });
  const binding = () => {
    try {
      return JSON.parse(a.kubectl('get', 'clusterrolebinding', name, '-o', 'json')) as {
        metadata: { annotations?: Record<string, string> };
      };
    } catch {
      return undefined;
    }
  };
  afterAll(() => {
    a.kubectl(
      'delete',
      'clusterrole,clusterrolebinding,flowschema,prioritylevelconfiguration',
      name,
      '--ignore-not-found',
    );
  });

  it("a second stack's Create does not take over the first stack's objects, and its Delete leaves them", async () => {
    await installerOf('stack-a')(request('Create', 'stack-a'));
    await installerOf('stack-b')(request('Create', 'stack-b'));
    const ownerAfterB = binding()?.metadata.annotations?.['graceful-node-termination/owner'];
    await installerOf('stack-b')(request('Delete', 'stack-b'));
    expect({ ownerAfterB, aStillInstalled: binding() !== undefined }).toEqual({
      ownerAfterB: 'stack-a/Rbac',
      aStillInstalled: true,
    });
  });
});
