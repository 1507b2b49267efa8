// Routes each SNS record to a use case. One bad or failing record never stops the others.
import type { Config } from './config.js';
import { admitNode, admitUnchecked } from './admit-node.js';
import { randomUUID } from 'node:crypto';
import { AccessDeniedError } from './errors.js';
import { toDeliveries, UnsupportedEventError, type Delivery } from './delivery.js';
import { handOffMessage, parseLifecycleMessage, type LifecycleNotification } from './lifecycle-event.js';
import type { AutoScalingInstances, Clock, EventRecorder, HandOffs, LifecycleActionRef, LifecycleActions, Log, MetricsSink, NodeGateway, PodGateway } from './ports.js';
import { markOutdatedNodes, removeRefreshMarks } from './refresh-marks.js';
import { terminate, type TerminateReport } from './termination/run.js';
import type { TerminateOutcome } from './termination/termination.js';
import { lifecycleHook, spotInterruption } from './termination/triggers.js';

export type ClusterGateway = NodeGateway & PodGateway & EventRecorder;

export interface RecordLogger extends Log {
  appendKeys(keys: Record<string, unknown>): void;
  removeKeys(keys: string[]): void;
}

export interface HandlerDeps {
  readonly config: Config;
  readonly log: RecordLogger;
  readonly clock: Clock;
  readonly lifecycle: LifecycleActions;
  /** Connects lazily (and once per container): launches and refusals need no cluster. */
  readonly cluster: () => Promise<ClusterGateway>;
  /** Where a drain longer than one invocation continues; absent: it ends with the invocation. */
  readonly handOffs?: HandOffs | undefined;
  /** Which Auto Scaling group an instance is in (Spot warnings name only the instance). */
  readonly instances?: AutoScalingInstances | undefined;
  readonly metrics?: MetricsSink | undefined;
}

export interface InvocationContext {
  getRemainingTimeInMillis(): number;
  /** The same in Lambda's own retries of an asynchronous invocation. */
  readonly awsRequestId?: string;
}

export type RecordStatus =
  | 'malformed'
  | 'test-notification'
  | 'refused'
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
  | 'refresh-marks-off'
  | TerminateOutcome
  | 'failed';


export interface HandlerResult {
  readonly records: readonly { readonly status: RecordStatus; readonly instanceId?: string }[];
}

const recordKeys = ['instanceRefreshId', 'instanceId', 'autoScalingGroupName', 'lifecycleHookName', 'lifecycleActionToken', 'transition', 'node'];

