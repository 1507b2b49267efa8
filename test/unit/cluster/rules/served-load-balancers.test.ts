// Which load balancers the cluster serves (lambda/cluster/rules/served-load-balancers.ts): the
// TargetGroupBindings' target groups on their Services' NodePorts, and the in-tree service
// controller's load balancers by the names it gives them.
import { describe, expect, it } from 'vitest';
import {
  inTreeLoadBalancerName,
  servedBy,
  servedForNode,
  type ServiceView,
} from '../../../../lambda/cluster/rules/served-load-balancers.js';

const arn = (name: string) =>
  `arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/${name}/0123456789abcdef`;
const service = (o: Partial<ServiceView> & Pick<ServiceView, 'name'>): ServiceView => ({
  namespace: 'web',
  uid: '6b1d3c3e-8f4a-4c1e-9d2b-0a1b2c3d4e5f',
  type: 'NodePort',
  loadBalancerClass: undefined,
  annotations: {},
  nodePorts: [{ port: 80, name: 'http', nodePort: 30080 }],
  ...o,
});

describe('the load balancers the cluster serves', () => {
  it('names an in-tree load balancer as the cloud provider does: "a" and the UID without dashes, 32 characters', () => {
    expect(inTreeLoadBalancerName('6b1d3c3e-8f4a-4c1e-9d2b-0a1b2c3d4e5f')).toBe('a6b1d3c3e8f4a4c1e9d2b0a1b2c3d4e5');
    expect(inTreeLoadBalancerName('6b1d3c3e-8f4a-4c1e-9d2b-0a1b2c3d4e5f')).toHaveLength(32);
  });

  it('a binding’s target group, on the NodePort of its Service’s port (by number or by name); ip targets are not the instance’s', () => {
    const served = servedBy(
      [
        {
          targetGroupArn: arn('by-number'),
          targetType: 'instance',
          service: { namespace: 'web', name: 'front', port: 80 },
        },
        {
          targetGroupArn: arn('by-name'),
          targetType: undefined,
          service: { namespace: 'web', name: 'front', port: 'http' },
        },
        { targetGroupArn: arn('pods'), targetType: 'ip', service: { namespace: 'web', name: 'front', port: 80 } },
        {
          targetGroupArn: arn('no-service'),
          targetType: 'instance',
          service: { namespace: 'web', name: 'gone', port: 80 },
        },
        { targetGroupArn: undefined, targetType: 'instance', service: undefined },
      ],
      [service({ name: 'front' })],
    );
    expect(served.targetGroups).toEqual([
      { arn: arn('by-number'), port: 30080 },
      { arn: arn('by-name'), port: 30080 },
      { arn: arn('no-service'), port: undefined },
    ]);
  });

  it('one group bound on two ports: every target is read', () => {
    const served = servedBy(
      [
        { targetGroupArn: arn('shared'), targetType: 'instance', service: { namespace: 'web', name: 'a', port: 80 } },
        { targetGroupArn: arn('shared'), targetType: 'instance', service: { namespace: 'web', name: 'b', port: 80 } },
      ],
      [service({ name: 'a' }), service({ name: 'b', nodePorts: [{ port: 80, name: undefined, nodePort: 31000 }] })],
    );
    expect(served.targetGroups).toEqual([{ arn: arn('shared'), port: undefined }]);
  });

  it('Services of type LoadBalancer the in-tree controller serves: Classic by default, NLB when annotated; not the AWS Load Balancer Controller’s, nor another class', () => {
    const lb = (name: string, uid: string, o: Partial<ServiceView> = {}) =>
      service({ name, uid, type: 'LoadBalancer', ...o });
    const served = servedBy(
      [],
      [
        lb('classic', '00000000-0000-0000-0000-00000000000a'),
        lb('nlb', '00000000-0000-0000-0000-00000000000b', {
          annotations: { 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb' },
        }),
        lb('lbc', '00000000-0000-0000-0000-00000000000c', {
          annotations: { 'service.beta.kubernetes.io/aws-load-balancer-type': 'external' },
        }),
        lb('lbc-class', '00000000-0000-0000-0000-00000000000d', { loadBalancerClass: 'service.k8s.aws/nlb' }),
        service({ name: 'node-port', uid: '00000000-0000-0000-0000-00000000000e' }),
      ],
    );
    expect(served.classicNames).toEqual(['a0000000000000000000000000000000']);
    expect(served.networkNames).toEqual(['a0000000000000000000000000000000']);
    expect(served.classicNames[0]).toBe(inTreeLoadBalancerName('00000000-0000-0000-0000-00000000000a'));
  });

  describe('for one node: the groups whose bindings select it (spec.nodeSelector)', () => {
    const binding = (name: string, nodeSelector?: object) => ({
      targetGroupArn: arn(name),
      targetType: 'instance',
      service: { namespace: 'web', name: 'front', port: 80 },
      ...(nodeSelector !== undefined ? { nodeSelector } : {}),
    });
    const served = servedBy(
      [
        binding('slot-a', { matchLabels: { slot: 'a' } }),
        binding('slot-b', { matchExpressions: [{ key: 'slot', operator: 'In', values: ['b'] }] }),
        binding('every-node'),
        binding('empty-selector', {}),
        binding('unknown-operator', { matchExpressions: [{ key: 'slot', operator: 'Gt', values: ['1'] }] }),
        // One group, two bindings: a node either selects.
        binding('shared', { matchLabels: { slot: 'a' } }),
        binding('shared', { matchLabels: { slot: 'c' } }),
        // Not excluded from load balancers: judged on the label as it was before our marks.
        binding('not-excluded', {
          matchExpressions: [
            { key: 'node.kubernetes.io/exclude-from-external-load-balancers', operator: 'DoesNotExist' },
          ],
        }),
      ],
      [service({ name: 'front' })],
    );
    const names = (labels: Record<string, string>, setExclusion = true, priorExclusion?: string) =>
      servedForNode(served, labels, { setExclusion, priorExclusion }).targetGroups.map((g) => g.arn.split('/')[1]);
    const excluded = { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' };

    it('keeps the groups that select the node, every node, or a selector it cannot read; leaves the others out', () => {
      expect(names({ slot: 'a', ...excluded })).toEqual([
        'slot-a',
        'every-node',
        'empty-selector',
        'unknown-operator',
        'shared',
        'not-excluded',
      ]);
      expect(names({ slot: 'c', ...excluded })).toEqual([
        'every-node',
        'empty-selector',
        'unknown-operator',
        'shared',
        'not-excluded',
      ]);
      expect(names({ slot: 'b', ...excluded })).toContain('slot-b');
      expect(names({ slot: 'b', ...excluded })).not.toContain('shared');
    });

    it('judges the exclusion label by its value before our marks, and as it is when someone else set it', () => {
      expect(names({ slot: 'z', ...excluded }, true, undefined)).toContain('not-excluded');
      expect(names({ slot: 'z', ...excluded }, true, 'true')).not.toContain('not-excluded');
      expect(names({ slot: 'z', ...excluded }, false)).not.toContain('not-excluded');
    });
  });
});
