// The contract every trigger keeps: it parses its own payload, confirms with AWS that the work
// is live and ours before anything is written anywhere, and only then acts. act() takes only
// what confirm() returned (the Confirmed brand), so no path can skip the confirmation; the
// router is the one place that runs the three in order (route()).
import type { ClusterGateway } from './cluster/ports/cluster-gateway.js';
import type { Delivery } from './inbound/deliveries.js';
import type {
  AutoScalingInstances,
  HandOffs,
  InstanceDirectory,
  InstanceRepairs,
  LifecycleActions,
  LoadBalancerRegistry,
  LoadBalancerTargets,
  MetricsSink,
} from './shared/aws-ports.js';
import type { Clock } from './shared/clock.js';
import type { Config } from './shared/config.js';
import type { Log } from './shared/log.js';

/** How one record ended, as the invocation's result lists it. */
export type RecordStatus =
  | 'malformed'
  | 'unsupported'
  | 'refused'
  | 'failed'
  | 'test-notification'
  /** Auto Scaling has no such action: a forged, stale or misrouted notification. Nothing was written. */
  | 'no-active-action'
  /**
   * Auto Scaling throttled the confirmation past every retry: the notification was sent again to a fresh invocation.
   */
  | 'retried-later'
  | 'drained'
  | 'timed-out'
  | 'retained'
  | 'node-not-found'
  | 'node-gone'
  | 'handed-off'
  | 'superseded'
  | 'access-denied'
  | 'launch-admitted'
  | 'launch-abandoned'
  | 'launch-admitted-unchecked'
  | 'launch-already-over'
  | 'launch-into-warm-pool'
  | 'rebalance-recommendation'
  | 'spot-warning-expired'
  | 'refresh-marked'
  | 'refresh-over'
  | 'refresh-nothing-outdated'
  | 'refresh-unmarked'
  | 'refresh-progress'
  | 'refresh-still-active'
  | 'refresh-marks-off'
  | 'reconciled'
  | 'reconcile-off'
  /** MODE=observe: verified, what would be done said, nothing changed (a lifecycle action completed CONTINUE). */
  | 'observed'
  /** Termination policy: the cheapest departures given to Auto Scaling. */
  | 'choice-made'
  /**
   * Termination policy: fewer (or none) given, every other candidate costly or the window closed; Auto Scaling asks
   * again.
   */
  | 'choice-deferred'
  /** Termination policy: deferred past its maximum; Auto Scaling's own suggestion given. */
  | 'choice-deferral-expired'
  /** Termination policy under MODE=observe: the choice said in Events, Auto Scaling's suggestion given. */
  | 'choice-observed'
  /** EC2 says an instance we released with pods on its node is terminated: the node is tainted out-of-service. */
  | 'out-of-service-tainted'
  /** A terminated instance of ours whose node needs nothing (drained, gone, or nothing left on it). */
  | 'out-of-service-not-needed';

/** This invocation, as Lambda describes it. */
export interface Invocation {
  remainingMs(): number;
  /** The same in Lambda's own retries of an asynchronous invocation. */
  readonly requestId: string;
}

/** What a trigger works with: the runtime's ports and this invocation. */
export interface TriggerContext {
  readonly config: Config;
  readonly log: Log;
  readonly clock: Clock;
  readonly lifecycle: LifecycleActions;
  readonly instances: AutoScalingInstances;
  /** EC2's view: node names, and whether an instance is Spot. */
  readonly ec2: InstanceDirectory;
  /** Where a drain longer than one invocation continues; absent: it ends with the invocation. */
  readonly handOffs: HandOffs | undefined;
  readonly metrics: MetricsSink | undefined;
  /** AWS calls made since the last time asked, per service (the runtime counts them). */
  readonly awsCalls?: (() => Readonly<Record<string, number>>) | undefined;
  /** Node auto repair's Auto Scaling and EC2 calls; absent unless REPAIR is on. */
  readonly repairs?: InstanceRepairs | undefined;
  /** The cluster's load balancers (WAIT_FOR_TARGETS); absent: the settle phase waits the fixed delay. */
  readonly loadBalancers?: (LoadBalancerTargets & Partial<LoadBalancerRegistry>) | undefined;
  /** Connects on first use (once per container): confirming never needs the cluster. */
  cluster(): Promise<ClusterGateway>;
  readonly invocation: Invocation;
}

