// The AWS Load Balancer Controller as it behaves for instance target groups bound by
// TargetGroupBindings, played against the ELB stand-in (test/fakes/elb-stub.ts), so a bench
// with load balancers meets what a cluster has: targets deregistered only once the controller
// read their group, draining for the group's deregistration delay, and the controller's own
// DescribeTargetHealth reads spending the account's one Describe bucket beside the drainer's.
//
// What is played, and where it comes from (kubernetes-sigs/aws-load-balancer-controller):
// - A node stops being a traffic proxy when it carries node.kubernetes.io/exclude-from-external-
//   load-balancers or is cordoned (pkg/backend IsNodeSuitableAsTrafficProxy: the label in every
//   version, spec.unschedulable in the older ones). Its change enqueues the TargetGroupBindings;
//   a binding whose endpoints did not change is skipped without an AWS call (the checkpoint).
// - Reconciles run 3 at a time (--targetgroupbinding-max-concurrent-reconciles 3). One lists the
//   group's targets (pkg/targetgroupbinding/targets_manager.go): a DescribeTargetHealth of every
//   target when its cache of the group is missing or older than 5 minutes, else one of the
//   targets not healthy (draining ones included), else none; then DeregisterTargets (its own
//   bucket, not the Describe one: counted, not sent). ELB keeps the target `draining` for the
//   group's deregistration delay, then it is gone.
// - Calls go through the controller's client-side limit for ELBv2 (10 a second, burst 40,
//   docs/deploy/configurations.md "throttle config"); a throttled call is retried by the AWS SDK
//   (--aws-max-retries 10; jittered exponential backoff up to 20 s; a retry quota of 500 tokens,
//   5 per retry, as aws-sdk-go-v2's standard retryer); a reconcile that fails is requeued with
//   controller-runtime's per-item backoff (5 ms doubling, at most 16m40s).
// - Besides reconciles, the controller reads each group about every `periodicReadSeconds`
//   (readiness-gate and health monitoring: the bench's assumption of its steady load on the bucket).
import { Watch, type V1Node } from '@kubernetes/client-node';
import type { Admin } from '../test/cluster/kube.js';
import type { ElbStub, StubTargetGroup } from '../test/fakes/elb-stub.js';
import { seeded } from '../test/cluster/fault-proxy.js';

export const excludeLabel = 'node.kubernetes.io/exclude-from-external-load-balancers';
/** The user agent of the controller's calls: the stand-in records it, so its calls are told from the drainer's. */
export const controllerAgent = 'aws-load-balancer-controller (bench stand-in)';

export interface PlayedGroup {
  readonly group: StubTargetGroup;
  readonly deregistrationDelaySeconds: number;
}

/** Tells the controller of nodes as they change (ADDED and MODIFIED); returns how to stop telling. */
export type NodeFeed = (seen: (node: V1Node) => void) => () => void;

export interface ControllerPlayerOptions {
  readonly elb: ElbStub;
  /** The nodes the controller watches (watchUnsuitableNodes: the excluded and the cordoned ones). */
  readonly nodes: NodeFeed;
  readonly groups: readonly PlayedGroup[];
  /** The instance behind a node (the controller reads it from spec.providerID). */
  readonly instanceOf: (nodeName: string) => string | undefined;
  /** Each group read again about this often besides reconciles (0: never). */
  readonly periodicReadSeconds: number;
  readonly say?: (line: string) => void;
}

export interface ControllerPlayer {
  /** instance -> when the controller saw its node stop being a traffic proxy (excluded or cordoned). */
  readonly unsuitableAtMs: ReadonlyMap<string, number>;
  /** instance -> group ARN -> when its target went draining (DeregisterTargets). */
  readonly deregisteredAtMs: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** instance -> group ARN -> when its target left the group (the deregistration delay over). */
  readonly letGoAtMs: ReadonlyMap<string, ReadonlyMap<string, number>>;
  readonly counts: {
    reconciles: number;
    reconcilesFailed: number;
    reconcilesSkipped: number;
    deregisterCalls: number;
    retryQuotaExhausted: number;
  };
  /** The groups whose target of this instance is registered or draining now. */
  holding(instanceId: string): StubTargetGroup[];
  /** The instance terminated: every group drops its target at once (nothing left to drain). */
  forget(instanceId: string): void;
  stop(): void;
}

const maxConcurrentReconciles = 3;
const targetsCacheTtlMs = 5 * 60_000;
const maxAttempts = 11;
const maxBackoffMs = 20_000;
const retryQuota = 500;
const retryCost = 5;
const maxRequeueMs = 1_000_000;

type Kind = 'reconcile' | 'periodic';

