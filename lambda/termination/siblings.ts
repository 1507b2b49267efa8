// Part of mark: before the first eviction, label and cordon the nodes of every other instance
// the same group is letting go (terminating, or returning to the warm pool). A scale-in, an
// AZ rebalance or an instance refresh lets many instances go at once; cordoning only our own
// node lets the pods we evict land on a sibling that is cordoned a second later and evicted
// again: budgets spent twice, drains longer. Managed node groups cordon every old node before
// draining any on upgrades; NTH users ask for it
// (https://github.com/aws/aws-node-termination-handler/issues/537).
//
// Best effort: whatever fails here is logged and the own drain goes on. Each sibling's own
// invocation later finds its marks there (idempotent) and adopts them (mark.ts); when its
// owner is gone, the reconciler takes them back.
import { planned, tellConditions } from '../cluster/rules/lifecycle-conditions.js';
import { createHash } from 'node:crypto';
import type { NodeInfo, DrainMark, DrainRecord } from '../cluster/model.js';
import { cordonedAhead } from '../cluster/events/termination-events.js';
import { adoptsRefreshCordon } from '../cluster/marks/our-marks.js';
import { resumableThrough } from '../cluster/rules/drain-source.js';
import { excludeFromLoadBalancersLabel } from '../cluster/marks/mark-keys.js';

import { mapWithConcurrency } from '../shared/concurrency.js';
import { asError } from '../shared/log.js';
import { withinBudget } from '../shared/time-budget.js';
import type { Marked, Run } from './state.js';

/**
 * Siblings a drain reads and marks in one pass, of those no drain marked yet. A wave's first
 * drains start in the same second, before any has marked anything: each takes its own share
 * first (siblingsFirst orders them by a hash of the pair), so together they cover the wave
 * instead of each reading the same first ones. What is still unmarked after that, a drain marks
 * a share at a time, re-reading the marks before each, until none is left, before it evicts.
 */
export const siblingLimit = 25;
/** Passes at most (a share each): 300 siblings; a larger wave's other drains mark the rest. */
const maxPasses = 12;
/** The pause before the rest, jittered: the wave's other first drains mark their shares meanwhile. */
const restPauseMs = { min: 500, spread: 1_000 };
/** How long after marking a node ahead a survey is usually done: the longest pause, then its passes. */
export const surveyTakesMs = restPauseMs.min + restPauseMs.spread + 1_500;
const concurrency = 8;
/** How long the survey's Auto Scaling and EC2 calls keep asking while throttled. */
export const surveyPatienceMs = 10_000;

/**
 * Best effort, before the first eviction: a throttled Auto Scaling or EC2 gets seconds
 * (surveyPatienceMs), not the minute a lifecycle call gets, before the drain goes on without.
 */
export function markDoomedSiblings(run: Run, own: Marked): Promise<void> {
  return withinBudget(run.deps.clock.now() + surveyPatienceMs, () => survey(run, own));
}