export function createHandler(deps: HandlerDeps) {
  const { config, log, clock } = deps;
  return async function handle(event: unknown, context: InvocationContext): Promise<HandlerResult> {
    let deliveries: Delivery[];
    try {
      deliveries = toDeliveries(event);
    } catch (error) {
      // Nothing we know: fail, so Lambda retries, the errors alarm fires and the event ends
      // in the failed-notifications queue, instead of an empty success nobody notices.
      if (error instanceof UnsupportedEventError) log.error('unsupported event shape; this function takes lifecycle notifications', { shape: error.shape });
      throw error;
    }
    const results: { status: RecordStatus; instanceId?: string }[] = [];
    const failures: unknown[] = [];
    for (const [index, delivery] of deliveries.entries()) {
      if (delivery.kind === 'malformed') {
        // Logged, never thrown: a retry would fail the same way.
        log.error('malformed lifecycle notification', { field: delivery.field, reason: delivery.reason, recordIndex: index, messageId: delivery.id });
        results.push({ status: 'malformed' });
        continue;
      }
      if (delivery.kind === 'rebalance-recommendation') {
        // With Capacity Rebalancing on, the group launches a replacement and then terminates
        // this instance through its terminate hook, which drains it: nothing to do here.
        log.info('EC2 rebalance recommendation: the instance is at elevated risk of a Spot interruption', { instanceId: delivery.instanceId, time: delivery.time.toISOString() });
        deps.metrics?.emit({ Transition: 'rebalance-recommendation', Outcome: 'logged' }, { RebalanceRecommendations: { unit: 'Count', value: 1 } });
        results.push({ status: 'rebalance-recommendation', instanceId: delivery.instanceId });
        continue;
      }
      if (delivery.kind === 'refresh-started' || delivery.kind === 'refresh-ended' || delivery.kind === 'refresh-progress') {
        log.appendKeys({ autoScalingGroupName: delivery.group, instanceRefreshId: delivery.refreshId });
        results.push(await handleRecord(undefined, (connected) => handleRefresh(delivery, connected)));
        continue;
      }
      if (delivery.kind === 'spot-interruption') {
        log.appendKeys({ instanceId: delivery.instanceId, transition: 'spot-interruption' });
        results.push(await handleRecord(delivery.instanceId, (connected) => handleSpotInterruption(delivery, connected)));
        continue;
      }
      const parsed = parseLifecycleMessage(delivery.message, delivery.field);
      if (!parsed.ok) {
        log.error('malformed lifecycle notification', {
          field: parsed.field,
          reason: parsed.reason,
          recordIndex: index,
          via: delivery.via,
          messageId: delivery.id,
        });
        results.push({ status: 'malformed' });
        continue;
      }
      const n = parsed.notification;
      if (n.kind === 'test') {
        log.info('Auto Scaling test notification received; the hook reaches this function', {
          autoScalingGroupName: n.autoScalingGroupName,
        });
        results.push({ status: 'test-notification' });
        continue;
      }
      log.appendKeys({
        instanceId: n.instanceId,
        autoScalingGroupName: n.autoScalingGroupName,
        lifecycleHookName: n.lifecycleHookName,
        lifecycleActionToken: n.lifecycleActionToken,
        transition: n.transition,
      });
      results.push(await handleRecord(n.instanceId, (connected) => handleLifecycle(n, context, connected)));
    }
    /** One record: its failure is collected (the others still run), its Events written before the next. */
    async function handleRecord(instanceId: string | undefined, work: (connected: { gateway?: ClusterGateway }) => Promise<RecordStatus>) {
      const connected: { gateway?: ClusterGateway } = {};
      try {
        return { status: await work(connected), ...(instanceId !== undefined ? { instanceId } : {}) };
      } catch (error) {
        failures.push(error);
        return { status: 'failed' as const, ...(instanceId !== undefined ? { instanceId } : {}) };
      } finally {
        // Events are queued so they never hold a drain up; they are written before we go on.
        await connected.gateway?.flush?.(Math.max(0, Math.min(5_000, context.getRemainingTimeInMillis() - 2_000)));
        log.removeKeys(recordKeys);
      }
    }
    // Failing the invocation makes Lambda retry (twice, asynchronously), raises the Errors
    // alarm and finally sends the event to the failure destination. The hook's
    // DefaultResult CONTINUE bounds how long an instance can be held meanwhile.
    if (failures.length > 0) {
      throw failures.length === 1 ? failures[0] : new AggregateError(failures, `${failures.length} lifecycle notifications failed`);
    }
    return { records: results };
  };

  /** Instance refresh events of a group we serve: mark its outdated nodes, take the marks back at the end. */
  async function handleRefresh(d: Extract<Delivery, { kind: 'refresh-started' | 'refresh-ended' | 'refresh-progress' }>, connected: { gateway?: ClusterGateway }): Promise<RecordStatus> {
    if (!config.autoScalingGroupNames.has(d.group)) {
      log.warn('instance refresh event refused: the group is not one this deployment serves', { group: d.group });
      return 'refused';
    }
    if (d.kind === 'refresh-progress') {
      log.info('instance refresh progress', { what: d.what });
      return 'refresh-progress';
    }
    if (!config.markOutdatedOnRefresh) {
      log.info('instance refresh event: marking outdated nodes is off (MARK_OUTDATED_ON_REFRESH=false)', { event: d.kind });
      return 'refresh-marks-off';
    }
    const cluster = (connected.gateway = await deps.cluster());
    if (d.kind === 'refresh-ended') {
      await removeRefreshMarks(d.group, d.refreshId, d.outcome, { nodes: cluster, events: cluster, log });
      return 'refresh-unmarked';
    }
    if (deps.instances === undefined) throw new Error('instance refresh: no Auto Scaling client to describe the refresh');
    const { outcome } = await markOutdatedNodes(d.group, d.refreshId, { nodes: cluster, events: cluster, instances: deps.instances, log });
    return outcome === 'marked' ? 'refresh-marked' : outcome === 'refresh-over' ? 'refresh-over' : 'refresh-nothing-outdated';
  }

  async function handleLifecycle(n: LifecycleNotification, context: InvocationContext, connected: { gateway?: ClusterGateway }): Promise<RecordStatus> {
    const refusal = refuse(n, config);
    if (refusal) {
      // A forged or misrouted message must not drain a node, and must not be completed
      // either: the action (if any) belongs to somebody else.
      log.warn('notification refused', { reason: refusal });
      return 'refused';
    }
    const connect = async () => (connected.gateway = await deps.cluster());
    if (n.transition === 'launching') return handleLaunch(n, context, connect);
    return handleTermination(n, context, connect);
  }

  async function handleTermination(n: LifecycleNotification, context: InvocationContext, connect: () => Promise<ClusterGateway>): Promise<RecordStatus> {
    const action: LifecycleActionRef = n;
    const now = clock.now();
    const plan = planTermination(n, config, now, now + context.getRemainingTimeInMillis(), deps.handOffs !== undefined);
    try {
      const cluster = await connect();
      const handOffs = deps.handOffs;
      const report = await terminate(
        {
          action,
          notifiedAtMs: n.time.getTime(),
          requestId: context.awsRequestId ?? randomUUID(),
          drainDeadlineMs: plan.drainDeadlineMs,
          latestDrainEndMs: plan.latestDrainEndMs,
          minEvictionWindowMs: config.minEvictionWindowSeconds * 1000,
          invocationStopMs: plan.invocationStopMs,
          batch: plan.batch,
          deadlinePolicy: config.deadlinePolicy,
          blockedReportMs: config.blockedReportSeconds * 1000,
          loadBalancerDelaySeconds: config.loadBalancerDelaySeconds,
          evictionConcurrency: config.evictionConcurrency,
          cordonDoomedSiblings: config.cordonDoomedSiblings,
          trigger: lifecycleHook({ intoWarmPool: n.destination === 'WarmPool' }),
          resume: n.handOff,
          handOff: handOffs
            ? async (next) => {
                if ((await deps.lifecycle.heartbeat(action)) === 'no-active-action') return 'action-over';
                await handOffs.send(handOffMessage(n, next));
                return 'sent';
              }
            : undefined,
        },
        { nodes: cluster, pods: cluster, events: cluster, lifecycle: deps.lifecycle, clock, log, instances: deps.instances },
      );
      emitTermination(n, report);
      log.info('termination handled', {
        outcome: report.outcome,
        lifecycleAction: report.lifecycleAction,
        durationMs: report.durationMs,
        podsEvicted: report.evictedTotal,
      });
      return report.outcome;
    } catch (error) {
      if (error instanceof AccessDeniedError) {
        // Our own RBAC or access entry is wrong: holding the instance helps nobody.
        log.error('the cluster refused the drainer; check its access entry and ClusterRole', { error: error.message });
        await completeQuietly(action);
      } else {
        log.error('terminate failed; Lambda retries the notification', { error: describe(error) });
      }
      throw error;
    }
  }

  /** Once per lifecycle action: by the invocation that completed it (or found it over). */
  function emitTermination(n: LifecycleNotification, report: TerminateReport): void {
    if (report.lifecycleAction === 'pending') return;
    deps.metrics?.emit(
      { Transition: 'terminating', Outcome: report.outcome },
      {
        Terminations: { unit: 'Count', value: 1 },
        SecondsSinceNotification: secondsSinceNotification(n),
        PodsEvicted: { unit: 'Count', value: report.evictedTotal },
        EvictionsBlocked: { unit: 'Count', value: report.drain?.blocked ?? 0 },
        PodsForceDeleted: { unit: 'Count', value: report.drain?.forced ?? 0 },
      },
    );
  }

  /**
   * EC2 reclaims a Spot instance two minutes after its warning, and no lifecycle action waits
   * for us: drain at once, with a deadline that ends before the two minutes are up (grace
   * periods clamped to it), a short load-balancer wait, and nothing to complete. The group is
   * asked which group the instance is in; only ours are drained.
   */
  async function handleSpotInterruption(d: Extract<Delivery, { kind: 'spot-interruption' }>, connected: { gateway?: ClusterGateway }): Promise<RecordStatus> {
    const reclaimAtMs = d.time.getTime() + spotWarningSeconds * 1000;
    if (clock.now() >= reclaimAtMs) {
      log.warn('Spot interruption warning arrived after the instance was reclaimed; nothing left to drain', { reclaimAt: new Date(reclaimAtMs).toISOString() });
      return 'spot-warning-expired';
    }
    const group = deps.instances ? await deps.instances.groupOf(d.instanceId) : undefined;
    if (group === undefined || !config.autoScalingGroupNames.has(group)) {
      log.warn('Spot interruption warning refused: the instance is in no Auto Scaling group this deployment serves', { group: group ?? null });
      return 'refused';
    }
    log.appendKeys({ autoScalingGroupName: group });
    const cluster = (connected.gateway = await deps.cluster());
    // Leave the last seconds to the load balancers: label first (mark), drain, then wait what is left.
    const drainEndMs = reclaimAtMs - spotSettleSeconds * 1000;
    const report = await terminate(
      {
        action: { autoScalingGroupName: group, lifecycleHookName: '', lifecycleActionToken: `spot-${d.instanceId}`, instanceId: d.instanceId },
        trigger: spotInterruption,
        notifiedAtMs: d.time.getTime(),
        requestId: randomUUID(),
        drainDeadlineMs: drainEndMs,
        latestDrainEndMs: drainEndMs,
        minEvictionWindowMs: 0,
        invocationStopMs: Number.POSITIVE_INFINITY,
        deadlinePolicy: 'force',
        blockedReportMs: config.blockedReportSeconds * 1000,
        loadBalancerDelaySeconds: Math.max(0, Math.min(config.loadBalancerDelaySeconds, spotSettleSeconds - 2)),
        evictionConcurrency: config.evictionConcurrency,
        cordonDoomedSiblings: config.cordonDoomedSiblings,
      },
      { nodes: cluster, pods: cluster, events: cluster, lifecycle: deps.lifecycle, clock, log, instances: deps.instances },
    );
    deps.metrics?.emit(
      { Transition: 'spot-interruption', Outcome: report.outcome },
      { SpotInterruptions: { unit: 'Count', value: 1 }, PodsEvicted: { unit: 'Count', value: report.evictedTotal }, PodsForceDeleted: { unit: 'Count', value: report.drain?.forced ?? 0 } },
    );
    log.info('Spot interruption handled', { outcome: report.outcome, podsEvicted: report.evictedTotal, secondsBeforeReclaim: Math.round((reclaimAtMs - clock.now()) / 1000) });
    return report.outcome;
  }

  async function handleLaunch(n: LifecycleNotification, context: InvocationContext, connect: () => Promise<ClusterGateway>): Promise<RecordStatus> {
    if (n.destination === 'WarmPool') {
      // Launched into the warm pool: Auto Scaling stops it next, and its user data often
      // keeps kubelet from joining. Nothing to admit; it is checked when it leaves the pool.
      const result = await deps.lifecycle.complete(n, 'CONTINUE');
      log.info('launch into the warm pool: completed CONTINUE at once; admission runs when it leaves the pool', { lifecycleAction: result });
      emitLaunch(n, 'launch-into-warm-pool');
      return 'launch-into-warm-pool';
    }
    const now = clock.now();
    const invocationStopMs = now + context.getRemainingTimeInMillis() - config.invocationMarginSeconds * 1000;
    let cluster: ClusterGateway;
    try {
      cluster = await connect();
    } catch (error) {
      await admitUnchecked(n, describe(error), { lifecycle: deps.lifecycle, log });
      emitLaunch(n, 'launch-admitted-unchecked');
      return 'launch-admitted-unchecked';
    }
    const launchOutcome = await admitNode(
      { action: n, deadlineMs: n.time.getTime() + config.launchTimeoutSeconds * 1000, invocationStopMs },
      { nodes: cluster, events: cluster, lifecycle: deps.lifecycle, clock, log },
    );
    let status: RecordStatus = `launch-${launchOutcome === 'continue-later' ? 'admitted-unchecked' : launchOutcome}`;
    if (launchOutcome === 'continue-later') {
      // Only when LAUNCH_TIMEOUT_SECONDS outlasts the invocation: do not hold the launch on our limit.
      log.warn('the invocation ends before the launch deadline; admitting the node unchecked');
      await deps.lifecycle.complete(n, 'CONTINUE');
      status = 'launch-admitted-unchecked';
    }
    emitLaunch(n, status);
    return status;
  }

  function secondsSinceNotification(n: LifecycleNotification) {
    return { unit: 'Seconds' as const, value: Math.round((clock.now() - n.time.getTime()) / 100) / 10 };
  }

  function emitLaunch(n: LifecycleNotification, status: RecordStatus): void {
    deps.metrics?.emit(
      { Transition: 'launching', Outcome: status.replace(/^launch-/, '') },
      { Launches: { unit: 'Count', value: 1 }, SecondsSinceNotification: secondsSinceNotification(n) },
    );
  }

  async function completeQuietly(action: LifecycleActionRef): Promise<void> {
    try {
      const result = await deps.lifecycle.complete(action, 'CONTINUE');
      log.warn('lifecycle action completed without draining', { lifecycleAction: result });
    } catch (error) {
      log.error('could not complete the lifecycle action either', { error: describe(error) });
    }
  }
}

