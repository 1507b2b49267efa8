// A Kubernetes API for the node lookup's reads (adapters/kubernetes/node-api.ts): nodes as the wire carries them,
// selected by the hostname label as the API server selects (hostname in (...)), a resourceVersion=0 list answered
// from the watch cache and a GET from etcd, so a test can tell a cached read from a consistent one.
export type WireNode = {
  metadata: { name: string; resourceVersion: string; labels: Record<string, string> };
  spec: { providerID: string };
};
export const wire = (name: string, id: string, rv: string, hostname?: string): WireNode => ({
  metadata: { name, resourceVersion: rv, labels: hostname !== undefined ? { 'kubernetes.io/hostname': hostname } : {} },
  spec: { providerID: `aws:///eu-west-1a/${id}` },
});

/** A kube that selects as the server does (hostname in (...)); `cache` answers resourceVersion=0 lists, `etcd` GETs. */
export function fakeKube(etcd: WireNode[], cache: WireNode[] = etcd) {
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
