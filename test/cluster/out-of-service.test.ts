// After an undrained release, on the real plane (issue 31): EC2 says the instance is terminated
// and our drain had released it with pods still on its node: the node is tainted
// node.kubernetes.io/out-of-service and the taint manager lets its pods go at once. While EC2
// says the instance runs, nothing is written whatever the event says.
import { describe, expect, it } from 'vitest';
import { drainAnnotation, ownerLabel } from '../../lambda/cluster/marks/mark-keys.js';
import { autoScalingGroupName, startDrainer } from './drainer.js';
import {
  byDrainer,
  createDeployment,
  createKwokNode,
  ensureNamespace,
  eventsFor,
  newInstanceId,
  podsOn,
  readAudit,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, plane } from './head.js';

const owner = 'graceful-node-termination';
const stateChange = (instanceId: string) => ({
  'detail-type': 'EC2 Instance State-change Notification',
  source: 'aws.ec2',
  id: `e-${instanceId}`,
  time: new Date().toISOString(),
  account: '123456789012',
  region: 'eu-west-1',
  resources: [],
  detail: { 'instance-id': instanceId, state: 'terminated' },
});

/** A node our drain released at its deadline (force policy: the record says timed-out), pods still bound. */
async function releasedNode(name: string, instanceId: string): Promise<void> {
  await createKwokNode(a, name, instanceId, { scenario: name });
  await waitNodeReady(a, name);
  await createDeployment(a, 'oos', name, 2, { nodeSelector: { scenario: name } });
  await waitDeploymentReady(a, 'oos', name, 2);
  const record = {
    action: 'sha256:0',
    hook: 'workers-terminate',
    notifiedAt: new Date().toISOString(),
    startedAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
    set: ['cordon'],
    drainedAt: new Date().toISOString(),
    outcome: 'timed-out',
  };
  a.kubectl('label', 'node', name, `${ownerLabel}=${owner}`);
  a.kubectl('annotate', 'node', name, `${drainAnnotation}=${JSON.stringify(record)}`);
}

describe('the out-of-service taint after an undrained release', () => {
  it('taints the node once EC2 confirms the termination, and its pods go at once', async () => {
    await ensureNamespace(a, 'oos');
    const instanceId = newInstanceId();
    await releasedNode('oos-1', instanceId);
    const drainer = startDrainer(plane);
    try {
      drainer.runStates.set(instanceId, { state: 'terminated', group: autoScalingGroupName });
      const result = (await drainer.invoke(stateChange(instanceId))) as { records: { status: string }[] };
      expect(result.records[0]!.status).toBe('out-of-service-tainted');
      const node = await a.core.readNode({ name: 'oos-1' });
      expect(node.spec?.taints).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            key: 'node.kubernetes.io/out-of-service',
            value: 'nodeshutdown',
            effect: 'NoExecute',
          }),
        ]),
      );
      expect((await eventsFor(a, 'Node', 'oos-1')).some((e) => e.reason === 'OutOfServiceTainted')).toBe(true);
      // The taint manager deletes the pods that do not tolerate it: they leave the node now.
      await until(
        'the pods gone from the node',
        60_000,
        async () =>
          (await podsOn(a, 'oos-1')).filter((p) => p.metadata?.namespace === 'oos' && !p.metadata.deletionTimestamp)
            .length === 0,
      );
    } finally {
      drainer.restore();
    }
  });

  it('writes nothing while EC2 says the instance runs', async () => {
    const instanceId = newInstanceId();
    await releasedNode('oos-2', instanceId);
    const drainer = startDrainer(plane);
    try {
      drainer.runStates.set(instanceId, { state: 'running', group: autoScalingGroupName });
      const since = Date.now();
      const result = (await drainer.invoke(stateChange(instanceId))) as { records: { status: string }[] };
      expect(result.records[0]!.status).toBe('refused');
      expect(readAudit(plane, (e) => byDrainer(e) && e.atMs >= since && e.verb === 'patch')).toEqual([]);
      expect((await a.core.readNode({ name: 'oos-2' })).spec?.taints ?? []).not.toEqual(
        expect.arrayContaining([expect.objectContaining({ key: 'node.kubernetes.io/out-of-service' })]),
      );
    } finally {
      drainer.restore();
    }
  });
});
