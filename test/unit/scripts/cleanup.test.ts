// cleanup (scripts/cleanup.ts) with Auto Scaling stubbed at the SDK edge and the nodes in memory:
// which group tags it takes back (the deployment's, by its hooks, or named), that a dry run
// writes nothing, and what it says. The node writes themselves run on the real plane
// (test/cluster/cleanup.test.ts). A failure names the service that failed (issue 36).
import {
  AutoScalingClient,
  DeleteTagsCommand,
  DescribeLifecycleHooksCommand,
  DescribeTagsCommand,
} from '@aws-sdk/client-auto-scaling';
import { mockClient } from 'aws-sdk-client-mock';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { NodeInfo } from '../../../lambda/cluster/model.js';
import { marksOnNode } from '../../../lambda/cluster/marks/mark-inventory.js';
import { autoScalingGroupTags, main, renderCleanup, runCleanup, type CleanupDeps } from '../../../scripts/cleanup.js';
import { AwsError, KubernetesError } from '../../../scripts/failure.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

const asg = mockClient(AutoScalingClient);
const tag = 'graceful-node-termination/refresh-strategy';
const hooksOf: Record<string, string[]> = {
  'group-a': ['gnt-launch', 'gnt-terminate'],
  'group-b': ['other-launch', 'other-terminate'],
  'group-c': [],
};

const node = (name: string, o: Partial<NodeInfo> = {}): NodeInfo => ({
  name,
  uid: `uid-${name}`,
  providerId: `aws:///eu-west-1a/i-${name}`,
  unschedulable: false,
  ready: true,
  taints: [],
  ...o,
  labels: { 'graceful-node-termination/owner': 'gnt', ...o.labels },
});

function deps(nodes: NodeInfo[]) {
  const writes: string[] = [];
  const d: CleanupDeps = {
    nodes: {
      listMarked: async () => nodes,
      unmark: async (n) => (writes.push(`unmark ${n.name}`), 'patched'),
      unmarkOutdated: async (group, select) => (
        writes.push(`unmarkOutdated ${group} ${select.nodes?.map((n) => n.name).join(',')}`),
        []
      ),
      unmarkMigrating: async (n) => (writes.push(`unmarkMigrating ${n.name}`), { result: 'patched', removed: [] }),
    },
    removeLeftovers: async (n) => (writes.push(`leftovers ${n.name}`), 'patched'),
    groups: autoScalingGroupTags(new AutoScalingClient({ region: 'eu-west-1' })),
  };
  return { d, writes };
}

describe('cleanup', () => {
  beforeEach(() => {
    asg.reset();
    asg.on(DescribeTagsCommand).resolves({
      Tags: ['group-a', 'group-b', 'group-c'].map((g) => ({
        ResourceId: g,
        ResourceType: 'auto-scaling-group',
        Key: tag,
        Value: 'minimal:r-1',
      })),
    });
    for (const [group, hooks] of Object.entries(hooksOf)) {
      asg.on(DescribeLifecycleHooksCommand, { AutoScalingGroupName: group }).resolves({
        LifecycleHooks: hooks.map((h) => ({
          LifecycleHookName: h,
          LifecycleTransition: `autoscaling:EC2_INSTANCE_${h.endsWith('launch') ? 'LAUNCHING' : 'TERMINATING'}`,
        })),
      });
    }
    asg.on(DeleteTagsCommand).resolves({});
  });

  it('a dry run lists the marks and the group tags of the deployment, and writes nothing', async () => {
    const marked = node('n-1', {
      unschedulable: true,
      handOffClaim: 'sha256:x/1/r',
      labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' },
    });
    const { d, writes } = deps([marked]);

    const result = await runCleanup({ deployment: 'gnt', dryRun: true, groups: ['group-c'] }, d);

    expect(writes).toEqual([]);
    expect(asg.commandCalls(DeleteTagsCommand)).toHaveLength(0);
    expect(result).toEqual({
      deployment: 'gnt',
      dryRun: true,
      nodes: [{ node: 'n-1', marks: marksOnNode(marked) }],
      groups: ['group-a', 'group-c'],
      groupsLeft: ['group-b'],
    });
    expect(renderCleanup(result).split('\n')).toEqual([
      'node n-1:',
      '  annotation graceful-node-termination/hand-off: removed',
      '  label graceful-node-termination/owner=gnt: removed',
      `group group-a: tag ${tag}: removed`,
      `group group-c: tag ${tag}: removed`,
      `group group-b: tag ${tag} left alone (its hooks do not name gnt; pass --group group-b to include it)`,
      'dry run: would take back 2 mark(s) on 1 node(s) and 2 group tag(s) of deployment gnt; nothing was changed',
    ]);
  });

  it("takes back a drain's marks first, then a refresh's, then what is left; and untags only the deployment's groups", async () => {
    const drained = node('n-1', {
      drain: {
        source: lifecycleAction('sha256:a', 'gnt-terminate'),
        notifiedAtMs: 0,
        startedAtMs: 0,
        updatedAtMs: 0,
        set: ['cordon'],
      },
    });
    const refreshed = node('n-2', { refreshGroup: 'group-a', labels: { 'graceful-node-termination/refresh': 'r-1' } });
    const { d, writes } = deps([drained, refreshed]);

    await runCleanup({ deployment: 'gnt', dryRun: false, groups: [] }, d);

    expect(writes).toEqual(['unmark n-1', 'unmarkOutdated group-a n-2', 'leftovers n-1', 'leftovers n-2']);
    expect(asg.commandCalls(DeleteTagsCommand).map((c) => c.args[0].input.Tags)).toEqual([
      [{ ResourceId: 'group-a', ResourceType: 'auto-scaling-group', Key: tag }],
    ]);
  });
});

