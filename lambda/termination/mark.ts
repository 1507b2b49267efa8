// Phase 2, mark: exclude the node from external load balancers and cordon it, in one merge
// patch with our drain record (which action, when it was notified and first seen, which marks
// we set ourselves and what the label was before). Label first in spirit: deregistration takes
// minutes, pods can be gone in seconds. Then the group's other leaving nodes (siblings.ts).
// https://kubernetes.io/docs/reference/labels-annotations-taints/#node-kubernetes-io-exclude-from-external-load-balancers
import type { NodeInfo, DrainMark, DrainRecord } from '../cluster/model.js';
import { drainInProgress, planned, tellConditions } from '../cluster/rules/lifecycle-conditions.js';
import { cordoned, drainStarted } from '../cluster/events/termination-events.js';
import { adoptsRefreshCordon } from '../cluster/marks/our-marks.js';
import { excludeFromLoadBalancersLabel } from '../cluster/marks/mark-keys.js';
import { sameSource } from '../cluster/rules/drain-source.js';

import { TransientError } from '../shared/errors.js';
import { markDoomedSiblings, surveyTakesMs } from './siblings.js';
import { carriedByAnother, claimToWrite, standsDownMessage, type Carrier } from './claim.js';
import type { Marked, Run, Step, Verified } from './state.js';

export async function mark(run: Run, v: Verified): Promise<Step<Marked>> {
  const { request, deps } = run;
  let node: NodeInfo | undefined = v.node;
  // Conditional on the node as read: if someone (the reconciler taking back an earlier record,
  // an operator) changed it meanwhile, what is missing is worked out again from a fresh read.
  for (let attempt = 0; node !== undefined && attempt < conflictAttempts; attempt++) {
    const outcome = await markOnce(run, { ...v, node });
    if (outcome !== 'changed') return outcome;
    node = await deps.nodes.findNodeByInstanceId(request.instance.instanceId);
  }
  if (node !== undefined)
    throw new TransientError(`mark node ${v.node.name}: the node kept changing; giving up for now`);
  deps.log.warn('node was deleted while draining; completing');
  return {
    stop: { complete: { node: v.node, outcome: 'node-gone', verdict: 'CONTINUE', evictedTotal: 0, result: undefined } },
  };
}

const conflictAttempts = 5;
/** How recent a sibling's survey of the wave must be for this drain to skip its own. */
const surveyFreshMs = 60_000;

async function markOnce(run: Run, v: Verified): Promise<Step<Marked> | 'changed'> {
  const { request, deps } = run;
  const { node } = v;
  const carrier = { ...request.source, requestId: request.requestId, handOff: request.handOff, ...v };
  if (twinOfAnother(run, carrier, node)) return { stop: { end: 'superseded' } };
  const ours = node.drain !== undefined && sameSource(node.drain.source, request.source) ? node.drain : undefined;
  // The drain is taken up with the marks, in the same conditional write (claim.ts).
  const claim = claimToWrite(carrier, node.handOffClaim, ours === undefined);
  const label = node.labels[excludeFromLoadBalancersLabel];
  const needLabel = label !== 'true';
  const needCordon = !node.unschedulable;
  const record = ours
    ? carriedOn(run, ours, node, { needLabel, needCordon })
    : newRecord(run, v, { label, needLabel, needCordon });
  let marked: NodeInfo = node;
  if (needLabel || needCordon || record !== ours || claim !== undefined) {
    const result = await deps.nodes.mark(
      node.name,
      {
        excludeFromLoadBalancers: needLabel,
        cordon: needCordon,
        drain: record,
        owner: request.settings.deploymentName,
        claim,
      },
      node.resourceVersion,
    );
    if (result === 'changed') return 'changed';
    if (result === 'node-gone') {
      deps.log.warn('node was deleted while draining; completing');
      return {
        stop: { complete: { node, outcome: 'node-gone', verdict: 'CONTINUE', evictedTotal: 0, result: undefined } },
      };
    }
    marked = {
      ...node,
      unschedulable: true,
      labels: { ...node.labels, [excludeFromLoadBalancersLabel]: 'true' },
      drain: record,
      handOffClaim: claim ?? node.handOffClaim,
    };
  }
  await tellMarked(run, node, { first: ours === undefined, cordoned: needCordon });
  const state: Marked = {
    ...v,
    // The hand-off replaces the claim now on the node: ours, when this write made it.
    claim: claim ?? v.claim,
    node: marked,
    record,
    deadlines: request.deadlinesFrom(record.notifiedAtMs),
  };
  // Once per termination: not again on a hand-off, nor when our record was already there (a
  // Lambda retry: the first attempt did it).
  if (request.handOff === undefined && ours === undefined && request.settings.cordonDoomedSiblings)
    await surveyWave(run, state, node);
  return state;
}