/** EC2's notice before it reclaims a Spot instance. */
export const spotWarningSeconds = 120;
/** The last seconds before a Spot reclaim, kept for load balancers to let the node go. */
export const spotSettleSeconds = 15;

/** Auto Scaling's cap on how long one lifecycle action can be kept alive. */
export function actionCapSeconds(heartbeatTimeoutSeconds: number): number {
  return Math.min(48 * 3600, 100 * heartbeatTimeoutSeconds);
}

export interface TerminationPlan {
  /** When evicting and waiting for pods stops by DRAIN_TIMEOUT_SECONDS from the notification. */
  readonly drainDeadlineMs: number;
  /** The latest a drain may run, fair window or not: the load-balancer wait must still fit. */
  readonly latestDrainEndMs: number;
  /** When this invocation stops and hands the rest on. */
  readonly invocationStopMs: number;
  /** Batch pods are waited for until untilMs, then drained by deadlineMs. */
  readonly batch: { readonly untilMs: number; readonly deadlineMs: number };
}

/**
 * Deadlines for one terminate notification. The drain deadline is measured from the
 * notification's Time (which travels with hand-offs), so it holds across invocations, and
 * leaves room for the load-balancer wait before the hook's global cap. Without a hand-off
 * path it must also fit this invocation. Every invocation starts with a heartbeat (verify),
 * which restarts the hook's timer: it hands on well before that runs out again.
 */
