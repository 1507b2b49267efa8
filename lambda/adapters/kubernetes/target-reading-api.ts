// Shared load-balancer readings as Leases in the deployment's own namespace (the RBAC installer
// makes it; rbac.ts grants leases there and nowhere else): one Lease per load balancer, named by
// a hash of its id, and one `reader` Lease for the turn. Readings and wants are merge patches
// of their own annotations, so two writers never undo each other; the turn is taken with the
// resourceVersion seen, as leader election takes a Lease.
// https://kubernetes.io/docs/concepts/architecture/leases/
import { createHash } from 'node:crypto';
import type {
  LoadBalancerRef,
  ReaderTurn,
  SharedReading,
  TargetReadings,
  TargetReadingsWatch,
} from '../../cluster/ports/target-readings.js';
import {
  loadBalancerAnnotation,
  ownerLabel,
  readingAnnotation,
  targetReadingLabel,
  wantedUntilAnnotation,
} from '../../cluster/marks/mark-keys.js';
import {
  formatLoadBalancer,
  formatReading,
  parseLoadBalancer,
  parseReading,
  parseWantedUntil,
} from '../../cluster/marks/target-reading.js';
import { AccessDeniedError } from '../../shared/errors.js';
import type { Log } from '../../shared/log.js';
import { call, classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { openListWatch, watchTimeoutSeconds } from './list-watch.js';

const mergePatch = 'application/merge-patch+json';
const readerName = 'reader';

interface WireLease {
  metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}

type Seen = { kind: 'reading'; reading: SharedReading } | { kind: 'turn'; turn: ReaderTurn } | { kind: 'other' };

/** The Lease of one load balancer: a DNS label, the same from every invocation. */
export function readingLeaseName(lb: Pick<LoadBalancerRef, 'kind' | 'id'>): string {
  return `lb-${createHash('sha256').update(`${lb.kind}\n${lb.id}`).digest('hex').slice(0, 32)}`;
}

/** Lease times are MicroTime: RFC 3339 with microseconds. */
const microTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

function seenOf(lease: WireLease): Seen {
  const a = lease.metadata?.annotations ?? {};
  const name = lease.metadata?.name ?? '';
  if (name === readerName) {
    const renewedAtMs = Date.parse(lease.spec?.renewTime ?? '');
    return {
      kind: 'turn',
      turn: {
        holder: lease.spec?.holderIdentity ?? '',
        renewedAtMs: Number.isNaN(renewedAtMs) ? 0 : renewedAtMs,
        durationMs: (lease.spec?.leaseDurationSeconds ?? 0) * 1000,
        version: lease.metadata?.resourceVersion ?? '',
      },
    };
  }
  const lb = parseLoadBalancer(a[loadBalancerAnnotation]);
  if (lb === undefined) return { kind: 'other' };
  const reading = parseReading(a[readingAnnotation]);
  return {
    kind: 'reading',
    reading: { name, lb, wantedUntilMs: parseWantedUntil(a[wantedUntilAnnotation]), ...(reading ? { reading } : {}) },
  };
}

/** The Leases of one namespace: made, merge-patched, deleted, each answer a value. */
class Leases {
  readonly base: string;

  constructor(
    readonly kube: KubeHttp,
    readonly namespace: string,
    readonly owner: string,
  ) {
    this.base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  }

  path(name: string): string {
    return `${this.base}/${encodeURIComponent(name)}`;
  }

  labels(kind: 'load-balancer' | 'reader') {
    return { [ownerLabel]: this.owner, [targetReadingLabel]: kind };
  }

  async patch(name: string, body: object, what: string): Promise<'patched' | 'changed' | 'gone'> {
    try {
      await this.kube.request('PATCH', this.path(name), { body, contentType: mergePatch });
      return 'patched';
    } catch (error) {
      if (statusOf(error) === 409) return 'changed';
      if (statusOf(error) === 404) return 'gone';
      throw classify(error, what);
    }
  }

  async create(body: object, what: string): Promise<'created' | 'exists'> {
    try {
      await this.kube.request('POST', this.base, { body, retry: true });
      return 'created';
    } catch (error) {
      if (statusOf(error) === 409) return 'exists';
      // The namespace is the installer's: without it nothing can be shared (the RBAC predates it).
      if (statusOf(error) === 404)
        throw new AccessDeniedError(`${what}: namespace ${this.namespace} not found (install the RBAC again)`, 404, {
          cause: error,
        });
      throw classify(error, what);
    }
  }
}

export function createTargetReadingApi(
  kube: KubeHttp,
  o: { namespace: string; owner: string; log: Log },
): TargetReadings {
  const leases = new Leases(kube, o.namespace, o.owner);
  return {
    open: () => openReadings(kube, leases.base, o.log),
    want: (lb, untilMs) => want(leases, lb, untilMs),
    async publish(lb, reading) {
      const body = {
        metadata: { annotations: { [readingAnnotation]: formatReading(reading) } },
        spec: { holderIdentity: reading.by, renewTime: microTime(reading.atMs) },
      };
      await leases.patch(readingLeaseName(lb), body, `publish the reading of ${lb.name}`);
    },
    takeTurn: (holder, nowMs, durationMs, seen) => takeTurn(leases, holder, { nowMs, durationMs, seen }),
    async releaseTurn(holder, seen) {
      if (seen.holder !== holder) return;
      const body = { metadata: { resourceVersion: seen.version }, spec: { holderIdentity: '' } };
      await leases.patch(readerName, body, 'release the reading turn');
    },
    forget: (beforeMs) => forget(leases, beforeMs),
  };
}

async function want(leases: Leases, lb: LoadBalancerRef, untilMs: number): Promise<void> {
  const name = readingLeaseName(lb);
  const wanted = { [wantedUntilAnnotation]: new Date(untilMs).toISOString() };
  const metadata = {
    name,
    labels: leases.labels('load-balancer'),
    annotations: { [loadBalancerAnnotation]: formatLoadBalancer(lb), ...wanted },
  };
  const body = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata, spec: { holderIdentity: '' } };
  // Patched first: in a wave the Lease exists for all but its first waiter (a create first was
  // answered 409 AlreadyExists 2,869 times in 3,183 at 200 terminations behind 60 groups).
  const patch = () => leases.patch(name, { metadata: { annotations: wanted } }, `want ${lb.name} read`);
  if ((await patch()) !== 'gone') return;
  if ((await leases.create(body, `want ${lb.name} read`)) === 'exists') await patch();
}

