import { describe, expect, it } from 'vitest';
import { defaultDrainRuleSettings, podRule } from '../../../../lambda/cluster/rules/drain-rules.js';
import { evictionOrder } from '../../../../lambda/cluster/rules/drain-plan.js';
import { isDrainable, toleratesUnschedulable } from '../../../../lambda/cluster/rules/pods.js';
import { pod } from '../../../fakes/fake-world.js';

describe('pod filters', () => {
  it.each([
    ['a ReplicaSet pod', pod({ name: 'a' }), true],
    ['an unmanaged pod (kubectl drain --force)', pod({ name: 'a', controllerKind: undefined }), true],
    ['a StatefulSet pod', pod({ name: 'a', controllerKind: 'StatefulSet' }), true],
    ['a Job pod still running', pod({ name: 'a', controllerKind: 'Job' }), true],
    ['a terminating pod (waited for)', pod({ name: 'a', deletionTimestamp: new Date() }), true],
    ['a DaemonSet pod', pod({ name: 'a', controllerKind: 'DaemonSet' }), false],
    ['a mirror (static) pod', pod({ name: 'a', annotations: { 'kubernetes.io/config.mirror': 'x' } }), false],
    ['a Succeeded pod', pod({ name: 'a', phase: 'Succeeded' }), false],
    ['a Failed pod', pod({ name: 'a', phase: 'Failed' }), false],
    ['a Pending pod', pod({ name: 'a', phase: 'Pending' }), true],
  ])('%s is drainable: %s', (_what, p, expected) => {
    expect(isDrainable(p)).toBe(expected);
  });

  it('puts system-cluster-critical and system-node-critical pods in the last order', () => {
    const order = (p: ReturnType<typeof pod>) => evictionOrder(podRule(p, defaultDrainRuleSettings, 0));
    expect(order(pod({ name: 'a' }))).toBe(0);
    expect(order(pod({ name: 'a', priorityClassName: 'high' }))).toBe(0);
    expect(order(pod({ name: 'a', priorityClassName: 'system-cluster-critical' }))).toBe(2000);
    expect(order(pod({ name: 'a', priorityClassName: 'system-node-critical' }))).toBe(2000);
  });

  it.each([
    [[{ operator: 'Exists' }], true],
    [[{ operator: 'Exists', effect: 'NoSchedule' }], true],
    [[{ operator: 'Exists', effect: 'NoExecute' }], false],
    [[{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }], true],
    [[{ key: 'node.kubernetes.io/not-ready', operator: 'Exists' }], false],
    [[{ key: 'dedicated', operator: 'Equal', effect: 'NoSchedule' }], false],
    [[], false],
  ])('tolerations %j tolerate the cordon: %s', (tolerations, expected) => {
    expect(toleratesUnschedulable(pod({ name: 'a', tolerations }))).toBe(expected);
  });
});
