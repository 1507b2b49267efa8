// Which drain rules `check` shows each pod under: the deployed function's own (--function, read
// with lambda:GetFunctionConfiguration), or rules given on the command line (--drain-rules, the
// JSON DRAIN_RULES takes, or @file), else the defaults. The rules are the drainer's (drain-rules.ts).
import { readFileSync } from 'node:fs';
import { defaultDrainRuleSettings, type DrainRuleSettings, type PodRuleRow } from './preflight.js';
import { drainRuleProblems } from '../lambda/shared/drain-rule-variables.js';
import { flag } from '../lambda/shared/variable.js';
import { UsageError } from './command-options.js';

export interface RuleOptions {
  readonly 'drain-rules'?: string | undefined;
  readonly 'evict-daemonset-pods'?: boolean | undefined;
}

/** Rules from --drain-rules / --evict-daemonset-pods (a usage error names what is wrong). */
export function rulesFromOptions(o: RuleOptions): DrainRuleSettings {
  const raw = o['drain-rules'];
  const text = raw?.startsWith('@') ? readRules(raw.slice(1)) : raw;
  let rules: unknown = [];
  if (text !== undefined) {
    try {
      rules = JSON.parse(text);
    } catch (error) {
      throw new UsageError(`--drain-rules is not JSON: ${(error as Error).message}`);
    }
  }
  const problems = drainRuleProblems(rules);
  if (problems.length > 0) throw new UsageError(`--drain-rules: ${problems.join('; ')}`);
  return {
    drainRules: rules as DrainRuleSettings['drainRules'],
    evictDaemonSetPods: o['evict-daemonset-pods'] === true || defaultDrainRuleSettings.evictDaemonSetPods,
  };
}

function readRules(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--drain-rules: cannot read ${file}: ${(error as Error).message}`);
  }
}

/** Rules from a deployed function's DRAIN_RULES and EVICT_DAEMONSET_PODS. */
export function rulesFromVariables(variables: Readonly<Record<string, string>>): DrainRuleSettings {
  return rulesFromOptions({
    'drain-rules': variables['DRAIN_RULES'] || undefined,
    'evict-daemonset-pods': flag(variables['EVICT_DAEMONSET_PODS'] ?? '') === true,
  });
}

/** The table: one line per pod, in the order the drain takes them. */
export function renderRules(rows: readonly PodRuleRow[]): string {
  if (rows.length === 0) return '';
  const header = ['NODE', 'POD', 'RULE', 'ORDER', 'BECAUSE'];
  const cells = rows.map((r) => [r.node, r.pod, r.behavior, r.order === undefined ? '-' : String(r.order), r.source]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) =>
    c
      .map((v, i) => (i < c.length - 1 ? v.padEnd(widths[i]!) : v))
      .join('  ')
      .trimEnd();
  return [line(header), ...cells.map(line)].join('\n');
}
