// Fleet-aware behaviour on the real plane (issue 13): the node is found by its EC2 name in
// one GET and the providerID decides; a launch waits on a watch of its one node; a drain
// cordons the group's other terminating nodes before its first eviction; the drainer's
// requests run in a priority level of their own.
import { execFileSync } from 'node:child_process';
import { request } from 'node:https';
import { describe, expect, it } from 'vitest';
import { mintEksToken } from '../../lambda/adapters/aws/eks-token.js';
import { testAws } from './plane/token-webhook.js';
import { autoScalingGroupName, statusOf } from './drainer.js';
import {
  byDrainer,
  createDeployment,
  createKwokNode,
  ensureNamespace,
  eventsFor,
  newInstanceId,
  readAudit,
  sleep,
  until,
  waitDeploymentReady,
  waitNodeReady,
} from './kube.js';
import { a, blockDrainer, plane } from './head.js';

const lbLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';

/** One request as the drainer (a token minted as the handler mints it): the classification headers. */
async function asDrainer(path: string): Promise<{ flowSchemaUid: unknown; priorityLevelUid: unknown }> {
  const token = await mintEksToken({
    clusterName: testAws.clusterName,
    region: testAws.region,
    credentials: { accessKeyId: testAws.accessKeyId, secretAccessKey: testAws.secretAccessKey },
  });
  return new Promise((resolve, reject) => {
    const req = request(
      `${plane.server}${path}`,
      { ca: plane.caPem, headers: { Authorization: `Bearer ${token}` } },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            flowSchemaUid: res.headers['x-kubernetes-pf-flowschema-uid'],
            priorityLevelUid: res.headers['x-kubernetes-pf-prioritylevel-uid'],
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const requestsSince = (startMs: number) => readAudit(plane, (e) => byDrainer(e) && e.receivedMs >= startMs - 50);
const describeRequest = (e: {
  verb: string;
  resource: string;
  subresource?: string | undefined;
  name?: string | undefined;
}) => `${e.verb} ${e.resource}${e.subresource ? `/${e.subresource}` : ''}${e.name ? ` ${e.name}` : ''}`;

describe('fleet-aware lookup, admission and marking', () => {
  const drainer = blockDrainer({ launchTimeoutSeconds: 30 });

  it("finds the node under its EC2 name with one GET: no list of the cluster's nodes", async () => {
    const instanceId = newInstanceId();
    await createKwokNode(a, 'fleet-byname', instanceId, { scenario: 'fleet' });
    await waitNodeReady(a, 'fleet-byname');
    drainer.ec2Names.set(instanceId, 'fleet-byname');
    const started = Date.now();

    expect(statusOf(await drainer.terminate(instanceId))).toBe('drained');

    const nodeReads = requestsSince(started).filter(
      (e) => e.resource === 'nodes' && (e.verb === 'get' || e.verb === 'list'),
    );
    // One GET; a second only when the node changed between that read and the mark (a conflict is read again): never a list.
    expect(nodeReads.length).toBeGreaterThanOrEqual(1);
    expect(new Set(nodeReads.map(describeRequest))).toEqual(new Set(['get nodes fleet-byname']));
  });

  it('never by name alone: the EC2 name now belongs to an old node of another instance, so it scans and drains the right node', async () => {
    const instanceId = newInstanceId();
    const other = newInstanceId();
    // A stale Node object holds the name (its IP was reused); ours registered under another name.
    await createKwokNode(a, 'fleet-reused-ip', other, { scenario: 'fleet' });
    await createKwokNode(a, 'fleet-custom-name', instanceId, { scenario: 'fleet' });
    await waitNodeReady(a, 'fleet-custom-name');
    drainer.ec2Names.set(instanceId, 'fleet-reused-ip');
    const started = Date.now();

    expect(statusOf(await drainer.terminate(instanceId))).toBe('drained');

    expect((await a.core.readNode({ name: 'fleet-custom-name' })).spec?.unschedulable).toBe(true);
    const stale = await a.core.readNode({ name: 'fleet-reused-ip' });
    expect(stale.spec?.unschedulable).toBeUndefined();
    expect(stale.metadata?.labels?.[lbLabel]).toBeUndefined();
    const reads = requestsSince(started).filter(
      (e) => e.resource === 'nodes' && (e.verb === 'get' || e.verb === 'list'),
    );
    expect(reads.map(describeRequest)).toEqual(['get nodes fleet-reused-ip', expect.stringMatching(/^list nodes/)]);
    expect(reads[1]!.requestURI).toMatch(/limit=100/);
  });

  it('a providerID collision never matches: i-0abc... is not i-0abc...d, under its EC2 name or in the scan', async () => {
    const longer = newInstanceId();
    const instanceId = longer.slice(0, -1); // a prefix of another instance's id
    await createKwokNode(a, 'fleet-prefix', longer, { scenario: 'fleet' });
    drainer.ec2Names.set(instanceId, 'fleet-prefix');

    expect(statusOf(await drainer.terminate(instanceId))).toBe('node-not-found');

    const node = await a.core.readNode({ name: 'fleet-prefix' });
    expect(node.spec?.unschedulable).toBeUndefined();
    expect(node.metadata?.labels?.[lbLabel]).toBeUndefined();
  });

  it('admits a launch by watching its one node: a handful of requests, whatever the wait', async () => {
    const instanceId = newInstanceId();
    drainer.ec2Names.set(instanceId, 'fleet-launch');
    await sleep(200); // the audit's clock is coarse: keep the last scenario's requests out
    const started = Date.now();
    const registering = sleep(4_000).then(() => createKwokNode(a, 'fleet-launch', instanceId, { scenario: 'fleet' }));

    const result = await drainer.launch(instanceId);
    await registering;

    expect(result).toEqual({ records: [{ status: 'launch-admitted', instanceId }] });
    // A watch's audit entry is written when the server has seen it end (the launch closed it): under load a moment
    // after the launch returns (CI once read the log before it). Read again for up to 5 s, then judge what is there.
    let requests = requestsSince(started);
    await until('the node watch in the audit log', 5_000, async () => {
      requests = requestsSince(started);
      return requests.some((e) => e.verb === 'watch');
    }).catch(() => undefined);
    expect(requests.map(describeRequest)).toEqual([
      'list nodes fleet-launch',
      'watch nodes fleet-launch',
      expect.stringMatching(/^create events fleet-launch\./),
    ]);
    expect(requests[0]!.requestURI).toMatch(/fieldSelector=metadata.name%3Dfleet-launch/);
    expect(drainer.ec2Calls.at(-1)).toEqual([instanceId]);
  });

  it('cordons every other terminating node of the group before the first eviction, so no evicted pod lands on one', async () => {
    await ensureNamespace(a, 'fleet');
    const doomed = ['fleet-doomed-1', 'fleet-doomed-2', 'fleet-doomed-3'].map((name) => ({
      name,
      instanceId: newInstanceId(),
    }));
    const keep = { name: 'fleet-keep', instanceId: newInstanceId() };
    for (const n of [...doomed, keep]) {
      await createKwokNode(a, n.name, n.instanceId, { scenario: 'fleet-siblings' });
      drainer.groups.set(n.instanceId, autoScalingGroupName);
    }
    for (const n of [...doomed, keep]) await waitNodeReady(a, n.name);
    // Four pods on the first doomed node only: the others wait cordoned until they run.
    for (const n of [...doomed.slice(1), keep]) a.kubectl('cordon', n.name);
    await createDeployment(a, 'fleet', 'web', 4, { nodeSelector: { scenario: 'fleet-siblings' } });
    await waitDeploymentReady(a, 'fleet', 'web', 4);
    for (const n of [...doomed.slice(1), keep]) a.kubectl('uncordon', n.name);
    // A scale-in of three: Auto Scaling moved all three to Terminating:Wait at once.
    for (const n of doomed) drainer.terminating.add(n.instanceId);
    const started = Date.now();

    expect(statusOf(await drainer.terminate(doomed[0]!.instanceId))).toBe('drained');

    const requests = requestsSince(started);
    const firstEviction = requests.find((e) => e.subresource === 'eviction')!;
    // The mark patches (the lifecycle conditions go to the status subresource beside them).
    const siblingPatches = requests.filter(
      (e) => e.verb === 'patch' && !e.subresource && (e.name === 'fleet-doomed-2' || e.name === 'fleet-doomed-3'),
    );
    expect(siblingPatches).toHaveLength(2);
    expect(siblingPatches.every((p) => p.atMs <= firstEviction.receivedMs)).toBe(true);
    // Both siblings read in one label-selected list (the hostname label), not a GET each.
    expect(
      requests.filter((e) => e.verb === 'get' && (e.name === 'fleet-doomed-2' || e.name === 'fleet-doomed-3')),
    ).toEqual([]);
    expect(
      requests.filter(
        (e) => e.verb === 'list' && e.resource === 'nodes' && /kubernetes\.io(%2F|\/)hostname/.test(e.requestURI),
      ),
    ).toHaveLength(1);
    for (const name of ['fleet-doomed-2', 'fleet-doomed-3']) {
      const node = await a.core.readNode({ name });
      expect(node.spec?.unschedulable).toBe(true);
      expect(node.metadata?.labels?.[lbLabel]).toBe('true');
      expect(JSON.parse(node.metadata?.annotations?.['graceful-node-termination/drain'] ?? '{}')).toMatchObject({
        action: '',
        set: ['exclude-from-load-balancers', 'cordon'],
        aheadOf: doomed[0]!.instanceId,
      });
      expect((await eventsFor(a, 'Node', name)).map((e) => e.reason)).toEqual(['CordonedAhead']);
    }
    expect((await a.core.readNode({ name: keep.name })).spec?.unschedulable).toBeUndefined();
    // Every replacement ran on the node that stays.
    await until('4 replacements Running', 60_000, async () => {
      const pods = (await a.core.listNamespacedPod({ namespace: 'fleet', labelSelector: 'app=web' })).items.filter(
        (p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running',
      );
      return pods.length === 4 && pods;
    });
    const placed = (await a.core.listNamespacedPod({ namespace: 'fleet', labelSelector: 'app=web' })).items.map(
      (p) => p.spec?.nodeName,
    );
    expect(new Set(placed)).toEqual(new Set([keep.name]));

    // The sibling's own drain adopts the marks: only its drain record changes hands.
    const second = Date.now();
    expect(statusOf(await drainer.terminate(doomed[1]!.instanceId))).toBe('drained');
    const node = await a.core.readNode({ name: 'fleet-doomed-2' });
    expect(JSON.parse(node.metadata?.annotations?.['graceful-node-termination/drain'] ?? '{}')).toMatchObject({
      set: ['exclude-from-load-balancers', 'cordon'],
    });
    // One write of the node: a patch refused 409 lost to a write the test does not make (the kubelet's stand-in
    // updating the node's status between the drain's read and its patch) and is read again, as every mark is.
    const patches = requestsSince(second).filter(
      (e) => e.verb === 'patch' && !e.subresource && e.name === 'fleet-doomed-2',
    );
    expect(patches.filter((e) => e.code < 300)).toHaveLength(1);
    expect(patches.filter((e) => e.code >= 300).map((e) => e.code)).toEqual(
      patches.filter((e) => e.code >= 300).map(() => 409),
    );
    for (const n of doomed) drainer.terminating.delete(n.instanceId);
  });

  it('regression (issues 19, 27): a doomed sibling whose Node is not named after its EC2 name is found by providerID and cordoned before the first eviction', async () => {
    await ensureNamespace(a, 'fleet');
    const own = { name: 'fleet-own', instanceId: newInstanceId() };
    // Registered with --hostname-override: EC2's private DNS name leads nowhere.
    const other = { name: 'fleet-renamed-node', instanceId: newInstanceId() };
    const keep = { name: 'fleet-keep-2', instanceId: newInstanceId() };
    for (const n of [own, other, keep]) {
      await createKwokNode(a, n.name, n.instanceId, { scenario: 'fleet-renamed' });
      drainer.groups.set(n.instanceId, autoScalingGroupName);
    }
    for (const n of [own, other, keep]) await waitNodeReady(a, n.name);
    drainer.ec2Names.set(other.instanceId, 'ip-10-9-9-9.eu-west-1.compute.internal');
    for (const n of [other, keep]) a.kubectl('cordon', n.name);
    await createDeployment(a, 'fleet', 'renamed', 2, { nodeSelector: { scenario: 'fleet-renamed' } });
    await waitDeploymentReady(a, 'fleet', 'renamed', 2);
    for (const n of [other, keep]) a.kubectl('uncordon', n.name);
    for (const n of [own, other]) drainer.terminating.add(n.instanceId);
    const started = Date.now();

    expect(statusOf(await drainer.terminate(own.instanceId))).toBe('drained');

    const requests = requestsSince(started);
    const firstEviction = requests.find((e) => e.subresource === 'eviction')!;
    const patches = requests.filter((e) => e.verb === 'patch' && !e.subresource && e.name === other.name);
    expect(patches).toHaveLength(1);
    expect(patches[0]!.atMs).toBeLessThanOrEqual(firstEviction.receivedMs);
    // One scan for the survey (paged node list), not one per sibling.
    expect(
      requests.filter((e) => e.verb === 'list' && e.resource === 'nodes' && !/labelSelector/.test(e.requestURI)),
    ).toHaveLength(1);
    expect((await a.core.readNode({ name: other.name })).spec?.unschedulable).toBe(true);
    expect((await eventsFor(a, 'Node', other.name)).map((e) => e.reason)).toEqual(['CordonedAhead']);
    for (const n of [own, other]) drainer.terminating.delete(n.instanceId);
  });

  it("sends the drainer's requests to its own priority level (FlowSchema installed with the RBAC)", async () => {
    const schema = JSON.parse(a.kubectl('get', 'flowschema', 'graceful-node-termination', '-o', 'json')) as {
      metadata: { uid: string };
      status?: { conditions?: { type: string; status: string }[] };
    };
    const level = JSON.parse(
      a.kubectl('get', 'prioritylevelconfiguration', 'graceful-node-termination', '-o', 'json'),
    ) as { metadata: { uid: string } };
    // The API server names the schema and level it classified a request into in these headers.
    const seen = await asDrainer('/api/v1/nodes?limit=1');
    expect(seen).toEqual({ flowSchemaUid: schema.metadata.uid, priorityLevelUid: level.metadata.uid });
    expect(schema.status?.conditions?.find((c) => c.type === 'Dangling')?.status).toBe('False');
  });

  it('takes its seats from every level in proportion, as the docs say: measured from the server, not assumed', async () => {
    // apiserver_flowcontrol_nominal_limit_seats: what each level may run at once.
    // Several MB of metrics: more than kubectl's helper buffers (1 MiB).
    const metrics = execFileSync(plane.kubectl, ['--kubeconfig', plane.adminKubeconfig, 'get', '--raw', '/metrics'], {
      encoding: 'utf8',
      maxBuffer: 256 * 2 ** 20,
    });
    const seats = (level: string) =>
      Number(
        new RegExp(`^apiserver_flowcontrol_nominal_limit_seats\\{priority_level="${level}"\\} (\\d+)$`, 'm').exec(
          metrics,
        )?.[1],
      );
    const levels = JSON.parse(a.kubectl('get', 'prioritylevelconfigurations', '-o', 'json')) as {
      items: { metadata: { name: string }; spec: { limited?: { nominalConcurrencyShares?: number } } }[];
    };
    const shares = levels.items.reduce((sum, l) => sum + (l.spec.limited?.nominalConcurrencyShares ?? 0), 0);
    // 600 seats (400 + 200 in flight, the defaults), shared by nominalConcurrencyShares: the
    // built-in levels' 245 and our 20 (other deployments' levels, if a scenario added some).
    expect(shares).toBeGreaterThanOrEqual(245 + 20);
    for (const [level, own] of [
      ['graceful-node-termination', 20],
      ['global-default', 20],
      ['workload-low', 100],
    ] as const) {
      expect(seats(level)).toBe(Math.ceil((600 * own) / shares));
    }
    // What our 20 shares cost global-default: 49 seats without them, 46 with.
    expect([Math.ceil((600 * 20) / 245), Math.ceil((600 * 20) / 265)]).toEqual([49, 46]);
  });
});