describe('cleanup: a failure names the service that failed', () => {
  // The command itself (main): the nodes from a stub API server, Auto Scaling from a port that
  // refuses connections or from the SDK stub.
  const dir = mkdtempSync(join(tmpdir(), 'gnt-cleanup-'));
  let api: Server;
  let apiUrl: string;
  let closedPort: number;
  let nodesAnswer = 200;

  beforeAll(async () => {
    api = createServer((req, res) => {
      res.writeHead(nodesAnswer, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          nodesAnswer === 200
            ? { kind: 'NodeList', apiVersion: 'v1', metadata: {}, items: [] }
            : { kind: 'Status', code: nodesAnswer, message: 'nodes is forbidden' },
        ),
      );
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    writeFileSync(
      join(dir, 'kubeconfig'),
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: c, cluster: {server: "${apiUrl}", insecure-skip-tls-verify: true}}]`,
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: prod, context: {cluster: c, user: u}}]',
        'current-context: prod',
      ].join('\n'),
    );
    const probe = createNetServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => probe.once('listening', resolve));
    closedPort = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => api.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    asg.restore();
    nodesAnswer = 200;
    vi.stubEnv('KUBECONFIG', join(dir, 'kubeconfig'));
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'secret');
    vi.stubEnv('AWS_PROFILE', '');
    vi.stubEnv('AWS_MAX_ATTEMPTS', '1');
    vi.stubEnv('AWS_ENDPOINT_URL_AUTO_SCALING', `http://127.0.0.1:${closedPort}`);
  });
  afterEach(() => vi.unstubAllEnvs());

  it('Auto Scaling unreachable: says Auto Scaling, the region and the next step, not the kubeconfig', async () => {
    const run = main(['--deployment', 'gnt', '--region', 'eu-west-1']);
    await expect(run).rejects.toBeInstanceOf(AwsError);
    await expect(run).rejects.toThrow(
      new RegExp(
        `^Auto Scaling DescribeTags in eu-west-1 failed: .*ECONNREFUSED 127\\.0\\.0\\.1:${closedPort}; ` +
          'check the region',
      ),
    );
  });

  it('Auto Scaling refusing the credentials: points at the profile', async () => {
    asg.reset();
    asg.on(DescribeTagsCommand).rejects(
      Object.assign(new Error('The security token included in the request is invalid.'), {
        name: 'UnrecognizedClientException',
      }),
    );
    await expect(main(['--deployment', 'gnt', '--region', 'eu-west-1'])).rejects.toThrow(
      /^Auto Scaling DescribeTags in eu-west-1 failed: UnrecognizedClientException: .*; check the credentials of/,
    );
  });

  it('the API server refusing: says the Kubernetes API and the context', async () => {
    nodesAnswer = 403;
    const run = main(['--deployment', 'gnt', '--nodes-only']);
    await expect(run).rejects.toBeInstanceOf(KubernetesError);
    await expect(run).rejects.toThrow(`the Kubernetes API at ${apiUrl} (context prod) refused to`);
  });
});
