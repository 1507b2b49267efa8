// The requests node auto repair sends: the node list in gzipped pages of 100 (label-selected
// when asked), the record's merge patch conditional on the node as read, and the patch that
// takes it back (our cordon, the owner label only when no other mark of ours stays).
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createKubernetesGateway } from '../../../../lambda/adapters/kubernetes/gateway.js';
import type { RepairRecord } from '../../../../lambda/cluster/model.js';
import { MemoryLog } from '../../../fakes/fake-world.js';

const record: RepairRecord = {
  action: 'reboot',
  instanceId: 'i-0123456789abcdef0',
  condition: 'NetworkingReady',
  reason: 'IPAMDNotReady',
  decidedAtMs: Date.parse('2026-11-27T10:00:00Z'),
  cordoned: true,
};
const node = (name: string, extra: Record<string, unknown> = {}) => ({
  metadata: {
    name,
    uid: `uid-${name}`,
    resourceVersion: '7',
    labels: { 'graceful-node-termination/owner': 'gnt' },
    annotations: {
      'graceful-node-termination/repair': JSON.stringify({
        action: 'reboot',
        instanceId: record.instanceId,
        condition: 'NetworkingReady',
        reason: 'IPAMDNotReady',
        decidedAt: '2026-11-27T10:00:00.000Z',
        cordoned: true,
      }),
    },
    ...extra,
  },
  spec: { providerID: `aws:///eu-west-1a/i-0123456789abcdef0` },
  status: {
    conditions: [
      { type: 'NetworkingReady', status: 'False', reason: 'IPAMDNotReady', lastTransitionTime: '2026-11-27T09:00:00Z' },
    ],
  },
});

describe('repair node requests', () => {
  let server: Server;
  let seen: { method: string; url: URL; headers: Record<string, unknown>; body: unknown }[];
  let respond: (url: URL, res: ServerResponse) => void;
  let gateway: ReturnType<typeof createKubernetesGateway>;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://x');
        seen.push({ method: req.method ?? '', url, headers: req.headers, body: raw ? JSON.parse(raw) : undefined });
        respond(url, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const endpoint = {
      server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      requestOptions: async () => ({ headers: { Authorization: 'Bearer t' } }),
    };
    gateway = createKubernetesGateway(endpoint, { requestTimeoutMs: 5_000, log: new MemoryLog() });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen = [];
    respond = (_url, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });

  it('lists in gzipped pages of 500, label-selected, never resourceVersion=0 (which would answer every node at once)', async () => {
    respond = (url, res) => {
      const body = url.searchParams.get('continue')
        ? { metadata: {}, items: [node('b')] }
        : { metadata: { continue: 'page2' }, items: [node('a')] };
      res
        .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        .end(gzipSync(JSON.stringify(body)));
    };
    const { picked: nodes, listed } = await gateway.listNodeHealth('eks.amazonaws.com/nodegroup=workers', (n) => n);
    expect(nodes.map((n) => n.name)).toEqual(['a', 'b']);
    expect(listed).toBe(2);
    expect(nodes[0]).toMatchObject({
      repair: record,
      conditions: [
        {
          type: 'NetworkingReady',
          status: 'False',
          reason: 'IPAMDNotReady',
          sinceMs: Date.parse('2026-11-27T09:00:00Z'),
        },
      ],
    });
    for (const s of seen) {
      expect(s.url.searchParams.get('limit')).toBe('500');
      expect(s.url.searchParams.get('labelSelector')).toBe('eks.amazonaws.com/nodegroup=workers');
      expect(s.url.searchParams.get('resourceVersion')).toBeNull();
      expect(s.headers['accept-encoding']).toBe('gzip');
    }
    expect(seen).toHaveLength(2);
    // What pick declines is not kept, but counted.
    expect(await gateway.listNodeHealth(undefined, () => undefined)).toEqual({ picked: [], listed: 2 });
  });

  it('writes the record, the owner label and our cordon in one merge patch conditional on the node as read', async () => {
    respond = (_url, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ metadata: {}, items: [node('a')] }));
    const [read] = (await gateway.listNodeHealth(undefined, (n) => n)).picked;
    if (read === undefined) throw new Error('no node listed');
    seen = [];
    respond = (_url, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    expect(await gateway.markRepair(read, record, 'gnt')).toBe('patched');
    expect(seen[0]).toMatchObject({ method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' } });
    expect(seen[0]!.body).toEqual({
      metadata: {
        resourceVersion: '7',
        labels: { 'graceful-node-termination/owner': 'gnt' },
        annotations: { 'graceful-node-termination/repair': expect.stringContaining('"action":"reboot"') },
      },
      spec: { unschedulable: true },
    });
    seen = [];
    expect(await gateway.unmarkRepair(read, record)).toBe('patched');
    expect(seen[0]!.body).toEqual({
      metadata: {
        resourceVersion: '7',
        labels: { 'graceful-node-termination/owner': null },
        annotations: { 'graceful-node-termination/repair': null },
      },
      spec: { unschedulable: null },
    });
  });

  it('answers changed on a conflict and leaves a later repair record alone', async () => {
    respond = (url, res) =>
      url.pathname.endsWith('/a') && seen.at(-1)?.method === 'GET'
        ? res.writeHead(200, { 'content-type': 'application/json' }).end(
            JSON.stringify(
              node('a', {
                resourceVersion: '8',
                annotations: {
                  'graceful-node-termination/repair': JSON.stringify({
                    action: 'replace',
                    instanceId: record.instanceId,
                    decidedAt: '2026-11-27T11:00:00.000Z',
                  }),
                },
              }),
            ),
          )
        : res
            .writeHead(409, { 'content-type': 'application/json' })
            .end(JSON.stringify({ kind: 'Status', code: 409, reason: 'Conflict' }));
    const read = {
      name: 'a',
      uid: 'uid-a',
      providerId: '',
      unschedulable: true,
      labels: {},
      ready: true,
      taints: [],
      resourceVersion: '7',
      repair: record,
    };
    expect(await gateway.unmarkRepair(read, record)).toBe('changed');
    expect(seen.map((s) => s.method)).toEqual(['PATCH', 'GET']);
  });
});
