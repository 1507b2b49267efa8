// The rotation bench's reading of the API server's apiserver_flowcontrol_* metrics
// (bench/apiserver-flow-metrics.ts): the text exposition format parsed, and a histogram's
// quantile taken over what happened between two scrapes, not since the server started.
import { describe, expect, it } from 'vitest';
import { parseFlowMetrics, quantileOf } from '../../../bench/apiserver-flow-metrics.js';

const level = 'graceful-node-termination';
const wait = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(
      ([le, n]) =>
        `apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="${level}",priority_level="${level}",le="${le}"} ${n}`,
    )
    .join('\n');

describe('the flow-control metrics reader', () => {
  it('keeps only apiserver_flowcontrol_* samples, with their labels and values', () => {
    const samples = parseFlowMetrics(
      [
        '# HELP apiserver_flowcontrol_nominal_limit_seats [BETA] Nominal number of execution seats',
        '# TYPE apiserver_flowcontrol_nominal_limit_seats gauge',
        `apiserver_flowcontrol_nominal_limit_seats{priority_level="${level}"} 46`,
        'apiserver_request_total{code="201",verb="POST"} 12',
        `apiserver_flowcontrol_rejected_requests_total{flow_schema="${level}",priority_level="${level}",reason="queue-full"} 3`,
        'apiserver_flowcontrol_current_executing_seats{flow_schema="a \\"quoted\\" name",priority_level="x"} 1.5e+00',
      ].join('\n'),
    );
    expect(samples).toEqual([
      { name: 'apiserver_flowcontrol_nominal_limit_seats', labels: { priority_level: level }, value: 46 },
      {
        name: 'apiserver_flowcontrol_rejected_requests_total',
        labels: { flow_schema: level, priority_level: level, reason: 'queue-full' },
        value: 3,
      },
      {
        name: 'apiserver_flowcontrol_current_executing_seats',
        labels: { flow_schema: 'a \\"quoted\\" name', priority_level: 'x' },
        value: 1.5,
      },
    ]);
  });

  it('takes a quantile of the observations between two scrapes', () => {
    // Before: 1,000 fast waits. Between: 100 more, 2 of them slow (0.5 s).
    const before = parseFlowMetrics(wait({ '0.005': 1000, '0.1': 1000, '1': 1000, '+Inf': 1000 }));
    const after = parseFlowMetrics(wait({ '0.005': 1098, '0.1': 1098, '1': 1100, '+Inf': 1100 }));
    const q = (p: number) =>
      quantileOf(before, after, 'request_wait_duration_seconds', { priority_level: level, execute: 'true' }, p);
    expect(q(0.98)).toBe(0.005);
    // Over the whole history the 99th percentile would be 0.005 s; between the scrapes it is the slow bucket.
    expect(q(0.99)).toBe(1);
    expect(quantileOf(after, after, 'request_wait_duration_seconds', { priority_level: level }, 0.99)).toBeUndefined();
  });
});
