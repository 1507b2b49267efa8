// The launch use case: admit a new instance only once its node has joined the cluster
// healthy, as managed node groups do (NodeCreationFailure otherwise). A broken handler or an
// unreachable cluster must never block scale-out, so those end in CONTINUE with an alarm.
import type { EventRecorder } from '../cluster/ports/event-recorder.js';
import type { NodeGateway, NodeWatch } from '../cluster/ports/node-gateway.js';
import type { NodeInfo } from '../cluster/model.js';
import { launchAbandoned, launchAdmitted } from '../cluster/events/mark-events.js';
import { launchAbandonedMessage, launchUncheckedMessage } from '../cluster/events/log-messages.js';
import type { LifecycleActionRef, LifecycleActions } from '../shared/aws-ports.js';
import type { Clock } from '../shared/clock.js';
import { AccessDeniedError } from '../shared/errors.js';
import { asError, type Log } from '../shared/log.js';

/** Taints a node carries until it has finished starting. */
export const startupTaints: ReadonlySet<string> = new Set([
  'node.kubernetes.io/not-ready',
  'node.kubernetes.io/unreachable',
  'node.kubernetes.io/network-unavailable',
  'node.cloudprovider.kubernetes.io/uninitialized',
]);

/** How long to wait before opening the node watch again when it could not be opened. */
const retryWithoutWatchMs = 5_000;

export interface AdmitOptions {
  readonly action: LifecycleActionRef;
  /** Epoch ms after which a node that is still not healthy is abandoned. */
  readonly deadlineMs: number;
  /** Epoch ms by which this invocation must stop (the deadline may lie beyond it). */
  readonly invocationStopMs: number;
}

export interface AdmitDeps {
  readonly nodes: Pick<NodeGateway, 'watchNodeOf'>;
  readonly events: EventRecorder;
  readonly lifecycle: LifecycleActions;
  readonly clock: Clock;
  readonly log: Log;
  /** The instance came back with our drain's marks on its node: take them back (give-back.ts). */
  giveBack(node: NodeInfo): Promise<NodeInfo | undefined>;
}

/** 'already-over': the action was completed or timed out before our ABANDON took effect. */
export type AdmitOutcome = 'admitted' | 'abandoned' | 'already-over' | 'admitted-unchecked' | 'continue-later';

/** Why a node is not (yet) healthy, or undefined when it is. */
export function unhealthyReason(node: NodeInfo | undefined): string | undefined {
  if (node === undefined) return 'no node with this instance in spec.providerID has registered';
  if (!node.ready) return `node ${node.name} is not Ready`;
  const starting = node.taints.filter((t) => startupTaints.has(t.key));
  if (starting.length > 0)
    return `node ${node.name} still has startup taints ${starting.map((t) => `${t.key}:${t.effect}`).join(', ')}`;
  return undefined;
}

export function admitNode(options: AdmitOptions, deps: AdmitDeps): Promise<AdmitOutcome> {
  return new Admission(options, deps).run();
}

class Admission {
  private reason = 'the cluster was not asked yet';
  /**
   * Evidence for ABANDON: the last request we made was answered. A node that never became
   * healthy while the API answered is the instance's fault; one we could not see because our
   * own requests failed (APF 429, overload) is not, and killing it would only add load.
   */
  private lastAnswered = false;
  private lastError: Error | undefined;
  private node: NodeInfo | undefined;
  /**
   * One list+watch of the instance's node, not a poll of the node list: the cost of waiting does not grow with the
   * cluster.
   */
  private watch: NodeWatch | undefined;

  constructor(
    private readonly o: AdmitOptions,
    private readonly deps: AdmitDeps,
  ) {}

  async run(): Promise<AdmitOutcome> {
    try {
      for (;;) {
        const look = await this.look();
        if (look === 'healthy') return await this.admit();
        if (look === 'denied') break; // a setup error: waiting will not fix it
        const now = this.deps.clock.now();
        if (now >= this.o.deadlineMs) {
          if (look === 'not-yet' && (await this.lastLook())) return await this.admit();
          break;
        }
        if (now >= this.o.invocationStopMs) return 'continue-later';
        const waitMs = Math.min(this.o.deadlineMs - now, Math.max(0, this.o.invocationStopMs - now));
        // Without a watch (it could not be opened) wait a little before trying again.
        if (this.watch !== undefined) await this.watch.changed(waitMs);
        else await this.deps.clock.sleep(Math.min(retryWithoutWatchMs, waitMs));
      }
    } finally {
      this.watch?.close();
    }
    if (!this.lastAnswered) return admitUnchecked(this.o.action, this.lastError, this.deps);
    return this.abandon();
  }

  private async look(): Promise<'healthy' | 'not-yet' | 'denied'> {
    try {
      this.watch ??= await this.deps.nodes.watchNodeOf(this.o.action.instanceId);
      this.node = this.watch.current();
      this.lastAnswered = true;
      if (this.node?.drain !== undefined) this.node = await this.deps.giveBack(this.node);
      const why = unhealthyReason(this.node);
      if (why === undefined) return 'healthy';
      this.reason = why;
      return 'not-yet';
    } catch (error) {
      this.lastAnswered = false;
      this.lastError = asError(error);
      if (error instanceof AccessDeniedError) return 'denied';
      this.deps.log.warn('could not ask the cluster about the new node; retrying', this.lastError);
      return 'not-yet';
    }
  }

  /** The deadline: one look beyond the node's EC2 name before abandoning (a node named otherwise, scanned for). */
  private async lastLook(): Promise<boolean> {
    if (this.watch?.lastLook === undefined) return false;
    await this.watch.lastLook();
    return (await this.look()) === 'healthy';
  }

  private async admit(): Promise<'admitted'> {
    const node = this.node!;
    const result = await this.deps.lifecycle.complete(this.o.action, 'CONTINUE');
    this.deps.log.info('new node is Ready; launch admitted', { node: node.name, completion: result });
    await this.deps.events.record(launchAdmitted(node));
    return 'admitted';
  }

  /** Like managed node groups' NodeCreationFailure: the group replaces the instance. */
  private async abandon(): Promise<'abandoned' | 'already-over'> {
    const result = await this.deps.lifecycle.complete(this.o.action, 'ABANDON');
    if (result === 'already-completed') {
      this.deps.log.info('the launch action was already over when the timeout came; nothing abandoned', {
        reason: this.reason,
      });
      return 'already-over';
    }
    this.deps.log.error(launchAbandonedMessage, { reason: this.reason, completion: result });
    if (this.node !== undefined) await this.deps.events.record(launchAbandoned(this.node, this.reason));
    return 'abandoned';
  }
}

/**
 * The cluster could not be asked (no connection, every request failed, access denied): a
 * broken handler must never block scale-out, so CONTINUE, with the line the alarm counts.
 * Marks of ours left on a returning node are the reconciler's to take back.
 */
export async function admitUnchecked(
  action: LifecycleActionRef,
  error: Error | undefined,
  deps: Pick<AdmitDeps, 'lifecycle' | 'log'>,
): Promise<'admitted-unchecked'> {
  deps.log.error(launchUncheckedMessage, ...(error ? [error] : []));
  const result = await deps.lifecycle.complete(action, 'CONTINUE');
  deps.log.warn('launch admitted without a health check', { completion: result });
  return 'admitted-unchecked';
}
