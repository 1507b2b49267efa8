// The termination's failure semantics on the real control plane, one scenario per answer the
// real world gives (issue 11, items 2-9). Each fails on the code before the phases landed.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actionIdOfToken } from '../../lambda/cluster/marks/action-id.js';
import { startDrainer, statusOf } from './drainer.js';
import { apiFailure, startFaultProxy, type FaultProxy, type Intercept } from './fault-proxy.js';
import {
  byDrainer,
  createKwokNode,
  createPod,
  ensureNamespace,
  eventsFor,
  newInstanceId,
  nodeWithDeployment,
  podsOn,
  type PodTemplateOptions,
  readAudit,
  sleep,
  until,
  waitNodeReady,
} from './kube.js';
import { a, drainerWrites, plane } from './head.js';

const nodeWithPods = (namespace: string, name: string, replicas: number, o: PodTemplateOptions = {}) =>
  nodeWithDeployment(a, namespace, name, replicas, o);

describe('failure semantics (issue 11)', () => {
  it('2. verify: a direct invocation with a made-up token writes nothing to the cluster and completes nothing', async () => {
    const { instanceId, node } = await nodeWithPods('forged', 'forged', 2);
    const drainer = startDrainer(plane);
    try {
      const since = Date.now();
      const result = await drainer.terminate(instanceId, { unknownToAutoScaling: true });

      expect(statusOf(result)).toBe('no-active-action');
      expect(drainerWrites(since)).toEqual([]);
      expect(readAudit(plane, (e) => byDrainer(e) && e.atMs >= since)).toEqual([]);
      expect((await a.core.readNode({ name: node })).spec?.unschedulable).toBeFalsy();
      expect(drainer.completions).toEqual([]);
      expect(drainer.logs.find((l) => l['level'] === 'WARN')).toMatchObject({
        instanceId,
        message: expect.stringMatching(/no active lifecycle action/),
      });
    } finally {
      drainer.restore();
    }
  });

  describe("3. a ValidatingAdmissionPolicy denies one pod's eviction while the others drain", () => {
    beforeAll(async () => {
      await ensureNamespace(a, 'admission');
    });
    afterAll(() => {
      a.kubectl(
        'delete',
        'validatingadmissionpolicybinding,validatingadmissionpolicy',
        'protect-payments',
        '--ignore-not-found',
      );
    });

    it('blocks only that pod (Events with the denial), drains the rest, waits for load balancers, then applies the deadline policy', async () => {
      const { instanceId, node } = await nodeWithPods('admission', 'shop', 3);
      await createPod(a, 'admission', 'payments', { nodeName: node, terminationGracePeriodSeconds: 3 });
      await until(
        'payments Running',
        30_000,
        async () =>
          (await a.core.readNamespacedPod({ namespace: 'admission', name: 'payments' })).status?.phase === 'Running',
      );
      applyPolicy();
      await until('the policy denies the eviction of payments', 30_000, async () => {
        try {
          await a.core.createNamespacedPodEviction({
            namespace: 'admission',
            name: 'payments',
            body: { metadata: { name: 'payments', namespace: 'admission' } },
            dryRun: 'All',
          });
          return false;
        } catch (error) {
          return (
            (error as { code?: number }).code !== undefined &&
            (error as { code: number }).code >= 400 &&
            (error as { code: number }).code !== 429
          );
        }
      });
      const drainer = startDrainer(plane, {
        drainTimeoutSeconds: 15,
        minEvictionWindowSeconds: 3,
        loadBalancerDelaySeconds: 2,
      });
      try {
        const since = Date.now();
        const result = await drainer.terminate(instanceId);

        expect(statusOf(result)).toBe('timed-out');
        const evictions = readAudit(
          plane,
          (e) => byDrainer(e) && e.atMs >= since && e.subresource === 'eviction' && e.namespace === 'admission',
        );
        const denied = evictions.filter((e) => e.name === 'payments');
        expect(denied.length).toBeGreaterThanOrEqual(2);
        expect(denied.every((e) => e.code === 403 || e.code === 422)).toBe(true);
        expect(evictions.filter((e) => e.name?.startsWith('shop-') && e.code === 201)).toHaveLength(3);
        const podEvents = await eventsFor(a, 'Pod', 'payments', 'admission');
        expect(podEvents.find((e) => e.reason === 'EvictionBlocked')?.message).toContain(
          'payments is protected from eviction',
        );
        const nodeEvents = (await eventsFor(a, 'Node', node)).map((e) => e.reason);
        expect(nodeEvents).toEqual(
          expect.arrayContaining(['EvictionBlocked', 'PodForceDeleted', 'DrainTimedOut', 'LifecycleActionCompleted']),
        );
        // DEADLINE_POLICY=force applied to it alone: deleted at the deadline minus its 3 s grace.
        const deletes = readAudit(
          plane,
          (e) => byDrainer(e) && e.atMs >= since && e.verb === 'delete' && e.namespace === 'admission',
        );
        expect(deletes.map((e) => e.name)).toEqual(['payments']);
        const completion = drainer.completions.find((c) => c.instanceId === instanceId)!;
        expect(completion).toMatchObject({ result: 'CONTINUE', outcome: 'completed' });
        // The load-balancer wait (2 s) ran after the drain.
        expect(completion.atMs - deletes[0]!.atMs).toBeGreaterThanOrEqual(2_000);
        console.log(
          `[admission] ${denied.length} denied evictions of payments (HTTP ${denied[0]!.code}), 3 others evicted, deleted at ${((deletes[0]!.atMs - since) / 1000).toFixed(1)} s, CONTINUE at ${((completion.atMs - since) / 1000).toFixed(1)} s`,
        );
      } finally {
        drainer.restore();
      }
    });
  });

  it('5. a notification whose Time is 16 minutes old still gets evictions, not a force DELETE of every pod', async () => {
    const { instanceId, node } = await nodeWithPods('late', 'late', 3);
    const drainer = startDrainer(plane, {
      deadlinePolicy: 'force',
      drainTimeoutSeconds: 900,
      minEvictionWindowSeconds: 60,
    });
    try {
      const since = Date.now();
      const result = await drainer.terminate(instanceId, { time: new Date(Date.now() - 16 * 60_000) });

      expect(statusOf(result)).toBe('drained');
      const evictions = readAudit(
        plane,
        (e) => byDrainer(e) && e.atMs >= since && e.subresource === 'eviction' && e.namespace === 'late',
      );
      expect(evictions.filter((e) => e.code === 201)).toHaveLength(3);
      expect(
        readAudit(plane, (e) => byDrainer(e) && e.atMs >= since && e.verb === 'delete' && e.resource === 'pods'),
      ).toEqual([]);
      expect((await podsOn(a, node)).filter((p) => p.metadata?.namespace === 'late')).toEqual([]);
      const record = JSON.parse(
        (await a.core.readNode({ name: node })).metadata?.annotations?.['graceful-node-termination/drain'] ?? '{}',
      );
      expect(Date.parse(record.startedAt)).toBeGreaterThanOrEqual(since - 1_000);
    } finally {
      drainer.restore();
    }
  });

  describe("4. a 409 from the eviction API about the budget's status (the server gave up on conflicts)", () => {
    let proxy: FaultProxy;
    const conflicted = new Set<string>();
    beforeAll(async () => {
      proxy = await startFaultProxy(plane, {
        intercept: ({ method, url }) => {
          const match = /\/namespaces\/conflict\/pods\/([^/]+)\/eviction$/.exec(url.pathname);
          if (method !== 'POST' || !match || conflicted.has(match[1]!)) return undefined;
          conflicted.add(match[1]!);
          // What client-go's retry.OnError hands back after 20 conflicts updating the budget.
          return apiFailure(
            409,
            'Conflict',
            'Operation cannot be fulfilled on poddisruptionbudgets.policy "cart-pdb": the object has been modified; please apply your changes to the latest version and try again',
            { name: 'cart-pdb', group: 'policy', kind: 'poddisruptionbudgets' },
          );
        },
      });
    });
    afterAll(() => proxy?.stop());

    it('is retried, not taken as "pod gone": every pod is evicted, none is deleted', async () => {
      const { instanceId, node } = await nodeWithPods('conflict', 'cart', 3);
      // 60 s: the pods' 30 s grace fits, so force would only act at 30 s (old code: at 60 s).
      const drainer = startDrainer(plane, { endpoint: proxy.url, drainTimeoutSeconds: 60, deadlinePolicy: 'force' });
      try {
        const since = Date.now();
        const result = await drainer.terminate(instanceId);

        expect(statusOf(result)).toBe('drained');
        expect(conflicted.size).toBe(3);
        const evicted = readAudit(
          plane,
          (e) =>
            byDrainer(e) &&
            e.atMs >= since &&
            e.subresource === 'eviction' &&
            e.namespace === 'conflict' &&
            e.code === 201,
        );
        expect(new Set(evicted.map((e) => e.name))).toEqual(conflicted);
        expect(
          readAudit(plane, (e) => byDrainer(e) && e.atMs >= since && e.verb === 'delete' && e.resource === 'pods'),
        ).toEqual([]);
        expect((await podsOn(a, node)).filter((p) => p.metadata?.namespace === 'conflict')).toEqual([]);
      } finally {
        drainer.restore();
      }
    });
  });

  it('6. a NotReady node whose pods never finish terminating does not hold the instance', async () => {
    const { instanceId, node } = await nodeWithPods('dead', 'dead', 2, { terminationGracePeriodSeconds: 30 });
    // The kubelet dies: kwok stops playing the node, which turns NotReady and unreachable, and
    // nothing will ever finish its pods' deletion (a finalizer stands in for the dead kubelet).
    a.kubectl('annotate', 'node', node, 'kwok.x-k8s.io/node-');
    const pods = (await podsOn(a, node)).filter((p) => p.metadata?.namespace === 'dead').map((p) => p.metadata!.name!);
    for (const name of pods)
      a.kubectl(
        'patch',
        'pod',
        '-n',
        'dead',
        name,
        '--type=merge',
        '-p',
        '{"metadata":{"finalizers":["example.com/kubelet-gone"]}}',
      );
    const now = new Date().toISOString();
    a.kubectl(
      'patch',
      'node',
      node,
      '--subresource=status',
      '--type=strategic',
      '-p',
      JSON.stringify({
        status: {
          conditions: [
            {
              type: 'Ready',
              status: 'Unknown',
              reason: 'NodeStatusUnknown',
              message: 'Kubelet stopped posting node status.',
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
          ],
        },
      }),
    );
    a.kubectl('taint', 'node', node, 'node.kubernetes.io/unreachable:NoSchedule', '--overwrite');
    await until(
      'node NotReady',
      15_000,
      async () =>
        (await a.core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True',
    );
    const drainer = startDrainer(plane, { drainTimeoutSeconds: 60, loadBalancerDelaySeconds: 1 });
    try {
      const since = Date.now();
      const result = await drainer.terminate(instanceId);
      const tookMs = Date.now() - since;

      expect(statusOf(result)).toBe('drained');
      // Evicted through the eviction API (budgets would hold), then not waited for.
      const evictions = readAudit(
        plane,
        (e) =>
          byDrainer(e) && e.atMs >= since && e.subresource === 'eviction' && e.namespace === 'dead' && e.code === 201,
      );
      expect(evictions).toHaveLength(2);
      expect(tookMs).toBeLessThan(20_000);
      // The scenario is real: no kubelet finished them, they are still terminating.
      const left = (await podsOn(a, node)).filter((p) => p.metadata?.namespace === 'dead');
      expect(left).toHaveLength(2);
      expect(left.every((p) => p.metadata?.deletionTimestamp)).toBe(true);
      expect((await eventsFor(a, 'Node', node)).find((e) => e.reason === 'PodsNotWaitedFor')?.message).toMatch(
        /NotReady or unreachable/,
      );
      console.log(
        `[dead kubelet] 2 pods evicted and not waited for; CONTINUE after ${(tookMs / 1000).toFixed(1)} s (drain timeout 60 s)`,
      );
    } finally {
      drainer.restore();
      for (const name of pods)
        a.kubectl('patch', 'pod', '-n', 'dead', name, '--type=merge', '-p', '{"metadata":{"finalizers":null}}');
    }
  });

  describe('7. launch admission when our node requests get 429 after the first answer', () => {
    let proxy: FaultProxy;
    let nodeGets = 0;
    beforeAll(async () => {
      proxy = await startFaultProxy(plane, {
        intercept: ({ method, url }): Intercept | undefined => {
          if (method !== 'GET' || url.pathname !== '/api/v1/nodes' || url.searchParams.has('watch')) return undefined;
          if (nodeGets++ === 0) return undefined;
          return apiFailure(
            429,
            'TooManyRequests',
            'Too many requests, please try again later.',
            { retryAfterSeconds: 1 },
            { 'retry-after': '1' },
          );
        },
      });
    });
    afterAll(() => proxy?.stop());

    it('admits unchecked (CONTINUE and the LaunchesUnchecked line) instead of abandoning a healthy instance', async () => {
      const drainer = startDrainer(plane, { endpoint: proxy.url, launchTimeoutSeconds: 30 });
      try {
        const instanceId = newInstanceId();
        // The instance boots fine; its node registers after the first (answered) look.
        const registering = sleep(2_000).then(() =>
          createKwokNode(a, 'throttled-launch', instanceId, { scenario: 'throttled' }),
        );
        const result = await drainer.launch(instanceId);
        await registering;

        expect(statusOf(result)).toBe('launch-admitted-unchecked');
        expect(drainer.completions.filter((c) => c.instanceId === instanceId)).toEqual([
          expect.objectContaining({ result: 'CONTINUE', outcome: 'completed' }),
        ]);
        expect(
          drainer.logs.some((l) => l['level'] === 'ERROR' && /admitting it unchecked/.test(String(l['message']))),
        ).toBe(true);
        expect(drainer.logs.some((l) => /abandoning the launch/.test(String(l['message'])))).toBe(false);
        expect(nodeGets).toBeGreaterThan(2);
      } finally {
        drainer.restore();
      }
    });
  });

  it("8. a hand-off whose publish dies after the claim is carried on by Lambda's retry of the same invocation", async () => {
    const { instanceId, node } = await nodeWithPods('crash', 'crash', 1, {
      deleteDelay: '12s',
      terminationGracePeriodSeconds: 60,
    });
    const drainer = startDrainer(plane, { handOff: true, drainTimeoutSeconds: 120, loadBalancerDelaySeconds: 1 });
    const token = randomUUID();
    const remainingMs = 9_000;
    const hung = drainer.hangNextPublish();
    try {
      // The first attempt claims hand-off 1 on the node and dies publishing it.
      const first = drainer.terminate(instanceId, { token, requestId: 'request-A', remainingMs }).then(
        () => 'returned',
        () => 'died',
      );
      await until('the claim of hand-off 1 on the node', 30_000, async () =>
        (await a.core.readNode({ name: node })).metadata?.annotations?.[
          'graceful-node-termination/hand-off'
        ]?.startsWith(`${actionIdOfToken(token)}/1`),
      );
      expect(
        (await a.core.readNode({ name: node })).metadata?.annotations?.['graceful-node-termination/hand-off'],
      ).toBe(`${actionIdOfToken(token)}/1/request-A`);
      // The token itself is nowhere on the node.
      expect(JSON.stringify((await a.core.readNode({ name: node })).metadata)).not.toContain(token);

      // Lambda retries the invocation with the same request id.
      const statuses = [statusOf(await drainer.terminate(instanceId, { token, requestId: 'request-A', remainingMs }))];
      while (drainer.handOffs.length >= statuses.length)
        statuses.push(statusOf(await drainer.deliver(drainer.handOffs[statuses.length - 1]!, { remainingMs })));

      expect(statuses[0]).toBe('handed-off');
      expect(statuses.at(-1)).toBe('drained');
      expect((drainer.handOffs[0]!['GracefulNodeTerminationHandOff'] as { claim: string }).claim).toBe(
        `${actionIdOfToken(token)}/1/request-A`,
      );
      expect(drainer.completions.filter((c) => c.token === token)).toEqual([
        expect.objectContaining({ result: 'CONTINUE', outcome: 'completed' }),
      ]);
      hung.release();
      expect(await first).toBe('died');
      console.log(`[hand-off crash] retry of request-A carried on: ${statuses.join(' -> ')}`);
    } finally {
      hung.release();
      drainer.restore();
    }
  });

  describe('9. a retry that came due while the pass waited on a slow answer', () => {
    let proxy: FaultProxy;
    const quickAttempts: number[] = [];
    let slowAnswered = false;
    beforeAll(async () => {
      proxy = await startFaultProxy(plane, {
        intercept: ({ method, url }): Intercept | undefined => {
          if (method !== 'POST') return undefined;
          if (url.pathname === '/api/v1/namespaces/due/pods/quick/eviction') {
            quickAttempts.push(Date.now());
            if (quickAttempts.length > 1) return undefined;
            // A budget refuses it once, at once.
            return apiFailure(
              429,
              'TooManyRequests',
              "Cannot evict pod as it would violate the pod's disruption budget.",
              {
                causes: [
                  {
                    reason: 'DisruptionBudget',
                    message: 'The disruption budget quick-pdb needs 1 healthy pods and has 1 currently',
                  },
                ],
              },
            );
          }
          if (url.pathname === '/api/v1/namespaces/due/pods/slow/eviction' && !slowAnswered) {
            slowAnswered = true;
            // Answered after 3 s, with "come back in 20 s".
            return {
              ...apiFailure(
                429,
                'TooManyRequests',
                'Too many requests, please try again later.',
                { retryAfterSeconds: 20 },
                { 'retry-after': '20' },
              ),
              delayMs: 3_000,
            };
          }
          return undefined;
        },
      });
    });
    afterAll(() => proxy?.stop());

    it('is retried when the pass ends, not when the next other thing happens', async () => {
      await ensureNamespace(a, 'due');
      const instanceId = newInstanceId();
      await createKwokNode(a, 'due-1', instanceId, { scenario: 'due' });
      await waitNodeReady(a, 'due-1');
      for (const name of ['quick', 'slow']) await createPod(a, 'due', name, { nodeName: 'due-1' });
      await until(
        'both Running',
        30_000,
        async () => (await podsOn(a, 'due-1')).filter((p) => p.status?.phase === 'Running').length === 2,
      );
      const drainer = startDrainer(plane, { endpoint: proxy.url, drainTimeoutSeconds: 60, deadlinePolicy: 'leave' });
      try {
        const result = await drainer.terminate(instanceId);

        expect(statusOf(result)).toBe('drained');
        expect(quickAttempts.length).toBeGreaterThanOrEqual(2);
        const gapMs = quickAttempts[1]! - quickAttempts[0]!;
        // Due 0.5 s after the refusal; the pass ended with slow's answer at ~3 s.
        expect(gapMs).toBeLessThan(8_000);
        console.log(
          `[retry due] quick retried ${(gapMs / 1000).toFixed(1)} s after its refusal (slow answered at 3 s, asked for 20 s)`,
        );
      } finally {
        drainer.restore();
      }
    });
  });
});

function applyPolicy(): void {
  a.kubectl(
    'apply',
    '-f',
    writeTemp(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: protect-payments
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods/eviction"]
  validations:
  - expression: "object.metadata.name != 'payments'"
    message: "payments is protected from eviction"
    # 403, as admission webhooks and policy engines answer (a policy's default is 422 Invalid).
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: protect-payments
spec:
  policyName: protect-payments
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: admission
`),
  );
}

function writeTemp(text: string): string {
  const path = join(tmpdir(), `policy-${randomUUID()}.yaml`);
  writeFileSync(path, text);
  return path;
}
