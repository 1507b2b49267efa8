// `cleanup` on the real control plane (issue 28): nodes carrying every mark a deployment of ours
// sets (a drain's labels, cordon, record and hand-off claim; a refresh's taint, labels, group and
// cordon; the owner label), written by the gateway the handler uses. `cleanup --dry-run` changes
// nothing; `cleanup` takes back every mark and leaves everything else on the nodes as it was:
// other people's labels, taints and cordon, and the marks of another deployment.
import type { V1Node } from '@kubernetes/client-node';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { actionOf } from '../../lambda/cluster/rules/drain-source.js';
import { type DrainRecord } from '../../lambda/cluster/model.js';
import { nodeMarkKeys } from '../../lambda/cluster/marks/mark-inventory.js';
import { unschedulableTaintKey } from '../../lambda/cluster/rules/pods.js';
import { kubeconfigGateway } from '../../scripts/cluster-access.js';
import { main, renderCleanup, type CleanupResult } from '../../scripts/cleanup.js';
import { createKwokNode, newInstanceId, waitNodeReady } from './kube.js';
import { lifecycleAction } from '../fixtures/drain-sources.js';
import { a, plane } from './head.js';

const deployment = 'gnt-cleanup';
const other = 'gnt-other';
const group = 'cleanup-workers';

/**
 * What cleanup may change on a node: labels, annotations, taints, the cordon. The node lifecycle
 * controller's node.kubernetes.io/unschedulable taint is left out: it mirrors `spec.unschedulable`
 * (compared here) a moment after every cordon and uncordon, so reading it races the controller
 * (https://kubernetes.io/docs/reference/labels-annotations-taints/#node-kubernetes-io-unschedulable).
 */
const shape = (n: V1Node) => ({
  labels: n.metadata?.labels ?? {},
  annotations: n.metadata?.annotations ?? {},
  taints: (n.spec?.taints ?? [])
    .filter((t) => t.key !== unschedulableTaintKey)
    .map((t) => ({ key: t.key, value: t.value, effect: t.effect })),
  unschedulable: n.spec?.unschedulable ?? false,
});
const read = async (name: string) => shape(await a.core.readNode({ name }));

const record = (set: DrainRecord['set'], priorLabel?: string): DrainRecord => ({
  source: lifecycleAction(`token-${Math.random()}`, `${deployment}-terminate`),
  notifiedAtMs: Date.now() - 60_000,
  startedAtMs: Date.now() - 50_000,
  updatedAtMs: Date.now() - 10_000,
  set,
  ...(priorLabel !== undefined ? { priorLabel } : {}),
});

async function runCleanup(...args: string[]): Promise<CleanupResult> {
  const printed: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(line));
  try {
    expect(
      await main([
        '--deployment',
        deployment,
        '--nodes-only',
        '--kubeconfig',
        plane.adminKubeconfig,
        '-o',
        'json',
        ...args,
      ]),
    ).toBe(0);
  } finally {
    log.mockRestore();
  }
  const result = JSON.parse(printed.join('\n')) as CleanupResult;
  if (process.env['GNT_DEBUG']) process.stderr.write(`cleanup:\n${renderCleanup(result)}\n`);
  return result;
}

