// What a soak run prints: its scenario in numbers, the faults that happened, what Lambda did, and
// each invariant with how many things it checked and what it found.
import { invariants } from './invariants/index.js';
import type { RunResult } from './runner.js';

export function summary(r: RunResult): string {
  const s = r.stats;
  const kinds = new Map<string, number>();
  for (const p of r.played) kinds.set(p.event.kind, (kinds.get(p.event.kind) ?? 0) + 1);
  const lines = [
    `seed ${r.scenario.seed}, ${r.scenario.minutes} min of timeline, ${(r.durationMs / 60_000).toFixed(1)} min in all`,
    `  cluster: ${r.scenario.nodes.length} nodes in ${r.scenario.groups.join(', ')} (${r.scenario.nodes.filter((n) => n.spot).length} Spot, ${r.scenario.nodes.filter((n) => n.name !== n.privateDnsName).length} named otherwise than EC2 names them), ${r.scenario.workloads.length} workloads`,
    `  events: ${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')} (${s['eventsSkipped']} skipped)`,
    `  faults: API 429 x${s['fault.throttled']}, 503 x${s['fault.unavailable']}, timeouts x${s['fault.timeout']}, resets x${s['fault.reset']}, watches dropped x${s['fault.watchDrop']}; throttled: Auto Scaling x${s['fault.autoscaling']}, EC2 x${s['fault.ec2']}, ELB x${s['fault.elb']}`,
    `  Lambda: ${s['invocations']} invocations (${s['coldStarts']} cold), ${s['invocationsKilled']} killed, ${s['invocationsTimedOut']} timed out, ${s['invocationsFailed']} failed, ${s['lambdaRetries']} retries; deliveries duplicated x${s['deliveriesDuplicated']}, lost x${s['deliveriesLost']}; ${s['handOffsPublished']} hand-offs published`,
    `  Auto Scaling: ${s['actions']} lifecycle actions, ${s['releases']} releases read, ${s['completionsRefused']} completions refused as already done; ${r.observations.skips.length} clock skip(s)`,
    '  invariants:',
    ...invariants.map((i) => {
      const found = r.violations.filter((v) => v.invariant === i.name).length;
      return `    ${found === 0 ? 'ok  ' : 'FAIL'} ${i.name}: ${i.counts(r.observations)} checked${found ? `, ${found} violation(s)` : ''}`;
    }),
  ];
  return lines.join('\n');
}
