// What one soak runs, drawn from its seed alone: the deployment's settings, the cluster (groups,
// nodes, some named otherwise than EC2 names them, some Spot), the workloads, and a timeline of
// lifecycle events mixed with faults. The same seed gives the same scenario, event for event; the
// shrinker runs a scenario with fewer events.
import { Random } from './random.js';

export interface SoakSettings {
  readonly deadlinePolicy: 'force' | 'leave';
  readonly drainTimeoutSeconds: number;
  /** What each invocation gets (Lambda's timeout): short, so long drains are handed on. */
  readonly invocationSeconds: number;
  readonly invocationMarginSeconds: number;
  readonly heartbeatTimeoutSeconds: number;
  readonly reconcileIntervalMinutes: number;
  readonly batchWaitSeconds: number;
  readonly minEvictionWindowSeconds: number;
  readonly loadBalancerDelaySeconds: number;
  readonly loadBalancerMaxWaitSeconds: number;
  readonly surgeTimeoutSeconds: number;
  readonly evictDaemonSetPods: boolean;
  readonly terminationDeferralMaxSeconds: number;
  readonly launchTimeoutSeconds: number;
  /** Not the function's: how long a target drains once deregistered (the ELB stand-in's player). */
  readonly targetDrainSeconds: number;
}

export interface NodeSpec {
  readonly name: string;
  readonly instanceId: string;
  /** EC2's private DNS name: the node's name, unless the node is named otherwise. */
  readonly privateDnsName: string;
  readonly group: string;
  readonly zone: string;
  readonly spot: boolean;
}

export type WorkloadSpec =
  | {
      readonly kind: 'deployment';
      readonly name: string;
      readonly replicas: number;
      readonly budget?: { readonly minAvailable: number } | { readonly maxUnavailable: number };
      readonly labels?: Readonly<Record<string, string>>;
      readonly annotations?: Readonly<Record<string, string>>;
      readonly deleteDelaySeconds: number;
      /** Opted into surge before evict (annotation on the Deployment), with a readiness probe. */
      readonly surge?: boolean;
      readonly readyDelaySeconds?: number;
      /** Served by a target group through a TargetGroupBinding on a NodePort Service. */
      readonly targetGroup?: boolean;
    }
  | {
      readonly kind: 'statefulset';
      readonly name: string;
      readonly replicas: number;
      readonly annotations: Readonly<Record<string, string>>;
      readonly deleteDelaySeconds: number;
      /** The CSI stand-in detaches a volume this long after its pod left the node. */
      readonly detachSeconds: number;
    }
  | { readonly kind: 'daemonset'; readonly name: string }
  | {
      readonly kind: 'job';
      readonly name: string;
      readonly parallelism: number;
      readonly completeAfterSeconds: number;
    }
  | {
      /** A bare pod with a drain-rule label (skip, wait-completed) that finishes after a while, or never. */
      readonly kind: 'pod';
      readonly name: string;
      readonly labels: Readonly<Record<string, string>>;
      readonly completeAfterSeconds?: number;
    };

/** How one message reaches the function (SNS or EventBridge, then Lambda's asynchronous invocation). */
export interface DeliveryFate {
  /** Before the first attempt. */
  readonly delayMs: number;
  /** More deliveries of the same message, each this long after the first (SNS is at least once). */
  readonly duplicateDelaysMs: readonly number[];
  /** Attempts killed (out of memory, a crash) this long into them; Lambda retries a failed one twice. */
  readonly killAfterMs: readonly (number | undefined)[];
  /** Never delivered: every attempt failed and the message went to the failed-notifications queue. */
  readonly lost: boolean;
}

export interface ApiFaultRates {
  readonly throttled: number;
  readonly unavailable: number;
  readonly timeout: number;
  readonly reset: number;
  readonly watchDrop: number;
}

