// A model-based test (fast-check commands) of the drain record's state machine across hand-offs, Lambda retries,
// duplicate and lost deliveries and the reconciler: the real handler (router, the pipeline's phases, the reconciler)
// runs in the fake world (test/fakes/fake-world.ts) and after every command the record on the node is checked against
// a model of what it must be:
// - one timeline per drain: its source, notifiedAt and startedAt never change while it lasts (the reconciler that
//   resumes a lost chain starts a timeline of its own, by instance, dated when it resumed);
// - updatedAt only moves forward, and never past now; the evicted count only grows; once drained, it stays drained
//   at the same time with the same outcome;
// - a hand-off is claimed once: every hand-off published for a chain's n-th step carries the same claim;
// - at most one accepted completion of the lifecycle action, and no write to the node for it afterwards;
// - the reconciler resumes a chain exactly when no write came for longer than a live chain goes without one while
//   the action still waits, and takes the marks back once the action is over;
// - in the end, once every published hand-off is delivered and the reconciler has run, the action is completed
//   exactly once (or Auto Scaling ended it on its own timer) and no mark of ours is left.
import { fc } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { actionIdOfToken } from '../../../lambda/cluster/marks/action-id.js';
import { excludeFromLoadBalancersLabel } from '../../../lambda/cluster/marks/mark-keys.js';
import type { DrainRecord } from '../../../lambda/cluster/model.js';
import { staleAfterSeconds } from '../../../lambda/shared/resume-window.js';
import { freshRecordMs } from '../../../lambda/reconcile/owners.js';
import { numRuns } from '../../fakes/arbitraries.js';
import { handlerWorld, pdbBlocks, pod } from '../../fakes/fake-world.js';
import { scheduledEvent } from '../../fixtures/deliveries.js';
import { handOffDeploymentEnv, instanceId, lifecycleMessage } from '../../fixtures/notifications.js';

const heartbeatSeconds = 1800;
const env = {
  ...handOffDeploymentEnv,
  HEARTBEAT_TIMEOUT_SECONDS: String(heartbeatSeconds),
  DRAIN_TIMEOUT_SECONDS: '3600',
  LOAD_BALANCER_DELAY_SECONDS: '20',
  WAIT_FOR_VOLUME_DETACH: 'false',
  DEADLINE_POLICY: 'leave',
};
const token = '71cd9f4c-aaaa-bbbb-cccc-ddddeeeeffff';
const staleAfterMs =
  staleAfterSeconds({ heartbeatTimeoutSeconds: heartbeatSeconds, invocationMarginSeconds: 20 }) * 1000;

type World = ReturnType<typeof handlerWorld>;

/** What the record must be, as the model knows it from the commands so far. */
interface Model {
  /** The timeline of the drain on the node: its source's action id, and the times it keeps. */
  timeline: { actionId: string; notifiedAtMs: number; startedAtMs: number } | undefined;
  drained: DrainRecord['drained'];
  evicted: number;
  updatedAtMs: number;
  /** The claims seen per chain step (`action/count`). */
  claims: Map<string, Set<string>>;
  completedAtMs: number | undefined;
  /** Auto Scaling ended the action on its own timer (no heartbeat for the heartbeat timeout). */
  timedOut: boolean;
  /** A record of this action was ever on the node: from then on the action is ours to keep alive. */
  everMarked: boolean;
  invocations: number;
  lastInvocation: { message: Record<string, unknown>; requestId: string } | undefined;
}

interface Real {
  readonly w: World;
  /** When Auto Scaling last heard of the action (the notification, then each heartbeat). */
  lastBeatMs(): number;
}

const recordOf = (w: World) => w.cluster.nodes.get('node-a')?.drain;

