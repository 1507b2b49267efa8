// Request shapes the Kubernetes adapter sends, captured by a loopback HTTP server.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createKubernetesGateway } from '../../../../lambda/adapters/kubernetes/gateway.js';
import { AccessDeniedError } from '../../../../lambda/shared/errors.js';
import type { DrainRecord } from '../../../../lambda/cluster/model.js';
import { MemoryLog, pod } from '../../../fakes/fake-world.js';
import { lifecycleAction } from '../../../fixtures/drain-sources.js';

const t0 = Date.parse('2026-11-22T10:00:00Z');
const record = (o: Partial<DrainRecord> = {}): DrainRecord => ({
  source: lifecycleAction('sha256:ab', 'workers-terminate'),
  notifiedAtMs: t0,
  startedAtMs: t0,
  updatedAtMs: t0,
  set: [],
  ...o,
});
const owner = 'gnt-test';

interface Seen {
  method: string;
  url: URL;
  headers: IncomingMessage['headers'];
  body: unknown;
}

describe('Kubernetes adapter', () => {
  let server: Server;
  let seen: Seen[];
  let respond: (req: Seen, res: ServerResponse) => void;
  let gateway: ReturnType<typeof createKubernetesGateway>;
  let gatewayServer: () => string = () => '';

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('error', () => {}); // the client aborting a watch resets the connection
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const entry = {
          method: req.method ?? '',
          url: new URL(req.url ?? '/', 'http://x'),
          headers: req.headers,
          body: raw ? JSON.parse(raw) : undefined,
        };
        seen.push(entry);
        respond(entry, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const endpoint = {
      server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      requestOptions: async () => ({ headers: { Authorization: 'Bearer test-token' } }),
    };
    gateway = createKubernetesGateway(endpoint, { requestTimeoutMs: 5_000, log: new MemoryLog() });
    gatewayServer = () => endpoint.server;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen = [];
    respond = (_req, res) => json(res, 200, {});
  });

  it('marks the node with one JSON merge patch: owner, label, cordon and our drain record (no token in it)', async () => {
    const drain = record({ set: ['exclude-from-load-balancers', 'cordon'] });
    await expect(gateway.mark('node-a', { excludeFromLoadBalancers: true, cordon: true, drain, owner })).resolves.toBe(
      'patched',
    );

    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      method: 'PATCH',
      body: {
        metadata: {
          labels: {
            'graceful-node-termination/owner': owner,
            'node.kubernetes.io/exclude-from-external-load-balancers': 'true',
          },
          annotations: {
            'graceful-node-termination/drain':
              '{"action":"sha256:ab","hook":"workers-terminate","notifiedAt":"2026-11-22T10:00:00.000Z","startedAt":"2026-11-22T10:00:00.000Z","updatedAt":"2026-11-22T10:00:00.000Z","set":["exclude-from-load-balancers","cordon"]}',
          },
        },
        spec: { unschedulable: true },
      },
    });
    expect(seen[0]!.url.pathname).toBe('/api/v1/nodes/node-a');
    expect(seen[0]!.headers['content-type']).toBe('application/merge-patch+json');
    expect(seen[0]!.headers['authorization']).toBe('Bearer test-token');
    expect(seen[0]!.headers['user-agent']).toMatch(/^graceful-node-termination\//);
  });

  it('leaves out of the patch what is already there (a cordon somebody else set stays theirs)', async () => {
    await gateway.mark('node-a', { excludeFromLoadBalancers: false, cordon: false, drain: record(), owner });
    expect(seen[0]!.body).toEqual({
      metadata: {
        labels: { 'graceful-node-termination/owner': owner },
        annotations: { 'graceful-node-termination/drain': expect.stringContaining('"action":"sha256:ab"') },
      },
    });
  });

  it('reports a node deleted meanwhile as node-gone', async () => {
    respond = (_req, res) => json(res, 404, { kind: 'Status', code: 404, message: 'nodes "node-a" not found' });
    await expect(
      gateway.mark('node-a', { excludeFromLoadBalancers: true, cordon: true, drain: record(), owner }),
    ).resolves.toBe('node-gone');
  });

  it("takes back exactly what the record says, restoring a label's earlier value, conditional on the node as read", async () => {
    const drain = record({ set: ['exclude-from-load-balancers', 'cordon'], priorLabel: 'false' });
    const node = {
      name: 'node-a',
      uid: 'n',
      providerId: 'aws:///z/i-0123456789abcdef0',
      unschedulable: true,
      labels: { 'graceful-node-termination/owner': owner },
      ready: true,
      taints: [],
      drain,
      resourceVersion: '7',
    };

    await expect(gateway.unmark(node, drain)).resolves.toBe('patched');

    expect(seen[0]!.body).toEqual({
      metadata: {
        resourceVersion: '7',
        labels: {
          'node.kubernetes.io/exclude-from-external-load-balancers': 'false',
          'graceful-node-termination/owner': null,
        },
        annotations: { 'graceful-node-termination/drain': null, 'graceful-node-termination/hand-off': null },
      },
      spec: { unschedulable: null },
    });
  });

  it('re-reads after a conflict and leaves a record that is not the one it was asked to take back', async () => {
    const drain = record({ set: ['cordon'] });
    const node = {
      name: 'node-a',
      uid: 'n',
      providerId: 'p',
      unschedulable: true,
      labels: {},
      ready: true,
      taints: [],
      drain,
      resourceVersion: '7',
    };
    respond = (req, res) => {
      if (req.method === 'PATCH')
        return json(res, 409, {
          kind: 'Status',
          code: 409,
          reason: 'Conflict',
          message: 'the object has been modified',
        });
      // Meanwhile a new drain of ours wrote its own record.
      json(res, 200, {
        metadata: {
          name: 'node-a',
          resourceVersion: '8',
          annotations: {
            'graceful-node-termination/drain': JSON.stringify({
              action: 'sha256:cd',
              startedAt: '2026-11-22T11:00:00Z',
              set: [],
            }),
          },
        },
        spec: { unschedulable: true },
      });
    };
    await expect(gateway.unmark(node, drain)).resolves.toBe('changed');
    expect(seen.map((r) => r.method)).toEqual(['PATCH', 'GET']);
  });

  it("reads a refresh mark's 422 as a conflict only when the node moved on, and as a refusal on the node as read", async () => {
    const node = {
      name: 'node-a',
      uid: 'n',
      providerId: 'p',
      unschedulable: false,
      labels: {},
      ready: true,
      taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }],
      resourceVersion: '7',
    };
    const marks = { refreshId: 'r-1', group: 'workers', owner, taint: true, cordon: false };
    const invalid = {
      kind: 'Status',
      code: 422,
      reason: 'Invalid',
      message: 'the server rejected our request due to an error in our request',
    };
    // The not-ready taint went between the read and the patch: /spec/taints/- has no list.
    respond = (req, res) =>
      req.method === 'PATCH'
        ? json(res, 422, invalid)
        : json(res, 200, { metadata: { name: 'node-a', resourceVersion: '8' }, spec: {} });
    await expect(gateway.markOutdated(node, marks)).resolves.toBe('changed');
    respond = (req, res) =>
      req.method === 'PATCH'
        ? json(res, 422, invalid)
        : json(res, 200, { metadata: { name: 'node-a', resourceVersion: '7' }, spec: {} });
    await expect(gateway.markOutdated(node, marks)).rejects.toThrow(/mark node node-a outdated failed: HTTP 422/);
  });

  it('marks a node for a migration with one conditional JSON patch: labels, the record, the taint appended', async () => {
    respond = (_req, res) => json(res, 200, { metadata: { name: 'node-a' } });
    const node = {
      name: 'node-a',
      uid: 'n',
      providerId: 'p',
      unschedulable: false,
      labels: { team: 'shop' },
      ready: true,
      taints: [{ key: 'dedicated', effect: 'NoSchedule' }],
      resourceVersion: '7',
    };
    const record = { id: 'm-1-abcd', from: 'old', to: 'new', renewedAtMs: t0, leaseSeconds: 300, cordoned: false };

    await expect(gateway.markMigrating(node, { record, owner, taint: true, cordon: false })).resolves.toBe('patched');

    expect(seen[0]!.headers['content-type']).toBe('application/json-patch+json');
    expect(seen[0]!.body).toEqual([
      { op: 'replace', path: '/metadata/resourceVersion', value: '7' },
      { op: 'add', path: '/metadata/labels/graceful-node-termination~1migration', value: 'm-1-abcd' },
      { op: 'add', path: '/metadata/labels/graceful-node-termination~1owner', value: owner },
      {
        op: 'add',
        path: '/metadata/annotations/graceful-node-termination~1migration',
        value:
          '{"id":"m-1-abcd","from":"old","to":"new","renewedAt":"2026-11-22T10:00:00.000Z","leaseSeconds":300,"cordoned":false}',
      },
      {
        op: 'add',
        path: '/spec/taints/-',
        value: { key: 'graceful-node-termination/migrating', value: 'm-1-abcd', effect: 'PreferNoSchedule' },
      },
    ]);
  });

  it("takes a migration's marks back: only its taint (tested in place), its cordon only when the record says so, after a conflict on a fresh read", async () => {
    const record = { id: 'm-1-abcd', from: 'old', to: 'new', renewedAtMs: t0, leaseSeconds: 300, cordoned: true };
    const annotations = {
      'graceful-node-termination/migration': JSON.stringify({ ...record, renewedAt: new Date(t0).toISOString() }),
    };
    const labels = { 'graceful-node-termination/migration': 'm-1-abcd', 'graceful-node-termination/owner': owner };
    const taints = [
      { key: 'dedicated', effect: 'NoSchedule' },
      { key: 'graceful-node-termination/migrating', value: 'm-1-abcd', effect: 'PreferNoSchedule' },
    ];
    const node = {
      name: 'node-a',
      uid: 'n',
      providerId: 'p',
      unschedulable: true,
      labels,
      ready: true,
      taints,
      migration: record,
      resourceVersion: '7',
    };
    let patches = 0;
    respond = (req, res) => {
      if (req.method === 'PATCH' && patches++ === 0)
        return json(res, 409, {
          kind: 'Status',
          code: 409,
          reason: 'Conflict',
          message: 'the object has been modified',
        });
      if (req.method === 'PATCH') return json(res, 200, { metadata: { name: 'node-a' } });
      json(res, 200, {
        metadata: { name: 'node-a', resourceVersion: '8', labels, annotations },
        spec: { unschedulable: true, taints },
      });
    };

    await expect(gateway.unmarkMigrating(node)).resolves.toEqual({
      result: 'patched',
      removed: ['taint graceful-node-termination/migrating:PreferNoSchedule', 'cordon'],
    });

    expect(seen.map((r) => r.method)).toEqual(['PATCH', 'GET', 'PATCH']);
    expect(seen[2]!.body).toEqual([
      { op: 'replace', path: '/metadata/resourceVersion', value: '8' },
      { op: 'remove', path: '/metadata/labels/graceful-node-termination~1migration' },
      { op: 'remove', path: '/metadata/annotations/graceful-node-termination~1migration' },
      { op: 'test', path: '/spec/taints/1/key', value: 'graceful-node-termination/migrating' },
      { op: 'remove', path: '/spec/taints/1' },
      { op: 'remove', path: '/spec/unschedulable' },
      { op: 'remove', path: '/metadata/labels/graceful-node-termination~1owner' },
    ]);
  });

  it('lists the marked nodes with one label selector', async () => {
    respond = (_req, res) =>
      json(res, 200, {
        metadata: {},
        items: [{ metadata: { name: 'n1', uid: '1', labels: { 'graceful-node-termination/owner': owner } }, spec: {} }],
      });
    await expect(gateway.listMarked(owner)).resolves.toEqual([expect.objectContaining({ name: 'n1' })]);
    expect(seen[0]!.url.searchParams.get('labelSelector')).toBe(`graceful-node-termination/owner=${owner}`);
  });

  it('sends a policy/v1 Eviction with a UID precondition', async () => {
    respond = (_req, res) => json(res, 201, { kind: 'Status', status: 'Success' });
    const target = pod({ name: 'web-1', namespace: 'shop', uid: 'c1f0e8a4-uid' });

    await expect(gateway.evictPod(target)).resolves.toEqual({ kind: 'evicted' });

    expect(seen[0]!.method).toBe('POST');
    expect(seen[0]!.url.pathname).toBe('/api/v1/namespaces/shop/pods/web-1/eviction');
    expect(seen[0]!.body).toEqual({
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: 'web-1', namespace: 'shop' },
      deleteOptions: { preconditions: { uid: 'c1f0e8a4-uid' } },
    });
  });

  it('fails loudly on an RBAC 403 from the eviction subresource', async () => {
    respond = (_req, res) =>
      json(res, 403, {
        kind: 'Status',
        code: 403,
        reason: 'Forbidden',
        message: 'pods "web-1" is forbidden: User "x" cannot create resource "pods/eviction"',
        details: { name: 'web-1', kind: 'pods' },
      });
    await expect(gateway.evictPod(pod({ name: 'web-1' }))).rejects.toBeInstanceOf(AccessDeniedError);
  });

  it('scans for the node by providerID across small pages, asking for gzip (the fallback lookup)', async () => {
    respond = (req, res) => {
      if (!req.url.searchParams.get('continue')) {
        gzipped(res, 200, {
          metadata: { continue: 'page2' },
          items: [
            { metadata: { name: 'other', uid: '1' }, spec: { providerID: 'aws:///eu-west-1a/i-0aaaaaaaaaaaaaaaa' } },
          ],
        });
      } else {
        gzipped(res, 200, {
          metadata: {},
          items: [
            {
              metadata: { name: 'ip-10-0-0-1', uid: '2', labels: { a: 'b' } },
              spec: {
                providerID: 'aws:///eu-west-1b/i-0123456789abcdef0',
                unschedulable: true,
                taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }],
              },
              status: { conditions: [{ type: 'Ready', status: 'True' }] },
            },
          ],
        });
      }
    };

    const node = (await gateway.scanForInstances(['i-0123456789abcdef0'])).get('i-0123456789abcdef0');

    expect(node).toEqual({
      name: 'ip-10-0-0-1',
      uid: '2',
      providerId: 'aws:///eu-west-1b/i-0123456789abcdef0',
      unschedulable: true,
      labels: { a: 'b' },
      ready: true,
      taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }],
      handOff: undefined,
      drain: undefined,
      refreshGroup: undefined,
      hasAnnotations: false,
      resourceVersion: undefined,
      // Without a lastTransitionTime, the repair rules never count the wait (repair/rules.ts).
      conditions: [{ type: 'Ready', status: 'True', reason: '', sinceMs: Number.NaN }],
    });
    expect(seen.map((s) => s.url.pathname)).toEqual(['/api/v1/nodes', '/api/v1/nodes']);
    expect(seen[0]!.url.searchParams.get('limit')).toBe('100');
    expect(seen[0]!.headers['accept-encoding']).toBe('gzip');
  });

  it("does not ask for gzip where it does not pay (a node's own pods)", async () => {
    respond = (_req, res) => json(res, 200, { metadata: { resourceVersion: '1' }, items: [] });
    const watch = await gateway.watchPodsOnNode('n');
    watch.close();
    expect(seen[0]!.headers['accept-encoding']).toBeUndefined();
  });

  it('lists and watches only the pods bound to the node', async () => {
    respond = (req, res) => {
      if (req.url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(
          JSON.stringify({
            type: 'DELETED',
            object: { metadata: { name: 'web-1', namespace: 'default', uid: 'u1', resourceVersion: '11' } },
          }) + '\n',
        );
        return; // keep the stream open like a real watch
      }
      json(res, 200, {
        metadata: { resourceVersion: '10' },
        items: [
          {
            metadata: {
              name: 'web-1',
              namespace: 'default',
              uid: 'u1',
              ownerReferences: [{ kind: 'ReplicaSet', controller: true, name: 'rs', uid: 'r', apiVersion: 'apps/v1' }],
            },
            spec: { priorityClassName: 'x' },
            status: { phase: 'Running' },
          },
        ],
      });
    };

    const watch = await gateway.watchPodsOnNode('node-a');
    try {
      await watch.changed(5_000);
      expect(watch.current()).toEqual([]);
    } finally {
      watch.close();
    }

    const list = seen[0]!.url;
    expect(list.pathname).toBe('/api/v1/pods');
    expect(list.searchParams.get('fieldSelector')).toBe('spec.nodeName=node-a');
    const watchUrl = seen[1]!.url;
    expect(watchUrl.pathname).toBe('/api/v1/pods');
    expect(Object.fromEntries(watchUrl.searchParams)).toMatchObject({
      watch: 'true',
      fieldSelector: 'spec.nodeName=node-a',
      resourceVersion: '10',
      allowWatchBookmarks: 'true',
    });
  });

  it('does not lose a change that arrives while the caller is busy (no lost wake-up)', async () => {
    let sent = false;
    respond = (req, res) => {
      if (req.url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(
          JSON.stringify({
            type: 'DELETED',
            object: { metadata: { name: 'web-1', namespace: 'default', uid: 'u1', resourceVersion: '11' } },
          }) + '\n',
          () => {
            sent = true;
          },
        );
        return;
      }
      json(res, 200, {
        metadata: { resourceVersion: '10' },
        items: [
          { metadata: { name: 'web-1', namespace: 'default', uid: 'u1' }, spec: {}, status: { phase: 'Running' } },
        ],
      });
    };
    const watch = await gateway.watchPodsOnNode('node-a');
    try {
      // The deletion is delivered before anyone waits for it (as during an eviction round).
      await vi.waitUntil(() => sent && watch.current().length === 0, { timeout: 5_000 });
      // Without the change counter this waits the full hour and the test times out.
      await watch.changed(3_600_000);
    } finally {
      watch.close();
    }
  });

  it('claims a hand-off by compare-and-swap on the resourceVersion, retrying a conflict', async () => {
    let version = 5;
    let patches = 0;
    respond = (req, res) => {
      if (req.method === 'GET')
        return json(res, 200, {
          metadata: {
            name: 'node-a',
            resourceVersion: String(version),
            annotations: { 'graceful-node-termination/hand-off': 'sha256:ab/1' },
          },
        });
      patches++;
      if (patches === 1) {
        version++; // a status update landed between our read and our write
        return json(res, 409, {
          kind: 'Status',
          code: 409,
          reason: 'Conflict',
          message: 'the object has been modified',
        });
      }
      return json(res, 200, {});
    };

    await expect(gateway.claimHandOff('node-a', 'sha256:ab/1', 'sha256:ab/2', record({ evicted: 3 }))).resolves.toBe(
      'claimed',
    );

    const writes = seen.filter((r) => r.method === 'PATCH');
    const body = (rv: string) => ({
      metadata: {
        resourceVersion: rv,
        annotations: {
          'graceful-node-termination/hand-off': 'sha256:ab/2',
          'graceful-node-termination/drain': expect.stringContaining('"evicted":3'),
        },
      },
    });
    expect(writes.map((w) => w.body)).toEqual([body('5'), body('6')]);
  });

  it('loses the claim when another invocation moved the annotation on', async () => {
    respond = (_req, res) =>
      json(res, 200, {
        metadata: {
          name: 'node-a',
          resourceVersion: '9',
          annotations: { 'graceful-node-termination/hand-off': 'sha256:ab/2' },
        },
      });
    await expect(gateway.claimHandOff('node-a', 'sha256:ab/1', 'sha256:ab/2', record())).resolves.toBe('lost');
    expect(seen.filter((r) => r.method === 'PATCH')).toEqual([]);
  });

  it('retries a list through 503s and resets, then succeeds', async () => {
    let calls = 0;
    respond = (req, res) => {
      calls++;
      if (calls === 1) return json(res, 503, { kind: 'Status', code: 503, message: 'unavailable' });
      if (calls === 2) return res.socket?.destroy();
      json(res, 200, {
        metadata: {},
        items: [{ metadata: { name: 'n', uid: '1' }, spec: { providerID: 'aws:///eu-west-1a/i-0123456789abcdef0' } }],
      });
    };
    await expect(gateway.scanForInstances(['i-0123456789abcdef0'])).resolves.toEqual(
      new Map([['i-0123456789abcdef0', expect.objectContaining({ name: 'n' })]]),
    );
    expect(calls).toBe(3);
  });

  it('does not retry an eviction in place: its 429 and 500 answers mean something', async () => {
    respond = (_req, res) => json(res, 503, { kind: 'Status', code: 503, message: 'unavailable' });
    await expect(gateway.evictPod(pod({ name: 'web-1' }))).resolves.toMatchObject({
      kind: 'blocked',
      reason: 'server-error',
    });
    expect(seen).toHaveLength(1);
  });

  it('deletes a pod with a framed DeleteOptions body (UID precondition, grace period), keeping the connection usable', async () => {
    respond = (req, res) => json(res, 200, req.method === 'DELETE' ? { kind: 'Pod' } : { metadata: {}, items: [] });
    const target = pod({ name: 'web-1', namespace: 'shop', uid: 'u-1' });

    await expect(gateway.deletePod(target, 12)).resolves.toBe('deleted');
    await expect(gateway.scanForInstances(['i-0123456789abcdef0'])).resolves.toEqual(new Map());

    expect(seen[0]!.method).toBe('DELETE');
    expect(seen[0]!.url.pathname).toBe('/api/v1/namespaces/shop/pods/web-1');
    expect(seen[0]!.url.searchParams.get('gracePeriodSeconds')).toBe('12');
    expect(seen[0]!.headers['content-length']).toBeDefined();
    expect(seen[0]!.body).toEqual({
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      gracePeriodSeconds: 12,
      preconditions: { uid: 'u-1' },
    });
    expect(seen[1]!.method).toBe('GET');
  });

  it("tells a DELETE that moved a terminating pod's end earlier from one that changed nothing", async () => {
    const terminating = pod({ name: 'web-1', uid: 'u-1', deletionTimestamp: new Date('2026-11-22T10:05:00Z') });
    respond = (_req, res) => json(res, 200, { kind: 'Pod', metadata: { deletionTimestamp: '2026-11-22T10:05:00Z' } });
    await expect(gateway.deletePod(terminating, 30)).resolves.toBe('unchanged');
    respond = (_req, res) => json(res, 200, { kind: 'Pod', metadata: { deletionTimestamp: '2026-11-22T10:01:00Z' } });
    await expect(gateway.deletePod(terminating, 30)).resolves.toBe('deleted');
  });

  it('takes 404 and a moved-on UID (409) on delete as gone', async () => {
    respond = (_req, res) =>
      json(res, 409, {
        kind: 'Status',
        code: 409,
        reason: 'Conflict',
        message: 'Precondition failed: UID in precondition: u-1, UID in object meta: u-2',
      });
    await expect(gateway.deletePod(pod({ name: 'web-1', uid: 'u-1' }), 30)).resolves.toBe('gone');
  });

  it('writes core/v1 Events on the node in the default namespace and never throws', async () => {
    respond = (_req, res) => json(res, 201, {});
    await gateway.record({
      regarding: { kind: 'Node', name: 'node-a', uid: 'n1' },
      type: 'Normal',
      reason: 'Cordoned',
      message: 'cordoned',
    });
    await gateway.flush(5_000);
    expect(seen[0]!.url.pathname).toBe('/api/v1/namespaces/default/events');
    expect(seen[0]!.body).toMatchObject({
      involvedObject: { kind: 'Node', name: 'node-a', uid: 'n1' },
      reason: 'Cordoned',
      type: 'Normal',
      source: { component: 'graceful-node-termination' },
    });

    respond = (_req, res) => json(res, 500, { message: 'etcd down' });
    await expect(
      gateway.record({
        regarding: { kind: 'Pod', name: 'p', namespace: 'shop', uid: 'p1' },
        type: 'Warning',
        reason: 'EvictionBlocked',
        message: 'x',
      }),
    ).resolves.toBeUndefined();
    await gateway.flush(20_000);
    expect(seen[1]!.url.pathname).toBe('/api/v1/namespaces/shop/events');
  }, 30_000);

  it('never holds the caller up on an Event: record returns while the write is still waiting', async () => {
    let release: () => void = () => {};
    respond = (_req, res) => {
      release = () => json(res, 201, {});
    };
    const started = Date.now();
    await gateway.record({
      regarding: { kind: 'Node', name: 'node-a', uid: 'n1' },
      type: 'Normal',
      reason: 'Cordoned',
      message: 'x',
    });
    expect(Date.now() - started).toBeLessThan(1_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(seen).toHaveLength(1);
    release();
    await gateway.flush(5_000);
  });

  it('mints fresh credentials and retries once a request is answered 401', async () => {
    let refreshed = 0;
    const endpoint = {
      server: gatewayServer(),
      requestOptions: async () => ({ headers: { Authorization: `Bearer token-${refreshed}` } }),
      refreshCredentials: () => void refreshed++,
    };
    const g = createKubernetesGateway(endpoint, { requestTimeoutMs: 5_000, log: new MemoryLog() });
    respond = (req, res) =>
      req.headers['authorization'] === 'Bearer token-0'
        ? json(res, 401, { kind: 'Status', code: 401, reason: 'Unauthorized', message: 'Unauthorized' })
        : json(res, 201, { kind: 'Status', status: 'Success' });

    await expect(g.evictPod(pod({ name: 'web-1' }))).resolves.toEqual({ kind: 'evicted' });
    expect(refreshed).toBe(1);
    expect(seen.map((r) => r.headers['authorization'])).toEqual(['Bearer token-0', 'Bearer token-1']);
  });
});

function json(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** As the API server answers a client that asked for gzip (APIResponseCompression). */
function gzipped(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
  res.end(gzipSync(JSON.stringify(body)));
}