export function planTermination(n: LifecycleNotification, config: Config, nowMs: number, invocationEndMs: number, canHandOff: boolean): TerminationPlan {
  const timeMs = n.time.getTime();
  const marginMs = config.invocationMarginSeconds * 1000;
  const loadBalancerMs = config.loadBalancerDelaySeconds * 1000;
  const capMs = timeMs + actionCapSeconds(config.heartbeatTimeoutSeconds) * 1000;
  const invocationStopMs = Math.min(invocationEndMs - marginMs, nowMs + config.heartbeatTimeoutSeconds * 800);
  // Batch pods: waited for up to BATCH_WAIT_SECONDS, then drained within DRAIN_TIMEOUT_SECONDS.
  const latestMs = canHandOff ? capMs - loadBalancerMs - marginMs : invocationEndMs - marginMs - loadBalancerMs;
  const batchUntilMs = Math.min(timeMs + config.batchWaitSeconds * 1000, latestMs);
  const batchDeadlineMs = Math.min(batchUntilMs + config.drainTimeoutSeconds * 1000, latestMs);
  return {
    drainDeadlineMs: Math.min(timeMs + config.drainTimeoutSeconds * 1000, latestMs),
    latestDrainEndMs: Math.max(nowMs, latestMs),
    invocationStopMs: Math.max(nowMs, invocationStopMs),
    batch: { untilMs: batchUntilMs, deadlineMs: Math.max(nowMs, batchDeadlineMs) },
  };
}

/** Why this deployment must not act on the notification, or undefined when it may. */
export function refuse(n: LifecycleNotification, config: Config): string | undefined {
  if (!config.autoScalingGroupNames.has(n.autoScalingGroupName)) {
    return `Auto Scaling group ${n.autoScalingGroupName} is not one this deployment was configured for`;
  }
  if (!config.lifecycleHookNames.has(n.lifecycleHookName)) {
    return `lifecycle hook ${n.lifecycleHookName} is not one this deployment was configured for`;
  }
  const metadataCluster = clusterFromMetadata(n.notificationMetadata);
  if (metadataCluster !== undefined && metadataCluster !== config.clusterName) {
    return `the hook's metadata names cluster ${metadataCluster}, this deployment serves ${config.clusterName}`;
  }
  return undefined;
}

/** The construct writes {"clusterName": "..."} into NotificationMetadata; other metadata is ignored. */
function clusterFromMetadata(metadata: string | undefined): string | undefined {
  if (metadata === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(metadata);
    const name = (parsed as { clusterName?: unknown } | null)?.clusterName;
    return typeof name === 'string' ? name : undefined;
  } catch {
    return undefined;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