/** Every invariant of the record, checked against the model after each command (and the model moved on). */
function check(m: Model, r: Real): void {
  const { w } = r;
  const now = w.clock.now();
  const record = recordOf(w);
  const completions = w.lifecycle.completions.filter(
    (c) => c.action.lifecycleActionToken === token || c.action.instanceId === instanceId,
  );
  expect(completions.length).toBeLessThanOrEqual(1);
  if (completions.length === 1 && m.completedAtMs === undefined) m.completedAtMs = completions[0]!.atMs;
  for (const sent of w.handOffs.sent) {
    const h = sent['GracefulNodeTerminationHandOff'] as { count: number; claim?: string } | undefined;
    if (h?.claim === undefined) continue;
    const [action, count] = h.claim.split('/');
    const key = `${action}/${count}`;
    m.claims.set(key, (m.claims.get(key) ?? new Set()).add(h.claim));
    expect(m.claims.get(key)!.size, `hand-off ${key} claimed by more than one invocation`).toBe(1);
  }
  if (record === undefined) {
    m.timeline = undefined;
    m.drained = undefined;
    m.evicted = 0;
    return;
  }
  m.everMarked = true;
  expect(record.updatedAtMs).toBeLessThanOrEqual(now);
  if (m.completedAtMs !== undefined)
    expect(record.updatedAtMs, 'a write after the completion').toBeLessThanOrEqual(m.completedAtMs);
  const actionId = record.source.kind === 'marked-ahead' ? '' : record.source.actionId;
  if (m.timeline === undefined || m.timeline.actionId !== actionId || m.timeline.startedAtMs !== record.startedAtMs) {
    // A new timeline: only the first drain of the action, or the reconciler's resumed one (by instance, dated now).
    if (m.timeline !== undefined) {
      expect(record.source.kind, `the timeline of ${m.timeline.actionId} changed under it`).toBe('resumed');
      expect(record.startedAtMs).toBeGreaterThan(m.timeline.startedAtMs);
    }
    m.timeline = { actionId, notifiedAtMs: record.notifiedAtMs, startedAtMs: record.startedAtMs };
    m.drained = record.drained;
    m.evicted = record.evicted ?? 0;
    m.updatedAtMs = record.updatedAtMs;
    return;
  }
  expect(record.notifiedAtMs).toBe(m.timeline.notifiedAtMs);
  expect(record.updatedAtMs).toBeGreaterThanOrEqual(m.updatedAtMs);
  expect(record.evicted ?? 0).toBeGreaterThanOrEqual(m.evicted);
  if (m.drained !== undefined) expect(record.drained).toEqual(m.drained);
  m.drained = record.drained;
  m.evicted = record.evicted ?? 0;
  m.updatedAtMs = record.updatedAtMs;
}

/**
 * Auto Scaling's own timer: with no heartbeat for the heartbeat timeout the action ends (DefaultResult). Once our
 * drain has begun that must never happen while the reconciler runs on its schedule: it resumes a lost chain in time.
 */
function hookTimer(m: Model, r: Real): void {
  if (m.completedAtMs !== undefined || m.timedOut) return;
  if (r.w.clock.now() - r.lastBeatMs() <= heartbeatSeconds * 1000) return;
  expect(m.everMarked, "a drain of ours was left to the hook's timeout").toBe(false);
  m.timedOut = true;
  r.w.lifecycle.expire(token);
  r.w.terminating.delete(instanceId);
  r.w.groups.delete(instanceId);
}

async function invoke(m: Model, r: Real, message: Record<string, unknown>, seconds: number, requestId?: string) {
  hookTimer(m, r);
  const id = requestId ?? `request-${++m.invocations}`;
  m.lastInvocation = { message, requestId: id };
  await r.w.invoke(r.w.handler(), message, seconds * 1000, id).catch(() => undefined);
  hookTimer(m, r);
}

/** The notification, delivered (again) in an invocation of the given length. */
class Notify implements fc.AsyncCommand<Model, Real> {
  constructor(readonly seconds: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    await invoke(m, r, lifecycleMessage(), this.seconds);
    check(m, r);
  }
  toString = () => `Notify(${this.seconds}s)`;
}

/** One of the hand-offs published so far (the latest, an older one, a duplicate), delivered. */
class DeliverHandOff implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly back: number,
    readonly seconds: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const sent = r.w.handOffs.sent;
    const message = sent[Math.max(0, sent.length - 1 - this.back)];
    if (message !== undefined) await invoke(m, r, message, this.seconds);
    check(m, r);
  }
  toString = () => `DeliverHandOff(back ${this.back}, ${this.seconds}s)`;
}

