// How fast the shared load-balancer reader calls ELB (shared-targets.ts). The Describe bucket is
// the account's and Region's, shared with the AWS Load Balancer Controller: whatever share we
// keep, a busy controller can leave less. A throttled call halves the reader's rate (never below
// one call a second) and backs off 2 s doubling to 30 s; each 10 s without a throttle gives one
// call a second back, up to elbReadsPerSecond. Additive increase, multiplicative decrease, as
// TCP and the AWS SDK's adaptive retry mode share a link.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/elb-api-throttling.html
import type { Clock } from '../shared/clock.js';

/**
 * ELB calls a second for the whole deployment: half of the Describe bucket's refill (about 10
 * a second per account and Region), the other half left to the AWS Load Balancer Controller.
 */
export const elbReadsPerSecond = 5;
/** The least the reader slows to after throttles. */
export const minReadsPerSecond = 1;
/** A call a second is given back after this long without a throttle. */
export const recoverEveryMs = 10_000;
/** The longest back-off after throttles in a row. */
export const maxBackoffMs = 30_000;

export class ReaderPace {
  private nextCallAtMs = 0;
  private throttledInRow = 0;
  private rate = elbReadsPerSecond;
  /** The last throttle, or the last call a second given back. */
  private changedAtMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly clock: Clock) {}

  /** Calls a second now. */
  get perSecond(): number {
    return this.rate;
  }

  /** When the next call may go. */
  get nextAtMs(): number {
    return this.nextCallAtMs;
  }

  /** A turn just taken: the previous reader's last call may be a moment ago; keep the spacing. */
  taken(nowMs: number): void {
    this.nextCallAtMs = Math.max(this.nextCallAtMs, nowMs + 1000 / this.rate);
  }

  /** Waits for the next call's moment; false when it would come at or after endMs (nothing waited). */
  async slot(endMs: number): Promise<boolean> {
    const startMs = Math.max(this.clock.now(), this.nextCallAtMs);
    if (startMs >= endMs) return false;
    if (startMs > this.clock.now()) await this.clock.sleep(startMs - this.clock.now());
    this.nextCallAtMs = startMs + 1000 / this.rate;
    return true;
  }

  /** ELB throttled the call: slower, and a back-off before the next. Returns the back-off. */
  throttled(): number {
    const now = this.clock.now();
    this.throttledInRow++;
    this.rate = Math.max(minReadsPerSecond, this.rate / 2);
    this.changedAtMs = now;
    const backoffMs = Math.min(maxBackoffMs, 1000 * 2 ** this.throttledInRow);
    this.nextCallAtMs = now + backoffMs;
    return backoffMs;
  }

  /** ELB answered: a call a second back each recoverEveryMs since the last change. */
  answered(): void {
    const now = this.clock.now();
    this.throttledInRow = 0;
    if (this.rate < elbReadsPerSecond && now - this.changedAtMs >= recoverEveryMs) {
      this.rate = Math.min(elbReadsPerSecond, Math.floor(this.rate) + 1);
      this.changedAtMs = now;
    }
  }
}
