// `migrate` on the real control plane, with AWS at local endpoints (demo/local-aws.ts) and the
// real handler serving both groups (demo/environment.ts on the suite's plane): Auto Scaling's
// scale-in is played by demo/scale-in.ts, each old instance drained by the terminate hook.
// Killed halfway (SIGKILL, its marks on every old node), nothing is left once the lease is
// over and the reconciler has run; run to the end, every pod moves once (no pod evicted
// twice, from the audit log), the batch Job finishes where it runs, and the old group is at zero.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startEnvironment, type Environment } from '../../demo/environment.js';
import { playScaleIns } from '../../demo/scale-in.js';
import { localAwsEnvironment } from '../../demo/local-aws.js';
import { nodeMarkKeys } from '../../lambda/cluster/marks/mark-inventory.js';
import { main } from '../../scripts/migrate-command.js';
import { scheduledEvent } from '../fixtures/deliveries.js';
import {
  byDrainer,
  createDeployment,
  createPdb,
  ensureNamespace,
  newInstanceId,
  podsOn,
  readAudit,
  sleep,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { testAws } from './plane/token-webhook.js';
import { plane } from './head.js';

const from = 'migrate-old';
const to = 'migrate-new';
const repo = join(import.meta.dirname, '..', '..');

/** Every key of ours on a node, and its cordon: what must be gone after the reconciler ran. */
async function marksOn(env: Environment, name: string): Promise<string[]> {
  const n = await env.admin.core.readNode({ name });
  const labels = Object.keys(n.metadata?.labels ?? {}).filter((k) =>
    (nodeMarkKeys.labels as readonly string[]).includes(k),
  );
  const annotations = Object.keys(n.metadata?.annotations ?? {}).filter((k) =>
    (nodeMarkKeys.annotations as readonly string[]).includes(k),
  );
  const taints = (n.spec?.taints ?? [])
    .filter((t) => (nodeMarkKeys.taints as readonly string[]).includes(t.key))
    .map((t) => `taint ${t.key}`);
  return [...labels, ...annotations, ...taints, ...(n.spec?.unschedulable ? ['cordon'] : [])];
}

async function createJob(env: Environment, name: string, seconds: number): Promise<void> {
  await env.admin.batch.createNamespacedJob({
    namespace: 'migrate',
    body: {
      metadata: { name },
      spec: {
        backoffLimit: 0,
        template: {
          // kwok completes the pod this long after it is Ready.
          metadata: {
            annotations: {
              'pod-complete.stage.kwok.x-k8s.io/delay': `${seconds}s`,
              'pod-complete.stage.kwok.x-k8s.io/jitter-delay': `${seconds}s`,
            },
          },
          spec: {
            restartPolicy: 'Never',
            nodeSelector: { 'eks.amazonaws.com/nodegroup': from },
            containers: [{ name: 'job', image: 'registry.k8s.io/pause:3.10' }],
            automountServiceAccountToken: false,
          },
        },
      },
    },
  });
  await until(`Job ${name} Running`, 30_000, async () => {
    const pods = await env.admin.core.listNamespacedPod({ namespace: 'migrate', labelSelector: `job-name=${name}` });
    return pods.items.some((p) => p.status?.phase === 'Running');
  });
}

describe('migrate', () => {
  let env: Environment;
  const oldNodes = ['migrate-old-1', 'migrate-old-2', 'migrate-old-3'];
  const lines: string[] = [];

  beforeAll(async () => {
    env = await startEnvironment({ plane, log: () => {}, loadBalancerDelaySeconds: 1, groups: [from, to] });
    playScaleIns(env, { say: (line) => lines.push(line) });
    env.onHandlerLog((entry) => {
      if (process.env['GNT_DEBUG']) process.stderr.write(`handler: ${JSON.stringify(entry)}\n`);
    });
    // The scenario's label: other files' nodes on the suite's plane run none of its pods.
    for (const name of oldNodes) await env.addNode(name, newInstanceId(), { scenario: 'migrate' }, [], from);
    for (const name of oldNodes) await waitNodeReady(env.admin, name);
    await ensureNamespace(env.admin, 'migrate');
    await createDeployment(env.admin, 'migrate', 'web', 6, {
      nodeSelector: { scenario: 'migrate' },
      deleteDelay: '1s',
    });
    await waitDeploymentReady(env.admin, 'migrate', 'web', 6);
    await createPdb(env.admin, 'migrate', 'web', 'web', 5);
    // The new group: as many nodes as the old one runs.
    for (let i = 1; i <= 3; i++)
      await env.addNode(`migrate-new-${i}`, newInstanceId(), { scenario: 'migrate' }, [], to);
    for (let i = 1; i <= 3; i++) await waitNodeReady(env.admin, `migrate-new-${i}`);
  });
  afterAll(async () => {
    await env?.stop();
  });

  it('killed halfway, leaves no mark behind once its lease is over and the reconciler ran', async () => {
    await createJob(env, 'long', 600);
    // Node itself (tsx as its loader), not the tsx CLI: SIGKILL must reach the command, not a wrapper.
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'scripts/migrate-command.ts',
        '--from',
        from,
        '--to',
        to,
        '--approve',
        '--lease',
        '10',
        '--kubeconfig',
        plane.adminKubeconfig,
        '--region',
        testAws.region,
      ],
      {
        cwd: repo,
        env: {
          ...process.env,
          ...localAwsEnvironment(env.aws),
          AWS_ACCESS_KEY_ID: testAws.accessKeyId,
          AWS_SECRET_ACCESS_KEY: testAws.secretAccessKey,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    // Halfway: every old node marked, the command waiting for the batch pod.
    await until('the command waiting for the batch pod', 60_000, async () => /waiting for 1 batch pod/.test(output));
    for (const name of oldNodes)
      expect(await marksOn(env, name), output).toEqual(
        expect.arrayContaining(['graceful-node-termination/migration', 'taint graceful-node-termination/migrating']),
      );
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));

    // The lease still runs: the reconciler leaves the marks.
    await env.deliver(scheduledEvent(new Date().toISOString()));
    expect(await marksOn(env, oldNodes[0]!)).toContain('graceful-node-termination/migration');
    await sleep(10_500);
    await env.deliver(scheduledEvent(new Date().toISOString()));

    for (const name of oldNodes) expect(await marksOn(env, name), name).toEqual([]);
    expect(env.aws.calls.filter((c) => c.action === 'TerminateInstanceInAutoScalingGroup')).toEqual([]);
    await env.admin.batch.deleteNamespacedJob({ namespace: 'migrate', name: 'long', propagationPolicy: 'Foreground' });
    await until(
      'the long Job gone',
      30_000,
      async () =>
        (await env.admin.core.listNamespacedPod({ namespace: 'migrate', labelSelector: 'job-name=long' })).items
          .length === 0,
    );
  });

  it('moves every pod once, lets the batch Job finish in place, and leaves the old group at zero', async () => {
    await createJob(env, 'nightly', 15);
    const jobPod = (await env.admin.core.listNamespacedPod({ namespace: 'migrate', labelSelector: 'job-name=nightly' }))
      .items[0]!;
    const originals = new Set<string>();
    for (const name of oldNodes) for (const p of await podsOn(env.admin, name)) originals.add(p.metadata!.name!);
    const since = Date.now();
    const out: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((line: string) => {
      out.push(line);
      if (process.env['GNT_DEBUG']) process.stderr.write(`migrate: ${line}\n`);
    });
    let code: number;
    try {
      code = await main([
        '--from',
        from,
        '--to',
        to,
        '--approve',
        '--max-unavailable',
        '1',
        '--kubeconfig',
        plane.adminKubeconfig,
        '--region',
        testAws.region,
      ]);
    } finally {
      log.mockRestore();
    }
    const text = out.join('\n');

    expect(code, text).toBe(0);
    expect(text).toMatch(
      /plan: migrate migrate-old -> migrate-new .*\(deployment graceful-node-termination: both groups served\)/,
    );
    expect(text).toMatch(/waiting for 1 batch pod\(s\) to finish: migrate\/nightly-/);
    expect(text).toMatch(/migrate-old is at zero \(desired 0, 0 instance\(s\)\)/);
    // The Job finished where it ran: never evicted, succeeded once.
    const job = await env.admin.batch.readNamespacedJob({ namespace: 'migrate', name: 'nightly' });
    expect(job.status?.succeeded).toBe(1);
    const evictions = readAudit(
      plane,
      (e) => byDrainer(e) && e.subresource === 'eviction' && e.code === 201 && e.receivedMs >= since,
    ).map((e) => e.name ?? '');
    expect(evictions).not.toContain(jobPod.metadata!.name);
    // Every pod moved once: each eviction is of a pod that was on the old nodes before.
    expect(evictions.filter((name) => !originals.has(name))).toEqual([]);
    expect(new Set(evictions).size).toBe(evictions.length);
    expect(evictions.length).toBeGreaterThanOrEqual(6);
    // Three terminations, one at a time, each decrementing; the old nodes gone, no mark on the new.
    const terminations = env.aws.calls.filter((c) => c.action === 'TerminateInstanceInAutoScalingGroup');
    expect(terminations.map((c) => c.params['ShouldDecrementDesiredCapacity'])).toEqual(['true', 'true', 'true']);
    expect(
      (await env.admin.core.listNode()).items.map((n) => n.metadata!.name!).filter((n) => n.startsWith('migrate-old')),
    ).toEqual([]);
    for (let i = 1; i <= 3; i++) expect(await marksOn(env, `migrate-new-${i}`)).toEqual([]);
    await waitDeploymentReady(env.admin, 'migrate', 'web', 6);
  }, 300_000);
});
