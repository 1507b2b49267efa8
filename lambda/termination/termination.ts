// What every phase of a termination shares: the lifecycle action, the ports, the plan, and
// what earlier phases found out. Each phase re-derives the rest from the cluster.
import type { DeadlinePolicy } from '../config.js';
import type { DrainResult, ReturnedPods } from '../drain.js';
import type { AutoScalingInstances, Clock, EventRecorder, LifecycleActionRef, LifecycleActions, Log, NodeGateway, NodeInfo, PodGateway, PodWatch } from '../ports.js';
import type { HandOffState } from './hand-off.js';
import type { Trigger } from './triggers.js';

export type PhaseName = 'verify' | 'mark' | 'drain' | 'settle' | 'complete';

export type TerminateOutcome =
  | 'drained'
  | 'timed-out'
  /** DEADLINE_POLICY=retain at the deadline: completed with ABANDON, the node left cordoned. */
  | 'retained'
  | 'node-not-found'
  | 'node-gone'
  | 'handed-off'
  | 'superseded'
  /** Auto Scaling has no such action: a forged, stale or misrouted notification. Nothing was written. */
  | 'no-active-action';

/** What a phase tells the runner: go on to a phase, hand the rest on, or stop. */
export type Step =
  | { readonly next: PhaseName }
  | { readonly handOn: HandOffState['phase'] }
  | { readonly end: TerminateOutcome };

export interface TerminateDeps {
  readonly nodes: NodeGateway;
  readonly pods: PodGateway;
  readonly events: EventRecorder;
  readonly lifecycle: LifecycleActions;
  readonly clock: Clock;
  readonly log: Log;
  /** Which instances the group is terminating too (sibling marking); absent: not asked. */
  readonly instances?: Pick<AutoScalingInstances, 'terminatingIn'> | undefined;
}

export interface TerminateOptions {
  /** For a Spot interruption, a stand-in: its token names the drain, there is no action. */
  readonly action: LifecycleActionRef;
  /** What asked for this termination: how it is confirmed and how it ends (triggers.ts). */
  readonly trigger: Trigger;
  /** The notification's Time (epoch ms): deadlines and the Events' durations run from it. */
  readonly notifiedAtMs: number;
  /** Lambda's request id for this invocation (the same in Lambda's own retries of it). */
  readonly requestId: string;
  /** Drain deadline from the notification (DRAIN_TIMEOUT_SECONDS), before the fair window. */
  readonly drainDeadlineMs: number;
  /** Nothing may run past this: the action's own cap less the load-balancer wait and margin. */
  readonly latestDrainEndMs: number;
  /** Every pod gets at least this long from when the drain first saw the node before force. */
  readonly minEvictionWindowMs: number;
  /** When this invocation stops and hands the rest on (ignored without `handOff`). */
  readonly invocationStopMs: number;
  readonly batch?: { readonly untilMs: number; readonly deadlineMs: number } | undefined;
  readonly blockedReportMs?: number | undefined;
  readonly deadlinePolicy: DeadlinePolicy;
  readonly loadBalancerDelaySeconds: number;
  readonly evictionConcurrency: number;
  /** Mark the group's other terminating instances' nodes before evicting (siblings.ts). */
  readonly cordonDoomedSiblings?: boolean;
  /** Set when this invocation continues a termination an earlier one handed on. */
  readonly resume?: HandOffState | undefined;
  /** Sends the rest to a fresh invocation; absent when there is nowhere to send it. */
  readonly handOff?: ((next: HandOffState) => Promise<'sent' | 'action-over'>) | undefined;
}

/** The termination in progress: options, ports, and what the phases found. */
export interface Termination {
  readonly options: TerminateOptions;
  readonly deps: TerminateDeps;
  readonly startedMs: number;
  node?: NodeInfo;
  /** The hand-off claim on the node this invocation carries on from (undefined: none). */
  claim?: string | undefined;
  /** This invocation's own claim left by an earlier attempt of it that crashed before publishing. */
  ownPendingClaim?: string | undefined;
  /** When our drain first saw the node (kept on the node): the fair eviction window runs from it. */
  firstSeenMs?: number;
  /** Pods evicted by this drain, over all its invocations. */
  evictedTotal: number;
  drain?: DrainResult | undefined;
  drainOutcome?: 'drained' | 'timed-out' | 'node-not-found' | 'node-gone';
  loadBalancerWaitUntilMs?: number;
  watch?: PodWatch;
  returns?: ReturnedPods;
  lifecycleAction?: 'completed' | 'already-completed';
  /** ABANDON only for DEADLINE_POLICY=retain at the deadline; CONTINUE otherwise. */
  completeWith?: 'CONTINUE' | 'ABANDON';
}

/** When this invocation must stop working on the termination. */
export function stopMs(t: Termination): number {
  return t.options.handOff ? t.options.invocationStopMs : Number.POSITIVE_INFINITY;
}

export function secondsSince(t: Termination, fromMs: number): number {
  return Math.round((t.deps.clock.now() - fromMs) / 100) / 10;
}

/** Writes an Event about the node (queued; never holds the termination up). */
export function onNode(t: Termination, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
  const node = t.node!;
  return t.deps.events.record({ regarding: { kind: 'Node', name: node.name, uid: node.uid }, type, reason, message });
}