async function takeTurn(
  leases: Leases,
  holder: string,
  o: { readonly nowMs: number; readonly durationMs: number; readonly seen: ReaderTurn | undefined },
): Promise<'taken' | 'changed'> {
  const spec = {
    holderIdentity: holder,
    renewTime: microTime(o.nowMs),
    leaseDurationSeconds: Math.ceil(o.durationMs / 1000),
    ...(o.seen?.holder !== holder ? { acquireTime: microTime(o.nowMs) } : {}),
  };
  if (o.seen === undefined) {
    const metadata = { name: readerName, labels: leases.labels('reader') };
    const body = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata, spec };
    return (await leases.create(body, 'take the reading turn')) === 'created' ? 'taken' : 'changed';
  }
  const body = { metadata: { resourceVersion: o.seen.version }, spec };
  return (await leases.patch(readerName, body, 'take the reading turn')) === 'patched' ? 'taken' : 'changed';
}

/** Deletes the readings nobody wanted since `beforeMs`, each conditional on the Lease as listed. */
async function forget(leases: Leases, beforeMs: number): Promise<readonly string[]> {
  const selector = `${ownerLabel}=${leases.owner},${targetReadingLabel}=load-balancer`;
  const list = await call('list shared readings', () =>
    leases.kube.request<{ items: WireLease[] }>('GET', leases.base, { query: { labelSelector: selector } }),
  );
  const gone: string[] = [];
  for (const lease of list.items) {
    const seen = seenOf(lease);
    if (seen.kind !== 'reading' || seen.reading.wantedUntilMs >= beforeMs) continue;
    try {
      await leases.kube.request('DELETE', leases.path(seen.reading.name), {
        body: { preconditions: { resourceVersion: lease.metadata?.resourceVersion } },
      });
      gone.push(seen.reading.name);
    } catch (error) {
      // Wanted again meanwhile (409), or already gone (404): nothing to take back.
      if (statusOf(error) !== 409 && statusOf(error) !== 404)
        throw classify(error, `forget the reading ${seen.reading.name}`);
    }
  }
  return gone;
}

async function openReadings(kube: KubeHttp, leases: string, log: Log): Promise<TargetReadingsWatch> {
  const watch = await openListWatch(kube, {
    what: 'shared load-balancer readings',
    path: leases,
    timeoutSeconds: watchTimeoutSeconds,
    toInfo: seenOf as (object: never) => Seen,
    log,
  });
  return {
    current() {
      const seen = watch.current();
      const turn = seen.find((s): s is Extract<Seen, { kind: 'turn' }> => s.kind === 'turn')?.turn;
      const readings = seen.flatMap((s) => (s.kind === 'reading' ? [s.reading] : []));
      return { readings, ...(turn !== undefined ? { turn } : {}) };
    },
    close: () => watch.close(),
  };
}
