// Scenarios b, c, d: PodDisruptionBudgets as the real disruption controller and eviction
// handler enforce them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  byDrainer,
  createDeployment,
  createKwokNode,
  createPdb,
  ensureNamespace,
  eventsFor,
  newInstanceId,
  podsOn,
  readAudit,
  until,
  waitDeploymentReady,
  waitNodeReady,
  type PodTemplateOptions,
} from './kube.js';
import { startDrainer, type Drainer } from './drainer.js';
import { a, blockDrainer, plane } from './head.js';

async function readyPods(namespace: string, app: string): Promise<number> {
  const pods = await a.core.listNamespacedPod({ namespace, labelSelector: `app=${app}` });
  return pods.items.filter(
    (p) =>
      !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  ).length;
}

/** What a person would look at when a drain in this namespace stalls. */
async function diagnose(namespace: string, app: string): Promise<string> {
  const pods = await a.core.listNamespacedPod({ namespace, labelSelector: `app=${app}` });
  const pdbs = await a.policy.listNamespacedPodDisruptionBudget({ namespace });
  const events = await a.core.listNamespacedEvent({ namespace });
  const nodes = await a.core.listNode({ labelSelector: 'scenario=budgets' });
  return JSON.stringify(
    {
      pods: pods.items.map((p) => [
        p.metadata?.name,
        p.spec?.nodeName,
        p.status?.phase,
        p.metadata?.deletionTimestamp,
        p.status?.conditions?.find((c) => c.type === 'Ready')?.status,
      ]),
      pdbs: pdbs.items.map((p) => [p.metadata?.name, p.status]),
      nodes: nodes.items.map((n) => [n.metadata?.name, n.spec?.unschedulable, n.spec?.taints]),
      events: events.items.filter((e) => e.type === 'Warning').map((e) => [e.involvedObject.name, e.reason, e.message]),
    },
    null,
    1,
  );
}

/**
 * A node `<scenario>-1` whose only pods are two of `app`, under a budget that allows no
 * disruption (minAvailable 2): no drain can finish by eviction.
 */
async function nodeHeldByBudget(
  scenario: string,
  app: string,
  pdb: string,
  o: PodTemplateOptions = {},
): Promise<string> {
  const instanceId = newInstanceId();
  await createKwokNode(a, `${scenario}-1`, instanceId, { scenario });
  await waitNodeReady(a, `${scenario}-1`);
  await createDeployment(a, scenario, app, 2, { nodeSelector: { scenario }, ...o });
  await waitDeploymentReady(a, scenario, app, 2);
  await createPdb(a, scenario, pdb, app, 2);
  return instanceId;
}