export type SoakEvent =
  | {
      readonly kind: 'scale-in';
      readonly group: string;
      readonly count: number;
      /** Which InService instance(s), as a fraction of the group's list at that moment. */
      readonly pick: number;
      /** Auto Scaling asks the termination policy first (the function is the group's custom policy). */
      readonly viaPolicy: boolean;
      /** The notification's Time lies this far in the past: the drain starts at the edge of its deadline. */
      readonly lateSeconds: number;
      readonly fate: DeliveryFate;
    }
  | { readonly kind: 'scale-out'; readonly node: NodeSpec; readonly fate: DeliveryFate }
  | { readonly kind: 'spot-warning'; readonly pick: number; readonly fate: DeliveryFate }
  | {
      /** Made up by somebody who can invoke the function or publish to the topic: nothing may follow. */
      readonly kind: 'forged';
      readonly what: 'terminate' | 'spot-warning';
      readonly pick: number;
    }
  | { readonly kind: 'rebalance'; readonly pick: number }
  | {
      /** A scale-in into the warm pool, and the instance back out of it a while later. */
      readonly kind: 'warm-pool';
      readonly group: string;
      readonly pick: number;
      readonly backAfterSeconds: number;
      readonly fate: DeliveryFate;
    }
  | {
      /** An instance refresh: one outdated instance replaced at a time; cancelled after some, or to the end. */
      readonly kind: 'refresh';
      readonly group: string;
      readonly strategy: 'default' | 'minimal';
      readonly cancelAfter: number | undefined;
      readonly everySeconds: number;
      /** The instances it launches, in order. */
      readonly replacements: readonly NodeSpec[];
      readonly fate: DeliveryFate;
    }
  | { readonly kind: 'reconcile'; readonly fate: DeliveryFate }
  | { readonly kind: 'job'; readonly workload: WorkloadSpec & { readonly kind: 'job' | 'pod' } }
  | { readonly kind: 'api-faults'; readonly seconds: number; readonly rates: ApiFaultRates }
  | { readonly kind: 'aws-throttling'; readonly seconds: number; readonly service: 'autoscaling' | 'ec2' | 'elb' }
  /** Soak time jumps forward once nothing is in flight (at most this far, never past a hook's timeout). */
  | { readonly kind: 'clock-skip'; readonly seconds: number };

export type TimedEvent = SoakEvent & { readonly atMs: number; readonly id: number };

export interface Scenario {
  readonly seed: number;
  readonly minutes: number;
  readonly settings: SoakSettings;
  readonly groups: readonly string[];
  readonly nodes: readonly NodeSpec[];
  readonly workloads: readonly WorkloadSpec[];
  readonly timeline: readonly TimedEvent[];
}

const zones = ['eu-west-1a', 'eu-west-1b'];

/** The run's id keeps names apart when several runs share one plane (the shrinker's). */
export function generateScenario(seed: number, minutes: number): Scenario {
  const random = new Random(seed);
  const settings = drawSettings(random.fork('settings'));
  const groups = random.fork('groups').chance(0.5) ? ['soak-a', 'soak-b'] : ['soak-a'];
  const nodes = drawNodes(random.fork('nodes'), groups);
  const workloads = drawWorkloads(random.fork('workloads'));
  const timeline = drawTimeline(random.fork('timeline'), { settings, groups, nodes, minutes });
  return { seed, minutes, settings, groups, nodes, workloads, timeline };
}

function drawSettings(r: Random): SoakSettings {
  return {
    deadlinePolicy: r.pick(['force', 'leave'] as const),
    drainTimeoutSeconds: r.int(45, 90),
    invocationSeconds: r.pick([12, 20, 45, 120]),
    invocationMarginSeconds: 5,
    // The shortest the reconciler can resume a lost chain within, with passes every minute (limits.md).
    heartbeatTimeoutSeconds: 750,
    reconcileIntervalMinutes: 1,
    batchWaitSeconds: r.int(15, 40),
    minEvictionWindowSeconds: r.pick([0, 10]),
    loadBalancerDelaySeconds: 3,
    loadBalancerMaxWaitSeconds: r.int(15, 40),
    surgeTimeoutSeconds: r.int(20, 60),
    evictDaemonSetPods: r.chance(0.3),
    terminationDeferralMaxSeconds: r.int(20, 60),
    launchTimeoutSeconds: 60,
    targetDrainSeconds: r.int(2, 20),
  };
}

