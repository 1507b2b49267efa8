// The load-balancer half of the settle phase. The exclusion label (set when the drain began)
// makes the AWS Load Balancer Controller and the in-tree service controller deregister the
// instance; a target group then drains its connections for its deregistration delay (300 s by
// default). We read the load balancers the cluster serves and release the instance once none
// still has it registered or draining: no sooner than the minimum after the drain (the
// controllers get time to react), no later than the maximum. What held at the last look is kept
// in the drain record, so a hand-off resumes the same wait and a failed look after it keeps that
// reading. A load balancer that could not be read holds the instance at least the fixed
// LOAD_BALANCER_DELAY_SECONDS; never read at all (WAIT_FOR_TARGETS=false, the API denied or
// failing from the first look) the fixed delay applies, as managed node groups do.
// Requested of the Node Termination Handler since 2020: https://github.com/aws/aws-node-termination-handler/issues/316
import type { TargetsReading } from '../cluster/model.js';
import {
  targetsDeregistered,
  targetsNotDeregistered,
  targetsNotRead,
  waitingForTargets,
} from '../cluster/events/settle-events.js';
import type { TargetHold, TargetReading } from '../shared/aws-ports.js';
import type { Drained, Run } from './state.js';
import type { SharedTargets } from './shared-targets.js';
import { readTargets, sharedTargetsOf, within } from './target-reads.js';
import { callBudget, pollIntervalMs, readBudgetMs } from './target-wait-pace.js';

const seconds = (ms: number) => Math.max(0, Math.round(ms / 100) / 10);

const known = (holds: readonly TargetHold[]) => holds.filter((h) => h.state !== 'unknown');

export class TargetWait {
  private mode: 'fixed' | 'targets';
  /** What held at the last reading (those unread carry state `unknown`); undefined: never read. */
  private holds: readonly TargetHold[] | undefined;
  private readonly seen = new Map<string, TargetHold>();
  private readonly let: { name: string; seconds: number }[] = [];
  private nextLookMs = 0;
  private told = 0;
  private firstLookMs = 0;
  private readAtMs = 0;
  private failedSince = false;
  private looks = 0;
  private readonly callsBefore: number;
  /** AWS calls this invocation made for the wait (and, as the shared reader, for everyone's). */
  calls = 0;
  private readonly shared: SharedTargets | undefined;
  /** The last look was the deployment's shared readings (no budget of its own then). */
  private sharing = false;
  /** A fixed delay fallen back to after an answer keeps the minimum wait an answer brings. */
  private fixedFloorMs = 0;
  /** Why this invocation fell back to the fixed delay, until the Event says it (once). */
  private fellBack: string | undefined;

  constructor(
    private readonly run: Run,
    private readonly d: Drained,
    /** When this invocation hands on (infinite without a hand-off path). */
    private readonly stopAtMs: number,
  ) {
    this.mode =
      d.deadlines.loadBalancerWait !== undefined && run.deps.loadBalancers !== undefined ? 'targets' : 'fixed';
    this.shared = this.mode === 'targets' ? sharedTargetsOf(run) : undefined;
    const last = d.record.targets;
    this.callsBefore = last?.calls ?? 0;
    if (last !== undefined && this.mode === 'targets') {
      // An earlier invocation read them: its reading stands until this one reads again.
      this.holds = last.holds;
      this.readAtMs = this.firstLookMs = last.atMs;
      for (const h of last.holds) this.seen.set(h.id, h);
    }
  }

  // The floors too end by the settle end: a drain that ended late (its last pass at the deadline
  // takes seconds) leaves less than them, and waking past it eats the margin kept to complete.
  private get minUntilMs(): number {
    return Math.min(
      this.d.drainedAtMs + (this.d.deadlines.loadBalancerWait?.minMs ?? 0),
      this.d.deadlines.settleEndMs ?? Infinity,
    );
  }

  private get maxUntilMs(): number {
    return Math.min(
      this.d.drainedAtMs + (this.d.deadlines.loadBalancerWait?.maxMs ?? 0),
      this.d.deadlines.settleEndMs ?? Infinity,
    );
  }

  private get fixedUntilMs(): number {
    return Math.min(
      Math.max(this.d.drainedAtMs + this.d.deadlines.loadBalancerDelayMs, this.fixedFloorMs),
      this.d.deadlines.settleEndMs ?? Infinity,
    );
  }