/** A second delivery (of the notification, of a hand-off) that read the node before another took the drain up. */
function twinOfAnother(run: Run, carrier: Carrier, node: NodeInfo): boolean {
  if (!carriedByAnother(carrier, node.handOffClaim)) return false;
  run.deps.log.info(standsDownMessage, { current: node.handOffClaim });
  return true;
}

/** DrainStarted and the conditions once per termination; Cordoned when this write cordoned the node. */
async function tellMarked(run: Run, node: NodeInfo, o: { first: boolean; cordoned: boolean }): Promise<void> {
  const { request, deps } = run;
  if (request.handOff !== undefined) return;
  if (o.first) {
    await deps.events.record(drainStarted(node, request.ending.startedMessage()));
    await tellConditions(deps.nodes, deps.log, node.name, [
      planned(request.ending.startedMessage()),
      drainInProgress('evicting its pods through the eviction API (PodDisruptionBudgets hold)'),
    ]);
  }
  if (o.cordoned || o.first) {
    deps.log.info('node labelled for exclusion from external load balancers and cordoned');
    await deps.events.record(cordoned(node, markedAheadBy(node)));
  }
}

/**
 * The group's other leaving nodes marked ahead, unless a sibling's drain marked this node ahead moments ago: that
 * drain surveyed the wave (Auto Scaling, EC2, the cluster) and the drains not marked ahead keep surveying it.
 */
async function surveyWave(run: Run, state: Marked, node: NodeInfo): Promise<void> {
  const aheadSinceMs = markedAheadBy(node) !== undefined ? run.deps.clock.now() - node.drain!.startedAtMs : undefined;
  if (aheadSinceMs === undefined || aheadSinceMs >= surveyFreshMs) await markDoomedSiblings(run, state);
  // That sibling may still be marking the rest of the wave (its pause and passes): pods
  // evicted now could land on nodes it has not reached. Its survey is given the time it takes.
  else await run.deps.clock.sleep(Math.min(surveyTakesMs, Math.max(0, surveyTakesMs - aheadSinceMs)));
}

/**
 * Our record as this invocation carries it on: dated when resumed (the reconciler sees the
 * chain is alive); a cordon or label someone took off meanwhile is put back and recorded as
 * ours, so it is taken back too; volumes attached since are added. Unchanged otherwise: a
 * Lambda retry or a second delivery writes nothing.
 */
function carriedOn(
  run: Run,
  ours: DrainRecord,
  node: NodeInfo,
  o: { needLabel: boolean; needCordon: boolean },
): DrainRecord {
  const set = new Set<DrainMark>(ours.set);
  if (o.needLabel) set.add('exclude-from-load-balancers');
  if (o.needCordon) set.add('cordon');
  const volumes = volumesSeen(ours.volumes, node);
  const changed = set.size !== ours.set.length || volumes.length !== (ours.volumes?.length ?? 0);
  if (run.request.handOff === undefined && !changed) return ours;
  return { ...ours, set: [...set], ...(volumes.length > 0 ? { volumes } : {}), updatedAtMs: run.deps.clock.now() };
}

/** The volumes the record knew, and those the node says are attached now. */
function volumesSeen(known: readonly string[] | undefined, node: NodeInfo): string[] {
  return [...new Set([...(known ?? []), ...(node.attachedVolumes ?? [])])].sort();
}

/**
 * A new record for this action. Marks an earlier record of ours set stay ours to take back: a
 * sibling's drain that marked this node ahead, or an earlier termination of an instance that
 * came back; so does the label's value before any of them.
 */
function newRecord(
  run: Run,
  v: Verified,
  o: { label: string | undefined; needLabel: boolean; needCordon: boolean },
): DrainRecord {
  const now = run.deps.clock.now();
  const earlier = v.node.drain;
  const set = new Set<DrainMark>(earlier?.set ?? []);
  if (o.needLabel) set.add('exclude-from-load-balancers');
  // A cordon a refresh of ours set is ours to take back too: the drain takes it over (the
  // refresh's end leaves a draining node's cordon to the drain).
  if (o.needCordon || adoptsRefreshCordon(v.node)) set.add('cordon');
  const priorLabel = earlier?.priorLabel ?? (o.needLabel ? o.label : undefined);
  return {
    source: run.request.source,
    // A time in the future is not believed: deadlines never move out on a message's word.
    notifiedAtMs: Math.min(run.request.notifiedAtMs, now),
    startedAtMs: now,
    updatedAtMs: now,
    set: [...set],
    ...(priorLabel !== undefined ? { priorLabel } : {}),
    ...(earlier?.aheadOf !== undefined && earlier.source.kind === 'marked-ahead' ? { aheadOf: earlier.aheadOf } : {}),
    ...(volumesSeen(earlier?.volumes, v.node).length > 0 ? { volumes: volumesSeen(earlier?.volumes, v.node) } : {}),
  };
}

/** The instance whose drain marked this node ahead of its own, while those marks are all there is. */
function markedAheadBy(node: NodeInfo): string | undefined {
  return node.drain?.source.kind === 'marked-ahead' ? node.drain.aheadOf : undefined;
}
