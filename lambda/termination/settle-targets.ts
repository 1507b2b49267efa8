// The load-balancer half of the settle phase. The exclusion label (set when the drain began)
// makes the AWS Load Balancer Controller and the in-tree service controller deregister the
// instance; a target group then drains its connections for its deregistration delay (300 s by
// default). We read the cluster's load balancers and release the instance once none still has
// it registered or draining: no sooner than the minimum after the drain (the controllers get
// time to react), no later than the maximum. Without the reading (WAIT_FOR_TARGETS=false, the
// API denied or failing) the fixed LOAD_BALANCER_DELAY_SECONDS applies, as managed node groups do.
// Requested of the Node Termination Handler since 2020: https://github.com/aws/aws-node-termination-handler/issues/316
import { targetsDeregistered, targetsNotDeregistered, waitingForTargets } from '../cluster/events.js';
import type { TargetHold, TargetReading } from '../shared/aws-ports.js';
import type { Drained, Run } from './state.js';

/** Looks get sparser as the wait goes on: 2 s, 3 s, 4.5 s, ... up to 10 s, jittered. */
export function pollIntervalMs(look: number, random: () => number = Math.random): number {
  return Math.round(Math.min(10_000, 2000 * 1.5 ** look) * (0.8 + 0.4 * random()));
}

const seconds = (ms: number) => Math.max(0, Math.round(ms / 100) / 10);

/** The longest one reading may take: two attempts of 3 s and the backoff between (runtime.ts). */
export const readBudgetMs = 8_000;

/** The reading, or a failed one once limitMs passed (the request may still answer; nobody waits). */
export async function within(reading: Promise<TargetReading>, limitMs: number): Promise<TargetReading> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<TargetReading>((resolve) => {
    // Node's timers hold at most 2^31 - 1 ms (a longer one would fire at once).
    timer = setTimeout(() => resolve({ read: false, denied: false, error: new Error(`no answer within ${limitMs} ms`), calls: 0 }), Math.min(limitMs, 2 ** 31 - 1));
  });
  try {
    return await Promise.race([reading, late]);
  } finally {
    clearTimeout(timer);
  }
}

export class TargetWait {
  private mode: 'fixed' | 'targets';
  private holds: readonly TargetHold[] | undefined;
  private readonly seen = new Map<string, TargetHold>();
  private readonly let: { name: string; seconds: number }[] = [];
  private nextLookMs = 0;
  private told = 0;
  private firstLookMs = 0;
  private failedSince = false;
  private looks = 0;
  /** AWS calls this invocation made for the wait. */
  calls = 0;

  constructor(
    private readonly run: Run,
    private readonly d: Drained,
    /** When this invocation hands on (infinite without a hand-off path). */
    private readonly stopAtMs: number,
  ) {
    this.mode = d.deadlines.loadBalancerWait !== undefined && run.deps.loadBalancers !== undefined ? 'targets' : 'fixed';
  }

  private get minUntilMs(): number {
    return this.d.drainedAtMs + (this.d.deadlines.loadBalancerWait?.minMs ?? 0);
  }

  private get maxUntilMs(): number {
    return Math.min(this.d.drainedAtMs + (this.d.deadlines.loadBalancerWait?.maxMs ?? 0), this.d.deadlines.settleEndMs ?? Infinity);
  }

  private get fixedUntilMs(): number {
    return this.d.drainedAtMs + this.d.deadlines.loadBalancerDelayMs;
  }

