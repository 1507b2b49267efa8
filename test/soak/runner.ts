// One soak run: the scenario's world on the plane, its timeline played at its times (real time),
// the reconciler's schedule, then the end: faults off, every action left to finish (a lost chain
// waited for by skipping soak time to when the reconciler takes it for lost, as its schedule
// would), soak time moved past the reconciler's two minutes for young records and one last pass;
// then the observations read and every invariant checked.
import { StorageV1Api } from '@kubernetes/client-node';
import type { PlaneInfo } from '../cluster/plane/plane.js';
import { byDrainer, readAudit } from '../cluster/kube.js';
import type { SoakClock } from './clock.js';
import { invariants } from './invariants/index.js';
import type { Observations, Violation } from './observations.js';
import { nodeState } from './recorder.js';
import type { DeliveryFate, NodeSpec, Scenario, TimedEvent } from './scenario.js';
import { startWorld, type World } from './world.js';

export interface RunResult {
  readonly scenario: Scenario;
  readonly run: number;
  readonly observations: Observations;
  readonly violations: readonly Violation[];
  /** What each timeline event did (or why it was skipped). */
  readonly played: readonly { readonly event: TimedEvent; readonly outcome: string }[];
  readonly stats: Record<string, number>;
  readonly durationMs: number;
  /** The handler's log lines, in the order they came. */
  readonly logs: readonly Record<string, unknown>[];
  /** Every invocation and delivery Lambda made (--keep writes them). */
  readonly lambda: { readonly invocations: readonly unknown[]; readonly deliveries: readonly unknown[] };
}

export interface RunOptions {
  readonly plane: PlaneInfo;
  readonly run: number;
  readonly clock: SoakClock;
  readonly say: (line: string) => void;
  /** How long the end may take to let every action finish (real time). */
  readonly settleLimitMs?: number;
}

const once: DeliveryFate = { delayMs: 0, duplicateDelaysMs: [], killAfterMs: [], lost: false };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

export async function runScenario(scenario: Scenario, o: RunOptions): Promise<RunResult> {
  const { clock, say } = o;
  const t0 = clock.realNow();
  const world = await startWorld({ plane: o.plane, scenario, run: o.run, clock, say });
  try {
    const startMs = clock.realNow();
    const played: { event: TimedEvent; outcome: string }[] = [];
    const schedule = setInterval(
      () => world.autoScaling.reconcile(once),
      scenario.settings.reconcileIntervalMinutes * 60_000,
    );
    await Promise.all(
      scenario.timeline.map(async (event) => {
        await sleep(startMs + event.atMs - clock.realNow());
        const outcome = await play(world, event, clock).catch((error: unknown) => `failed: ${String(error)}`);
        played.push({ event, outcome });
        say(`+${((clock.realNow() - startMs) / 1000).toFixed(1)}s ${describe(event)}: ${outcome}`);
      }),
    );
    await sleep(startMs + scenario.minutes * 60_000 - clock.realNow());
    clearInterval(schedule);
    await settle(world, scenario, o);
    const observations = await observe(world, scenario, o, startMs);
    const violations = invariants.flatMap((i) => i.check(observations));
    return {
      scenario,
      run: o.run,
      observations,
      violations,
      played: played.sort((x, y) => x.event.atMs - y.event.atMs),
      stats: statsOf(world, played),
      durationMs: clock.realNow() - t0,
      logs: world.logs,
      lambda: { invocations: world.lambda.invocations, deliveries: world.lambda.deliveries },
    };
  } finally {
    await world.stop();
    await cleanUp(world);
  }
}

/** Groups with an instance refresh under way (one at a time, as Auto Scaling allows). */
const refreshing = new Set<string>();

