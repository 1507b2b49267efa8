// The launch hook on the real plane: a node that joins Ready is admitted (CONTINUE); one that
// keeps a startup taint is abandoned (ABANDON) with a Warning Event on it.
import { describe, expect, it } from 'vitest';
import { createKwokNode, eventsFor, newInstanceId, sleep } from './kube.js';
import { a, blockDrainer } from './head.js';

describe('the launch hook', () => {
  const drainer = blockDrainer({ launchTimeoutSeconds: 30 });

  it('waits for the node to register and become Ready, then completes CONTINUE', async () => {
    const instanceId = newInstanceId();
    // EC2 knows the instance's private DNS name at launch; the kubelet registers under it.
    drainer.ec2Names.set(instanceId, 'launch-ok');
    // The instance boots: its node registers only a few seconds after the notification.
    const registering = sleep(3_000).then(() => createKwokNode(a, 'launch-ok', instanceId, { scenario: 'launch' }));

    const result = await drainer.launch(instanceId);
    await registering;

    expect(result).toEqual({ records: [{ status: 'launch-admitted', instanceId }] });
    expect(drainer.completions.filter((c) => c.instanceId === instanceId)).toEqual([
      expect.objectContaining({ result: 'CONTINUE', outcome: 'completed' }),
    ]);
    const node = await a.core.readNode({ name: 'launch-ok' });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect((await eventsFor(a, 'Node', 'launch-ok')).map((e) => e.reason)).toEqual(['LaunchAdmitted']);
  });

  it('abandons a node that keeps the cloud provider startup taint past the launch timeout', async () => {
    const instanceId = newInstanceId();
    await createKwokNode(a, 'launch-stuck', instanceId, { scenario: 'launch' }, [
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
    ]);
    const started = Date.now();

    const result = await drainer.launch(instanceId);

    expect(result).toEqual({ records: [{ status: 'launch-abandoned', instanceId }] });
    const completion = drainer.completions.find((c) => c.instanceId === instanceId)!;
    expect(completion).toMatchObject({ result: 'ABANDON', outcome: 'completed' });
    expect(completion.atMs - started).toBeGreaterThanOrEqual(29_000);
    const events = await eventsFor(a, 'Node', 'launch-stuck');
    expect(events.map((e) => e.reason)).toEqual(['LaunchAbandoned']);
    expect(events[0]!.message).toMatch(/startup taints node.cloudprovider.kubernetes.io\/uninitialized:NoSchedule/);
    expect(drainer.logs.some((l) => l['level'] === 'ERROR' && /abandoning the launch/.test(String(l['message'])))).toBe(
      true,
    );
  });
});
