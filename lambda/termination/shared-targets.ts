// Load-balancer readings shared by every termination of the deployment, wherever its
// invocations run. A wave of 200 terminations behind 60 target groups asked ELB for one
// DescribeTargetHealth per group and instance, about 12,000 calls a round against a Describe
// bucket of about 40 refilled at 10 a second, shared with the AWS Load Balancer Controller.
// Here one reading of a group answers for every instance it has registered, and one
// invocation at a time reads for everyone (the reader's turn, a Lease): the deployment's ELB
// calls are at most elbReadsPerSecond whatever the number of terminations, and grow with the
// groups. Each waiting termination says which groups it waits on (wanted), watches the
// readings (one list, one watch) and takes the turn when nobody holds it. A group read before
// this wait began says nothing about it (pending); one that could not be read is unread, as
// in a reading of its own; a throttled reader slows down (reader-pace.ts) and the last readings stand.
// The store: ports/target-readings.ts (Leases in the deployment's namespace).
import type {
  ReaderTurn,
  ReadingResult,
  SharedReading,
  TargetReadings,
  TargetReadingsWatch,
} from '../cluster/ports/target-readings.js';
import type { LoadBalancerRegistry, TargetHold, TargetReading } from '../shared/aws-ports.js';
import { AccessDeniedError } from '../shared/errors.js';
import type { Clock } from '../shared/clock.js';
import { asError, type Log } from '../shared/log.js';
import { ReaderPace } from './reader-pace.js';
import { sameLb, sameReading, verdict } from './shared-targets-verdict.js';

/** A group is read at most this often, however few are wanted. */
export const minReadIntervalMs = 2_000;
/** A reader's turn, renewed while it reads; another invocation takes it once it lapses. */
export const turnMs = 15_000;
/** A want lasts this long; a waiter renews it when it has less than a third to a half left. */
export const wantMs = 60_000;
/**
 * A reading that says what the last one this reader published said is published again only
 * this long after it: a Lease write per ELB call doubled a lone termination's requests (398
 * behind 6 groups in the wave bench). A waiter whose wait began since sees the group pending
 * meanwhile, as before a first reading; a change is published at once.
 */
export const republishMs = 10_000;
/** Groups due within this of the first due are read in the same look. */
const coalesceMs = 400;
/** How long one look may read for everyone before it returns to its own wait. */
const readSliceMs = 2_000;

export interface SharedLook {
  readonly reading: TargetReading;
  /** Groups not read since this wait began (nor failed): they hold as before, without a warning. */
  readonly pending: readonly TargetHold[];
  readonly nextAtMs: number;
}

export interface SharedTargetsDeps {
  readonly readings: TargetReadings;
  readonly registry: LoadBalancerRegistry;
  readonly clock: Clock;
  readonly log: Log;
}

export class SharedTargets {
  private watch: TargetReadingsWatch | undefined;
  private unavailable = false;
  /** What this invocation last published of each group. */
  private readonly published = new Map<string, ReadingResult>();
  /** This invocation's own readings, used before the watch brings them back. */
  private readonly own = new Map<string, SharedReading>();
  private readonly pace: ReaderPace;
  /** ELB calls this invocation made for everyone. */
  calls = 0;
  /**
   * A want is renewed when less than this is left: each waiter draws its own point between a
   * third and a half of wantMs, so the first to reach it renews for all and the others, seeing
   * it on the watch, do not (one shared threshold had every waiter of a group write at once).
   */
  private readonly renewAheadMs: number;

  constructor(
    private readonly deps: SharedTargetsDeps,
    /** This invocation (its request id): the reader's identity. */
    private readonly me: string,
  ) {
    this.renewAheadMs = wantMs / 3 + (wantMs / 6) * Math.random();
    this.pace = new ReaderPace(deps.clock);
  }

  /** One look for `instanceId` at `candidates`; undefined when sharing is unavailable (the caller reads alone). */
  async look(instanceId: string, candidates: readonly TargetHold[], sinceMs: number, untilMs: number) {
    const view = await this.view();
    if (view === undefined) return undefined;
    const now = this.deps.clock.now();
    await this.want(candidates, view.readings, now);
    const mine = await this.turn(view.turn, now);
    if (this.unavailable) return undefined;
    const before = this.calls;
    // The candidates just wanted count as wanted before the watch brings them back.
    const known = [...view.readings, ...this.unseen(candidates, view.readings, now)];
    const dueMs = mine ? await this.readForEveryone(known, Math.min(now + readSliceMs, untilMs)) : undefined;
    const look = verdict(instanceId, candidates, this.merged(known), sinceMs);
    const after = this.deps.clock.now();
    // The reader comes back when its next call may go (a slice's end left groups due) or the next group is due, a
    // moment later so groups due together are read (and their letting go told) in one look: a fixed pause after
    // each slice read at 4 calls a second, not 5, and every group a fifth less often.
    const nextAtMs =
      dueMs === undefined
        ? after + 1_000
        : Math.min(after + 500, Math.max(after + 50, this.pace.nextAtMs, dueMs + coalesceMs));
    return { ...look, reading: { ...look.reading, calls: this.calls - before }, nextAtMs } satisfies SharedLook;
  }

  /** Gives the turn back (the next waiter takes it at once) and stops watching. */
  async close(): Promise<void> {
    const turn = this.safeCurrent()?.turn;
    if (turn?.holder === this.me) await this.deps.readings.releaseTurn(this.me, turn).catch(() => undefined);
    this.watch?.close();
    this.watch = undefined;
  }