  /**
   * Reads the load balancers when a look is due, and only when the reading can end in time:
   * before the maximum and before this invocation hands on (the next one reads then).
   */
  async look(now: number): Promise<void> {
    if (this.mode === 'fixed' || now < this.nextLookMs || now >= this.maxUntilMs) return;
    if (this.holds !== undefined && this.holds.length === 0) return;
    if (now + readBudgetMs > this.maxUntilMs) {
      if (this.holds === undefined)
        return this.fallBack('no time was left for a reading before LOAD_BALANCER_MAX_WAIT_SECONDS', undefined);
      this.nextLookMs = Number.POSITIVE_INFINITY; // the last reading stands until the end
      return;
    }
    if (now + readBudgetMs > this.stopAtMs) {
      // The next invocation looks, when one has time for a reading at all; invocations too
      // short for any reading (the stretch before the hand-off is under a reading's budget)
      // would hand the look on forever: the fixed delay then, or the last reading stands.
      if (this.stopAtMs - this.run.startedMs >= readBudgetMs) this.nextLookMs = this.stopAtMs;
      else if (this.holds === undefined)
        this.fallBack('each invocation is too short for a reading before it hands on', undefined);
      else this.nextLookMs = Number.POSITIVE_INFINITY;
      return;
    }
    if (!this.sharing && this.callsBefore + this.calls >= callBudget) {
      if (this.nextLookMs !== Number.POSITIVE_INFINITY)
        this.run.deps.log.warn(
          'the load-balancer wait used its ELB call budget; the last reading stands until the maximum wait',
          {
            calls: this.callsBefore + this.calls,
            callBudget,
          },
        );
      this.nextLookMs = Number.POSITIVE_INFINITY;
      if (this.holds === undefined) this.fallBack('the ELB call budget was used up', undefined);
      return;
    }
    const untilMs = Math.min(this.maxUntilMs, this.stopAtMs);
    const look = await within(
      readTargets(this.run, this.d, { holds: this.holds, shared: this.shared, untilMs }),
      untilMs - now,
    );
    const { reading } = look;
    this.calls += reading.calls;
    this.sharing = look.nextAtMs !== undefined;
    const after = this.run.deps.clock.now();
    if (!reading.read) return this.failed(reading, after);
    this.failedSince = false;
    this.took(reading.holds, reading.unread, after, look.pending);
    this.nextLookMs = look.nextAtMs ?? after + pollIntervalMs(this.looks++);
  }

  /** The shared reader's turn given back, the readings' watch closed. */
  async close(): Promise<void> {
    await this.shared?.close();
  }

  private failed(reading: Extract<TargetReading, { read: false }>, after: number): void {
    // Never read (the shared reader had not read them yet, or could not, and now ELB denies it): as a first look. A
    // group pending would otherwise hold until the maximum, though nothing will read it.
    const neverRead =
      this.holds === undefined ||
      (reading.denied && this.holds.every((h) => h.state === 'pending' || h.state === 'unknown'));
    if (neverRead) {
      // After an answer (this invocation's or one a hand-off carried), the minimum wait it brought still holds.
      if (this.holds !== undefined) this.fixedFloorMs = this.minUntilMs;
      return this.fallBack(reading.denied ? 'access denied' : 'unavailable', reading);
    }
    // Read before (here or in an earlier invocation): the last reading stands; look again later.
    if (!this.failedSince)
      this.run.deps.log.warn(
        'could not read the load balancers again; the last reading stands and they are read again',
        { error: reading.error },
      );
    this.failedSince = true;
    this.nextLookMs = after + pollIntervalMs(this.looks++);
  }

  private took(
    holds: readonly TargetHold[],
    unread: readonly TargetHold[],
    after: number,
    pending: readonly TargetHold[],
  ): void {
    for (const [id, hold] of this.seen) {
      const still = [holds, unread, pending].some((list) => list.some((h) => h.id === id));
      if (!still && !this.let.some((x) => x.name === hold.name))
        this.let.push({ name: hold.name, seconds: seconds(after - this.d.drainedAtMs) });
    }
    for (const h of holds) this.seen.set(h.id, h);
    if (this.holds === undefined) this.firstLookMs = after;
    // An unread one keeps the state it had (or `unknown`): it is read again at the next look. One
    // the shared reader has not read since this wait began holds as it was (`pending` at first).
    const pendingState = (p: TargetHold) => {
      const last = this.seen.get(p.id);
      return last !== undefined && last.state !== 'unknown' ? last : { ...p, state: 'pending' };
    };
    this.holds = [...holds, ...pending.map(pendingState), ...unread.map((u) => this.seen.get(u.id) ?? u)];
    this.readAtMs = after;
    if (unread.length > 0)
      this.run.deps.log.warn(
        'could not read some load balancers; they hold the instance at least LOAD_BALANCER_DELAY_SECONDS and are ' +
          'read again',
        {
          unread: unread.map((u) => u.name),
        },
      );
  }

