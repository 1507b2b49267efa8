import { createServer, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createKubeHttp } from '../../../../lambda/adapters/kubernetes/kube-http.js';
import { ListStream, type ListItems } from '../../../../lambda/adapters/kubernetes/list-stream.js';
import { nodeFieldsNotRead, toNodeInfo, type WireList } from '../../../../lambda/adapters/kubernetes/object-codecs.js';
import type { V1Node } from '@kubernetes/client-node';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const skip = ['metadata.managedFields', 'status.images', 'status.nodeInfo'];

/** What the stream must give: JSON.parse's list, each skipped path of each item set to null where present. */
function expected(text: string, paths: readonly string[] = skip): WireList<Json> {
  const list = JSON.parse(text) as { items?: Json[] } & Record<string, Json>;
  const items = (list.items ?? []).map((item) => {
    const copy = structuredClone(item) as Record<string, Json>;
    for (const path of paths) {
      const keys = path.split('.');
      let at: Json | undefined = copy;
      for (const key of keys.slice(0, -1))
        at = at !== null && typeof at === 'object' && !Array.isArray(at) ? at[key] : undefined;
      const last = keys.at(-1)!;
      if (at !== null && typeof at === 'object' && !Array.isArray(at) && last in at) at[last] = null;
    }
    return copy;
  });
  return { ...(list as object), items } as WireList<Json>;
}

function read(chunks: readonly string[], o: ListItems<Json> = { itemOf: (x) => x as Json, skip }): WireList<Json> {
  const stream = new ListStream(o);
  for (const chunk of chunks) stream.push(chunk);
  return stream.end();
}

const node = (name: string, extra: Record<string, Json> = {}): Json => ({
  metadata: {
    name,
    labels: { images: 'a label named like a skipped field', 'kubernetes.io/hostname': name },
    annotations: {
      managedFields: 'an annotation named so',
      note: 'an escaped quote " then } ] , : and a backslash \\',
      'a key with " } ] , : in it': '{',
    },
    managedFields: [{ manager: 'kubelet', fieldsV1: { 'f:status': { 'f:conditions': {} } } }],
  },
  spec: { providerID: `aws:///eu-west-1a/i-0${name}`, taints: [{ key: 'k', effect: 'NoSchedule' }] },
  status: {
    conditions: [{ type: 'Ready', status: 'True', images: 'kept: inside an array' }],
    images: [{ names: ['repo@sha256:ab', 'repo:v1'], sizeBytes: 123 }],
    nodeInfo: { kubeletVersion: 'v1.34.4' },
    volumesAttached: [{ name: 'kubernetes.io/csi/ebs.csi.aws.com^vol-1', devicePath: '' }],
  },
  ...extra,
});