/** The invocation's publish of its hand-off fails (SNS unreachable): it crashes after claiming, Lambda retries it. */
class CrashOnPublish implements fc.AsyncCommand<Model, Real> {
  constructor(readonly seconds: number) {}
  check = (m: Readonly<Model>) => m.lastInvocation !== undefined;
  async run(m: Model, r: Real) {
    const send = r.w.handOffs.send.bind(r.w.handOffs);
    r.w.handOffs.send = async () => {
      throw new Error('SNS unreachable');
    };
    try {
      const latest = r.w.handOffs.sent.at(-1) ?? lifecycleMessage();
      await invoke(m, r, latest, this.seconds);
    } finally {
      r.w.handOffs.send = send;
    }
    check(m, r);
  }
  toString = () => `CrashOnPublish(${this.seconds}s)`;
}

/** Lambda retries the last invocation with the same request id (it failed or timed out, as Lambda saw it). */
class Retry implements fc.AsyncCommand<Model, Real> {
  constructor(readonly seconds: number) {}
  check = (m: Readonly<Model>) => m.lastInvocation !== undefined;
  async run(m: Model, r: Real) {
    const last = m.lastInvocation!;
    await invoke(m, r, last.message, this.seconds, last.requestId);
    check(m, r);
  }
  toString = () => `Retry(${this.seconds}s)`;
}

/** A reconciler pass; the model says beforehand what it must do with the record. */
async function pass(m: Model, r: Real): Promise<void> {
  hookTimer(m, r);
  const before = recordOf(r.w);
  const now = r.w.clock.now();
  const idleMs = before === undefined ? 0 : now - before.updatedAtMs;
  const actionWaits = r.w.terminating.has(instanceId) && !m.timedOut && m.completedAtMs === undefined;
  const instanceGone = !r.w.groups.has(instanceId);
  const sentBefore = r.w.handOffs.sent.length;
  await r.w.invokeRaw(r.w.handler(), scheduledEvent());
  const after = recordOf(r.w);
  if (before !== undefined && idleMs >= freshRecordMs && instanceGone)
    expect(after, 'the marks of an action that is over stay').toBeUndefined();
  if (before !== undefined && actionWaits && idleMs > staleAfterMs) {
    expect(after?.source.kind, 'a lost chain was not resumed').toBe('resumed');
    expect(r.w.handOffs.sent.length).toBe(sentBefore + 1);
  }
  if (before !== undefined && actionWaits && idleMs <= staleAfterMs) expect(after).toEqual(before);
  check(m, r);
}

/** A pass at any moment (a duplicated schedule, a manual run). */
class Reconcile implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  run = pass;
  toString = () => 'Reconcile';
}

/** Time passes with no delivery (each one lost or delayed), the reconciler running on its schedule meanwhile. */
class Wait implements fc.AsyncCommand<Model, Real> {
  constructor(readonly seconds: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const until = r.w.clock.now() + this.seconds * 1000;
    for (let next = nextPassMs(r); next <= until; next = nextPassMs(r)) {
      r.w.clock.advanceTo(next);
      await pass(m, r);
    }
    r.w.clock.advanceTo(until);
    hookTimer(m, r);
    check(m, r);
  }
  toString = () => `Wait(${this.seconds}s)`;
}

/** The reconciler's schedule: every five minutes (the default, which fits this heartbeat timeout). */
const nextPassMs = (r: Real) => (Math.floor(r.w.clock.now() / 300_000) + 1) * 300_000;

const commandsArb = fc.commands(
  [
    fc.constantFrom(20, 60, 300, 900).map((s) => new Notify(s)),
    fc.tuple(fc.nat(2), fc.constantFrom(20, 60, 300, 900)).map(([back, s]) => new DeliverHandOff(back, s)),
    fc.constantFrom(20, 900).map((s) => new Retry(s)),
    fc.constantFrom(20, 60).map((s) => new CrashOnPublish(s)),
    fc.constant(new Reconcile()),
    fc.constantFrom(30, 300, 1000, 2400).map((s) => new Wait(s)),
  ],
  { maxCommands: 12 },
);

