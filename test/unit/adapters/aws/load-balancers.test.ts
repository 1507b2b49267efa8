// The load-balancer reading (lambda/adapters/aws/load-balancers.ts) against a local stand-in
// for ELB's two Query APIs (test/fakes/elb-stub.ts): which target groups and Classic Load
// Balancers are the cluster's, paging and tag batches, and what "holds the instance" means.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLoadBalancerTargets, heldByClassic, heldByTargetGroup, taggedForCluster } from '../../../../lambda/adapters/aws/load-balancers.js';
import { startElbStub, type ElbStub } from '../../../fakes/elb-stub.js';

const instance = 'i-0123456789abcdef0';
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };

describe('which load balancers are the cluster’s', () => {
  it('the AWS Load Balancer Controller’s tag, the in-tree controller’s, and the deployer’s own', () => {
    const tags = (o: Record<string, string>) => new Map(Object.entries(o));
    expect(taggedForCluster(tags({ 'elbv2.k8s.aws/cluster': 'prod' }), 'prod')).toBe(true);
    expect(taggedForCluster(tags({ 'elbv2.k8s.aws/cluster': 'staging' }), 'prod')).toBe(false);
    expect(taggedForCluster(tags({ 'kubernetes.io/cluster/prod': 'owned' }), 'prod')).toBe(true);
    expect(taggedForCluster(tags({ 'kubernetes.io/cluster/prod-2': 'owned' }), 'prod')).toBe(false);
    const extra = new Map<string, string | undefined>([
      ['team', 'web'],
      ['ops/managed', undefined],
    ]);
    expect(taggedForCluster(tags({ team: 'web' }), 'prod', extra)).toBe(true);
    expect(taggedForCluster(tags({ team: 'db' }), 'prod', extra)).toBe(false);
    expect(taggedForCluster(tags({ 'ops/managed': 'anything' }), 'prod', extra)).toBe(true);
  });

  it('what holds an instance', () => {
    for (const state of ['initial', 'healthy', 'unhealthy', 'unhealthy.draining', 'draining', 'unavailable']) expect(heldByTargetGroup(state)).toBe(true);
    expect(heldByTargetGroup('unused')).toBe(false);
    expect(heldByClassic('InService', 'Instance deregistration currently in progress.')).toBe(true);
    expect(heldByClassic('OutOfService', 'Instance has failed at least the UnhealthyThreshold number of health checks consecutively.')).toBe(true);
    expect(heldByClassic('OutOfService', 'Instance is not currently registered with the LoadBalancer.')).toBe(false);
  });
});

