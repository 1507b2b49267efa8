// Review of the wave change (dd06939): what a reviewer tried against the sibling passes, the hostname-label list and patience with transient errors.
import { describe, expect, it } from 'vitest';
import { AwsCallCount, patient } from '../../../lambda/adapters/aws/aws-patience.js';
import { FakeClock, handlerWorld, pod, MemoryLog } from '../../fakes/fake-world.js';
import { instanceId, lifecycleMessage } from '../../fixtures/notifications.js';

const env = {
  CLUSTER_NAME: 'prod',
  AUTO_SCALING_GROUP_NAMES: 'workers',
  LIFECYCLE_HOOK_NAMES: 'workers-terminate',
  LOAD_BALANCER_DELAY_SECONDS: '0',
};
const reset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

describe('review dd06939: patience with transient errors', () => {
  it('a failing Auto Scaling endpoint does not hold the first eviction for a minute in the best-effort sibling survey', async () => {
    const world = handlerWorld(env);
    const { cluster, clock } = world;
    cluster.addNode('node-a', instanceId);
    cluster.addNode('node-b', 'i-0bbbbbbbbbbbbbbbb');
    cluster.addPod(pod({ name: 'web-1', nodeName: 'node-a' }));
    for (const id of [instanceId, 'i-0bbbbbbbbbbbbbbbb']) {
      world.groups.set(id, 'workers');
      world.terminating.add(id);
    }
    // As runtime.ts wires it: the Auto Scaling port patient (60 s); DescribeAutoScalingGroups resets.
    const wrapped = patient(
      { leavingGroup: async (_g: string): Promise<readonly string[]> => Promise.reject(reset()) },
      'autoscaling',
      { clock, count: new AwsCallCount() },
    );
    world.autoScaling.leavingGroup = wrapped.leavingGroup;
    await world.invoke(world.handler(), lifecycleMessage());
    const markAt = cluster.calls.find((c) => c.op === 'mark')!.atMs;
    const evictAt = cluster.calls.find((c) => c.op === 'evict')!.atMs;
    // Before dd06939 a reset connection failed at once (after the SDK's own quick retries).
    expect(evictAt - markAt).toBeLessThan(5_000);
  });

  it('a permanent connection failure (ECONNREFUSED: wrong endpoint, no route) fails fast rather than after the whole patience', async () => {
    const clock = new FakeClock();
    const started = clock.now();
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });
    const port = patient({ describe: async () => Promise.reject(refused) }, 'autoscaling', {
      clock,
      count: new AwsCallCount(),
    });
    await expect(port.describe()).rejects.toThrow('ECONNREFUSED');
    expect(clock.now() - started).toBeLessThan(10_000);
  });
});

import { createNodeApi } from '../../../lambda/adapters/kubernetes/node-api.js';
import { createNodeLookup } from '../../../lambda/adapters/kubernetes/node-lookup.js';

type WireNode = {
  metadata: { name: string; resourceVersion: string; labels: Record<string, string> };
  spec: { providerID: string };
};
const wire = (name: string, id: string, rv: string, hostname?: string): WireNode => ({
  metadata: { name, resourceVersion: rv, labels: hostname !== undefined ? { 'kubernetes.io/hostname': hostname } : {} },
  spec: { providerID: `aws:///eu-west-1a/${id}` },
});

/** A kube that selects as the server does (hostname in (...)); `cache` answers resourceVersion=0 lists, `etcd` GETs. */
function fakeKube(etcd: WireNode[], cache: WireNode[] = etcd) {
  const requests: string[] = [];
  const kube = {
    async request(method: string, path: string, o: { query?: Record<string, string> } = {}) {
      requests.push(`${method} ${path} ${o.query?.labelSelector ?? ''}`);
      if (path === '/api/v1/nodes') {
        const m = /^kubernetes\.io\/hostname in \((.*)\)$/.exec(o.query?.labelSelector ?? '');
        if (!m) throw Object.assign(new Error('bad selector'), { statusCode: 400 });
        const values = m[1]!.split(',');
        return {
          items: (o.query?.resourceVersion === '0' ? cache : etcd).filter((n) =>
            values.includes(n.metadata.labels['kubernetes.io/hostname'] ?? ''),
          ),
        };
      }
      const name = decodeURIComponent(path.split('/').pop()!);
      const n = etcd.find((x) => x.metadata.name === name);
      if (n === undefined) throw Object.assign(new Error('not found'), { statusCode: 404, status: 404 });
      return n;
    },
  };
  return { kube, requests };
}

