// Injected API faults: a proxy answers 503 to a share of the drainer's requests and resets
// the connection of another share. No drain may be lost: every pod is evicted, the
// lifecycle action is completed exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDrainer, type Drainer } from './drainer.js';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';
import {
  createDeployment,
  createKwokNode,
  ensureNamespace,
  newInstanceId,
  podsOn,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, plane } from './head.js';

const pods = 20;

describe('API faults between the drainer and the API server', () => {
  let proxy: FaultProxy;
  let drainer: Drainer;
  beforeAll(async () => {
    proxy = await startFaultProxy(plane, { unavailable: 0.2, reset: 0.1, seed: 42 });
    drainer = startDrainer(plane, { endpoint: proxy.url, loadBalancerDelaySeconds: 1, drainTimeoutSeconds: 120 });
  });
  afterAll(async () => {
    drainer?.restore();
    await proxy?.stop();
  });

  it('drains through 503s and connection resets without losing the drain', async () => {
    await ensureNamespace(a, 'faults');
    const instanceId = newInstanceId();
    await createKwokNode(a, 'faults-1', instanceId, { scenario: 'faults' });
    await waitNodeReady(a, 'faults-1');
    await createDeployment(a, 'faults', 'web', pods, { nodeSelector: { scenario: 'faults' } });
    await waitDeploymentReady(a, 'faults', 'web', pods);
    await createKwokNode(a, 'faults-2', newInstanceId(), { scenario: 'faults' });
    await waitNodeReady(a, 'faults-2');

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'drained', instanceId }] });
    expect(drainer.completions.filter((c) => c.instanceId === instanceId)).toEqual([
      expect.objectContaining({ result: 'CONTINUE', outcome: 'completed' }),
    ]);
    expect((await podsOn(a, 'faults-1')).filter((p) => p.metadata?.namespace === 'faults')).toEqual([]);
    // The faults really happened, and the handler retried through them.
    const failed = proxy.counts.answered503 + proxy.counts.reset;
    expect(failed).toBeGreaterThanOrEqual(5);
    const inPlaceRetries = drainer.logs.filter((l) => l['message'] === 'retrying Kubernetes request').length;
    const evictionRetries = drainer.logs.filter(
      (l) => l['message'] === 'eviction blocked, will retry' && l['reason'] === 'server-error',
    ).length;
    const watchResumes = drainer.logs.filter((l) =>
      /pod watch (ended|could not resume)/.test(String(l['message'])),
    ).length;
    console.log(
      `[faults] ${proxy.counts.requests} requests through the proxy: ${proxy.counts.answered503} answered 503, ${proxy.counts.reset} reset, ` +
        `${proxy.counts.forwarded} forwarded; in-place retries ${inPlaceRetries}, eviction retries ${evictionRetries} (Events/log once per pod), watch resumes ${watchResumes}; outcome drained, 1 completion`,
    );
    expect(inPlaceRetries + evictionRetries).toBeGreaterThan(0);
  });
});