describe('reading the cluster’s load balancers', () => {
  let elb: ElbStub;
  beforeEach(async () => (elb = await startElbStub()));
  afterEach(() => elb.close());

  const targets = (o: { cacheMs?: number; extraTags?: Map<string, string | undefined> } = {}) =>
    createLoadBalancerTargets({ region: 'eu-west-1', credentials, clusterName: 'prod', endpoints: { v2: elb.url, classic: elb.url }, sleep: async () => {}, ...o });

  it('pages the describes, tags by 20, and reads only the instance target groups and Classic Load Balancers tagged for the cluster', async () => {
    for (let i = 0; i < 430; i++) elb.addTargetGroup(`other-${i}`, { tags: { 'elbv2.k8s.aws/cluster': 'staging' } });
    const web = elb.addTargetGroup('k8s-default-web', { tags: { 'elbv2.k8s.aws/cluster': 'prod' }, targets: new Map([[instance, 'draining']]) });
    elb.addTargetGroup('k8s-default-pods', { type: 'ip', tags: { 'elbv2.k8s.aws/cluster': 'prod' } });
    elb.addTargetGroup('k8s-legacy-nlb', { tags: { 'kubernetes.io/cluster/prod': 'owned' }, targets: new Map([['i-other', 'healthy']]) });
    elb.addClassic('a1b2c3', {
      tags: { 'kubernetes.io/cluster/prod': 'owned' },
      instances: new Map([[instance, { state: 'InService', description: 'Instance deregistration currently in progress.' }]]),
    });
    elb.addClassic('someone-elses');

    const reading = await targets().holding(instance);

    expect(reading).toMatchObject({
      read: true,
      holds: [
        { kind: 'target-group', id: web.arn, name: 'k8s-default-web', state: 'draining' },
        { kind: 'classic', id: 'a1b2c3', name: 'a1b2c3', state: 'InService' },
      ],
    });
    const count = (api: string, action: string) => elb.calls.filter((c) => c.api === api && c.action === action).length;
    expect(count('elbv2', 'DescribeTargetGroups')).toBe(2); // 433 groups, 400 a page
    expect(elb.calls.find((c) => c.action === 'DescribeTargetGroups' && c.form['Marker'])?.form['Marker']).toBe('400');
    expect(count('elbv2', 'DescribeTags')).toBe(22); // 432 instance groups, 20 a call
    expect(count('elbv2', 'DescribeTargetHealth')).toBe(2); // only the cluster's two instance groups
    expect(count('elb', 'DescribeLoadBalancers')).toBe(1);
    expect(count('elb', 'DescribeTags')).toBe(1);
    expect(count('elb', 'DescribeInstanceHealth')).toBe(1);
    expect(reading.calls).toBe(elb.calls.length);
    expect(elb.calls.every((c) => c.form['Version'] === (c.api === 'elb' ? '2012-06-01' : '2015-12-01'))).toBe(true);
  });

  it('keeps the list for a minute and re-reads only what still held the instance', async () => {
    const web = elb.addTargetGroup('k8s-default-web', { tags: { 'elbv2.k8s.aws/cluster': 'prod' }, targets: new Map([[instance, 'draining']]) });
    elb.addTargetGroup('k8s-default-api', { tags: { 'elbv2.k8s.aws/cluster': 'prod' } });
    const lbs = targets();
    const first = await lbs.holding(instance);
    if (!first.read) throw first.error;
    const before = elb.calls.length;

    web.targets.delete(instance);
    const again = await lbs.holding(instance, first.holds);

    expect(again).toMatchObject({ read: true, holds: [], calls: 1 });
    expect(elb.calls.slice(before).map((c) => `${c.action} ${c.form['TargetGroupArn'] ?? ''}`)).toEqual([`DescribeTargetHealth ${web.arn}`]);
    // Another instance's first look within the minute: no describe, no tags.
    const other = await lbs.holding('i-other');
    expect(other.calls).toBe(2);
  });

  it('an unregistered instance, a deleted target group or load balancer: not held, not a failure', async () => {
    const gone = elb.addTargetGroup('k8s-gone', { tags: { 'elbv2.k8s.aws/cluster': 'prod' }, targets: new Map([[instance, 'draining']]) });
    elb.addClassic('a1b2c3', { tags: { 'kubernetes.io/cluster/prod': 'owned' } });
    const lbs = targets();
    const first = await lbs.holding(instance);
    expect(first).toMatchObject({ read: true, holds: [{ name: 'k8s-gone' }] });
    elb.targetGroups.splice(elb.targetGroups.indexOf(gone), 1);
    expect(await lbs.holding(instance, first.read ? first.holds : [])).toMatchObject({ read: true, holds: [] });
  });

  it('denied: a reading that says so, never an exception', async () => {
    elb.addTargetGroup('k8s-default-web', { tags: { 'elbv2.k8s.aws/cluster': 'prod' } });
    elb.denied = true;
    const reading = await targets().holding(instance);
    expect(reading).toMatchObject({ read: false, denied: true });
    expect(reading.read ? '' : reading.error.message).toContain('AccessDenied');
  });

  it('unreachable: a reading that says so, not denied', async () => {
    const lbs = createLoadBalancerTargets({
      region: 'eu-west-1',
      credentials,
      clusterName: 'prod',
      endpoints: { v2: 'http://127.0.0.1:9/', classic: 'http://127.0.0.1:9/' },
      sleep: async () => {},
    });
    expect(await lbs.holding(instance)).toMatchObject({ read: false, denied: false });
  });
});
