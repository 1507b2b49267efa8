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
      metadata: {
        name: 'agent-1',
        namespace: 'logging',
        uid: 'a1',
        ownerReferences: [{ kind: 'DaemonSet', name: 'agent', uid: 'ds', apiVersion: 'apps/v1', controller: true }],
      },
      spec: {
        nodeName: 'node-a',
        containers: [],
        tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }],
      },
      status: { phase: 'Running' },
    };
    const findings = analyseDrainability({
      nodes: ['node-a'],
      pods: [agent],
      budgets: [],
      rules: { drainRules: [], evictDaemonSetPods: true },
    });
    expect(findings.filter((f) => f.kind === 'tolerates-cordon')).toEqual([]);
  });
});

describe('check --strategy minimal under drain rules', () => {
  it('does not count pods the rules leave running in a budget deadlock (they never need to leave)', async () => {
    const { analyseDrainability } = await import('../../../scripts/preflight.js');
    const cache = (n: number) => ({
      metadata: {
        name: `cache-${n}`,
        namespace: 'shop',
        uid: `c${n}`,
        labels: { app: 'cache', 'cluster.x-k8s.io/drain': 'skip' },
        ownerReferences: [{ kind: 'ReplicaSet', name: 'cache', uid: 'rs', apiVersion: 'apps/v1', controller: true }],
      },
      spec: { nodeName: 'node-a', containers: [] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    const budget = {
      metadata: { name: 'cache', namespace: 'shop' },
      spec: { selector: { matchLabels: { app: 'cache' } }, minAvailable: 1 },
      status: { disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1 },
    };
    const findings = analyseDrainability({
      nodes: ['node-a'],
      pods: [cache(1), cache(2)],
      budgets: [budget],
      terminateFirst: true,
    });
    expect(findings.filter((f) => f.kind === 'budget-deadlock-terminate-first')).toEqual([]);
  });
});

describe('check --function', () => {
  it('reads EVICT_DAEMONSET_PODS as the function does (" true " is true there)', async () => {
    const { rulesFromVariables } = await import('../../../scripts/drain-rules-option.js');
    expect(rulesFromVariables({ EVICT_DAEMONSET_PODS: ' true ' }).evictDaemonSetPods).toBe(true);
  });
});

describe('check: budgets of pods the drain never evicts', () => {
  it('does not report a blocker for the budget of a Cluster API wait-completed pod (it is waited for, never evicted)', async () => {
    const { analyseDrainability, hasBlocker } = await import('../../../scripts/preflight.js');
    const etl = {
      metadata: {
        name: 'etl-0',
        namespace: 'shop',
        uid: 'e0',
        labels: { app: 'etl', 'cluster.x-k8s.io/drain': 'wait-completed' },
        ownerReferences: [{ kind: 'StatefulSet', name: 'etl', uid: 'ss', apiVersion: 'apps/v1', controller: true }],
      },
      spec: { nodeName: 'node-a', containers: [] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    };
    const budget = {
      metadata: { name: 'etl', namespace: 'shop' },
      spec: { selector: { matchLabels: { app: 'etl' } }, minAvailable: 1 },
      status: { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1 },
    };
    const findings = analyseDrainability({ nodes: ['node-a'], pods: [etl], budgets: [budget] });
    expect(hasBlocker(findings)).toBe(false);
    expect(findings.map((f) => f.kind)).toEqual(['waits-for-completion']);
  });
});