/** One event of the timeline, on the world as it is now; what happened, in words. */
async function play(w: World, event: TimedEvent, clock: SoakClock): Promise<string> {
  const as = w.autoScaling;
  const at = (list: readonly NodeSpec[], pick: number) => list[Math.floor(pick * list.length)];
  switch (event.kind) {
    case 'scale-in': {
      const candidates = as.inService(event.group);
      if (candidates.length - event.count < 2) return 'skipped: the group is at its minimum';
      const chosen = event.viaPolicy
        ? await as.choose(event.group, event.pick, event.count, event.fate)
        : Array.from({ length: event.count }, (_, i) => at(candidates, (event.pick + i / candidates.length) % 1)!);
      if (chosen.length === 0) return 'the termination policy deferred it';
      for (const spec of chosen) as.terminate(spec, { lateSeconds: event.lateSeconds, fate: event.fate });
      return `terminating ${chosen.map((s) => s.name).join(', ')}${event.viaPolicy ? ' (the policy chose)' : ''}`;
    }
    case 'scale-out':
      await as.launch(event.node, event.fate);
      return `launched ${event.node.name}`;
    case 'spot-warning': {
      const spec = at(
        as.inService().filter((s) => s.spot),
        event.pick,
      );
      if (spec === undefined) return 'skipped: no Spot instance in service';
      as.spotWarning(spec, event.fate);
      return `warned ${spec.name}`;
    }
    case 'forged': {
      const spec = at(as.inService(), event.pick);
      if (spec === undefined) return 'skipped: no instance in service';
      as.forge(spec, event.what);
      return `forged for ${spec.name}`;
    }
    case 'warm-pool': {
      const candidates = as.inService(event.group);
      if (candidates.length < 3) return 'skipped: the group is at its minimum';
      const spec = at(candidates, event.pick)!;
      as.toWarmPool(spec, { backAfterMs: event.backAfterSeconds * 1000, fate: event.fate });
      return `into the warm pool: ${spec.name}, back in ${event.backAfterSeconds} s`;
    }
    case 'refresh': {
      const key = `${w.namespace}/${event.group}`;
      if (refreshing.has(key)) return 'skipped: a refresh of the group is under way';
      refreshing.add(key);
      const next = [...event.replacements];
      const launchNew = () => next.shift()!;
      const o = {
        strategy: event.strategy,
        cancelAfter: Math.min(event.cancelAfter ?? 6, 6),
        everyMs: event.everySeconds * 1000,
        fate: event.fate,
      };
      return as.refresh(event.group, o, launchNew).finally(() => refreshing.delete(key));
    }
    case 'rebalance': {
      const spec = at(as.inService(), event.pick);
      if (spec === undefined) return 'skipped: no instance in service';
      as.rebalance(spec);
      return `recommended for ${spec.name}`;
    }
    case 'reconcile':
      as.reconcile(event.fate);
      return 'pass sent';
    case 'job':
      await w.addWorkload(event.workload);
      return `started ${event.workload.name}`;
    case 'api-faults':
      w.faults.startApi(event.seconds, event.rates);
      return 'on';
    case 'aws-throttling':
      w.faults.startAws(event.service, event.seconds);
      return 'on';
    case 'clock-skip':
      return skipClock(w, event.seconds, clock);
  }
}

/**
 * Soak time jumps, once nothing is in flight (an invocation's own waits would jump with it),
 * never to within 90 s of a hook's timeout; the reconciler's schedule then runs the pass it
 * would have run meanwhile.
 */
async function skipClock(w: World, seconds: number, clock: SoakClock): Promise<string> {
  if (!(await waitQuiet(w, 30_000, clock.realNow))) return 'skipped: never quiet for 2 s';
  const skipMs = Math.min(seconds * 1000, w.autoScaling.soonestTimeoutSoakMs() - clock.now() - 90_000);
  if (skipMs <= 0) return "skipped: a hook's timeout is near";
  clock.skip(skipMs);
  w.autoScaling.tick();
  w.autoScaling.reconcile(once);
  return `soak time +${(skipMs / 1000).toFixed(0)} s, then a reconcile pass`;
}