describe('review dd06939: siblings read by the hostname label (held)', () => {
  const long = `i-0aaaaaaaaaaaaaaaa.${'x'.repeat(50)}.compute.internal`;
  it('a name that is no label value is left out of the selector and read by name; a look-alike of another instance is never taken', async () => {
    const etcd = [
      wire('ip-10-0-0-1.ec2.internal', 'i-01', '5', 'ip-10-0-0-1.ec2.internal'),
      // Another group's node that carries i-02's name as its hostname label.
      wire('other-node', 'i-0other', '6', 'ip-10-0-0-2.ec2.internal'),
      wire('ip-10-0-0-2.ec2.internal', 'i-02', '7', 'ip-10-0-0-2'),
      wire(long, 'i-03', '8', 'whatever'),
    ];
    const { kube, requests } = fakeKube(etcd);
    const log = new MemoryLog();
    const api = createNodeApi(kube as never, log);
    const names: Record<string, string> = {
      'i-01': 'ip-10-0-0-1.ec2.internal',
      'i-02': 'ip-10-0-0-2.ec2.internal',
      'i-03': long,
    };
    const dir = {
      privateDnsNames: async (ids: readonly string[]) => new Map(ids.map((id) => [id, names[id]!] as const)),
    };
    const lookup = createNodeLookup(api, dir, new FakeClock(), log);
    const found = await lookup.findNodesOfInstances(['i-01', 'i-02', 'i-03'], { scan: false });
    expect([...found].map(([id, n]) => `${id}=${n.name}`).sort()).toEqual([
      'i-01=ip-10-0-0-1.ec2.internal',
      'i-02=ip-10-0-0-2.ec2.internal',
      `i-03=${long}`,
    ]);
    expect(requests.filter((r) => r.startsWith('GET /api/v1/nodes ')).length).toBe(1);
    expect(requests.some((r) => r.includes(long) && r.includes('hostname'))).toBe(false);
  });

  it('a re-read after a conflict (refresh markOne) is a consistent read, not a resourceVersion=0 read of the watch cache', async () => {
    const etcd = [wire('ip-10-0-0-1.ec2.internal', 'i-01', '9', 'ip-10-0-0-1.ec2.internal')];
    const cache = [wire('ip-10-0-0-1.ec2.internal', 'i-01', '5', 'ip-10-0-0-1.ec2.internal')];
    const { kube } = fakeKube(etcd, cache);
    const log = new MemoryLog();
    const lookup = createNodeLookup(
      createNodeApi(kube as never, log),
      { privateDnsNames: async () => new Map([['i-01', 'ip-10-0-0-1.ec2.internal']]) },
      new FakeClock(),
      log,
    );
    // outdated-marks.ts markOne: after 'changed' it re-reads with findNodesOfInstances([id]) and retries with that resourceVersion.
    const again = (await lookup.findNodesOfInstances(['i-01'])).get('i-01');
    expect(again?.resourceVersion).toBe('9');
  });
});

