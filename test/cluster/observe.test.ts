// Observe mode on the real plane (issue 28): a terminate notification under MODE=observe writes
// nothing to the cluster but Events (the audit log says so), completes CONTINUE once, and its
// Events name the pods it would evict and the budget that would block one; with surge before
// evict on, which Deployments it would restart first and which it would refuse, by name.
import { describe, expect, it } from 'vitest';
import { autoScalingGroupName, startDrainer, statusOf } from './drainer.js';
import {
  byDrainer,
  createDeployment,
  createKwokNode,
  createPdb,
  ensureNamespace,
  eventsFor,
  newInstanceId,
  readAudit,
  surgeFile,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, plane } from './head.js';

const writes = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

describe('observe mode (MODE=observe)', () => {
  it('says what it would do, changes nothing but Events, and completes CONTINUE once', async () => {
    await ensureNamespace(a, 'observe');
    const instanceId = newInstanceId();
    const sibling = newInstanceId();
    await createKwokNode(a, 'observe-1', instanceId, { scenario: 'observe' });
    await createKwokNode(a, 'observe-2', sibling, { scenario: 'observe-other' });
    await waitNodeReady(a, 'observe-1');
    await waitNodeReady(a, 'observe-2');
    await createDeployment(a, 'observe', 'web', 2, { nodeSelector: { scenario: 'observe' } });
    await createDeployment(a, 'observe', 'db', 1, { nodeSelector: { scenario: 'observe' } });
    await waitDeploymentReady(a, 'observe', 'web', 2);
    await waitDeploymentReady(a, 'observe', 'db', 1);
    await createPdb(a, 'observe', 'db', 'db', 1);
    const drainer = startDrainer(plane, { mode: 'observe' });
    try {
      drainer.groups.set(instanceId, autoScalingGroupName);
      drainer.groups.set(sibling, autoScalingGroupName);
      drainer.terminating.add(sibling);
      const since = Date.now();
      expect(statusOf(await drainer.terminate(instanceId))).toBe('observed');

      expect(drainer.completions.filter((c) => c.instanceId === instanceId).map((c) => c.result)).toEqual(['CONTINUE']);
      const written = readAudit(plane, (e) => byDrainer(e) && e.atMs >= since && writes.has(e.verb));
      expect(written.length).toBeGreaterThan(0);
      expect(written.filter((e) => e.resource !== 'events')).toEqual([]);
      const node = await a.core.readNode({ name: 'observe-1' });
      expect(node.spec?.unschedulable).toBeUndefined();
      expect(node.metadata?.labels?.['node.kubernetes.io/exclude-from-external-load-balancers']).toBeUndefined();
      expect((await a.core.readNode({ name: 'observe-2' })).spec?.unschedulable).toBeUndefined();

      const observed = (await eventsFor(a, 'Node', 'observe-1')).find((e) => e.reason === 'TerminationObserved');
      expect(observed?.message).toMatch(/evict, in this order: observe\/(web|db)-/);
      expect(observed?.message).toContain('by PodDisruptionBudget db');
      expect(observed?.message).toContain(sibling);
      const pods = (await a.core.listNamespacedPod({ namespace: 'observe', labelSelector: 'app=db' })).items;
      const blocked = (await eventsFor(a, 'Pod', pods[0]!.metadata!.name!, 'observe')).find(
        (e) => e.reason === 'EvictionWouldBeBlocked',
      );
      expect(blocked?.message).toContain('budget db allows no disruption');
    } finally {
      drainer.terminating.delete(sibling);
      drainer.restore();
    }
  });
  it('with surge before evict on, names the Deployments it would restart first and the refusals, and restarts none', async () => {
    // The drainer's Deployment reads, as a user of rbac.yaml applies them with the surge on.
    a.kubectl('apply', '-f', surgeFile);
    const instanceId = newInstanceId();
    await createKwokNode(a, 'observe-surge-1', instanceId, { scenario: 'observe-surge' });
    await createKwokNode(a, 'observe-surge-2', newInstanceId(), { scenario: 'observe-surge' });
    await waitNodeReady(a, 'observe-surge-1');
    await waitNodeReady(a, 'observe-surge-2');
    a.kubectl('cordon', 'observe-surge-2');
    const app = {
      nodeSelector: { scenario: 'observe-surge' },
      readinessProbe: true,
      deploymentAnnotations: { 'graceful-node-termination/surge-before-evict': 'true' },
    };
    await createDeployment(a, 'observe', 'single', 1, app);
    await createDeployment(a, 'observe', 'nosurge', 1, { ...app, maxSurge: 0, maxUnavailable: 1 });
    await waitDeploymentReady(a, 'observe', 'single', 1);
    await waitDeploymentReady(a, 'observe', 'nosurge', 1);
    a.kubectl('uncordon', 'observe-surge-2');
    const drainer = startDrainer(plane, { mode: 'observe', env: { SURGE_BEFORE_EVICT: 'true' } });
    try {
      drainer.groups.set(instanceId, autoScalingGroupName);
      const since = Date.now();
      expect(statusOf(await drainer.terminate(instanceId))).toBe('observed');

      const written = readAudit(plane, (e) => byDrainer(e) && e.atMs >= since && writes.has(e.verb));
      expect(written.filter((e) => e.resource !== 'events')).toEqual([]);
      const observed = (await eventsFor(a, 'Node', 'observe-surge-1')).find((e) => e.reason === 'TerminationObserved');
      expect(observed?.message).toMatch(/restart Deployment observe\/single and hold observe\/single-/);
      expect(observed?.message).toMatch(/not surge observe\/nosurge-[a-z0-9-]+ \(max-surge-zero\)/);
      const line = drainer.logs.find((l) => l['message'] === 'observe mode: what the termination would do');
      expect(line?.['podsToSurge']).toBe(1);
      console.log(`[observe] ${observed?.message}`);
    } finally {
      drainer.restore();
    }
  });
});
