// What a soak run prints: its scenario in numbers, the faults that happened, what Lambda did, and
// each invariant with how many things it checked and what it found.
import { invariants } from './invariants/index.js';
import type { RunResult } from './runner.js';

export function summary(r: RunResult): string {
  const s = r.stats;
  const kinds = new Map<string, number>();
  for (const p of r.played) kinds.set(p.event.kind, (kinds.get(p.event.kind) ?? 0) + 1);
  const sc = r.scenario;
  const spot = sc.nodes.filter((n) => n.spot).length;
  const renamed = sc.nodes.filter((n) => n.name !== n.privateDnsName).length;
  const lines = [
    `seed ${sc.seed}, ${sc.minutes} min of timeline, ${(r.durationMs / 60_000).toFixed(1)} min in all`,
    `  cluster: ${sc.nodes.length} nodes in ${sc.groups.join(', ')} (${spot} Spot, ${renamed} named otherwise than ` +
      `EC2 names them), ${sc.workloads.length} workloads`,
    `  events: ${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')} (${s['eventsSkipped']} skipped)`,
    `  faults: API 429 x${s['fault.throttled']}, 503 x${s['fault.unavailable']}, timeouts x${s['fault.timeout']}, ` +
      `resets x${s['fault.reset']}, watches dropped x${s['fault.watchDrop']}; throttled: Auto Scaling ` +
      `x${s['fault.autoscaling']}, EC2 x${s['fault.ec2']}, ELB x${s['fault.elb']}`,
    `  Lambda: ${s['invocations']} invocations (${s['coldStarts']} cold), ${s['invocationsKilled']} killed, ` +
      `${s['invocationsTimedOut']} timed out, ${s['invocationsFailed']} failed, ${s['lambdaRetries']} retries; ` +
      `deliveries duplicated x${s['deliveriesDuplicated']}, lost x${s['deliveriesLost']}; ` +
      `${s['handOffsPublished']} hand-offs published`,
    `  Auto Scaling: ${s['actions']} lifecycle actions, ${s['releases']} releases read, ${s['completionsRefused']} ` +
      `completions refused as already done; ${r.observations.skips.length} clock skip(s)`,
    '  invariants:',
    ...invariants.map((i) => {
      const found = r.violations.filter((v) => v.invariant === i.name).length;
      const tail = found ? `, ${found} violation(s)` : '';
      return `    ${found === 0 ? 'ok  ' : 'FAIL'} ${i.name}: ${i.counts(r.observations)} checked${tail}`;
    }),
  ];
  return lines.join('\n');
}
