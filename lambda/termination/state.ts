// What a termination carries from phase to phase, typed per phase: what the trigger asked
// for (the request), what verify found (the node, the claim), what mark wrote (the record,
// and the deadlines read from it), what drain left (the outcome, the live pod view).
import type { EventRecorder } from '../cluster/ports/event-recorder.js';
import type { NodeGateway } from '../cluster/ports/node-gateway.js';
import type { NodeInfo, DrainRecord } from '../cluster/model.js';
import type { PodGateway, PodWatch } from '../cluster/ports/pod-gateway.js';
import type { VolumeGateway } from '../cluster/ports/volume-gateway.js';
import type { LoadBalancerSources } from '../cluster/ports/load-balancer-sources.js';
import type { SurgeGateway } from '../cluster/ports/surge-gateway.js';
import type { SurgeSettings } from '../shared/surge-variables.js';

import type { DrainRuleSettings } from '../cluster/rules/drain-rules.js';
import type { DrainResult } from '../eviction/drain-node.js';
import type { ReturnedPods } from '../eviction/returned-pods.js';
import type {
  AutoScalingInstances,
  LifecycleActionRef,
  LifecycleActions,
  LoadBalancerTargets,
} from '../shared/aws-ports.js';
import type { Clock } from '../shared/clock.js';
import type { DeadlinePolicy } from '../shared/deadline-policy.js';
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

/** What a trigger asks the termination to do. Nothing here is trusted beyond the confirmed action. */
export interface TerminationRequest {
  /** The action; for a Spot interruption a stand-in (nothing to complete). */
  readonly action: LifecycleActionRef;
  /**
   * actionIdOf(token); '' when the action is addressed by its instance (it carries on the `instance:<id>` drain the
   * reconciler wrote).
   */
  readonly actionId: string;
  readonly spot: boolean;
  /** The notification's time, for a drain that has no record yet. */
  readonly notifiedAtMs: number;
  /** A hand-off: which one, and the claim it was published under. Everything else is re-derived. */
  readonly resume?: { readonly count: number; readonly claim: string | undefined } | undefined;
  /** Lambda's request id for this invocation (the same in Lambda's own retries of it). */
  readonly requestId: string;
  /** The trigger's plan: deadlines from the notification's time as the record keeps it. */
  plan(notifiedAtMs: number): Deadlines;
  readonly deadlinePolicy: DeadlinePolicy;
  readonly blockedReportMs: number;
  readonly evictionConcurrency: number;
  /** What the drain does with each pod, in which order (drain-rules.ts). */
  readonly drainRules: DrainRuleSettings;
  /** Wait for the departed pods' VolumeAttachments to be gone before release (settle-volumes.ts). */
  readonly waitForVolumeDetach: boolean;
  /** Mark the group's other leaving instances' nodes before evicting (siblings.ts). */
  readonly cordonDoomedSiblings: boolean;
  /** Surge before evict (eviction/surge-gate.ts); undefined: off. */
  readonly surge?: SurgeSettings | undefined;
  /** Owner of every mark (the deployment). */
  readonly owner: string;
  readonly ending: Ending;
  /** Sends "carry on" to a fresh invocation; absent when there is nowhere to send it. */
  readonly handOff?:
    ((pointer: { readonly count: number; readonly claim: string }) => Promise<'sent' | 'action-over'>) | undefined;
}

export interface TerminateDeps {
  readonly nodes: NodeGateway;
  readonly pods: PodGateway;
  readonly events: EventRecorder;
  readonly volumes: VolumeGateway;
  readonly lifecycle: LifecycleActions;
  /** The cluster's load balancers; absent: the fixed delay. */
  readonly loadBalancers?: LoadBalancerTargets | undefined;
  /** Which load balancers the cluster serves (TargetGroupBindings, in-tree Services); absent: none. */
  readonly served?: LoadBalancerSources | undefined;
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
    Partial<SurgeGateway>,
): TerminateDeps {
  return {
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
  /** The resolved action id (the request's, or the record's for a resume by instance). */
  readonly actionId: string;
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
      readonly handOn: 'drain' | 'settle';
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
  return run.request.handOff ? deadlines.invocationStopMs : Number.POSITIVE_INFINITY;
}
