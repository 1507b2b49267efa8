// The faults a timeline switches on for a while: the API server answering the drainer 429
// (with Retry-After), 503, not at all (past the client's 15 s timeout), the connection reset
// after the request went (carried out or not), or a watch dropped; Auto Scaling and EC2 throttling the drainer
// (Throttling, RequestLimitExceeded); ELB's Describe bucket running dry. Which request a fault
// hits is drawn from the seed, in the order the requests come.
import { apiFailure, type Intercept } from '../cluster/fault-proxy.js';
import type { ElbStub } from '../fakes/elb-stub.js';
import type { Random } from './random.js';
import type { ApiFaultRates } from './scenario.js';

export interface FaultCounts {
  throttled: number;
  unavailable: number;
  timeout: number;
  reset: number;
  watchDrop: number;
  autoscaling: number;
  ec2: number;
  elb: number;
}

export class Faults {
  readonly counts: FaultCounts = {
    throttled: 0,
    unavailable: 0,
    timeout: 0,
    reset: 0,
    watchDrop: 0,
    autoscaling: 0,
    ec2: 0,
    elb: 0,
  };
  private api: { untilMs: number; rates: ApiFaultRates } | undefined;
  private readonly aws = new Map<string, number>();
  private elbUntilMs = 0;

  constructor(
    private readonly random: Random,
    private readonly now: () => number,
    private readonly elb: ElbStub,
  ) {}

  startApi(seconds: number, rates: ApiFaultRates): void {
    this.api = { untilMs: this.now() + seconds * 1000, rates };
  }

  startAws(service: 'autoscaling' | 'ec2' | 'elb', seconds: number): void {
    const untilMs = this.now() + seconds * 1000;
    if (service !== 'elb') return void this.aws.set(service, untilMs);
    // ELB's one Describe bucket nearly empty: a call now and then gets through.
    this.elbUntilMs = untilMs;
    this.elb.bucket = { capacity: 1, refillPerSecond: 0.2 };
    setTimeout(
      () => {
        if (this.now() >= this.elbUntilMs) this.elb.bucket = undefined;
      },
      seconds * 1000 + 10,
    );
  }

  /** Everything off (the soak's end: the drains finish in a healthy world). */
  stop(): void {
    this.api = undefined;
    this.aws.clear();
    this.elb.bucket = undefined;
  }

  /** For the fault proxy in front of the API server. */
  intercept = (req: { method: string; url: URL }): Intercept | undefined => {
    const api = this.api;
    if (api === undefined || this.now() > api.untilMs) return undefined;
    const watch = req.url.searchParams.get('watch') === 'true' || req.url.searchParams.get('watch') === '1';
    const roll = this.random.fraction();
    let edge = 0;
    const hit = (rate: number) => roll < (edge += rate);
    if (watch) {
      if (!hit(api.rates.watchDrop)) return undefined;
      this.counts.watchDrop++;
      return { forwardThenDropAfterMs: this.random.int(100, 5_000) };
    }
    if (hit(api.rates.throttled)) {
      this.counts.throttled++;
      return apiFailure(429, 'TooManyRequests', 'injected by the soak: too many requests', undefined, {
        'Retry-After': '1',
      });
    }
    if (hit(api.rates.unavailable)) {
      this.counts.unavailable++;
      return apiFailure(503, 'ServiceUnavailable', 'injected by the soak: unavailable');
    }
    if (hit(api.rates.timeout)) {
      this.counts.timeout++;
      return { ...apiFailure(504, 'Timeout', 'injected by the soak: no answer in time'), delayMs: 16_000 };
    }
    if (hit(api.rates.reset)) {
      this.counts.reset++;
      // The connection reset a moment after the request went: carried out or not, the answer is lost.
      return { forwardThenDropAfterMs: this.random.int(0, 300) };
    }
    return undefined;
  };

  /** For the local Auto Scaling and EC2 endpoint. */
  throttle = (service: 'autoscaling' | 'ec2'): boolean => {
    if ((this.aws.get(service) ?? 0) < this.now()) return false;
    if (!this.random.chance(0.7)) return false;
    this.counts[service]++;
    return true;
  };

  /** ELB calls the bucket refused (counted from the stub's own records). */
  countElb(): void {
    this.counts.elb = this.elb.calls.filter((c) => c.throttled).length;
  }
}