const list = (items: Json[], more: Record<string, Json> = {}) =>
  JSON.stringify({
    kind: 'NodeList',
    apiVersion: 'v1',
    metadata: { resourceVersion: '42', continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ' },
    items,
    ...more,
  });

describe('a list read item by item (list-stream.ts)', () => {
  it('gives each item as JSON.parse would, the skipped paths null, and the list around them', () => {
    const text = list([node('a'), node('b'), node('c')]);
    const got = read([text]);
    expect(got).toEqual(expected(text));
    expect(got.metadata?.continue).toBe('eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ');
    const first = got.items[0] as { metadata: Record<string, Json>; status: Record<string, Json> };
    expect(first.metadata['managedFields']).toBeNull();
    expect(first.status['images']).toBeNull();
    // Same names elsewhere are not the skipped paths: kept.
    expect(first.metadata['labels']).toMatchObject({ images: 'a label named like a skipped field' });
    expect(first.metadata['annotations']).toMatchObject({ managedFields: 'an annotation named so' });
  });

  it('reads the same whatever the cuts: at every single position, and one character at a time', () => {
    const text = list([node('a'), node('b', { extra: [1, 'x', { y: [true, null] }] })], { trailer: { z: [1] } });
    const want = expected(text);
    for (let at = 0; at <= text.length; at++) expect(read([text.slice(0, at), text.slice(at)])).toEqual(want);
    expect(read([...text])).toEqual(want);
  });

  it('passes over a skipped value of every kind, with the spaces JSON allows around it', () => {
    const kinds: Json[] = [{ a: { b: ['}', ']'] } }, ['x', ['y']], 'a " } ] , string \\', 12.5e3, true, false, null];
    for (const value of kinds) {
      // The skipped field first, between two others, and last (its value then ends at the object's close).
      const items: Json[] = [
        { metadata: { managedFields: value, name: 'n' } },
        { metadata: { name: 'n', managedFields: value, after: 1 } },
        { metadata: { name: 'n', managedFields: value }, spec: {} },
      ];
      const compact = list(items);
      const spaced = compact.replaceAll('"managedFields":', '"managedFields" :\n\t ').replaceAll(',"', ' ,\r\n"');
      for (const text of [compact, spaced]) {
        expect(read([text])).toEqual(expected(compact));
        expect(read([...text])).toEqual(expected(compact));
      }
    }
  });

  it('skips a path only through objects: an array on the way is not the path, whatever came before', () => {
    // The first item leaves x.y as the path last read at its depth; the second's z sits in an array there.
    const text = list([{ x: { y: { w: 1, z: 'skipped' } } }, { list: [{ z: 'kept' }], x: [{ y: { z: 'kept' } }] }]);
    const got = read([text], { itemOf: (x) => x as Json, skip: ['x.y.z'] });
    expect(got.items).toEqual([{ x: { y: { w: 1, z: null } } }, { list: [{ z: 'kept' }], x: [{ y: { z: 'kept' } }] }]);
  });

  it('keeps only what itemOf returns, and lists without items or with none', () => {
    const text = list([node('a'), node('b'), node('c')]);
    const names = read([text], {
      itemOf: (raw) => {
        const name = (raw as { metadata: { name: string } }).metadata.name;
        return name === 'b' ? undefined : name;
      },
    });
    expect(names.items).toEqual(['a', 'c']);
    expect(read([list([])]).items).toEqual([]);
    expect(read(['{"kind":"NodeList","items":null,"metadata":{}}']).items).toEqual([]);
    expect(read(['{"kind":"Status","status":"Success"}'])).toEqual({ kind: 'Status', status: 'Success', items: [] });
  });

  it('refuses a malformed answer with a clear error instead of a partial list', () => {
    const text = list([node('a')]);
    expect(() => read([text.slice(0, text.length - 20)])).toThrow(/ended inside a value/);
    expect(() => read(['{"items":["a string"]}'])).toThrow(/not an object/);
    expect(() => read(['{"items":[{"a":1}]} trailing'])).toThrow(SyntaxError);
    expect(() => read(['[1,2]'])).toThrow(/not a JSON object/);
  });
});

describe('the node fields passed over (nodeFieldsNotRead)', () => {
  it('are fields toNodeInfo never reads: a node read through the stream is the node read whole', () => {
    const full = node('a', {
      status: {
        conditions: [
          { type: 'Ready', status: 'False', reason: 'KubeletNotReady', lastTransitionTime: '2026-11-27T09:00:00Z' },
        ],
        images: [{ names: ['repo:v1'], sizeBytes: 1 }],
        nodeInfo: { kubeletVersion: 'v1.34.4' },
        capacity: { cpu: '8' },
        allocatable: { cpu: '7910m' },
        addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
        daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
        volumesInUse: ['kubernetes.io/csi/ebs.csi.aws.com^vol-1'],
        volumesAttached: [{ name: 'kubernetes.io/csi/ebs.csi.aws.com^vol-1', devicePath: '' }],
        config: {},
        features: { supplementalGroupsPolicy: true },
        runtimeHandlers: [{ name: 'runc' }],
      },
    });
    const text = list([full]);
    const streamed = read([text], {
      itemOf: (raw) => toNodeInfo(raw as V1Node) as unknown as Json,
      skip: nodeFieldsNotRead,
    });
    expect(streamed.items).toEqual([toNodeInfo(full as unknown as V1Node)]);
    // And they are there to pass over: each is null in what the stream parsed.
    const raw = read([text], { itemOf: (x) => x as Json, skip: nodeFieldsNotRead }).items[0] as Record<
      string,
      Record<string, Json>
    >;
    for (const path of nodeFieldsNotRead) {
      const [a, b] = path.split('.') as [string, string];
      expect(raw[a]![b], path).toBeNull();
    }
  });
});

describe('a list read over HTTP (kube-answer.ts)', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('reads a gzipped answer in small chunks, a character of several bytes cut between them', async () => {
    const text = list([node('ü-ñ-😀-a'), node('b')]);
    const body = gzipSync(text);
    server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      // The gzip stream in 7-byte pieces: the decompressed chunks cut characters anywhere.
      let at = 0;
      const next = () => (at < body.length ? res.write(body.subarray(at, (at += 7)), next) : res.end());
      next();
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const kube = createKubeHttp(
      { server: `http://127.0.0.1:${port}`, requestOptions: async () => ({}) },
      { userAgent: 'test', timeoutMs: 5_000, maxAttempts: 1 },
    );
    const got = await kube.request<WireList<Json>>('GET', '/api/v1/nodes', {
      compressed: true,
      items: { itemOf: (x) => x, skip },
    });
    expect(got).toEqual(expected(text));
  });
});
