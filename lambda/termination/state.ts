// What a termination carries from phase to phase, typed per phase: what the trigger asked
// for (the request), what verify found (the node, the claim), what mark wrote (the record,
// and the deadlines read from it), what drain left (the outcome, the live pod view).
import type { EventRecorder } from '../cluster/ports/event-recorder.js';
import type { NodeGateway } from '../cluster/ports/node-gateway.js';
import type { DrainRecord, DrainSource, NodeInfo } from '../cluster/model.js';
import type { PodGateway, PodWatch } from '../cluster/ports/pod-gateway.js';
import type { VolumeGateway } from '../cluster/ports/volume-gateway.js';
import type { LoadBalancerSources } from '../cluster/ports/load-balancer-sources.js';
import type { TargetReadingsSource } from '../cluster/ports/target-readings.js';
import type { SurgeGateway } from '../cluster/ports/surge-gateway.js';

import type { DrainResult } from '../eviction/drain-node.js';
import type { ReturnedPods } from '../eviction/returned-pods.js';
import type {
  AutoScalingInstances,
  LifecycleActions,
  LoadBalancerRegistry,
  LoadBalancerTargets,
} from '../shared/aws-ports.js';
import type { Clock } from '../shared/clock.js';
import type { Config } from '../shared/config.js';
import { DeadlinePolicy } from '../shared/deadline-policy.js';
import { canRetain } from '../cluster/rules/drain-source.js';
import type { HandOff } from '../inbound/lifecycle-message.js';
import type { Log } from '../shared/log.js';

export type TerminateOutcome =
  | 'drained'
  | 'timed-out'
  /** DEADLINE_POLICY=retain at the deadline: completed with ABANDON, the node left cordoned. */
  | 'retained'
  | 'node-not-found'
  | 'node-gone'
  | 'handed-off'
  | 'superseded';

/** When each part of a drain must end, from the notification's time as our record keeps it. */
export interface Deadlines {
  /** When evicting and waiting for pods stops (DRAIN_TIMEOUT_SECONDS), before the fair window. */
  readonly drainDeadlineMs: number;
  /** Nothing may run past this: the action's own cap less the load-balancer wait and margin. */
  readonly latestDrainEndMs: number;
  /** When this invocation stops and hands the rest on (infinite without a hand-off path). */
  readonly invocationStopMs: number;
  /** Every pod gets at least this long from when the drain first saw the node before force. */
  readonly minEvictionWindowMs: number;
  /** Batch pods are waited for until untilMs, then drained by deadlineMs. */
  readonly batch?: { readonly untilMs: number; readonly deadlineMs: number } | undefined;
  /** The fixed wait after the drain: WAIT_FOR_TARGETS off, or the load balancers cannot be read. */
  readonly loadBalancerDelayMs: number;
  /** WAIT_FOR_TARGETS: released once no load balancer holds the instance, between these after the drain. */
  readonly loadBalancerWait?: { readonly minMs: number; readonly maxMs: number } | undefined;
  /** No wait of the settle phase goes past this: the action's cap (or this invocation's end) less the margin. */
  readonly settleEndMs?: number | undefined;
}

/** How a termination starts and ends, per trigger (a lifecycle hook, a Spot warning). */
export interface Ending {
  /** Who asks for the drain, for the DrainStarted Event. */
  startedMessage(): string;
  /** Completes what asked for the termination, if anything waits for it, and says so on the node. */
  finish(completion: Completion): Promise<'completed' | 'already-completed' | 'nothing-to-complete'>;
}

/** Where a termination comes from, as its trigger confirmed it: never marks set ahead (those are records only). */
export type TerminationSource = Exclude<DrainSource, { readonly kind: 'marked-ahead' }>;

