// Review: `check --drain-rules @file` with a file it cannot read is a usage error that names the option.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../scripts/command-options.js';
import { rulesFromOptions } from '../../../scripts/drain-rules-option.js';

describe('check --drain-rules @file', () => {
  it('names the option and the file it cannot read, as bad usage (exit 2), not a failure', () => {
    const read = () => rulesFromOptions({ 'drain-rules': '@no-such-rules.json' });
    expect(read).toThrow(UsageError);
    expect(read).toThrow(/--drain-rules: cannot read no-such-rules\.json/);
  });
});

describe('check --evict-daemonset-pods', () => {
  it('does not warn that a DaemonSet pod tolerates the cordon (its controller adds that toleration; the one put back is not chased)', async () => {
    const { analyseDrainability } = await import('../../../scripts/preflight.js');
    const agent = {
      metadata: { name: 'agent-1', namespace: 'logging', uid: 'a1', ownerReferences: [{ kind: 'DaemonSet', name: 'agent', uid: 'ds', apiVersion: 'apps/v1', controller: true }] },
      spec: { nodeName: 'node-a', containers: [], tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }] },
      status: { phase: 'Running' },
    };
    const findings = analyseDrainability({ nodes: ['node-a'], pods: [agent], budgets: [], rules: { rules: [], evictDaemonSetPods: true } });
    expect(findings.filter((f) => f.kind === 'tolerates-cordon')).toEqual([]);
  });
});