  /**
   * Reads the load balancers when a look is due, and only when the reading can end in time:
   * before the maximum, the settle's end and this invocation's stop.
   */
  async look(now: number): Promise<void> {
    if (this.mode === 'fixed' || now < this.nextLookMs || now >= this.maxUntilMs) return;
    if (this.holds !== undefined && this.holds.length === 0) return;
    const limitMs = Math.min(this.maxUntilMs, this.stopAtMs);
    if (now + readBudgetMs > limitMs) {
      if (this.holds === undefined) return this.fallBack({ read: false, denied: false, error: new Error('no time left for a reading before the wait must end'), calls: 0 });
      this.nextLookMs = Number.POSITIVE_INFINITY; // the last reading stands until the end
      return;
    }
    const reading = await within(this.run.deps.loadBalancers!.holding(this.run.request.action.instanceId, this.holds), limitMs - now);
    this.calls += reading.calls;
    const after = this.run.deps.clock.now();
    if (!reading.read) {
      if (this.holds === undefined) return this.fallBack(reading);
      // Read before: a failure (a throttled burst, a timeout) keeps the last reading; look again later.
      if (!this.failedSince) this.run.deps.log.warn('could not read the load balancers again; the last reading stands and they are read again', { error: reading.error });
      this.failedSince = true;
      this.nextLookMs = after + pollIntervalMs(this.looks++);
      return;
    }
    this.failedSince = false;
    for (const [id, hold] of this.seen) {
      if (!reading.holds.some((h) => h.id === id) && !this.let.some((x) => x.name === hold.name)) this.let.push({ name: hold.name, seconds: seconds(after - this.d.drainedAtMs) });
    }
    for (const h of reading.holds) this.seen.set(h.id, h);
    if (this.holds === undefined) this.firstLookMs = after;
    this.holds = reading.holds;
    this.nextLookMs = after + pollIntervalMs(this.looks++);
  }

  /** Never read: the fixed delay, as without the feature. */
  private fallBack(reading: Extract<TargetReading, { read: false }>): void {
    this.mode = 'fixed';
    this.run.deps.log.warn(
      `could not read the load balancers (${reading.denied ? 'access denied: the role needs the elasticloadbalancing Describe actions' : 'unavailable'}); waiting the fixed LOAD_BALANCER_DELAY_SECONDS instead`,
      { error: reading.error, loadBalancerDelaySeconds: this.d.deadlines.loadBalancerDelayMs / 1000 },
    );
  }

  done(now: number): boolean {
    if (this.mode === 'fixed') return now >= this.fixedUntilMs;
    if (now >= this.maxUntilMs) return true;
    return this.holds !== undefined && this.holds.length === 0 && now >= this.minUntilMs;
  }

  /** When something is next due: a look, the minimum, the maximum or the fixed delay's end. */
  wakeMs(now: number): number {
    if (this.mode === 'fixed') return this.fixedUntilMs;
    if (this.holds === undefined) return now;
    if (this.holds.length === 0) return this.minUntilMs;
    return Math.min(this.nextLookMs, this.maxUntilMs);
  }

  /** Said after the first look of an invocation that begins the wait. */
  async announce(): Promise<void> {
    const { log, events } = this.run.deps;
    if (this.mode === 'fixed') {
      log.info('waiting for load balancers to deregister the node', { seconds: this.d.deadlines.loadBalancerDelayMs / 1000 });
      return;
    }
    const holds = this.holds ?? [];
    log.info('waiting for load balancers to let the instance go', { holding: holds.map((h) => ({ name: h.name, state: h.state })), calls: this.calls });
    if (holds.length > 0) await events.record(waitingForTargets(this.d.node, holds));
  }

  /** Tells what let the instance go and after how long (once each), and at the end what still held it. */
  async report(o: { readonly final: boolean }): Promise<{ readonly seconds: number | undefined }> {
    const { log, events } = this.run.deps;
    if (this.mode === 'fixed') return { seconds: undefined };
    const untold = this.let.slice(this.told);
    this.told = this.let.length;
    if (untold.length > 0) {
      log.info('load balancers let the instance go', { deregistered: untold, calls: this.calls });
      await events.record(targetsDeregistered(this.d.node, untold));
    }
    const left = this.holds ?? [];
    if (o.final && left.length > 0) {
      const maxSeconds = seconds(this.maxUntilMs - this.d.drainedAtMs);
      log.warn('releasing while load balancers still hold the instance (LOAD_BALANCER_MAX_WAIT_SECONDS)', { holding: left, calls: this.calls });
      await events.record(targetsNotDeregistered(this.d.node, left, maxSeconds));
    }
    if (this.let.length > 0) return { seconds: Math.max(...this.let.map((x) => x.seconds)) };
    // Nothing held at this invocation's first look: none ever did (0), or, for a wait an
    // earlier invocation began, it let go by then.
    return { seconds: left.length > 0 ? undefined : this.d.result === undefined ? seconds(this.firstLookMs - this.d.drainedAtMs) : 0 };
  }
}