export function describe(event: TimedEvent): string {
  const fate = (f: DeliveryFate) =>
    [
      f.delayMs ? `delayed ${(f.delayMs / 1000).toFixed(1)} s` : '',
      f.duplicateDelaysMs.length ? `duplicated x${f.duplicateDelaysMs.length}` : '',
      f.killAfterMs.some((k) => k !== undefined)
        ? `killed at ${f.killAfterMs.map((k) => (k === undefined ? '-' : `${(k / 1000).toFixed(1)}s`)).join('/')}`
        : '',
      f.lost ? 'lost' : '',
    ]
      .filter(Boolean)
      .join(', ');
  const withFate = (text: string, f: DeliveryFate) => (fate(f) ? `${text} [${fate(f)}]` : text);
  switch (event.kind) {
    case 'scale-in':
      return withFate(
        `#${event.id} scale-in ${event.group} by ${event.count}${event.viaPolicy ? ' via the policy' : ''}` +
          (event.lateSeconds ? `, notified ${event.lateSeconds} s late` : ''),
        event.fate,
      );
    case 'scale-out':
      return withFate(
        `#${event.id} scale-out ${event.node.group}: ${event.node.name}${event.node.spot ? ' (Spot)' : ''}`,
        event.fate,
      );
    case 'spot-warning':
      return withFate(`#${event.id} Spot interruption warning`, event.fate);
    case 'forged':
      return `#${event.id} forged ${event.what}`;
    case 'rebalance':
      return `#${event.id} rebalance recommendation`;
    case 'warm-pool':
      return withFate(
        `#${event.id} scale-in of ${event.group} into the warm pool, back after ${event.backAfterSeconds} s`,
        event.fate,
      );
    case 'refresh':
      return withFate(
        `#${event.id} instance refresh of ${event.group} (${event.strategy}` +
          (event.cancelAfter !== undefined ? `, cancelled after ${event.cancelAfter}` : '') +
          `, every ${event.everySeconds} s)`,
        event.fate,
      );
    case 'reconcile':
      return withFate(`#${event.id} reconcile pass`, event.fate);
    case 'job':
      return `#${event.id} ${event.workload.kind} ${event.workload.name}`;
    case 'api-faults': {
      const r = event.rates;
      return (
        `#${event.id} API faults for ${event.seconds} s: 429 ${r.throttled}, 503 ${r.unavailable}, ` +
        `timeout ${r.timeout}, reset ${r.reset}, watch drop ${r.watchDrop}`
      );
    }
    case 'aws-throttling':
      return `#${event.id} ${event.service} throttling for ${event.seconds} s`;
    case 'clock-skip':
      return `#${event.id} clock skip up to ${event.seconds} s`;
  }
}

/** Nothing in flight (no invocation running or about to), for 2 s. */
async function waitQuiet(w: World, limitMs: number, now: () => number): Promise<boolean> {
  const until = now() + limitMs;
  let quietSince = now();
  while (now() < until) {
    if (!w.lambda.idle()) quietSince = now();
    else if (now() - quietSince >= 2_000) return true;
    await sleep(250);
  }
  return false;
}

/** The end: faults off, every action finished (resumed by the reconciler when its chain was lost), the last pass. */
async function settle(w: World, scenario: Scenario, o: RunOptions): Promise<void> {
  const { clock, say } = o;
  w.faults.stop();
  const s = scenario.settings;
  // The reconciler takes a drain for lost S + 30 s after its last write (docs/limits.md).
  const staleAfterMs = (Math.min(900 - s.invocationMarginSeconds, 0.8 * s.heartbeatTimeoutSeconds) + 30) * 1000;
  const until = clock.realNow() + (o.settleLimitMs ?? 6 * 60_000);
  while (clock.realNow() < until) {
    if (w.autoScaling.openActions() === 0 && w.lambda.idle() && !w.autoScaling.timersPending()) break;
    if (w.autoScaling.openActions() > 0 && (await waitQuiet(w, 5_000, clock.realNow))) {
      const skipMs = Math.min(staleAfterMs + 5_000, w.autoScaling.soonestTimeoutSoakMs() - clock.now() - 30_000);
      if (skipMs > 0) {
        say(
          `nothing in flight with ${w.autoScaling.openActions()} action(s) open: soak time skips ` +
            `${(skipMs / 1000).toFixed(0)} s to the reconciler's next pass`,
        );
        clock.skip(skipMs);
        w.autoScaling.tick();
      }
      w.autoScaling.reconcile(once);
    }
    await sleep(1_000);
  }
  // Records younger than 2 minutes are left alone by a pass (docs/reconciler.md): one pass after that.
  await waitQuiet(w, 60_000, clock.realNow);
  clock.skip(130_000);
  w.autoScaling.tick();
  w.autoScaling.reconcile(once);
  await sleep(1_000);
  await waitQuiet(w, 60_000, clock.realNow);
  // Nodes of terminated instances go a few seconds after them.
  await sleep(12_000);
}