async function survey(run: Run, own: Marked): Promise<void> {
  const { instance } = run.request;
  const { instances, log, clock } = run.deps;
  if (instances === undefined) return;
  let ids: string[];
  try {
    ids = (await instances.leavingGroup(instance.group)).filter((id) => id !== instance.instanceId);
  } catch (error) {
    log.warn(
      "could not look up the group's other leaving instances; draining without marking them first",
      asError(error),
    );
    return;
  }
  if (ids.length === 0) return;
  const tally: Tally = {
    unmarkedAtFirst: undefined,
    unmarked: 0,
    read: 0,
    marked: [],
    matched: new Set(),
    tried: new Set(),
    offered: new Set(),
    lastMarked: undefined,
    scanned: false,
  };
  // Each sibling is tried once: one not found, or marked by another drain meanwhile (a
  // conflict), is not asked for again.
  const { tried } = tally;
  const share = (unmarked: readonly string[]) => {
    for (const id of unmarked) tally.offered.add(id);
    const untried = unmarked.filter((id) => !tried.has(id));
    tally.unmarkedAtFirst ??= untried.length;
    tally.unmarked = untried.length;
    const chosen = siblingsFirst(run.request.instance.instanceId, untried).slice(0, siblingLimit);
    for (const id of chosen) tried.add(id);
    return chosen;
  };
  let passes = 0;
  let looked = true;
  do {
    if (passes === 1) await clock.sleep(restPauseMs.min + Math.round(Math.random() * restPauseMs.spread));
    passes++;
    looked = await markPass(run, own, ids, share, tally);
  } while (looked && tally.unmarked > siblingLimit && passes < maxPasses);
  if (looked) await markUnmatched(run, own, ids, tally);
  await tellMarkedAhead(run, own, tally.marked);
  log.info("marked the nodes of the group's other leaving instances before evicting", {
    leavingSiblings: ids.length,
    unmarkedAtFirst: tally.unmarkedAtFirst ?? 0,
    passes,
    nodesRead: tally.read,
    marked: tally.marked.length,
    nodes: tally.marked.map((m) => m.node.name),
    scannedForOthers: tally.scanned,
  });
}

interface Tally {
  /** Leaving siblings no drain of ours had marked when this one first looked, and at its last look. */
  unmarkedAtFirst: number | undefined;
  unmarked: number;
  read: number;
  /** Marked by this survey, told (Event, conditions) once the passes are over. */
  readonly marked: { readonly instanceId: string; readonly node: NodeInfo }[];
  /**
   * Siblings whose node was found (by name), tried by name, offered to a pass at all; the names marked at the last
   * look.
   */
  readonly matched: Set<string>;
  readonly tried: Set<string>;
  readonly offered: Set<string>;
  lastMarked: ReadonlySet<string> | undefined;
  scanned: boolean;
}

/**
 * One pass: which nodes a drain of ours marked already comes from one list of names (not read
 * again); of the rest, pick's share in one list, then marked. No scan here (markUnmatched
 * scans once for the survey), and a throttled EC2 ends the survey rather than costing a list per
 * drain. False when the pass could not look.
 */
async function markPass(
  run: Run,
  own: Marked,
  ids: readonly string[],
  pick: (unmarked: readonly string[]) => string[],
  tally: Tally,
): Promise<boolean> {
  const { nodes, log } = run.deps;
  let nodesOf: ReadonlyMap<string, NodeInfo>;
  let marked: ReadonlySet<string>;
  try {
    marked = await nodes.drainMarkedNames(run.request.settings.deploymentName);
    nodesOf = await nodes.findNodesOfInstances(ids, { skipNames: marked, scan: false, pick });
  } catch (error) {
    log.warn(
      "could not look up the group's other leaving instances; draining without marking them first",
      asError(error),
    );
    return false;
  }
  tally.read += nodesOf.size;
  for (const id of nodesOf.keys()) tally.matched.add(id);
  tally.lastMarked = marked;
  await markNodes(run, own, nodesOf, tally);
  return true;
}

/**
 * The siblings no pass found under their EC2 name (--hostname-override, an old node of a
 * reused address under that name, no name from EC2) and no drain of ours marked: their nodes
 * by spec.providerID, in one scan of the node list for all of them, once per survey (never one
 * per sibling), and marked like the others. In a wave named as EKS names nodes, nothing is left
 * and nothing is scanned.
 */
async function markUnmatched(run: Run, own: Marked, ids: readonly string[], tally: Tally): Promise<void> {
  // Tried by name and not found, or never offered (no EC2 name, or already marked: the scan
  // leaves those out by name); not those the pass limit left to the wave's other drains.
  const rest = ids.filter((id) => !tally.matched.has(id) && (tally.tried.has(id) || !tally.offered.has(id)));
  if (rest.length === 0) return;
  let nodesOf: ReadonlyMap<string, NodeInfo>;
  try {
    nodesOf = await run.deps.nodes.findNodesOfInstances(rest, { skipNames: tally.lastMarked, byName: false });
  } catch (error) {
    run.deps.log.warn(
      "could not scan for the leaving siblings' nodes not under their EC2 names; their own drains mark them",
      asError(error),
    );
    return;
  }
  tally.scanned = true;
  tally.read += nodesOf.size;
  await markNodes(run, own, nodesOf, tally);
}

