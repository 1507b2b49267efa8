// `upgrade --release latest` on the real control plane (v1.34), with AWS at local endpoints
// (AWS_ENDPOINT_URL_AUTO_SCALING, _EC2, _SSM: demo/local-aws.ts): the command finds the group's
// AL2023 image, asks SSM for the 1.34 recommended image, creates ONE launch template version
// from the group's with only the image changed, and rolls the group (the local endpoint plays
// the refresh: new nodes at v1.34, the old ones drained and gone). A Deployment that only the
// old nodes could run is left unavailable: the command names it and exits 1. Asked for 1.35,
// newer than the control plane, it refuses in one line and creates nothing.
import type { V1Node } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { localAwsEnvironment, localLaunchTemplate, startLocalAws, type LocalAws } from '../../demo/local-aws.js';
import { main } from '../../scripts/upgrade-command.js';
import {
  createDeployment,
  ensureNamespace,
  newInstanceId,
  podsOn,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { testAws } from './plane/token-webhook.js';
import { a, plane } from './head.js';

const group = 'release-workers';
const oldImage = 'ami-0a1b2c3d4e5f60001';
const newImage = 'ami-0a1b2c3d4e5f60002';
const recommended = '/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id';

/** A kwok node whose kubelet says `version` (kwok keeps a nodeInfo it is given). */
async function createVersionedNode(
  name: string,
  instanceId: string,
  version: string,
  labels: Record<string, string>,
): Promise<void> {
  const node: V1Node = {
    metadata: {
      name,
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        type: 'kwok',
        scenario: 'release',
        ...labels,
      },
    },
    spec: { providerID: `aws:///eu-west-1a/${instanceId}` },
    status: {
      allocatable: { cpu: '32', memory: '256Gi', pods: '250' },
      capacity: { cpu: '32', memory: '256Gi', pods: '250' },
      // Plain words only: kwok writes these into YAML unquoted (6.12 would be a number).
      nodeInfo: {
        kubeletVersion: version,
        architecture: 'amd64',
        bootID: '',
        containerRuntimeVersion: 'containerd-2.1.4',
        kernelVersion: 'kernel-6.12.0',
        kubeProxyVersion: version,
        machineID: '',
        operatingSystem: 'linux',
        osImage: 'AL2023',
        systemUUID: '',
      },
    },
  };
  await a.core.createNode({ body: node });
}

async function run(...args: string[]): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((line: string) => {
    out.push(line);
    if (process.env['GNT_DEBUG']) process.stderr.write(`upgrade: ${line}\n`);
  });
  try {
    return {
      code: await main([group, '--kubeconfig', plane.adminKubeconfig, '--region', testAws.region, ...args]),
      out,
    };
  } finally {
    log.mockRestore();
  }
}