  /** Never read: the fixed delay, as without the feature. */
  private fallBack(why: string, reading: Extract<TargetReading, { read: false }> | undefined): void {
    this.mode = 'fixed';
    this.fellBack = why;
    const hint = reading?.denied
      ? ': the role needs the elasticloadbalancing Describe actions, and RBAC list on targetgroupbindings and services'
      : '';
    this.run.deps.log.warn(
      `could not read the load balancers (${why}${hint}); waiting the fixed LOAD_BALANCER_DELAY_SECONDS instead`,
      {
        error: reading?.error,
        loadBalancerDelaySeconds: this.d.deadlines.loadBalancerDelayMs / 1000,
      },
    );
  }

  done(now: number): boolean {
    if (this.mode === 'fixed') return now >= this.fixedUntilMs;
    if (now >= this.maxUntilMs) return true;
    if (this.holds === undefined || now < this.minUntilMs) return false;
    if (this.holds.length === 0) return true;
    // Only unread ones left, none of which held at an earlier look: the fixed delay is their
    // floor (one that held keeps its last state, so it holds until read again).
    return known(this.holds).length === 0 && now >= this.fixedUntilMs;
  }

  /** When something is next due: a look, the minimum, the maximum or the fixed delay's end. */
  wakeMs(now: number): number {
    if (this.mode === 'fixed') return this.fixedUntilMs;
    if (this.holds === undefined) return Math.max(now, Math.min(this.nextLookMs, this.maxUntilMs));
    if (this.holds.length === 0) return this.minUntilMs;
    return Math.min(
      this.nextLookMs,
      this.maxUntilMs,
      known(this.holds).length === 0 ? Math.max(this.fixedUntilMs, this.minUntilMs) : Infinity,
    );
  }

  /** What held at the last look, for the record a hand-off leaves. */
  reading(): TargetsReading | undefined {
    if (this.mode === 'fixed' || this.holds === undefined) return undefined;
    return { atMs: this.readAtMs, holds: this.holds.map((h) => ({ ...h })), calls: this.callsBefore + this.calls };
  }

  /** Said after the first look of an invocation that begins the wait. */
  async announce(): Promise<void> {
    const { log, events } = this.run.deps;
    if (this.mode === 'fixed') {
      log.info('waiting for load balancers to deregister the node', {
        seconds: this.d.deadlines.loadBalancerDelayMs / 1000,
      });
      return;
    }
    const holds = this.holds ?? [];
    log.info('waiting for load balancers to let the instance go', {
      holding: holds.map((h) => ({ name: h.name, state: h.state })),
      calls: this.calls,
    });
    if (holds.length > 0) await events.record(waitingForTargets(this.d.node, holds));
  }

  /** Tells what let the instance go and after how long (once each), and at the end what still held it. */
  async report(o: { readonly final: boolean }): Promise<{ readonly seconds: number | undefined }> {
    const { log, events } = this.run.deps;
    if (this.mode === 'fixed') {
      // The log alone said it: a release on the fixed delay, unconfirmed, is told where people look (the node).
      const why = this.fellBack;
      this.fellBack = undefined;
      if (why !== undefined)
        await events.record(targetsNotRead(this.d.node, why, seconds(this.fixedUntilMs - this.d.drainedAtMs)));
      return { seconds: undefined };
    }
    const untold = this.let.slice(this.told);
    this.told = this.let.length;
    if (untold.length > 0) {
      log.info('load balancers let the instance go', { deregistered: untold, calls: this.calls });
      await events.record(targetsDeregistered(this.d.node, untold));
    }
    const left = this.holds ?? [];
    if (o.final && left.length > 0) {
      const maxSeconds = seconds(this.maxUntilMs - this.d.drainedAtMs);
      log.warn(
        'releasing while load balancers still hold the instance (LOAD_BALANCER_MAX_WAIT_SECONDS), or could not be read',
        { holding: left, calls: this.calls },
      );
      await events.record(targetsNotDeregistered(this.d.node, left, maxSeconds));
    }
    if (this.let.length > 0) return { seconds: Math.max(...this.let.map((x) => x.seconds)) };
    // Nothing held at this invocation's first look: none ever did (0), or, for a wait an
    // earlier invocation began, it let go by then.
    return {
      seconds:
        left.length > 0 ? undefined : this.d.result === undefined ? seconds(this.firstLookMs - this.d.drainedAtMs) : 0,
    };
  }
}