/** The nodes' marks only: each pass cordons its share at once, and what it marked is told after the passes. */
async function markNodes(run: Run, own: Marked, nodesOf: ReadonlyMap<string, NodeInfo>, tally: Tally): Promise<void> {
  await mapWithConcurrency([...nodesOf], concurrency, async ([instanceId, node]) => {
    try {
      if (await markSibling(run, own, node)) tally.marked.push({ instanceId, node });
    } catch (error) {
      run.deps.log.warn("could not mark a leaving sibling's node; its own drain will", {
        node: node.name,
        error: asError(error),
      });
    }
  });
}

/**
 * The CordonedAhead Event and the MaintenancePlanned condition of each node the survey marked, after its passes: told
 * between the marks, they held each pass's next share for two more requests a node, while the evictions of drains
 * already going on landed pods on the nodes not cordoned yet (issue 40, the wave bench's pods evicted twice).
 */
async function tellMarkedAhead(run: Run, own: Marked, marked: Tally['marked']): Promise<void> {
  const { instance } = run.request;
  const { log } = run.deps;
  await mapWithConcurrency(marked, concurrency, async ({ instanceId, node }) => {
    try {
      const o = { instanceId, group: instance.group, drainedInstance: instance.instanceId, drainedNode: own.node.name };
      await run.deps.events.record(cordonedAhead(node, o));
      await tellConditions(run.deps.nodes, log, node.name, [
        planned(
          `${instance.group} is terminating this instance too (marked ahead by the drain of ${instance.instanceId})`,
        ),
      ]);
    } catch (error) {
      log.warn("could not tell a leaving sibling's node it was marked ahead", {
        node: node.name,
        error: asError(error),
      });
    }
  });
}

/** The siblings in this drain's own order: by a hash of the pair, so concurrent drains spread over the wave. */
export function siblingsFirst(own: string, siblings: readonly string[]): string[] {
  const key = (id: string) => createHash('sha256').update(`${own}/${id}`).digest('hex');
  return [...siblings]
    .map((id) => [key(id), id] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, id]) => id);
}

/** True when it marked the node; a node a drain of ours already marked is left as it is. */
async function markSibling(run: Run, own: Marked, node: NodeInfo): Promise<boolean> {
  if (node.drain !== undefined) return false;
  const label = node.labels[excludeFromLoadBalancersLabel];
  const needLabel = label !== 'true';
  const needCordon = !node.unschedulable;
  if (!needLabel && !needCordon) return false;
  const now = run.deps.clock.now();
  const set: DrainMark[] = [
    ...(needLabel ? ['exclude-from-load-balancers' as const] : []),
    ...(needCordon || adoptsRefreshCordon(node) ? ['cordon' as const] : []),
  ];
  const record: DrainRecord = {
    source: { kind: 'marked-ahead', hook: resumableThrough(own.record.source) },
    notifiedAtMs: now,
    startedAtMs: now,
    updatedAtMs: now,
    set,
    ...(needLabel && label !== undefined ? { priorLabel: label } : {}),
    aheadOf: run.request.instance.instanceId,
  };
  // Conditional on what we read: if the sibling's own drain wrote its record meanwhile, this
  // write must not replace it ('changed': skip, it is marked).
  const marks = {
    excludeFromLoadBalancers: needLabel,
    cordon: needCordon,
    drain: record,
    owner: run.request.settings.deploymentName,
  };
  return (await run.deps.nodes.mark(node.name, marks, node.resourceVersion)) === 'patched';
}
