// The launch use case: admit a new instance only once its node has joined the cluster
// healthy, as managed node groups do (NodeCreationFailure otherwise). A broken handler or an
// unreachable cluster must never block scale-out, so those end in CONTINUE with an alarm.
import { AccessDeniedError } from './errors.js';
import { excludeFromLoadBalancersLabel, type Clock, type EventRecorder, type LifecycleActionRef, type LifecycleActions, type Log, type NodeGateway, type NodeInfo, type NodeWatch } from './ports.js';

/** Taints a node carries until it has finished starting. */
export const startupTaints: ReadonlySet<string> = new Set([
  'node.kubernetes.io/not-ready',
  'node.kubernetes.io/unreachable',
  'node.kubernetes.io/network-unavailable',
  'node.cloudprovider.kubernetes.io/uninitialized',
]);

/** Logged when the cluster could not be asked; the construct's alarm filters on it. */
export const launchUncheckedMessage = 'could not reach the cluster to check the new node; admitting it unchecked';

/** Logged when a launch is abandoned (NodeCreationFailure); the construct's alarm filters on it. */
export const launchAbandonedMessage = 'new node did not become healthy in time; abandoning the launch so the group replaces the instance';

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
  readonly nodes: NodeGateway;
  readonly events: EventRecorder;
  readonly lifecycle: LifecycleActions;
  readonly clock: Clock;
  readonly log: Log;
}

/** 'already-over': the action was completed or timed out before our ABANDON took effect. */
export type AdmitOutcome = 'admitted' | 'abandoned' | 'already-over' | 'admitted-unchecked' | 'continue-later';

/** Why a node is not (yet) healthy, or undefined when it is. */
export function unhealthyReason(node: NodeInfo | undefined): string | undefined {
  if (node === undefined) return 'no node with this instance in spec.providerID has registered';
  if (!node.ready) return `node ${node.name} is not Ready`;
  const starting = node.taints.filter((t) => startupTaints.has(t.key));
  if (starting.length > 0) return `node ${node.name} still has startup taints ${starting.map((t) => `${t.key}:${t.effect}`).join(', ')}`;
  return undefined;
}

export async function admitNode(options: AdmitOptions, deps: AdmitDeps): Promise<AdmitOutcome> {
  const { action } = options;
  const { nodes, events, lifecycle, clock, log } = deps;
  let reason = 'the cluster was not asked yet';
  // Evidence for ABANDON: the last request we made was answered. A node that never became
  // healthy while the API answered is the instance's fault; one we could not see because our
  // own requests failed (APF 429, overload) is not, and killing it would only add load.
  let lastAnswered = false;
  let lastError: string | undefined;
  let node: NodeInfo | undefined;
  // One list+watch of the instance's node (node-lookup.ts), not a poll of the node list: the
  // cost of waiting for a node to join does not grow with the cluster.
  let watch: NodeWatch | undefined;
  try {
    for (;;) {
      try {
        watch ??= await nodes.watchNodeOf(action.instanceId);
        node = watch.current();
        lastAnswered = true;
        if (node?.drain !== undefined) node = await giveNodeBack(node, node.drain, deps);
        const why = unhealthyReason(node);
        if (why === undefined) {
          const result = await lifecycle.complete(action, 'CONTINUE');
          log.info('new node is Ready; launch admitted', { node: node!.name, lifecycleAction: result });
          await events.record({
            regarding: { kind: 'Node', name: node!.name, uid: node!.uid },
            type: 'Normal',
            reason: 'LaunchAdmitted',
            message: `Node joined Ready without startup taints; lifecycle action completed with CONTINUE.`,
          });
          return 'admitted';
        }
        reason = why;
      } catch (error) {
        lastAnswered = false;
        lastError = error instanceof Error ? error.message : String(error);
        if (error instanceof AccessDeniedError) break; // setup error: waiting will not fix it
        log.warn('could not ask the cluster about the new node; retrying', { error: lastError });
      }
      const now = clock.now();
      if (now >= options.deadlineMs) break;
      if (now >= options.invocationStopMs) return 'continue-later';
      const waitMs = Math.min(options.deadlineMs - now, Math.max(0, options.invocationStopMs - now));
      // Without a watch (it could not be opened) wait a little before trying again.
      if (watch !== undefined) await watch.changed(waitMs);
      else await clock.sleep(Math.min(retryWithoutWatchMs, waitMs));
    }
  } finally {
    watch?.close();
  }

  if (!lastAnswered) return admitUnchecked(action, lastError, deps);
  // Like managed node groups' NodeCreationFailure: the group replaces the instance.
  const result = await lifecycle.complete(action, 'ABANDON');
  if (result === 'already-completed') {
    log.info('the launch action was already over when the timeout came; nothing abandoned', { reason });
    return 'already-over';
  }
  log.error(launchAbandonedMessage, { reason, lifecycleAction: result });
  if (node !== undefined) {
    await events.record({
      regarding: { kind: 'Node', name: node.name, uid: node.uid },
      type: 'Warning',
      reason: 'LaunchAbandoned',
      message: `Not healthy in time (${reason}); lifecycle action completed with ABANDON, Auto Scaling replaces the instance.`,
    });
  }
  return 'abandoned';
}

/**
 * The instance came back (out of a warm pool, a reused or retained instance, a root-volume
 * replacement) and its Node object still carries the marks of our last drain of it. Take
 * back exactly what we set, as our drain record says, and nothing anybody else set.
 */
async function giveNodeBack(node: NodeInfo, record: NonNullable<NodeInfo['drain']>, deps: AdmitDeps): Promise<NodeInfo | undefined> {
  if ((await deps.nodes.unmark(node.name, record)) === 'node-gone') return undefined;
  const removed = [
    ...(record.set.includes('exclude-from-load-balancers') ? [`label ${excludeFromLoadBalancersLabel}`] : []),
    ...(record.set.includes('cordon') ? ['cordon'] : []),
  ];
  deps.log.info('the instance came back: removed the marks of our last drain of its node', { node: node.name, removed });
  await deps.events.record({
    regarding: { kind: 'Node', name: node.name, uid: node.uid },
    type: 'Normal',
    reason: 'DrainMarksRemoved',
    message: `The instance came back; removed what our last drain set (${removed.length > 0 ? removed.join(', ') : 'only its annotations'}). Marks set by others are left as they are.`,
  });
  const labels = { ...node.labels };
  if (record.set.includes('exclude-from-load-balancers')) delete labels[excludeFromLoadBalancersLabel];
  return { ...node, labels, unschedulable: record.set.includes('cordon') ? false : node.unschedulable, drain: undefined, handOff: undefined };
}

/**
 * The cluster could not be asked (no connection, every request failed, access denied): a
 * broken handler must never block scale-out, so CONTINUE, with the line the alarm counts.
 */
export async function admitUnchecked(action: LifecycleActionRef, error: string | undefined, deps: Pick<AdmitDeps, 'lifecycle' | 'log'>): Promise<'admitted-unchecked'> {
  deps.log.error(launchUncheckedMessage, { error });
  const result = await deps.lifecycle.complete(action, 'CONTINUE');
  deps.log.warn('launch admitted without a health check', { lifecycleAction: result });
  return 'admitted-unchecked';
}