describe('budgets hold (b)', () => {
  let drainer: Drainer;
  const nodes = ['pdb-1', 'pdb-2', 'pdb-3'].map((name) => ({ name, instanceId: newInstanceId() }));

  beforeAll(async () => {
    await ensureNamespace(a, 'budgets');
    for (const n of nodes) await createKwokNode(a, n.name, n.instanceId, { scenario: 'budgets' });
    for (const n of nodes) await waitNodeReady(a, n.name);
    await a.apps.createNamespacedDeployment({
      namespace: 'budgets',
      body: {
        metadata: { name: 'shop' },
        spec: {
          replicas: 6,
          selector: { matchLabels: { app: 'shop' } },
          template: {
            // Replacements take 2 s to become Ready, so the budget must push back (429).
            metadata: { labels: { app: 'shop' }, annotations: { 'pod-ready.stage.kwok.x-k8s.io/delay': '2s' } },
            spec: {
              containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
              nodeSelector: { scenario: 'budgets' },
              automountServiceAccountToken: false,
              // Two per node, so two nodes hold four of the six replicas.
              // Honor: cordoned nodes (tainted unschedulable) must not count as empty
              // domains, or no replacement could ever be placed and the budget would
              // block forever (the default, Ignore, is a real-world drain deadlock).
              topologySpreadConstraints: [
                {
                  maxSkew: 1,
                  topologyKey: 'kubernetes.io/hostname',
                  whenUnsatisfiable: 'DoNotSchedule',
                  nodeTaintsPolicy: 'Honor',
                  labelSelector: { matchLabels: { app: 'shop' } },
                },
              ],
            },
          },
        },
      },
    });
    await waitDeploymentReady(a, 'budgets', 'shop', 6);
    await createPdb(a, 'budgets', 'shop', 'shop', 5);
    // Capacity for the replacements once the two nodes are cordoned.
    for (const name of ['pdb-4', 'pdb-5']) await createKwokNode(a, name, newInstanceId(), { scenario: 'budgets' });
    for (const name of ['pdb-4', 'pdb-5']) await waitNodeReady(a, name);
    drainer = startDrainer(plane, { drainTimeoutSeconds: 120 });
  });
  afterAll(() => drainer?.restore());

  it('never lets Ready replicas drop below minAvailable while two nodes drain at once', async () => {
    // The two nodes hold at least three replicas, so the budget (one disruption at a time)
    // must make the drains wait for replacements.
    const onDrainedNodes = (await podsOn(a, 'pdb-1')).length + (await podsOn(a, 'pdb-2')).length;
    expect(onDrainedNodes).toBeGreaterThanOrEqual(3);
    let minimum = Infinity;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        minimum = Math.min(minimum, await readyPods('budgets', 'shop'));
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();

    const t0 = Date.now();
    const results = await Promise.all([
      drainer.terminate(nodes[0]!.instanceId),
      drainer.terminate(nodes[1]!.instanceId),
    ]);
    if (process.env['DEBUG_BUDGETS'])
      for (const l of drainer.logs)
        console.log(
          ((Date.parse(String(l['timestamp'])) - t0) / 1000).toFixed(2),
          l['node'],
          l['message'],
          l['pod'] ?? '',
          l['reason'] ?? '',
          l['podsRemaining'] ?? '',
        );
    watching = false;
    await watcher;
    if (JSON.stringify(results).includes('timed-out')) console.error(await diagnose('budgets', 'shop'));

    expect(results).toEqual([
      { records: [{ status: 'drained', instanceId: nodes[0]!.instanceId }] },
      { records: [{ status: 'drained', instanceId: nodes[1]!.instanceId }] },
    ]);
    expect(minimum).toBeGreaterThanOrEqual(5);
    // The last replacement becomes Ready (2 s) after the last old pod is gone.
    await until('all 6 replicas Ready again', 30_000, async () => (await readyPods('budgets', 'shop')) === 6);
    expect((await podsOn(a, 'pdb-1')).length + (await podsOn(a, 'pdb-2')).length).toBe(0);
    // The budget really pushed back: some evictions were refused with 429 and retried.
    const evictions = readAudit(
      plane,
      (e) => byDrainer(e) && e.subresource === 'eviction' && e.namespace === 'budgets',
    );
    expect(evictions.filter((e) => e.code === 429).length).toBeGreaterThan(0);
    expect(evictions.filter((e) => e.code === 201)).toHaveLength(onDrainedNodes);
  });
});