describe('review dd06939: the marking passes (held)', () => {
  function wave(n: number) {
    const world = handlerWorld(env);
    const { cluster } = world;
    cluster.addNode('node-a', instanceId);
    cluster.addPod(pod({ name: 'web-1', nodeName: 'node-a' }));
    world.groups.set(instanceId, 'workers');
    world.terminating.add(instanceId);
    const ids = Array.from({ length: n }, (_, k) => `i-0${String(k).padStart(16, '0')}`);
    ids.forEach((id, k) => {
      cluster.addNode(`wave-${k}`, id);
      world.groups.set(id, 'workers');
      world.terminating.add(id);
    });
    cluster.addNode('other-group', 'i-0eeeeeeeeeeeeeeee');
    world.groups.set('i-0eeeeeeeeeeeeeeee', 'other');
    world.terminating.add('i-0eeeeeeeeeeeeeeee');
    return { world, cluster, ids };
  }

  it('400 siblings: at most 12 passes (300), one pause, never another group, and the drain goes on', async () => {
    const { world, cluster } = wave(400);
    const status = (await world.invoke(world.handler(), lifecycleMessage())).records[0]!.status;
    expect(status).toBe('drained');
    expect(cluster.calls.filter((c) => c.op === 'list-marked')).toHaveLength(12);
    const marked = [...cluster.nodes.values()].filter((n) => n.drain?.aheadOf === instanceId);
    expect(marked).toHaveLength(300);
    expect(cluster.nodes.get('other-group')).toMatchObject({ unschedulable: false });
    const markAt = cluster.calls.find((c) => c.op === 'mark')!.atMs;
    const evictAt = cluster.calls.find((c) => c.op === 'evict')!.atMs;
    expect(evictAt - markAt).toBeLessThanOrEqual(1_500);
  });

  it('a lookup failing in the second pass stops the passes; the drain goes on', async () => {
    const { world, cluster } = wave(60);
    let n = 0;
    const real = cluster.findNodesOfInstances.bind(cluster);
    cluster.findNodesOfInstances = async (ids, o) => (++n === 2 ? Promise.reject(new Error('boom')) : real(ids, o));
    expect((await world.invoke(world.handler(), lifecycleMessage())).records[0]!.status).toBe('drained');
    expect(cluster.calls.filter((c) => c.op === 'list-marked')).toHaveLength(2);
  });

  it('26 unmarked siblings: the pause is paid once for a single leftover; 25 or fewer: no pause', async () => {
    for (const [count, pauses] of [
      [25, false],
      [26, true],
    ] as const) {
      const { world, cluster } = wave(count);
      await world.invoke(world.handler(), lifecycleMessage());
      const markAt = cluster.calls.find((c) => c.op === 'mark')!.atMs;
      const evictAt = cluster.calls.find((c) => c.op === 'evict')!.atMs;
      expect(evictAt - markAt >= 500).toBe(pauses);
    }
  });
});

import { markOutdatedNodes } from '../../../lambda/refresh/outdated-marks.js';

describe('review dd06939: refresh marks after a conflict', () => {
  it('an outdated node whose first read was stale is marked after the conflict (fresh re-read)', async () => {
    const etcd = [wire('ip-10-0-0-1.ec2.internal', 'i-01', '9', 'ip-10-0-0-1.ec2.internal')];
    const cache = [wire('ip-10-0-0-1.ec2.internal', 'i-01', '5', 'ip-10-0-0-1.ec2.internal')];
    const { kube, requests } = fakeKube(etcd, cache);
    const log = new MemoryLog();
    const lookup = createNodeLookup(
      createNodeApi(kube as never, log),
      { privateDnsNames: async () => new Map([['i-01', 'ip-10-0-0-1.ec2.internal']]) },
      new FakeClock(),
      log,
    );
    // The server's conditional patch: refused (409 -> 'changed') unless made on the current version.
    const nodes = {
      ...lookup,
      markOutdated: async (node: { resourceVersion?: string }) =>
        node.resourceVersion === '9' ? 'patched' : 'changed',
    } as never;
    const view = { outdated: ['i-01'], desired: 'lt-1:2', strategyTag: undefined };
    const result = await markOutdatedNodes('workers', 'r-1', {
      nodes,
      instances: { refresh: async () => view },
      events: { record: async () => {} },
      clock: new FakeClock(),
      log,
      owner: 'drainer',
    } as never);
    expect({ marked: result.marked, reads: requests.length }).toEqual({
      marked: ['ip-10-0-0-1.ec2.internal'],
      reads: expect.any(Number),
    });
  });
});
