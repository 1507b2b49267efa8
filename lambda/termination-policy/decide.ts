// The decision behind one termination policy call: read what the candidates' departures would
// cost (flat in cluster size: their nodes by name, their pods, budgets and workloads), rank,
// choose within Auto Scaling's capacity, and either answer or defer; past the maximum deferral
// Auto Scaling's own suggestion stands. Every decision is an Event on the nodes and a metric.
import type { ClusterEvent, NodeInfo } from '../cluster/model.js';
import type { ClusterGateway } from '../cluster/ports/cluster-gateway.js';
import {
  chosenForTermination,
  passedOverForTermination,
  terminationChoiceObserved,
  terminationDeferralExpired,
  terminationDeferred,
} from '../cluster/events/choice-events.js';
import { listed } from '../cluster/events/event-shapes.js';
import { openWindow } from '../shared/maintenance-windows.js';
import type { Confirmed, Outcome, TriggerContext } from '../trigger.js';
import { choose, type Candidate, type Choice, type Ranked } from './choose.js';
import { nodeCost, type NodeCost } from './cost-rules.js';

import { drainPlan } from '../cluster/rules/drain-plan.js';

import { deferredSinceMs, isCurrent, maxDeferralMs } from './deferral.js';
import type { ChoiceRequest } from './payload.js';

export interface ChoiceWork {
  readonly request: ChoiceRequest;
  /** Auto Scaling's own suggestion, as sent: the fail-open answer. */
  readonly fallback: readonly string[];
  /** Nothing is written after this: the answer is due. */
  readonly answerByMs: number;
}

/** At most this many nodes get a deferral mark and an Event per call. */
const maxMarked = 10;

const noNode: NodeCost = {
  blockers: [],
  points: 0,
  reasons: ['no node of the cluster under its EC2 name: nothing known to drain'],
  evicted: 0,
  unknown: true,
};

interface Decision {
  readonly w: Confirmed<ChoiceWork>;
  readonly ctx: TriggerContext;
  readonly cluster: ClusterGateway;
  readonly nodes: ReadonlyMap<string, NodeInfo>;
  readonly choice: Choice;
  /** Why nothing may go now, when a maintenance window is closed. */
  readonly closed: string | undefined;
}

export async function decide(w: Confirmed<ChoiceWork>, ctx: TriggerContext, observe: boolean): Promise<Outcome> {
  const { request } = w;
  const cluster = await ctx.cluster();
  const byInstance = await cluster.findNodesOfInstances(
    request.suggested.map((s) => s.instanceId),
    { scan: false },
  );
  const nodes = new Map([...byInstance.values()].map((n) => [n.name, n]));
  const pods = await cluster.podsForChoice([...nodes.keys()]);
  const { ruleOf } = drainPlan(
    [...pods.values()].flatMap((ps) => ps.map((p) => p.info)),
    ctx.config,
    ctx.clock.now(),
  );
  const candidates: Candidate[] = request.suggested.map((s) => {
    const node = byInstance.get(s.instanceId);
    return {
      suggestion: s,
      node: node?.name,
      cost: node === undefined ? noNode : nodeCost(pods.get(node.name) ?? [], request.group, node.labels, ruleOf),
    };
  });
  const closed = closedWindow(ctx);
  const d: Decision = {
    w,
    ctx,
    cluster,
    nodes,
    choice: choose(candidates, request.capacity, closed === undefined),
    closed,
  };
  ctx.log.info('termination policy ranked the candidates', {
    ranked: [...d.choice.chosen, ...d.choice.passedOver].map((r) => ({
      instanceId: r.suggestion.instanceId,
      node: r.node,
      points: r.cost.points,
      blockers: r.cost.blockers.map((b) => b.rule),
    })),
  });
  if (observe) return observed(d);
  if (d.choice.unfilled > 0 && d.choice.passedOver.length > 0) return defer(d);
  return chosen(d);
}

function closedWindow(ctx: TriggerContext): string | undefined {
  const { maintenanceWindows: windows, maintenanceTimeZone: zone } = ctx.config;
  if (windows === undefined || openWindow(windows, ctx.clock.now(), zone) !== undefined) return undefined;
  return `outside the maintenance windows (${windows.map((x) => x.text).join('; ')}, ${zone})`;
}

const why = (r: Ranked) =>
  r.cost.blockers.length > 0 ? listed(r.cost.blockers.map((b) => b.why)) : r.cost.reasons.join(', ');
const ref = (d: Decision, r: Ranked) => (r.node === undefined ? undefined : d.nodes.get(r.node));