/** An instance id as EC2 writes them, and the private DNS name EC2 gives the instance. */
export function drawInstance(r: Random, group: string, zone: string, serial: number, otherName: boolean): NodeSpec {
  const instanceId = `i-0${r.hex(16)}`;
  const privateDnsName = `ip-10-${r.int(0, 255)}-${r.int(0, 255)}-${serial}.eu-west-1.compute.internal`;
  return {
    name: otherName ? `${group}-node-${serial}` : privateDnsName,
    instanceId,
    privateDnsName,
    group,
    zone,
    spot: r.chance(0.3),
  };
}

function drawNodes(r: Random, groups: readonly string[]): NodeSpec[] {
  let serial = 0;
  const nodes = groups.flatMap((group) =>
    Array.from({ length: r.int(3, 5) }, () => drawInstance(r, group, r.pick(zones), ++serial, r.chance(0.3))),
  );
  // At least one Spot instance, so every soak can see a Spot warning.
  if (!nodes.some((n) => n.spot)) {
    const i = r.int(0, nodes.length - 1);
    nodes[i] = { ...nodes[i]!, spot: true };
  }
  return nodes;
}

function drawWorkloads(r: Random): WorkloadSpec[] {
  const web = r.int(3, 6);
  const api = r.int(2, 4);
  const out: WorkloadSpec[] = [
    { kind: 'daemonset', name: 'node-agent' },
    {
      kind: 'deployment',
      name: 'web',
      replicas: web,
      budget: { maxUnavailable: 1 },
      deleteDelaySeconds: r.int(0, 4),
      targetGroup: true,
    },
    {
      kind: 'deployment',
      name: 'api',
      replicas: api,
      budget: { minAvailable: api - 1 },
      // Cluster API's order: the API leaves before everything else.
      annotations: { 'graceful-node-termination/drain-order': '-10' },
      deleteDelaySeconds: r.int(0, 3),
    },
    {
      kind: 'statefulset',
      name: 'db',
      replicas: 2,
      annotations: { 'graceful-node-termination/drain-order': '100' },
      deleteDelaySeconds: r.int(1, 6),
      detachSeconds: r.int(1, 8),
    },
    {
      kind: 'deployment',
      name: 'cache',
      replicas: 2,
      labels: { 'cluster.x-k8s.io/drain': 'skip' },
      deleteDelaySeconds: 0,
    },
    {
      kind: 'deployment',
      name: 'trainer',
      replicas: 1,
      annotations: { 'karpenter.sh/do-not-disrupt': r.pick(['20s', '45s', '2m']) },
      deleteDelaySeconds: 1,
    },
    { kind: 'job', name: 'report-0', parallelism: r.int(1, 2), completeAfterSeconds: r.int(20, 60) },
    {
      kind: 'pod',
      name: 'export-0',
      labels: { 'cluster.x-k8s.io/drain': 'wait-completed' },
      completeAfterSeconds: r.int(30, 90),
    },
  ];
  for (let i = 0; i < r.int(1, 2); i++) {
    out.push({
      kind: 'deployment',
      name: `single-${i}`,
      replicas: 1,
      budget: r.chance(0.5) ? { minAvailable: 1 } : undefined,
      deleteDelaySeconds: r.int(0, 2),
      surge: true,
      readyDelaySeconds: r.int(1, 4),
    });
  }
  return out;
}

export function drawFate(r: Random, o: { mayBeLost: boolean }): DeliveryFate {
  return {
    delayMs: r.chance(0.2) ? r.int(500, 12_000) : 0,
    duplicateDelaysMs: r.chance(0.15)
      ? [r.int(0, 20_000)]
      : r.chance(0.05)
        ? [r.int(0, 5_000), r.int(30_000, 90_000)]
        : [],
    killAfterMs: [r.chance(0.15) ? r.int(0, 8_000) : undefined, r.chance(0.1) ? r.int(0, 8_000) : undefined],
    lost: o.mayBeLost && r.chance(0.1),
  };
}