describe('deadlock (c) and two budgets over one pod (d), DEADLINE_POLICY=leave', () => {
  const drainer = blockDrainer({ drainTimeoutSeconds: 6, deadlinePolicy: 'leave' }, { namespace: 'deadlock' });

  it('stops at its deadline, names the blocking budget in Events and the log, and completes CONTINUE', async () => {
    const instanceId = await nodeHeldByBudget('deadlock', 'ledger', 'ledger-pdb');
    const started = Date.now();

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'timed-out', instanceId }] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(6_000);
    expect(drainer.completions.filter((c) => c.instanceId === instanceId)).toMatchObject([
      { result: 'CONTINUE', outcome: 'completed' },
    ]);
    const nodeEvents = await eventsFor(a, 'Node', 'deadlock-1');
    expect(nodeEvents.map((e) => e.reason)).toEqual([
      'DrainStarted',
      'Cordoned',
      'EvictionBlocked',
      'EvictionBlocked',
      'DrainTimedOut',
      'LifecycleActionCompleted',
    ]);
    const timedOut = nodeEvents.find((e) => e.reason === 'DrainTimedOut')!;
    expect(timedOut.type).toBe('Warning');
    expect(timedOut.message.match(/PodDisruptionBudget ledger-pdb/g)).toHaveLength(2);
    const pod = (await podsOn(a, 'deadlock-1'))[0]!;
    const podEvents = await eventsFor(a, 'Pod', pod.metadata!.name!, 'deadlock');
    expect(podEvents[0]).toMatchObject({
      reason: 'EvictionBlocked',
      type: 'Warning',
      message: expect.stringContaining('ledger-pdb needs 2 healthy pods and has 2 currently'),
    });
    const stuckLog = drainer.logs.find(
      (l) => l['message'] === 'drain deadline reached with pods still on the node; completing anyway',
    );
    expect(stuckLog).toMatchObject({ level: 'ERROR', instanceId, node: 'deadlock-1' });
    expect(JSON.stringify(stuckLog?.['stuck'])).toContain('"budgetName":"ledger-pdb"');
  });

  it('reports a pod selected by two budgets as such', async () => {
    const instanceId = newInstanceId();
    await createKwokNode(a, 'twopdb-1', instanceId, { scenario: 'twopdb' });
    await waitNodeReady(a, 'twopdb-1');
    await createDeployment(a, 'deadlock', 'search', 1, { nodeSelector: { scenario: 'twopdb' } });
    await waitDeploymentReady(a, 'deadlock', 'search', 1);
    await createPdb(a, 'deadlock', 'search-a', 'search', 0);
    await createPdb(a, 'deadlock', 'search-b', 'search', 0);

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'timed-out', instanceId }] });
    const evictions = readAudit(
      plane,
      (e) =>
        byDrainer(e) &&
        e.subresource === 'eviction' &&
        e.namespace === 'deadlock' &&
        e.name?.startsWith('search') === true,
    );
    expect(evictions.length).toBeGreaterThan(1);
    expect(evictions.every((e) => e.code === 500)).toBe(true);
    const nodeEvents = await eventsFor(a, 'Node', 'twopdb-1');
    expect(nodeEvents.find((e) => e.reason === 'EvictionBlocked')?.message).toContain(
      'more than one PodDisruptionBudget',
    );
    expect(nodeEvents.find((e) => e.reason === 'DrainTimedOut')?.message).toContain('(multiple-budgets)');
    expect(
      drainer.logs.some(
        (l) =>
          l['level'] === 'ERROR' &&
          l['message'] === 'eviction impossible: more than one PodDisruptionBudget selects the pod',
      ),
    ).toBe(true);
    await until('action completed', 5_000, async () =>
      drainer.completions.some((c) => c.instanceId === instanceId && c.outcome === 'completed'),
    );
  });
});

describe('deadlock with DEADLINE_POLICY=force (the default)', () => {
  const drainer = blockDrainer({ drainTimeoutSeconds: 5, loadBalancerDelaySeconds: 2 }, { namespace: 'forced' });

  it('deletes the pods the budget still protects at the deadline minus their grace, clamped to the deadline, then completes', async () => {
    const instanceId = await nodeHeldByBudget('forced', 'vault', 'vault-pdb', { terminationGracePeriodSeconds: 45 });
    const before = (await podsOn(a, 'forced-1')).map((p) => p.metadata!.name!);
    const since = Date.now();

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'timed-out', instanceId }] });
    const deletes = readAudit(
      plane,
      (e) =>
        byDrainer(e) && e.atMs >= since && e.verb === 'delete' && e.resource === 'pods' && e.namespace === 'forced',
    );
    expect(deletes.map((e) => e.name).sort()).toEqual([...before].sort());
    expect(deletes.every((e) => e.code === 200)).toBe(true);
    // Their own grace (45 s) does not fit the 5 s drain timeout: deleted at once after one
    // eviction attempt, with the grace clamped to what is left, so they are gone by the deadline.
    const graces = deletes.map((e) =>
      Number(new URL(e.requestURI, 'https://x').searchParams.get('gracePeriodSeconds')),
    );
    expect(graces.every((g) => g >= 0 && g <= 5)).toBe(true);
    expect(Date.now() - since).toBeLessThan(20_000);
    const nodeEvents = (await eventsFor(a, 'Node', 'forced-1')).map((e) => e.reason);
    expect(nodeEvents.filter((r) => r === 'PodForceDeleted')).toHaveLength(2);
    expect(nodeEvents.at(-1)).toBe('LifecycleActionCompleted');
    expect(drainer.completions.filter((c) => c.instanceId === instanceId)).toEqual([
      expect.objectContaining({ result: 'CONTINUE', outcome: 'completed' }),
    ]);
  });
});

