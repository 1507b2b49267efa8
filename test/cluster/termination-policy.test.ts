// The custom termination policy on the real plane (issue 29): Auto Scaling's suggestion would
// take the node running a batch Job and the only replica of a service; the policy gives the
// idle node instead, with the reasons in Events. A group where every candidate is costly is
// deferred (a mark on the node, the audit log shows it), then past the maximum Auto Scaling's
// own suggestion stands. A cluster it cannot reach answers the suggestion at once.
import { describe, expect, it } from 'vitest';
import { deferralAnnotation } from '../../lambda/cluster/marks/mark-keys.js';
import { choicePayload } from '../fixtures/choice.js';
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
  sleep,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, plane } from './head.js';

async function runningJob(namespace: string, name: string, scenario: string): Promise<void> {
  await a.batch.createNamespacedJob({
    namespace,
    body: {
      metadata: { name },
      spec: {
        backoffLimit: 0,
        template: {
          // kwok completes Job pods at once unless told to wait: this one runs for an hour.
          metadata: {
            annotations: {
              'pod-complete.stage.kwok.x-k8s.io/delay': '1h',
              'pod-complete.stage.kwok.x-k8s.io/jitter-delay': '1h',
            },
          },
          spec: {
            restartPolicy: 'Never',
            nodeSelector: { scenario },
            containers: [{ name: 'job', image: 'registry.k8s.io/pause:3.10' }],
            automountServiceAccountToken: false,
          },
        },
      },
    },
  });
}

describe('the custom termination policy', () => {
  const busy = newInstanceId();
  const idle = newInstanceId();
  const zoned = (ids: string[], o: Parameters<typeof choicePayload>[1] = {}) =>
    choicePayload(ids, { zone: 'eu-west-1a', group: autoScalingGroupName, ...o });

  it('gives the idle node where the suggestion would take the batch Job and the only replica', async () => {
    await ensureNamespace(a, 'choice');
    await createKwokNode(a, 'choice-busy', busy, { scenario: 'choice-busy' });
    await createKwokNode(a, 'choice-idle', idle, { scenario: 'choice-idle' });
    await waitNodeReady(a, 'choice-busy');
    await waitNodeReady(a, 'choice-idle');
    await createDeployment(a, 'choice', 'checkout', 1, { nodeSelector: { scenario: 'choice-busy' } });
    await waitDeploymentReady(a, 'choice', 'checkout', 1);
    await runningJob('choice', 'report', 'choice-busy');
    await a.apps.createNamespacedStatefulSet({
      namespace: 'choice',
      body: {
        metadata: { name: 'ledger' },
        spec: {
          serviceName: 'ledger',
          replicas: 1,
          selector: { matchLabels: { app: 'ledger' } },
          template: {
            metadata: { labels: { app: 'ledger' } },
            spec: {
              nodeSelector: { scenario: 'choice-busy' },
              containers: [{ name: 'ledger', image: 'registry.k8s.io/pause:3.10' }],
              automountServiceAccountToken: false,
            },
          },
        },
      },
    });
    await until(
      'StatefulSet ready',
      30_000,
      async () =>
        ((await a.apps.readNamespacedStatefulSet({ namespace: 'choice', name: 'ledger' })).status?.readyReplicas ??
          0) === 1,
    );
    await until('Job pod Running', 30_000, async () =>
      (await podsOn(a, 'choice-busy')).some(
        (p) => p.metadata?.labels?.['job-name'] === 'report' && p.status?.phase === 'Running',
      ),
    );
    const drainer = startDrainer(plane);
    try {
      drainer.groups.set(busy, autoScalingGroupName);
      drainer.groups.set(idle, autoScalingGroupName);
      // Auto Scaling suggests the busy node first (its default policy knows nothing of pods).
      expect(await drainer.invoke(zoned([busy, idle]))).toEqual({ InstanceIDs: [idle] });
      const chosen = (await eventsFor(a, 'Node', 'choice-idle')).find((e) => e.reason === 'ChosenForTermination');
      expect(chosen?.message).toContain('rank 1 of 2');
      const passed = (await eventsFor(a, 'Node', 'choice-busy')).find((e) => e.reason === 'PassedOverForTermination');
      expect(passed?.message, passed?.message).toMatch(/choice\/report-\w+ is a running Job pod/);
      expect(passed?.message).toMatch(/ReplicaSet choice\/checkout-\w+ has no ready replica elsewhere/);
      expect(passed?.message).toContain('StatefulSet choice/ledger has no ready replica elsewhere');
    } finally {
      drainer.restore();
    }
  });

  it('defers a fully costly scale-in, then past the maximum answers the suggestion', async () => {
    const drainer = startDrainer(plane, { env: { TERMINATION_DEFERRAL_MAX_SECONDS: '3' } });
    try {
      drainer.groups.set(busy, autoScalingGroupName);
      const since = Date.now();
      expect(await drainer.invoke(zoned([busy]))).toEqual({ InstanceIDs: [] });
      const node = await a.core.readNode({ name: 'choice-busy' });
      expect(JSON.parse(node.metadata?.annotations?.[deferralAnnotation] ?? '{}')).toMatchObject({
        group: autoScalingGroupName,
      });
      expect((await eventsFor(a, 'Node', 'choice-busy')).some((e) => e.reason === 'TerminationDeferred')).toBe(true);
      const patches = readAudit(
        plane,
        (e) => byDrainer(e) && e.atMs >= since && e.verb === 'patch' && e.resource === 'nodes',
      );
      expect(patches.length).toBe(1);
      await sleep(3_500);
      expect(await drainer.invoke(zoned([busy]))).toEqual({ InstanceIDs: [busy] });
      expect((await eventsFor(a, 'Node', 'choice-busy')).some((e) => e.reason === 'TerminationDeferralExpired')).toBe(
        true,
      );
    } finally {
      drainer.restore();
    }
  });

  it("answers Auto Scaling's own suggestion when the cluster cannot be reached", async () => {
    const drainer = startDrainer(plane, { endpoint: 'https://127.0.0.1:9' });
    try {
      drainer.groups.set(busy, autoScalingGroupName);
      drainer.groups.set(idle, autoScalingGroupName);
      expect(await drainer.invoke(zoned([busy, idle]))).toEqual({ InstanceIDs: [busy, idle] });
      expect(drainer.logs.some((l) => String(l['message']).startsWith('termination policy could not decide'))).toBe(
        true,
      );
    } finally {
      drainer.restore();
    }
  });
});