/** The deployment's settings a termination reads, the configuration's own (parsed and derived once). */
export type TerminationSettings = Pick<
  Config,
  | 'deadlinePolicy'
  | 'waitForVolumeDetach'
  | 'blockedReportSeconds'
  | 'evictionConcurrency'
  | 'drainRules'
  | 'evictDaemonSetPods'
  | 'cordonDoomedSiblings'
  | 'surge'
  | 'deploymentName'
>;

/** What a trigger asks the termination to do. Nothing here is trusted beyond the confirmed action. */
export interface TerminationRequest {
  /** The instance leaving and its group, one this deployment serves. */
  readonly instance: { readonly instanceId: string; readonly group: string };
  readonly source: TerminationSource;
  /** The notification's time, for a drain that has no record yet. */
  readonly notifiedAtMs: number;
  /** The hand-off this invocation carries on from. Everything else is re-derived from the node. */
  readonly handOff?: HandOff | undefined;
  /** Lambda's request id for this invocation (the same in Lambda's own retries of it). */
  readonly requestId: string;
  /** The trigger's deadlines, from the notification's time as the record keeps it (deadlines.ts for a hook's). */
  deadlinesFrom(notifiedAtMs: number): Deadlines;
  readonly settings: TerminationSettings;
  readonly ending: Ending;
  /** Publishes the next hand-off to a fresh invocation; absent when there is nowhere to send it. */
  readonly sendHandOff?: ((next: NextHandOff) => Promise<'sent' | 'action-over'>) | undefined;
}

/** The hand-off the next invocation carries on from: its number and the claim it is published under. */
export interface NextHandOff {
  readonly count: number;
  readonly claim: string;
}

export interface TerminateDeps {
  readonly nodes: NodeGateway;
  readonly pods: PodGateway;
  readonly events: EventRecorder;
  readonly volumes: VolumeGateway;
  readonly lifecycle: LifecycleActions;
  /** The cluster's load balancers; absent: the fixed delay. */
  readonly loadBalancers?: (LoadBalancerTargets & Partial<LoadBalancerRegistry>) | undefined;
  /** Which load balancers the cluster serves (TargetGroupBindings, in-tree Services); absent: none. */
  readonly served?: LoadBalancerSources | undefined;
  /** Where the deployment's load-balancer readings are shared (shared-targets.ts); absent: each reads its own. */
  readonly readings?: TargetReadingsSource | undefined;
  readonly clock: Clock;
  readonly log: Log;
  /** Which instances the group is letting go too (sibling marking); absent: not asked. */
  readonly instances?: Pick<AutoScalingInstances, 'leavingGroup'> | undefined;
  /** Deployments, for surge before evict; absent: never surged. */
  readonly surge?: SurgeGateway | undefined;
}

/** A trigger's context as the pipeline needs it: the cluster for nodes, pods and Events. */
export function terminateDeps(
  ctx: Pick<TerminateDeps, 'lifecycle' | 'clock' | 'log' | 'loadBalancers'> & {
    readonly instances: TerminateDeps['instances'];
  },
  cluster: NodeGateway &
    PodGateway &
    EventRecorder &
    VolumeGateway &
    Partial<LoadBalancerSources> &
    Partial<SurgeGateway> &
    Partial<TargetReadingsSource>,
): TerminateDeps {
  return {
    readings: cluster.targetReadings !== undefined ? (cluster as TargetReadingsSource) : undefined,
    surge: cluster.restartDeployment !== undefined ? (cluster as SurgeGateway) : undefined,
    served: cluster.servedLoadBalancers !== undefined ? (cluster as LoadBalancerSources) : undefined,
    nodes: cluster,
    pods: cluster,
    events: cluster,
    volumes: cluster,
    lifecycle: ctx.lifecycle,
    loadBalancers: ctx.loadBalancers,
    clock: ctx.clock,
    log: ctx.log,
    instances: ctx.instances,
  };
}

/** One run of the pipeline in this invocation. */
export interface Run {
  readonly request: TerminationRequest;
  readonly deps: TerminateDeps;
  readonly startedMs: number;
  /** The live pod view, opened by drain or settle, closed by the pipeline. */
  pods?: { readonly watch: PodWatch; readonly returns: ReturnedPods } | undefined;
}