function drawTimeline(
  r: Random,
  w: { settings: SoakSettings; groups: readonly string[]; nodes: readonly NodeSpec[]; minutes: number },
): TimedEvent[] {
  const endMs = w.minutes * 60_000;
  const events: TimedEvent[] = [];
  let id = 0;
  const add = (atMs: number, event: SoakEvent) => events.push({ ...event, atMs, id: ++id });
  const sizes = new Map(w.groups.map((g) => [g, w.nodes.filter((n) => n.group === g).length]));
  let serial = w.nodes.length;
  let refreshes = 0;
  for (let t = r.int(5_000, 10_000); t < endMs; t += r.int(5_000, 18_000)) {
    const roll = r.fraction();
    const group = r.pick(w.groups);
    const size = sizes.get(group)!;
    if (roll < 0.3 && size > 2) {
      const count = size > 4 && r.chance(0.3) ? 2 : 1;
      sizes.set(group, size - count);
      const late = r.chance(0.15);
      add(t, {
        kind: 'scale-in',
        group,
        count,
        pick: r.fraction(),
        viaPolicy: r.chance(0.6),
        lateSeconds: late ? w.settings.drainTimeoutSeconds - r.int(3, 15) : 0,
        fate: drawFate(r, { mayBeLost: false }),
      });
      // The group scales out again a little later (capacity comes back).
      for (let i = 0; i < count; i++) {
        const node = drawInstance(r, group, r.pick(zones), ++serial, r.chance(0.3));
        add(t + r.int(5_000, 25_000), { kind: 'scale-out', node, fate: drawFate(r, { mayBeLost: false }) });
        sizes.set(group, sizes.get(group)! + 1);
      }
    } else if (roll < 0.36) {
      add(t, { kind: 'spot-warning', pick: r.fraction(), fate: drawFate(r, { mayBeLost: false }) });
    } else if (roll < 0.4) {
      if (r.chance(0.5) || refreshes >= 1) {
        add(t, {
          kind: 'warm-pool',
          group,
          pick: r.fraction(),
          backAfterSeconds: r.int(20, 90),
          fate: drawFate(r, { mayBeLost: false }),
        });
      } else {
        refreshes++;
        const replacements = Array.from({ length: 6 }, () =>
          drawInstance(r, group, r.pick(zones), ++serial, r.chance(0.3)),
        );
        add(t, {
          kind: 'refresh',
          group,
          strategy: r.pick(['default', 'minimal'] as const),
          cancelAfter: r.chance(0.4) ? r.int(1, 2) : undefined,
          everySeconds: r.int(8, 20),
          replacements,
          fate: drawFate(r, { mayBeLost: false }),
        });
      }
    } else if (roll < 0.46) {
      add(t, { kind: 'forged', what: r.pick(['terminate', 'spot-warning'] as const), pick: r.fraction() });
    } else if (roll < 0.49) {
      add(t, { kind: 'rebalance', pick: r.fraction() });
    } else if (roll < 0.57) {
      add(t, { kind: 'reconcile', fate: drawFate(r, { mayBeLost: false }) });
    } else if (roll < 0.64) {
      const n = ++serial;
      add(t, {
        kind: 'job',
        workload: r.chance(0.5)
          ? { kind: 'job', name: `report-${n}`, parallelism: r.int(1, 2), completeAfterSeconds: r.int(10, 60) }
          : {
              kind: 'pod',
              name: `export-${n}`,
              labels: { 'cluster.x-k8s.io/drain': 'wait-completed' },
              completeAfterSeconds: r.int(10, 90),
            },
      });
    } else if (roll < 0.82) {
      add(t, {
        kind: 'api-faults',
        seconds: r.int(10, 40),
        rates: {
          throttled: r.pick([0.05, 0.2, 0.4]),
          unavailable: r.pick([0, 0.1, 0.2]),
          timeout: r.pick([0, 0.02, 0.05]),
          reset: r.pick([0, 0.05, 0.1]),
          watchDrop: r.pick([0.2, 0.5, 0.9]),
        },
      });
    } else if (roll < 0.93) {
      add(t, {
        kind: 'aws-throttling',
        seconds: r.int(5, 20),
        service: r.pick(['autoscaling', 'ec2', 'elb'] as const),
      });
    } else {
      add(t, { kind: 'clock-skip', seconds: r.int(30, 700) });
    }
  }
  return events.sort((x, y) => x.atMs - y.atMs || x.id - y.id);
}