  private async view() {
    if (this.unavailable) return undefined;
    try {
      this.watch ??= await this.deps.readings.open();
      return this.watch.current();
    } catch (error) {
      if (error instanceof AccessDeniedError) this.failed(error, 'watch');
      else
        this.deps.log.info('shared load-balancer readings unavailable for now; reading alone', {
          error: asError(error),
        });
      return undefined;
    }
  }

  /** A write refused for good (no Role, no namespace) ends sharing for this invocation; others are retried. */
  private failed(error: unknown, what: string): void {
    if (error instanceof AccessDeniedError) {
      // Said once: wants made side by side may all be refused.
      if (this.unavailable) return;
      this.unavailable = true;
      this.deps.log.warn(
        'shared load-balancer readings are not allowed (the Role on leases in the deployment namespace is ' +
          'missing: install the RBAC again); this termination reads the load balancers on its own',
        { error },
      );
    } else this.deps.log.debug(`could not ${what} for the shared load-balancer readings`, { error: asError(error) });
  }

  private safeCurrent() {
    try {
      return this.watch?.current();
    } catch {
      return undefined;
    }
  }

  /** This look's candidates the view does not show yet (its want was just written). */
  private unseen(candidates: readonly TargetHold[], readings: readonly SharedReading[], now: number): SharedReading[] {
    return candidates
      .filter((c) => !readings.some((r) => sameLb(r.lb, c)))
      .map((c) => {
        const { state: _state, ...lb } = c;
        return { name: `${c.kind}:${c.id}`, lb, wantedUntilMs: now + wantMs };
      });
  }

  private merged(readings: readonly SharedReading[]): SharedReading[] {
    return readings.map((r) => {
      const own = this.own.get(`${r.lb.kind}:${r.lb.id}`);
      return own?.reading !== undefined && (r.reading === undefined || own.reading.atMs > r.reading.atMs) ? own : r;
    });
  }

  /** Each candidate wanted at least renewAheadMs ahead: a write only when it would lapse. */
  private async want(candidates: readonly TargetHold[], readings: readonly SharedReading[], now: number) {
    const lapsing = candidates.filter((c) => {
      const r = readings.find((x) => sameLb(x.lb, c));
      return r === undefined || r.wantedUntilMs <= now + this.renewAheadMs;
    });
    // Side by side: a first look of a termination behind many groups is not held up by its wants.
    await Promise.all(
      lapsing.map(({ state: _state, ...lb }) =>
        this.deps.readings.want(lb, now + wantMs).catch((error: unknown) => this.failed(error, 'want')),
      ),
    );
  }

  /** Ours when nobody holds it, its holder let it lapse, or we hold it (renewed a third of the way in). */
  private async turn(turn: ReaderTurn | undefined, now: number): Promise<boolean> {
    const lapsed = turn === undefined || turn.holder === '' || turn.renewedAtMs + turn.durationMs < now;
    const ours = turn?.holder === this.me;
    if (ours && now < turn.renewedAtMs + turnMs / 3) return true;
    if (!ours && !lapsed) return false;
    try {
      const taken = (await this.deps.readings.takeTurn(this.me, now, turnMs, turn)) === 'taken';
      // A turn just taken: the previous reader's last call may be a moment ago; keep the spacing.
      if (taken && !ours) this.pace.taken(now);
      return taken;
    } catch (error) {
      this.failed(error, 'take the turn');
      return false;
    }
  }

  /**
   * Reads the wanted groups whose reading is due, oldest first, at the reader's pace, until `endMs`. Returns
   * when the next group is due (now when some were left).
   */
  private async readForEveryone(readings: readonly SharedReading[], endMs: number): Promise<number> {
    const { clock } = this.deps;
    const wanted = this.merged(readings).filter((r) => r.wantedUntilMs > clock.now());
    const intervalMs = Math.max(minReadIntervalMs, (wanted.length * 1000) / this.pace.perSecond);
    const dueAt = (r: SharedReading) => (r.reading === undefined ? 0 : r.reading.atMs + intervalMs);
    const due = wanted.filter((r) => dueAt(r) <= clock.now()).sort((a, b) => dueAt(a) - dueAt(b));
    for (const r of due) {
      if (!(await this.pace.slot(endMs))) return clock.now();
      if (!(await this.readOne(r))) return this.pace.nextAtMs;
    }
    const later = wanted.filter((r) => !due.includes(r)).map(dueAt);
    return Math.min(clock.now() + intervalMs, ...later);
  }

  /** One group read and published; false when ELB throttled (the reader backs off, the last readings stand). */
  private async readOne(r: SharedReading): Promise<boolean> {
    const { clock, registry, readings, log } = this.deps;
    const answer = await registry.registered({ ...r.lb, state: 'unknown' });
    this.calls += answer.calls;
    if (!answer.read && answer.throttled) {
      const backoffMs = this.pace.throttled();
      log.warn('ELB throttled the shared load-balancer reading; backing off', {
        lb: r.lb.name,
        backoffMs,
        callsPerSecond: this.pace.perSecond,
      });
      return false;
    }
    this.pace.answered();
    const reading = {
      atMs: clock.now(),
      by: this.me,
      ...(answer.read
        ? { targets: Object.fromEntries(answer.targets) }
        : { failure: answer.denied ? ('denied' as const) : ('unavailable' as const) }),
    };
    const key = `${r.lb.kind}:${r.lb.id}`;
    this.own.set(key, { ...r, reading });
    const last = this.published.get(key);
    if (last !== undefined && last.atMs + republishMs > reading.atMs && sameReading(last, reading)) return true;
    this.published.set(key, reading);
    await readings
      .publish(r.lb, reading)
      .catch((error: unknown) =>
        log.warn('could not publish a shared load-balancer reading', { lb: r.lb.name, error: asError(error) }),
      );
    return true;
  }
}