/** A waiting token bucket: the controller's client-side limit (it delays calls, never refuses them). */
function clientLimit(capacity: number, perSecond: number): () => Promise<void> {
  let tokens = capacity;
  let atMs = Date.now();
  let queue = Promise.resolve();
  return () => {
    const turn = queue.then(async () => {
      for (;;) {
        const now = Date.now();
        tokens = Math.min(capacity, tokens + ((now - atMs) / 1000) * perSecond);
        atMs = now;
        if (tokens >= 1) {
          tokens -= 1;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.ceil(((1 - tokens) / perSecond) * 1000)));
      }
    });
    queue = turn;
    return turn;
  };
}

export function startControllerPlayer(o: ControllerPlayerOptions): ControllerPlayer {
  const random = seeded(40);
  const limit = clientLimit(40, 10);
  let quota = retryQuota;
  let stopped = false;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (ms: number, f: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      if (!stopped) f();
    }, ms);
    timers.add(t);
  };
  const counts = {
    reconciles: 0,
    reconcilesFailed: 0,
    reconcilesSkipped: 0,
    deregisterCalls: 0,
    retryQuotaExhausted: 0,
  };
  const deregisteredAtMs = new Map<string, Map<string, number>>();
  const letGoAtMs = new Map<string, Map<string, number>>();
  const record = (m: Map<string, Map<string, number>>, id: string, arn: string) =>
    m.set(id, (m.get(id) ?? new Map<string, number>()).set(arn, Date.now()));
  const byArn = new Map(o.groups.map((g) => [g.group.arn, g]));
  /** Nodes seen unsuitable as traffic proxies, by instance, and when. */
  const unsuitableAtMs = new Map<string, number>();
  const unsuitable = { has: (id: string) => unsuitableAtMs.has(id) };
  /** The controller's cache of each group's targets: when read in full, and the targets not healthy. */
  const cache = new Map<string, { fullAtMs: number; notHealthy: Set<string> }>();

  /** One DescribeTargetHealth through the client's limit and the SDK's retries; false: it failed. */
  const describe = async (g: StubTargetGroup, kind: Kind, only: readonly string[]): Promise<boolean> => {
    const form = new URLSearchParams({ Action: 'DescribeTargetHealth', Version: '2015-12-01', TargetGroupArn: g.arn });
    only.forEach((id, i) => form.set(`Targets.member.${i + 1}.Id`, id));
    for (let attempt = 1; ; attempt++) {
      await limit();
      if (stopped) return false;
      const answer = await fetch(o.elb.url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': `${controllerAgent} ${kind}` },
        body: form.toString(),
      });
      const body = await answer.text();
      if (answer.status === 200) {
        quota = Math.min(retryQuota, quota + (attempt === 1 ? 1 : retryCost));
        return true;
      }
      if (!body.includes('<Code>Throttling</Code>') || attempt >= maxAttempts) return false;
      if (quota < retryCost) {
        counts.retryQuotaExhausted++;
        return false;
      }
      quota -= retryCost;
      await new Promise((resolve) => setTimeout(resolve, Math.min(maxBackoffMs, random() * 1000 * 2 ** attempt)));
    }
  };

  const deregister = (p: PlayedGroup, ids: readonly string[]) => {
    counts.deregisterCalls++;
    for (const id of ids) {
      p.group.targets.set(id, 'draining');
      record(deregisteredAtMs, id, p.group.arn);
      later(p.deregistrationDelaySeconds * 1000, () => {
        if (p.group.targets.get(id) !== 'draining') return;
        p.group.targets.delete(id);
        record(letGoAtMs, id, p.group.arn);
      });
    }
  };

  const reconcile = async (p: PlayedGroup): Promise<boolean> => {
    const g = p.group;
    const leaving = [...g.targets]
      .filter(([id, state]) => state !== 'draining' && unsuitable.has(id))
      .map(([id]) => id);
    if (leaving.length === 0) {
      counts.reconcilesSkipped++;
      return true;
    }
    counts.reconciles++;
    const cached = cache.get(g.arn);
    const now = Date.now();
    if (cached === undefined || now - cached.fullAtMs > targetsCacheTtlMs) {
      if (!(await describe(g, 'reconcile', []))) return false;
      cache.set(g.arn, {
        fullAtMs: now,
        notHealthy: new Set([...g.targets].filter(([, s]) => s !== 'healthy').map(([id]) => id)),
      });
    } else if (cached.notHealthy.size > 0) {
      if (!(await describe(g, 'reconcile', [...cached.notHealthy]))) return false;
      for (const id of cached.notHealthy) if (!g.targets.has(id)) cached.notHealthy.delete(id);
    }
    deregister(p, leaving);
    for (const id of leaving) cache.get(g.arn)?.notHealthy.add(id);
    return true;
  };

  // controller-runtime's work queue: a key queued once however often added, never processed
  // twice at once (added while processing: processed again after), failures requeued with backoff.
  const queued = new Set<string>();
  const processing = new Set<string>();
  const dirty = new Set<string>();
  const failures = new Map<string, number>();
  let workers = 0;
  const pump = () => {
    while (!stopped && workers < maxConcurrentReconciles) {
      const arn = [...queued].find((k) => !processing.has(k));
      if (arn === undefined) return;
      queued.delete(arn);
      processing.add(arn);
      workers++;
      void reconcile(byArn.get(arn)!)
        .catch(() => false)
        .then((ok) => {
          processing.delete(arn);
          workers--;
          if (ok) failures.delete(arn);
          else {
            counts.reconcilesFailed++;
            const n = (failures.get(arn) ?? 0) + 1;
            failures.set(arn, n);
            later(Math.min(maxRequeueMs, 5 * 2 ** (n - 1)), () => enqueue(arn));
          }
          if (dirty.delete(arn)) enqueue(arn);
          pump();
        });
    }
  };
  const enqueue = (arn: string) => {
    if (processing.has(arn)) dirty.add(arn);
    else queued.add(arn);
    pump();
  };

  const seen = (node: V1Node) => {
    const id = o.instanceOf(node.metadata?.name ?? '');
    if (id === undefined || unsuitable.has(id)) return;
    if (!(excludeLabel in (node.metadata?.labels ?? {})) && node.spec?.unschedulable !== true) return;
    unsuitableAtMs.set(id, Date.now());
    for (const p of o.groups) if (p.group.targets.has(id)) enqueue(p.group.arn);
  };
  const stopFeed = o.nodes(seen);

  // The start-up: each group read in full once (the cache filled), then its periodic reads.
  for (const p of o.groups) {
    const fullAtMs = Date.now();
    void describe(p.group, 'reconcile', []).then(
      (ok) =>
        ok &&
        cache.set(p.group.arn, {
          fullAtMs,
          notHealthy: new Set([...p.group.targets].filter(([, s]) => s !== 'healthy').map(([id]) => id)),
        }),
    );
    if (o.periodicReadSeconds > 0) {
      const every = () =>
        later(o.periodicReadSeconds * 1000 * (0.9 + 0.2 * random()), () => {
          void describe(p.group, 'periodic', []).finally(every);
        });
      later(random() * o.periodicReadSeconds * 1000, () => void describe(p.group, 'periodic', []).finally(every));
    }
  }
  o.say?.(
    `load balancer controller stand-in: ${o.groups.length} target groups, reconciles ${maxConcurrentReconciles} at a time, ` +
      `${o.periodicReadSeconds > 0 ? `each group read every ~${o.periodicReadSeconds} s` : 'no periodic reads'}`,
  );
  return {
    unsuitableAtMs,
    deregisteredAtMs,
    letGoAtMs,
    counts,
    holding: (id) => o.groups.filter((p) => p.group.targets.has(id)).map((p) => p.group),
    forget(id) {
      unsuitableAtMs.delete(id);
      for (const p of o.groups) p.group.targets.delete(id);
    },
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      stopFeed();
    },
  };
}

