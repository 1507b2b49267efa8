// The drainability preflight (issue 14, `npm run check`): the analysis is the drainer's own
// (lambda/adapters/kubernetes/drainability.ts, also observe mode's); here what a person reads.
import type { Finding, Severity } from '../lambda/cluster/ports/drainability-gateway.js';

export {
  analyseDrainability,
  podRules,
  selects,
  type PodRuleRow,
  type PreflightInput,
} from '../lambda/adapters/kubernetes/drainability.js';
export { defaultDrainRuleSettings, type DrainRuleSettings } from '../lambda/cluster/rules/drain-rules.js';
export type { Finding, FindingKind, Severity } from '../lambda/cluster/ports/drainability-gateway.js';

/** True when the upgrade must not start without --force. */
export const hasBlocker = (findings: readonly Finding[]) => findings.some((f) => f.severity === 'blocker');

/** A table a person reads at a glance: one line per finding, blockers first. */
export function renderFindings(nodes: readonly string[], findings: readonly Finding[]): string {
  if (findings.length === 0) return `${nodes.length} node(s) checked: every pod can leave now.`;
  const order: Record<Severity, number> = { blocker: 0, warning: 1, info: 2 };
  const rows = [...findings].sort(
    (a, b) => order[a.severity] - order[b.severity] || a.node.localeCompare(b.node) || a.pod.localeCompare(b.pod),
  );
  const header = ['SEVERITY', 'NODE', 'POD', 'WHY'];
  const cells = rows.map((f) => [f.severity.toUpperCase(), f.node, f.pod, f.why + (f.fix ? `; fix: ${f.fix}` : '')]);
  const widths = header.slice(0, 3).map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => (i < 3 ? v.padEnd(widths[i]!) : v)).join('  ');
  const blockers = findings.filter((f) => f.severity === 'blocker').length;
  return [
    line(header),
    ...cells.map(line),
    '',
    `${nodes.length} node(s) checked: ${blockers} blocker(s), ${findings.length - blockers} other finding(s).`,
  ].join('\n');
}