describe('deadlock with DEADLINE_POLICY=retain', () => {
  const drainer = blockDrainer(
    { drainTimeoutSeconds: 5, loadBalancerDelaySeconds: 2, deadlinePolicy: 'retain' },
    { namespace: 'retained' },
  );

  it('deletes nothing, completes ABANDON at the deadline, leaves the node cordoned and names the budget', async () => {
    const instanceId = await nodeHeldByBudget('retained', 'ledger', 'ledger-pdb');
    const since = Date.now();

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'retained', instanceId }] });
    expect(drainer.completions.filter((c) => c.instanceId === instanceId)).toEqual([
      expect.objectContaining({ result: 'ABANDON', outcome: 'completed' }),
    ]);
    expect(readAudit(plane, (e) => byDrainer(e) && e.atMs >= since && e.verb === 'delete')).toEqual([]);
    expect((await podsOn(a, 'retained-1')).filter((p) => p.metadata?.namespace === 'retained')).toHaveLength(2);
    expect((await a.core.readNode({ name: 'retained-1' })).spec?.unschedulable).toBe(true);
    const events = await eventsFor(a, 'Node', 'retained-1');
    expect(events.find((e) => e.reason === 'DrainTimedOut')?.message).toMatch(
      /PodDisruptionBudget ledger-pdb.*DEADLINE_POLICY=retain/,
    );
    expect(events.at(-1)).toMatchObject({
      reason: 'LifecycleActionCompleted',
      type: 'Warning',
      message: expect.stringContaining('ABANDON'),
    });
  });
});

describe('a budget blocked for minutes, because its replacement cannot be scheduled', () => {
  const drainer = blockDrainer(
    {
      drainTimeoutSeconds: 8,
      blockedReportSeconds: 3,
      deadlinePolicy: 'leave',
      loadBalancerDelaySeconds: 0,
    },
    { namespace: 'stuck' },
  );

  it("names the pending replacement and the scheduler's reason", async () => {
    const instanceId = newInstanceId();
    await createKwokNode(a, 'stuck-1', instanceId, { scenario: 'stuck' });
    await waitNodeReady(a, 'stuck-1');
    // Only this node matches: once it is cordoned, no replacement can be placed.
    await createDeployment(a, 'stuck', 'pinned', 2, { nodeSelector: { scenario: 'stuck' } });
    await waitDeploymentReady(a, 'stuck', 'pinned', 2);
    await createPdb(a, 'stuck', 'pinned-pdb', 'pinned', 1);

    const result = await drainer.terminate(instanceId);

    expect(result).toEqual({ records: [{ status: 'timed-out', instanceId }] });
    const long = (await eventsFor(a, 'Node', 'stuck-1')).filter((e) => e.reason === 'EvictionBlockedLong');
    expect(long).toHaveLength(1);
    expect(long[0]!.message).toMatch(
      /has been refused by PodDisruptionBudget pinned-pdb for \d+(\.\d)? min: .*pinned-pdb needs 1 healthy pods and has 1 currently/,
    );
    expect(long[0]!.message).toMatch(
      /Replacements pending: stuck\/pinned-[a-z0-9-]+ \(Unschedulable: 0\/\d+ nodes are available: .*(unschedulable|didn't match Pod's node affinity\/selector)/,
    );
    console.log(`[stuck budget] ${long[0]!.message}`);
  });
});