/**
 * Two narrow watches of the API server (an excluded node, a cordoned one) rather than every
 * node's every update: the controller acts only on a node that stops being a traffic proxy.
 */
export function watchUnsuitableNodes(admin: Admin): NodeFeed {
  return (seen) => {
    let stopped = false;
    const watches: AbortController[] = [];
    const watch = (query: Record<string, string>) => {
      let resourceVersion: string | undefined;
      const open = () => {
        if (stopped) return;
        new Watch(admin.kc)
          .watch(
            '/api/v1/nodes',
            { ...query, allowWatchBookmarks: 'true', ...(resourceVersion ? { resourceVersion } : {}) },
            (phase, node: V1Node) => {
              resourceVersion = node.metadata?.resourceVersion ?? resourceVersion;
              if (phase === 'ADDED' || phase === 'MODIFIED') seen(node);
            },
            () => {
              resourceVersion = undefined;
              if (!stopped) setTimeout(open, 500);
            },
          )
          .then((c) => (stopped ? c.abort() : watches.push(c)))
          .catch(() => !stopped && setTimeout(open, 1_000));
      };
      open();
    };
    watch({ labelSelector: excludeLabel });
    watch({ fieldSelector: 'spec.unschedulable=true' });
    return () => {
      stopped = true;
      for (const c of watches) c.abort();
    };
  };
}