function record(d: Decision, rs: readonly Ranked[], event: (node: NodeInfo, r: Ranked) => ClusterEvent): void {
  // Past the answer's time Auto Scaling got its own suggestion: an Event would tell another story.
  if (d.ctx.clock.now() > d.w.answerByMs) return;
  for (const r of rs.slice(0, maxMarked)) {
    const node = ref(d, r);
    if (node !== undefined) void d.cluster.record(event(node, r));
  }
}

function chosen(d: Decision): Outcome {
  const { choice, ctx } = d;
  const cause = d.w.request.cause;
  const of = choice.chosen.length + choice.passedOver.length;
  record(d, choice.chosen, (n, r) => chosenForTermination(n, cause, r.rank, of, why(r)));
  record(d, choice.passedOver, (n, r) => passedOverForTermination(n, cause, why(r)));
  ctx.metrics?.emit(
    { Transition: 'termination-policy', Outcome: 'chosen' },
    { TerminationsChosen: { unit: 'Count', value: choice.chosen.length } },
  );
  ctx.log.info('termination policy chose the cheapest departures', {
    chosen: choice.chosen.map((r) => r.suggestion.instanceId),
  });
  return { status: 'choice-made', answer: choice.chosen.map((r) => r.suggestion.instanceId) };
}

async function defer(d: Decision): Promise<Outcome> {
  const { choice, ctx, w } = d;
  const { cause, group } = w.request;
  const nowMs = ctx.clock.now();
  const maxMs = maxDeferralMs(ctx.config.terminationDeferralMaxSeconds, cause);
  const passed = choice.passedOver.flatMap((r) => ref(d, r) ?? []);
  const sinceMs = deferredSinceMs(passed, group, nowMs, maxMs) ?? nowMs;
  if (nowMs - sinceMs >= maxMs) {
    record(d, choice.passedOver, (n) => terminationDeferralExpired(n, cause, Math.round((nowMs - sinceMs) / 1000)));
    ctx.metrics?.emit(
      { Transition: 'termination-policy', Outcome: 'deferral-expired' },
      { TerminationDeferralsExpired: { unit: 'Count', value: 1 } },
    );
    ctx.log.warn("termination deferred for its maximum; answering Auto Scaling's own suggestion", {
      deferredSeconds: Math.round((nowMs - sinceMs) / 1000),
    });
    return { status: 'choice-deferral-expired', answer: w.fallback };
  }
  const fresh = passed.filter((n) => !isCurrent(n.deferral, group, nowMs, maxMs)).slice(0, maxMarked);
  // Marks only while the answer can still wait for them; a late one would outlive the call.
  if (ctx.clock.now() < w.answerByMs - 300) {
    await Promise.all(fresh.map((n) => d.cluster.markDeferred(n, { sinceMs, group }, ctx.config.deploymentName)));
  }
  const leftSeconds = Math.round((sinceMs + maxMs - nowMs) / 1000);
  const firstTime = new Set(fresh.map((n) => n.name));
  record(
    d,
    choice.passedOver.filter((r) => r.node !== undefined && firstTime.has(r.node)),
    (n, r) => terminationDeferred(n, cause, d.closed ?? why(r), leftSeconds),
  );
  const of = choice.chosen.length + choice.passedOver.length;
  record(d, choice.chosen, (n, r) => chosenForTermination(n, cause, r.rank, of, why(r)));
  ctx.metrics?.emit(
    { Transition: 'termination-policy', Outcome: 'deferred' },
    { TerminationsDeferred: { unit: 'Count', value: choice.unfilled } },
  );
  ctx.log.info('termination deferred: every other candidate is costly or the window is closed', {
    unfilled: choice.unfilled,
    chosen: choice.chosen.length,
    leftSeconds,
  });
  return { status: 'choice-deferred', answer: choice.chosen.map((r) => r.suggestion.instanceId) };
}

function observed(d: Decision): Outcome {
  const { choice } = d;
  const cause = d.w.request.cause;
  record(d, choice.chosen, (n, r) =>
    terminationChoiceObserved(n, cause, `would choose this node (rank ${r.rank}): ${why(r)}`),
  );
  record(d, choice.passedOver, (n, r) =>
    terminationChoiceObserved(n, cause, `would pass this node over: ${d.closed ?? why(r)}`),
  );
  d.ctx.log.info(
    "observe mode: the termination policy's choice was said in Events; answering Auto Scaling's own suggestion",
    {
      wouldChoose: choice.chosen.map((r) => r.suggestion.instanceId),
    },
  );
  return { status: 'choice-observed', answer: d.w.fallback };
}