async function observe(w: World, scenario: Scenario, o: RunOptions, startMs: number): Promise<Observations> {
  const { clock } = o;
  const endMs = clock.realNow();
  for (const r of w.recorder.nodes.values()) {
    const node = await w.admin.core.readNode({ name: r.name }).catch(() => undefined);
    r.final = node === undefined ? undefined : nodeState(node);
    if (node === undefined) r.deletedMs ??= endMs;
  }
  await sleep(1_000);
  const ours = (e: { resource: string; name?: string | undefined; namespace?: string | undefined }) =>
    (e.resource === 'nodes' && w.recorder.nodes.has(e.name ?? '')) || e.namespace === w.namespace;
  const audit = readAudit(
    o.plane,
    (e) => byDrainer(e) && e.receivedMs >= startMs && e.resource !== 'events' && ours(e),
  );
  const firstAttempt = (label: string) =>
    Math.min(
      ...w.lambda.deliveries.filter((d) => d.label === label).flatMap((d) => d.attempts.map((a) => a.startedMs)),
    );
  const actions = w.autoScaling.actions.map((a) => {
    const first = firstAttempt(`${a.transition}:${a.token}`);
    return { ...a, firstInvokedMs: Number.isFinite(first) ? first : undefined };
  });
  const surgeDeployments = scenario.workloads
    .filter((x) => x.kind === 'deployment' && x.surge)
    .map((x) => `${w.namespace}/${x.name}`);
  return {
    settings: scenario.settings,
    deploymentName: w.deploymentName,
    namespace: w.namespace,
    startMs,
    endMs,
    endSoakMs: clock.now(),
    skips: [...clock.skips],
    audit,
    actions,
    releases: w.autoScaling.releases,
    launchAbandons: w.autoScaling.launchAbandons,
    pods: [...w.recorder.pods.values()],
    nodes: [...w.recorder.nodes.values()],
    events: w.recorder.events,
    policyCalls: w.autoScaling.policyCalls,
    spots: w.autoScaling.spots,
    refreshes: w.autoScaling.refreshes,
    instanceStates: w.autoScaling.instanceStates,
    targetReads: w.elb.calls
      .filter((c) => c.action === 'DescribeTargetHealth')
      .map((c) => ({
        atMs: c.atMs,
        answered: c.throttled !== true && !w.elb.failing.has(c.form['TargetGroupArn'] ?? ''),
      })),
    surgeDeployments,
  };
}

function statsOf(w: World, played: readonly { event: TimedEvent; outcome: string }[]): Record<string, number> {
  w.faults.countElb();
  const inv = w.lambda.invocations;
  const count = (message: string) => w.logCounts.get(message) ?? 0;
  return {
    events: played.length,
    eventsSkipped: played.filter((p) => p.outcome.startsWith('skipped')).length,
    invocations: inv.length,
    invocationsKilled: inv.filter((i) => i.outcome === 'killed').length,
    invocationsTimedOut: inv.filter((i) => i.outcome === 'timed-out').length,
    invocationsFailed: inv.filter((i) => i.outcome === 'failed').length,
    coldStarts: inv.filter((i) => i.cold).length,
    lambdaRetries: inv.filter((i) => i.attempt > 1).length,
    deliveriesDuplicated: w.lambda.deliveries.filter((d) => d.copy > 0).length,
    deliveriesLost: w.lambda.deliveries.filter((d) => d.lost).length,
    deliveriesGivenUp: w.lambda.deliveries.filter((d) => d.gaveUp && !d.lost).length,
    handOffsPublished: w.aws.calls.filter((c) => c.action === 'Publish').length,
    actions: w.autoScaling.actions.length,
    releases: w.autoScaling.releases.length,
    completionsRefused: w.autoScaling.actions.reduce((n, a) => n + a.completions.filter((c) => !c.accepted).length, 0),
    drainsResumed: count('resuming a drain whose hand-off chain was lost'),
    ...Object.fromEntries(Object.entries(w.faults.counts).map(([k, v]) => [`fault.${k}`, v])),
  };
}

/**
 * The run's nodes, their VolumeAttachments and the run's volumes go before the next run (the shrinker's runs of a
 * seed reuse its node names); the namespace goes in the background (the next run has its own).
 */
async function cleanUp(w: World): Promise<void> {
  const storage = w.admin.kc.makeApiClient(StorageV1Api);
  const nodes = new Set(w.recorder.nodes.keys());
  for (const name of nodes) await w.admin.core.deleteNode({ name }).catch(() => undefined);
  const attachments = await storage.listVolumeAttachment().catch(() => ({ items: [] }));
  for (const va of attachments.items.filter((v) => nodes.has(v.spec.nodeName)))
    await storage.deleteVolumeAttachment({ name: va.metadata!.name! }).catch(() => undefined);
  for (const pv of w.volumes.values()) await w.admin.core.deletePersistentVolume({ name: pv }).catch(() => undefined);
  void w.admin.core.deleteNamespace({ name: w.namespace }).catch(() => undefined);
}