/** verify found the node, and which hand-off claim this invocation carries on from. */
export interface Verified {
  readonly node: NodeInfo;
  /** The claim on the node this invocation replaces when it hands on. */
  readonly claim: string | undefined;
  /** This invocation's own claim left by an earlier attempt of it that crashed before publishing. */
  readonly ownPendingClaim: string | undefined;
}

/** mark wrote (or found) our record: the deadlines come from it. */
export interface Marked extends Verified {
  readonly record: DrainRecord;
  readonly deadlines: Deadlines;
}

/** drain ended (or had ended in an earlier invocation, as the record says). */
export interface Drained extends Marked {
  readonly outcome: 'drained' | 'timed-out';
  readonly drainedAtMs: number;
  readonly evictedTotal: number;
  /** This invocation's drain, if it ran one. */
  readonly result: DrainResult | undefined;
}

/** What the settle phase waited for, for the metrics. */
export interface SettleReport {
  /** After the drain, until the last volume of a departed pod detached (undefined: none to wait for). */
  readonly volumeDetachSeconds: number | undefined;
  /** After the drain, until the last load balancer let the instance go (0: none held it; undefined: not read). */
  readonly targetDeregistrationSeconds: number | undefined;
  /** ELB calls this invocation made for the wait. */
  readonly loadBalancerCalls: number;
}

/** settle waited until the instance can go. */
export interface Settled extends Drained {
  readonly settle: SettleReport;
}

/** Where a phase leaves the termination when it does not go on to the next. */
export type Stop =
  | { readonly end: TerminateOutcome }
  | { readonly complete: Completion }
  | {
      readonly handOff: 'drain' | 'settle';
      readonly state: Marked;
      readonly record: DrainRecord;
      readonly evictedTotal: number;
      readonly result: DrainResult | undefined;
    };

/** What the complete phase ends with. */
export interface Completion {
  readonly node: NodeInfo | undefined;
  readonly outcome: 'drained' | 'timed-out' | 'retained' | 'node-not-found' | 'node-gone';
  readonly verdict: 'CONTINUE' | 'ABANDON';
  readonly evictedTotal: number;
  readonly result: DrainResult | undefined;
  readonly settle?: SettleReport | undefined;
}

export type Step<T> = T | { readonly stop: Stop };

export function isStop<T extends object>(step: Step<T>): step is { readonly stop: Stop } {
  return 'stop' in step;
}

export interface TerminateReport {
  readonly outcome: TerminateOutcome;
  readonly nodeName: string | undefined;
  /** 'pending' when the work was handed on, belongs to another invocation, or was never ours. */
  readonly lifecycleAction: 'completed' | 'already-completed' | 'pending';
  /** This invocation's drain, if it ran one. */
  readonly drain: DrainResult | undefined;
  /** Pods evicted over the whole termination (all its invocations). */
  readonly evictedTotal: number;
  readonly durationMs: number;
  /** What the settle phase waited for, when this invocation ran it to its end. */
  readonly settle?: SettleReport | undefined;
}

export function secondsSince(clock: Clock, fromMs: number): number {
  return Math.round((clock.now() - fromMs) / 100) / 10;
}

/** When this invocation must stop working on the termination. */
export function stopMs(run: Run, deadlines: Deadlines): number {
  return run.request.sendHandOff ? deadlines.invocationStopMs : Number.POSITIVE_INFINITY;
}

/** The deadline policy this termination applies: retain only where ABANDON can keep the instance, else leave. */
export function deadlinePolicyOf(request: Pick<TerminationRequest, 'settings' | 'source'>): DeadlinePolicy {
  const policy = request.settings.deadlinePolicy;
  return policy === DeadlinePolicy.RETAIN && !canRetain(request.source) ? DeadlinePolicy.LEAVE : policy;
}