/** The world: node-a leaving (its action waits), a web pod whose budget opens at a generated time, a Job's pod. */
function setup(budgetOpensAfterSeconds: number, jobSeconds: number | undefined) {
  const w = handlerWorld(env);
  const t0 = w.clock.now();
  w.cluster.addNode('node-a', instanceId);
  w.groups.set(instanceId, 'workers');
  w.terminating.add(instanceId);
  const web = w.cluster.addPod(pod({ name: 'web' }));
  let open = false;
  w.cluster.evictionRules.push((p) => (p.uid === web.uid && !open ? pdbBlocks('web-pdb', () => true)(p) : 'accept'));
  w.clock.at(t0 + budgetOpensAfterSeconds * 1000, () => (open = true));
  if (jobSeconds !== undefined) {
    const job = w.cluster.addPod(pod({ name: 'etl', controllerKind: 'Job' }));
    w.clock.at(t0 + jobSeconds * 1000, () => w.cluster.finishPod(job.uid));
  }
  const real: Real = {
    w,
    lastBeatMs: () => Math.max(t0, ...w.lifecycle.heartbeats.map((h) => h.atMs)),
  };
  const model: Model = {
    timeline: undefined,
    drained: undefined,
    evicted: 0,
    updatedAtMs: 0,
    claims: new Map(),
    completedAtMs: undefined,
    timedOut: false,
    everMarked: false,
    invocations: 0,
    lastInvocation: undefined,
  };
  return { model, real };
}

/** Delivers what is pending and runs the reconciler, as time goes on, until the action is over. */
async function finish(m: Model, r: Real): Promise<void> {
  for (let round = 0; round < 40 && m.completedAtMs === undefined && !m.timedOut; round++) {
    const latest = r.w.handOffs.sent.at(-1);
    if (latest !== undefined) await invoke(m, r, latest, 900);
    check(m, r);
    if (m.completedAtMs !== undefined || m.timedOut) break;
    r.w.clock.advanceTo(r.w.clock.now() + 300_000);
    hookTimer(m, r);
    await r.w.invokeRaw(r.w.handler(), scheduledEvent());
    check(m, r);
  }
}

describe("the drain record's state machine (model-based)", () => {
  it('keeps one timeline per drain, claims each hand-off once, never leaves a begun drain to the hook timer, completes once, and leaves no mark', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 5400 }),
        fc.option(fc.integer({ min: 0, max: 3600 }), { nil: undefined }),
        commandsArb,
        async (budgetOpensAfter, jobSeconds, commands) => {
          const { model, real } = setup(budgetOpensAfter, jobSeconds);
          await fc.asyncModelRun(() => ({ model, real }), commands);
          await finish(model, real);
          const done = model.completedAtMs !== undefined || model.timedOut;
          expect(done, 'the action is neither completed nor over').toBe(true);
          if (model.completedAtMs !== undefined)
            expect(real.w.lifecycle.completions).toEqual([expect.objectContaining({ result: 'CONTINUE' })]);
          // The instance goes; the reconciler takes back whatever is left once the action is over.
          real.w.terminating.delete(instanceId);
          real.w.groups.delete(instanceId);
          real.w.clock.advanceTo(real.w.clock.now() + freshRecordMs);
          await real.w.invokeRaw(real.w.handler(), scheduledEvent());
          const node = real.w.cluster.nodes.get('node-a')!;
          expect(node.drain).toBeUndefined();
          expect(node.labels[excludeFromLoadBalancersLabel]).toBeUndefined();
          expect(node.unschedulable).toBe(false);
          expect(actionIdOfToken(token)).toMatch(/^sha256:/);
        },
      ),
      { numRuns: numRuns(40) },
    );
  });

  it('a hand-off of the chain the reconciler resumed, delivered late, stands down (found by the model, replayPath m:B)', async () => {
    const { model, real } = setup(0, undefined);
    const w = real.w;
    await invoke(model, real, lifecycleMessage(), 20);
    const late = w.handOffs.sent.at(-1)!;
    w.clock.advanceTo(w.clock.now() + 1000_000);
    await w.invokeRaw(w.handler(), scheduledEvent());
    const resumed = recordOf(w)!;
    expect(resumed.source.kind).toBe('resumed');
    const result = await w.invoke(w.handler(), late, 900_000, 'request-late');
    expect(result.records[0]!.status).toBe('superseded');
    expect(recordOf(w)).toEqual(resumed);
    // The reconciler's own hand-off carries the action to its one completion.
    await invoke(model, real, w.handOffs.sent.at(-1)!, 900);
    expect(w.lifecycle.completions).toHaveLength(1);
  });
});
