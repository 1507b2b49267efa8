// `migrate --cordon-all` run again inside the lease of a run that was killed (the documented
// recovery), on the real control plane with the real handler serving both groups and AWS at local
// endpoints: the re-run waits until the killed run's command has been quiet for longer than it
// renews its lease, takes its marks over with the cordon it set, and whatever way the re-run then
// ends (stopped with SIGTERM: the command takes back its marks; killed: the reconciler does once
// its lease is over) no old node is left cordoned. Kubernetes decides here: the cordon is
// spec.unschedulable, lifted only by the conditional JSON patch the record allows.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnvironment, type Environment } from '../../demo/environment.js';
import { localAwsEnvironment } from '../../demo/local-aws.js';
import { playScaleIns } from '../../demo/scale-in.js';
import { migrationLabel } from '../../lambda/cluster/marks/mark-keys.js';
import { scheduledEvent } from '../fixtures/deliveries.js';
import { plane } from './head.js';
import { ensureNamespace, newInstanceId, sleep, until, waitNodeReady } from './kube.js';
import { testAws } from './plane/token-webhook.js';

const from = 'rerun-old';
const to = 'rerun-new';
const repo = join(import.meta.dirname, '..', '..');
const oldNodes = ['rerun-old-1', 'rerun-old-2'];
const leaseSeconds = 10;

/** One `migrate --cordon-all` process, its output collected. */
interface Run {
  readonly child: ChildProcessWithoutNullStreams;
  output: string;
  readonly exited: Promise<number | null>;
}

function startMigrate(env: Environment): Run {
  // Node itself (tsx as its loader), not the tsx CLI: the signals must reach the command, not a wrapper.
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
      '--cordon-all',
      '--lease',
      String(leaseSeconds),
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
    },
  );
  const run: Run = {
    child,
    output: '',
    exited: new Promise((resolve) =>
      child.once('exit', (code) => {
        if (process.env['GNT_DEBUG']) process.stderr.write(`migrate (exit ${code}):\n${run.output}\n`);
        resolve(code);
      }),
    ),
  };
  child.stdout.on('data', (c: Buffer) => (run.output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (run.output += c.toString()));
  return run;
}

/** The migration that marks a node, and whether it is cordoned. */
async function stateOf(env: Environment, name: string): Promise<{ migration?: string; cordoned: boolean }> {
  const node = await env.admin.core.readNode({ name });
  const migration = node.metadata?.labels?.[migrationLabel];
  return { ...(migration ? { migration } : {}), cordoned: node.spec?.unschedulable === true };
}

/** A run waiting for the batch pod, every old node marked by it and cordoned: its migration id. */
async function waitingForBatch(env: Environment, run: Run): Promise<string> {
  await until('the command waiting for the batch pod', 90_000, async () =>
    /waiting for 1 batch pod/.test(run.output),
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; its output:\n${run.output}`, { cause: error });
  });
  const id = /migration (m-\d+-[0-9a-f]+): marked/.exec(run.output)?.[1];
  for (const name of oldNodes) expect(await stateOf(env, name), run.output).toEqual({ migration: id, cordoned: true });
  return id!;
}

describe("migrate --cordon-all, run again inside a killed run's lease", () => {
  let env: Environment;

  beforeAll(async () => {
    env = await startEnvironment({ plane, log: () => {}, loadBalancerDelaySeconds: 1, groups: [from, to] });
    playScaleIns(env, { say: () => {} });
    for (const name of oldNodes) await env.addNode(name, newInstanceId(), { scenario: 'migrate-rerun' }, [], from);
    for (let i = 1; i <= oldNodes.length; i++)
      await env.addNode(`rerun-new-${i}`, newInstanceId(), { scenario: 'migrate-rerun' }, [], to);
    for (const name of [...oldNodes, 'rerun-new-1', 'rerun-new-2']) await waitNodeReady(env.admin, name);
    await ensureNamespace(env.admin, 'migrate-rerun');
    // A batch pod on an old node that outlives every run here: each waits for it, terminating nothing.
    await env.admin.batch.createNamespacedJob({
      namespace: 'migrate-rerun',
      body: {
        metadata: { name: 'long' },
        spec: {
          backoffLimit: 0,
          template: {
            // kwok completes the pod this long after it is Ready (the jitter is the delay's upper bound).
            metadata: {
              annotations: {
                'pod-complete.stage.kwok.x-k8s.io/delay': '3600s',
                'pod-complete.stage.kwok.x-k8s.io/jitter-delay': '3600s',
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
    await until('the Job running', 30_000, async () => {
      const pods = await env.admin.core.listNamespacedPod({
        namespace: 'migrate-rerun',
        labelSelector: 'job-name=long',
      });
      return pods.items.some((p) => p.status?.phase === 'Running');
    });
  });
  afterAll(async () => {
    // The suite's plane goes on to other files: nothing of this scenario stays on it.
    await env?.admin.batch
      .deleteNamespacedJob({ namespace: 'migrate-rerun', name: 'long', propagationPolicy: 'Background' })
      .catch(() => undefined);
    for (const name of [...oldNodes, 'rerun-new-1', 'rerun-new-2'])
      await env?.admin.core.deleteNode({ name }).catch(() => undefined);
    await env?.stop();
  });

  /** A first run killed while it waits for the batch pod, and the re-run waiting in its turn. */
  async function killedThenRerun(): Promise<{ killed: string; rerun: Run; id: string }> {
    const first = startMigrate(env);
    const killed = await waitingForBatch(env, first);
    first.child.kill('SIGKILL');
    await first.exited;
    const rerun = startMigrate(env);
    const id = await waitingForBatch(env, rerun);
    expect(id).not.toBe(killed);
    return { killed, rerun, id };
  }

  it("the re-run stopped (SIGTERM): it takes back the killed run's cordon with its own marks", async () => {
    const { killed, rerun } = await killedThenRerun();
    rerun.child.kill('SIGTERM');
    expect(await rerun.exited, rerun.output).toBe(130);

    for (const name of oldNodes) expect(await stateOf(env, name), rerun.output).toEqual({ cordoned: false });
    expect(env.aws.calls.filter((c) => c.action === 'TerminateInstanceInAutoScalingGroup')).toEqual([]);
    expect(rerun.output).toContain(`migration ${killed} stopped renewing its lease: its command is gone; taking over`);
  });

  it("the re-run killed too: the reconciler lifts the cordon once the re-run's lease is over", async () => {
    const { killed, rerun, id } = await killedThenRerun();
    rerun.child.kill('SIGKILL');
    await rerun.exited;

    // Inside the lease the reconciler leaves the marks; after it, nothing of either run is left.
    await env.deliver(scheduledEvent(new Date().toISOString()));
    expect(await stateOf(env, oldNodes[0]!)).toEqual({ migration: id, cordoned: true });
    await sleep(leaseSeconds * 1000 + 500);
    await env.deliver(scheduledEvent(new Date().toISOString()));

    for (const name of oldNodes) expect(await stateOf(env, name), rerun.output).toEqual({ cordoned: false });
    expect(env.aws.calls.filter((c) => c.action === 'TerminateInstanceInAutoScalingGroup')).toEqual([]);
    expect(rerun.output).toContain(`migration ${killed} stopped renewing its lease: its command is gone; taking over`);
  });
});