describe('cleanup', () => {
  const names = {
    full: 'cleanup-full',
    minimal: 'cleanup-minimal',
    theirs: 'cleanup-theirs-cordon',
    otherDeployment: 'cleanup-other-deployment',
  };
  const before = new Map<string, ReturnType<typeof shape>>();
  let marked = new Map<string, ReturnType<typeof shape>>();

  beforeAll(async () => {
    await createKwokNode(a, names.full, newInstanceId(), { team: 'shop' }, [
      { key: 'dedicated', value: 'shop', effect: 'NoSchedule' },
    ]);
    await createKwokNode(a, names.minimal, newInstanceId(), {
      'node.kubernetes.io/exclude-from-external-load-balancers': 'false',
    });
    await createKwokNode(a, names.theirs, newInstanceId());
    await createKwokNode(a, names.otherDeployment, newInstanceId());
    for (const name of Object.values(names)) await waitNodeReady(a, name);
    // Somebody else's cordon, before any mark of ours: it must outlive the cleanup.
    a.kubectl('cordon', names.theirs);
    for (const name of Object.values(names)) before.set(name, await read(name));

    const gateway = kubeconfigGateway(a.kc);
    const node = async (name: string) => (await gateway.getNode(name))!;
    // A drain's marks, its hand-off claim, and a default refresh's taint and labels.
    const full = record(['exclude-from-load-balancers', 'cordon']);
    expect(
      await gateway.mark(names.full, { excludeFromLoadBalancers: true, cordon: true, drain: full, owner: deployment }),
    ).toBe('patched');
    expect(await gateway.claimHandOff(names.full, undefined, `${actionOf(full.source)}/1/request-1`, full)).toBe(
      'claimed',
    );
    expect(
      await gateway.markOutdated(await node(names.full), {
        refreshId: 'refresh-1',
        group,
        owner: deployment,
        taint: true,
        cordon: false,
      }),
    ).toBe('patched');
    // A drain over an operator's "false" (restored, not removed), then a minimal refresh's cordon.
    expect(
      await gateway.mark(names.minimal, {
        excludeFromLoadBalancers: true,
        cordon: false,
        drain: record(['exclude-from-load-balancers'], 'false'),
        owner: deployment,
      }),
    ).toBe('patched');
    expect(
      await gateway.markOutdated(await node(names.minimal), {
        refreshId: 'refresh-2',
        group,
        owner: deployment,
        taint: false,
        cordon: true,
      }),
    ).toBe('patched');
    // A drain that found the node cordoned already: the cordon is not ours.
    expect(
      await gateway.mark(names.theirs, {
        excludeFromLoadBalancers: true,
        cordon: false,
        drain: record(['exclude-from-load-balancers']),
        owner: deployment,
      }),
    ).toBe('patched');
    // A migration's marks, cordon included (--cordon-all), on the node whose cordon is ours already.
    const migration = {
      id: 'm-1-abcd',
      from: group,
      to: 'cleanup-new',
      renewedAtMs: Date.now(),
      leaseSeconds: 300,
      cordoned: false,
    };
    expect(
      await gateway.markMigrating(await node(names.full), {
        record: migration,
        owner: deployment,
        taint: true,
        cordon: false,
      }),
    ).toBe('patched');
    // Another deployment's drain: not ours to take back.
    expect(
      await gateway.mark(names.otherDeployment, {
        excludeFromLoadBalancers: true,
        cordon: true,
        drain: record(['exclude-from-load-balancers', 'cordon']),
        owner: other,
      }),
    ).toBe('patched');
    // The termination policy's deferral mark, and the out-of-service taint after an undrained release.
    expect(await gateway.markDeferred(await node(names.theirs), { sinceMs: Date.now(), group }, deployment)).toBe(
      'patched',
    );
    expect(await gateway.taintOutOfService(await node(names.minimal), 'i-0123456789abcdef0', deployment)).toBe(
      'patched',
    );
    marked = new Map(await Promise.all(Object.values(names).map(async (name) => [name, await read(name)] as const)));
  });
  afterEach(() => vi.restoreAllMocks());

  it('the nodes carry every mark we set on nodes (the test covers the whole inventory)', () => {
    const all = [...marked.values()];
    for (const key of nodeMarkKeys.labels) expect(all.some((n) => n.labels[key] !== undefined)).toBe(true);
    for (const key of nodeMarkKeys.annotations) expect(all.some((n) => n.annotations[key] !== undefined)).toBe(true);
    for (const key of nodeMarkKeys.taints) expect(all.some((n) => n.taints.some((t) => t.key === key))).toBe(true);
    expect(marked.get(names.full)!.unschedulable).toBe(true);
    expect(marked.get(names.minimal)!.unschedulable).toBe(true);
  });

  it('--dry-run lists every mark of the deployment and changes nothing', async () => {
    const result = await runCleanup('--dry-run');

    expect(result.dryRun).toBe(true);
    expect(result.nodes.map((n) => n.node).sort()).toEqual([names.full, names.minimal, names.theirs].sort());
    const full = result.nodes.find((n) => n.node === names.full)!.marks.join('\n');
    expect(full).toMatch(/cordon \(a drain of ours set it\): lifted/);
    expect(full).toMatch(/annotation graceful-node-termination\/hand-off: removed/);
    expect(full).toMatch(/taint graceful-node-termination\/outdated:PreferNoSchedule: removed/);
    expect(full).toMatch(/taint graceful-node-termination\/migrating:PreferNoSchedule: removed/);
    expect(full).toMatch(/annotation graceful-node-termination\/migration: removed/);
    expect(result.nodes.find((n) => n.node === names.minimal)!.marks).toEqual(
      expect.arrayContaining([
        'label node.kubernetes.io/exclude-from-external-load-balancers: restored to "false"',
        'cordon (a refresh of ours set it): lifted',
      ]),
    );
    expect(result.nodes.find((n) => n.node === names.theirs)!.marks.join('\n')).not.toMatch(/cordon/);
    for (const name of Object.values(names)) expect(await read(name), name).toEqual(marked.get(name));
  });

  it('takes back every mark of the deployment; everything else on the nodes is as it was', async () => {
    const result = await runCleanup();

    expect(result.dryRun).toBe(false);
    expect(result.nodes).toHaveLength(3);
    for (const name of [names.full, names.minimal, names.theirs])
      expect(await read(name), name).toEqual(before.get(name));
    expect(await read(names.otherDeployment)).toEqual(marked.get(names.otherDeployment));
    // Nothing left to do: a second run finds no node.
    expect((await runCleanup('--dry-run')).nodes).toEqual([]);
  });
});