describe('upgrade --release latest', () => {
  let aws: LocalAws;
  const oldNodes = [
    { name: 'release-old-1', instanceId: newInstanceId() },
    { name: 'release-old-2', instanceId: newInstanceId() },
  ];
  const saved = { ...process.env };

  beforeAll(async () => {
    aws = await startLocalAws({ name: testAws.clusterName, endpoint: plane.server, caPem: plane.caPem });
    Object.assign(process.env, localAwsEnvironment(aws), {
      AWS_ACCESS_KEY_ID: testAws.accessKeyId,
      AWS_SECRET_ACCESS_KEY: testAws.secretAccessKey,
    });
    aws.templateVersions.set('1', oldImage);
    aws.images.set(oldImage, 'amazon-eks-node-al2023-x86_64-standard-1.33-v20251001');
    aws.parameters.set(recommended, newImage);
    await ensureNamespace(a, 'release');
    for (const n of oldNodes) {
      await createVersionedNode(n.name, n.instanceId, 'v1.33.5-eks-113cf36', { 'release-generation': 'old' });
      aws.instances.set(n.instanceId, { privateDnsName: n.name, group, lifecycleState: 'InService', version: '1' });
    }
    for (const n of oldNodes) await waitNodeReady(a, n.name);
    await createDeployment(a, 'release', 'web', 2, { nodeSelector: { scenario: 'release' } });
    // Needs a label only the old nodes carry: the new nodes cannot run it.
    await createDeployment(a, 'release', 'legacy', 1, { nodeSelector: { 'release-generation': 'old' } });
    await waitDeploymentReady(a, 'release', 'web', 2);
    await waitDeploymentReady(a, 'release', 'legacy', 1);

    // The refresh, as Auto Scaling would run it: new instances (their nodes at v1.34) first,
    // then the old ones drained (their pods deleted here) and gone.
    aws.onStartInstanceRefresh((refresh) => {
      void (async () => {
        refresh.status = 'InProgress';
        for (const [i, old] of oldNodes.entries()) {
          const instanceId = newInstanceId();
          const name = `release-new-${i + 1}`;
          await createVersionedNode(name, instanceId, 'v1.34.2-eks-5ad7e39', {});
          aws.instances.set(instanceId, {
            privateDnsName: name,
            group,
            lifecycleState: 'InService',
            version: refresh.desiredVersion,
          });
          await waitNodeReady(a, name);
          for (const p of await podsOn(a, old.name))
            await a.core.deleteNamespacedPod({
              namespace: p.metadata!.namespace!,
              name: p.metadata!.name!,
              gracePeriodSeconds: 0,
            });
          await a.core.deleteNode({ name: old.name });
          aws.instances.delete(old.instanceId);
        }
        // A real refresh ends minutes after the last evictions; here the Deployment controller
        // is given the moment it needs to count the evicted replica (it moved to the second old
        // node first, then had nowhere to go).
        await until('legacy counted unavailable', 60_000, async () => {
          // What the pod GC does, sooner: a pod bound to an old node as it went is deleted.
          for (const old of oldNodes) {
            for (const p of await podsOn(a, old.name))
              await a.core.deleteNamespacedPod({
                namespace: p.metadata!.namespace!,
                name: p.metadata!.name!,
                gracePeriodSeconds: 0,
              });
          }
          return (
            ((await a.apps.readNamespacedDeployment({ namespace: 'release', name: 'legacy' })).status
              ?.availableReplicas ?? 0) === 0
          );
        });
        refresh.percentageComplete = 100;
        refresh.status = 'Successful';
      })();
    });
  });
  afterAll(async () => {
    process.env = saved;
    await aws?.stop();
  });

  it('refuses 1.35, newer than the control plane, in one line, and creates nothing', async () => {
    const refused = await run('--release', 'latest', '--kubernetes-version', '1.35', '--approve');

    expect(refused.code).toBe(3);
    expect(refused.out).toEqual([
      expect.stringMatching(
        /^refusing: kubelet 1.35 would be newer than the control plane \(1.34\); upgrade the control plane first/,
      ),
    ]);
    expect(
      aws.calls.filter((c) => c.action === 'CreateLaunchTemplateVersion' || c.action === 'StartInstanceRefresh'),
    ).toEqual([]);
  });

  it('creates one version with only the image changed, rolls the group to it, and names the Deployment left unavailable', async () => {
    const result = await run(
      '--release',
      'latest',
      '--kubernetes-version',
      '1.34',
      '--approve',
      '--deployment',
      'gnt',
      '--available-timeout',
      '5',
    );

    const text = result.out.join('\n');
    expect(text).toMatch(
      /release: +AL2023 standard x86_64: Kubernetes 1.33 v20251001 -> 1.34 latest \(control plane 1.34\)/,
    );
    expect(text).toMatch(new RegExp(`image: +${oldImage} -> ${newImage} \\(${recommended}\\)`));
    expect(aws.calls.filter((c) => c.action === 'GetParameter').map((c) => c.params['Name'])).toEqual([recommended]);
    // One CreateLaunchTemplateVersion: the group's version as the source, only the image in the data.
    const created = aws.calls.filter((c) => c.action === 'CreateLaunchTemplateVersion');
    expect(created).toHaveLength(1);
    expect(Object.keys(created[0]!.params).sort()).toEqual([
      'ClientToken',
      'LaunchTemplateData.ImageId',
      'LaunchTemplateId',
      'SourceVersion',
      'VersionDescription',
    ]);
    expect(created[0]!.params).toMatchObject({
      LaunchTemplateId: localLaunchTemplate.id,
      SourceVersion: '1',
      'LaunchTemplateData.ImageId': newImage,
    });
    expect([...aws.templateVersions]).toEqual([
      ['1', oldImage],
      ['2', newImage],
    ]);
    expect([...aws.refreshes.values()].map((r) => [r.group, r.desiredVersion, r.status])).toEqual([
      [group, '2', 'Successful'],
    ]);
    // Afterwards: the nodes are Ready at 1.34; the Deployment only the old nodes could run is named.
    expect(text).not.toMatch(/node release-new/);
    expect(result.out, text).toContain('  Deployment/release/legacy: not available (it was before the upgrade)');
    expect(text).not.toMatch(/Deployment\/release\/web/);
    expect(result.code).toBe(1);
    await until(
      'web available on the new nodes',
      30_000,
      async () =>
        (await a.apps.readNamespacedDeployment({ namespace: 'release', name: 'web' })).status?.availableReplicas === 2,
    );
  });
});
