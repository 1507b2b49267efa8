// What API Priority and Fairness gave the drainer: the API server's own apiserver_flowcontrol_*
// metrics (its /metrics, read as the plane's admin) for the PriorityLevelConfiguration the
// product ships (lambda/installer/flow-control.ts), scraped every few seconds over a span:
// the level's nominal and current seat limits, the most seats its requests held at once and
// the most requests it queued (gauges, sampled), its demand's high watermark (the server's own,
// per 10 s adjustment period), its time-averaged seat utilization (the server's timing-ratio
// histogram, so no peak is missed between samples), requests dispatched and rejected, and
// their queue wait.
// https://kubernetes.io/docs/concepts/cluster-administration/flow-control/#observability
import { Agent, request } from 'node:https';
import type { Environment } from '../demo/environment.js';
import { adminToken } from '../test/cluster/plane/plane.js';
import { round } from './fleet.js';

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const prefix = 'apiserver_flowcontrol_';

/** The apiserver_flowcontrol_* samples of /metrics, parsed from the text exposition format. */
export async function scrapeFlowMetrics(env: Environment, agent?: Agent): Promise<Sample[]> {
  const url = new URL('/metrics', env.plane.server);
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        agent: agent ?? new Agent({ ca: env.plane.caPem }),
        headers: { Authorization: `Bearer ${adminToken}` },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(chunks).toString('utf8'))
            : reject(new Error(`GET /metrics answered ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
  return parseFlowMetrics(text);
}

/** The apiserver_flowcontrol_* samples of a /metrics answer (Prometheus' text exposition format). */
export function parseFlowMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(prefix)) continue;
    const m = /^([a-z_:]+)(?:\{(.*)\})? ([^ ]+)/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

const sum = (samples: readonly Sample[], name: string, match: Readonly<Record<string, string>>) =>
  samples
    .filter((s) => s.name === prefix + name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((t, s) => t + s.value, 0);

const byLabel = (samples: readonly Sample[], name: string, match: Record<string, string>, label: string) => {
  const out: Record<string, number> = {};
  for (const s of samples)
    if (s.name === prefix + name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
      out[s.labels[label] ?? ''] = (out[s.labels[label] ?? ''] ?? 0) + s.value;
  return out;
};

/** The bucket bound under which fraction q of a histogram's observations between two scrapes fall. */
export function quantileOf(
  before: readonly Sample[],
  after: readonly Sample[],
  name: string,
  match: Record<string, string>,
  q: number,
) {
  const buckets = (samples: readonly Sample[]) => byLabel(samples, `${name}_bucket`, match, 'le');
  const [b, a] = [buckets(before), buckets(after)];
  const bounds = Object.keys(a)
    .filter((le) => le !== '+Inf')
    .sort((x, y) => Number(x) - Number(y));
  const total = (a['+Inf'] ?? 0) - (b['+Inf'] ?? 0);
  if (total <= 0) return undefined;
  const bound = bounds.find((le) => (a[le] ?? 0) - (b[le] ?? 0) >= q * total);
  return bound === undefined ? '+Inf' : Number(bound);
}

export interface SeatSampler {
  /** Ends the sampling: the level's seats over the span. */
  stop(): Promise<Record<string, unknown>>;
}

/** Scrapes every `everyMs` until stop(): the priority level's seats, requests and waits over the span. */
export async function sampleSeats(env: Environment, level: string, everyMs = 5_000): Promise<SeatSampler> {
  const agent = new Agent({ ca: env.plane.caPem, keepAlive: true });
  const first = await scrapeFlowMetrics(env, agent);
  const ofLevel = { priority_level: level };
  const peaks = { executingSeats: 0, executingRequests: 0, inqueueRequests: 0, demandHighWatermark: 0 };
  const limits: number[] = [];
  let scrapes = 1;
  let last = first;
  const take = (s: readonly Sample[]) => {
    peaks.executingSeats = Math.max(peaks.executingSeats, sum(s, 'current_executing_seats', ofLevel));
    peaks.executingRequests = Math.max(peaks.executingRequests, sum(s, 'current_executing_requests', ofLevel));
    peaks.inqueueRequests = Math.max(peaks.inqueueRequests, sum(s, 'current_inqueue_requests', ofLevel));
    peaks.demandHighWatermark = Math.max(peaks.demandHighWatermark, sum(s, 'demand_seats_high_watermark', ofLevel));
    limits.push(sum(s, 'current_limit_seats', ofLevel));
  };
  take(first);
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    scrapeFlowMetrics(env, agent)
      .then((s) => {
        scrapes++;
        last = s;
        take(s);
      })
      .catch(() => undefined)
      .finally(() => (busy = false));
  }, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      const end = await scrapeFlowMetrics(env, agent).catch(() => last);
      take(end);
      agent.destroy();
      const delta = (name: string, match: Record<string, string> = ofLevel) =>
        sum(end, name, match) - sum(first, name, match);
      const utilization = { ...ofLevel, phase: 'executing' };
      const utilizationCount = delta('priority_level_seat_utilization_count', utilization);
      const averageUtilization =
        utilizationCount > 0 ? delta('priority_level_seat_utilization_sum', utilization) / utilizationCount : 0;
      const averageLimit = limits.reduce((t, x) => t + x, 0) / Math.max(1, limits.length);
      const rejectedBefore = byLabel(first, 'rejected_requests_total', ofLevel, 'reason');
      const rejected = Object.fromEntries(
        Object.entries(byLabel(end, 'rejected_requests_total', ofLevel, 'reason'))
          .map(([reason, n]) => [reason, n - (rejectedBefore[reason] ?? 0)] as const)
          .filter(([, n]) => n > 0),
      );
      return {
        priorityLevel: level,
        scrapes,
        everySeconds: everyMs / 1000,
        nominalLimitSeats: sum(end, 'nominal_limit_seats', ofLevel),
        currentLimitSeats: { min: Math.min(...limits), max: Math.max(...limits) },
        /** Sampled every few seconds: a floor of the true peaks. */
        peakExecutingSeats: peaks.executingSeats,
        peakExecutingRequests: peaks.executingRequests,
        peakInqueueRequests: peaks.inqueueRequests,
        /** The server's own high watermark of the level's seat demand (executing + queued), per adjustment period. */
        peakDemandSeats: peaks.demandHighWatermark,
        /** Time-averaged executing seats over the level's limit (the server's timing-ratio histogram). */
        averageSeatUtilization: round(averageUtilization),
        averageSeatsInUse: round(averageUtilization * averageLimit),
        dispatchedRequests: delta('dispatched_requests_total'),
        rejectedRequests: rejected,
        /** Seats the dispatched requests were estimated at, summed (a list counts more than a GET). */
        estimatedSeats: delta('work_estimated_seats_sum'),
        queueWaitP99Seconds: quantileOf(
          first,
          end,
          'request_wait_duration_seconds',
          { ...ofLevel, execute: 'true' },
          0.99,
        ),
      };
    },
  };
}