declare const confirmedBrand: unique symbol;
/** Work AWS confirmed is live and ours: the only thing act() accepts. */
export type Confirmed<W> = W & { readonly [confirmedBrand]: true };

/** A parse that found work, or the status the record ends with (logged by the trigger). */
export type Parsed<W> = { readonly work: W } | { readonly status: RecordStatus; readonly instanceId?: string };
export type Confirmation<W> = { readonly confirmed: Confirmed<W> } | { readonly status: RecordStatus };

/**
 * A trigger of deliveries D: what it parses (W) and what AWS confirmed of it (C, by default the same; more when
 * the confirmation learns something, such as the group a Spot warning's instance is in).
 */
export interface Trigger<D extends Delivery, W, C extends W = W> {
  /** Whether this trigger serves the delivery (a lifecycle transition, an event's detail-type). */
  takes(delivery: Delivery): delivery is D;
  /** Reads and checks what the delivery says, and whether it is ours at all; never throws on bad input. */
  parse(delivery: D, ctx: TriggerContext): Parsed<W>;
  /** The keys every log line of this record carries. */
  keys(work: W): Record<string, unknown>;
  /** Asks AWS whether the work is live and ours, before anything is written anywhere. */
  confirm(work: W, ctx: TriggerContext): Promise<Confirmation<C>>;
  /** Does the work, confirmed. */
  act(work: Confirmed<C>, ctx: TriggerContext): Promise<RecordStatus | Outcome>;
  /**
   * MODE=observe: says what act() would do and changes nothing but Events (and completes a
   * lifecycle action CONTINUE, so nothing waits on us). Without it, an observed record is only
   * logged.
   */
  observe?(work: Confirmed<C>, ctx: TriggerContext): Promise<RecordStatus | Outcome>;
}

/** A status and the answer the invoker reads (a termination policy's instance ids). */
export interface Outcome {
  readonly status: RecordStatus;
  readonly answer: readonly string[];
}

/** Only confirm() calls this, after AWS answered. */
export function confirmed<W>(work: W): { readonly confirmed: Confirmed<W> } {
  return { confirmed: work as Confirmed<W> };
}

export interface RouteResult {
  readonly status: RecordStatus;
  readonly instanceId?: string;
  /** What a synchronous invoker gets back (Auto Scaling's termination policy call). */
  readonly answer?: readonly string[];
}

const outcome = (o: RecordStatus | Outcome, instanceId: { instanceId?: string }): RouteResult =>
  typeof o === 'string' ? { status: o, ...instanceId } : { ...o, ...instanceId };

export interface Route {
  takes(delivery: Delivery): boolean;
  run(delivery: Delivery, ctx: TriggerContext): Promise<RouteResult>;
}

/** The one sequence every record goes through: parse, confirm, act. */
export function route<D extends Delivery, W, C extends W>(trigger: Trigger<D, W, C>): Route {
  const run = async (delivery: D, ctx: TriggerContext): Promise<RouteResult> => {
    const parsed = trigger.parse(delivery, ctx);
    if ('status' in parsed)
      return parsed.instanceId !== undefined
        ? { status: parsed.status, instanceId: parsed.instanceId }
        : { status: parsed.status };
    const keys = trigger.keys(parsed.work);
    ctx.log.appendKeys?.(keys);
    const instanceId = typeof keys['instanceId'] === 'string' ? { instanceId: keys['instanceId'] } : {};
    const confirmation = await trigger.confirm(parsed.work, ctx);
    if ('status' in confirmation) return { status: confirmation.status, ...instanceId };
    if (ctx.config.mode === 'observe') {
      if (trigger.observe !== undefined) return outcome(await trigger.observe(confirmation.confirmed, ctx), instanceId);
      ctx.log.info('observe mode (MODE=observe): this record would be acted on now; nothing was changed');
      return { status: 'observed', ...instanceId };
    }
    return outcome(await trigger.act(confirmation.confirmed, ctx), instanceId);
  };
  return {
    takes: (delivery) => trigger.takes(delivery),
    run: (delivery, ctx) => {
      if (!trigger.takes(delivery))
        throw new Error(`a ${delivery.kind} delivery routed to a trigger that does not take it`);
      return run(delivery, ctx);
    },
  };
}

/** For triggers of one EventBridge detail-type. */
export const detailType =
  (...types: string[]) =>
  (d: Delivery): d is Extract<Delivery, { kind: 'event' }> =>
    d.kind === 'event' && types.includes(d.detailType);
