// The load-balancer reading (lambda/adapters/aws/load-balancers.ts) against a local stand-in
// for ELB's two Query APIs (test/fakes/elb-stub.ts): which target groups and Classic Load
// Balancers are the cluster's, paging and tag batches, and what "holds the instance" means.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createLoadBalancerTargets,
  heldByClassic,
  heldByTargetGroup,
  taggedForCluster,
} from '../../../../lambda/adapters/aws/load-balancers.js';
import type { ServedLoadBalancers } from '../../../../lambda/shared/served-load-balancers.js';
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
    for (const state of ['initial', 'healthy', 'unhealthy', 'unhealthy.draining', 'draining', 'unavailable'])
      expect(heldByTargetGroup(state)).toBe(true);
    expect(heldByTargetGroup('unused')).toBe(false);
    expect(heldByClassic('InService', 'Instance deregistration currently in progress.')).toBe(true);
    expect(
      heldByClassic(
        'OutOfService',
        'Instance has failed at least the UnhealthyThreshold number of health checks consecutively.',
      ),
    ).toBe(true);
    expect(heldByClassic('OutOfService', 'Instance is not currently registered with the LoadBalancer.')).toBe(false);
  });
});

describe('reading the load balancers the cluster serves', () => {
  let elb: ElbStub;
  beforeEach(async () => (elb = await startElbStub()));
  afterEach(() => elb.close());

  const targets = (o: Partial<Parameters<typeof createLoadBalancerTargets>[0]> = {}) =>
    createLoadBalancerTargets({
      region: 'eu-west-1',
      credentials,
      clusterName: 'prod',
      endpoints: { v2: elb.url, classic: elb.url },
      sleep: async () => {},
      ...o,
    });
  const served = (o: Partial<ServedLoadBalancers> = {}): ServedLoadBalancers => ({
    targetGroups: [],
    classicNames: [],
    networkNames: [],
    ...o,
  });
  const count = (api: string, action: string) => elb.calls.filter((c) => c.api === api && c.action === action).length;

  it('reads only the TargetGroupBindings’ groups and the in-tree Classic Load Balancers, never the account (800 other groups there)', async () => {
    for (let i = 0; i < 800; i++) elb.addTargetGroup(`other-team-${i}`, { tags: { 'elbv2.k8s.aws/cluster': 'prod' } });
    // Made by Terraform and bound with a TargetGroupBinding: no cluster tag.
    const bound = elb.addTargetGroup('tf-web', { targets: new Map([[instance, 'draining']]) });
    elb.addClassic('a1b2c3', {
      instances: new Map([
        [instance, { state: 'InService', description: 'Instance deregistration currently in progress.' }],
      ]),
    });

    const reading = await targets().holding(instance, {
      served: served({ targetGroups: [{ arn: bound.arn, port: 30080 }], classicNames: ['a1b2c3'] }),
    });

    expect(reading).toMatchObject({
      read: true,
      holds: [
        { kind: 'target-group', id: bound.arn, name: 'tf-web', state: 'draining', port: 30080 },
        { kind: 'classic', id: 'a1b2c3', name: 'a1b2c3', state: 'InService' },
      ],
      unread: [],
      calls: 2,
    });
    expect(
      count('elbv2', 'DescribeTargetGroups') + count('elbv2', 'DescribeTags') + count('elb', 'DescribeLoadBalancers'),
    ).toBe(0);
    // The bound Service's NodePort is known: one target asked for, not the group's 2,000.
    const health = elb.calls.find((c) => c.action === 'DescribeTargetHealth')!;
    expect(health.form).toMatchObject({ 'Targets.member.1.Id': instance, 'Targets.member.1.Port': '30080' });
  });

  it('a group bound on its NodePort answers for that target only: the bytes do not grow with the nodes registered', async () => {
    const many = new Map<string, string>([[instance, 'draining']]);
    for (let i = 0; i < 2000; i++) many.set(`i-${i.toString(16).padStart(17, '0')}`, 'healthy');
    const g = elb.addTargetGroup('k8s-big', { targets: many });
    await targets().holding(instance, { served: served({ targetGroups: [{ arn: g.arn, port: 30080 }] }) });
    const one = elb.bytes;
    await targets().holding(instance, { served: served({ targetGroups: [{ arn: g.arn }] }) });
    expect(one).toBeLessThan(2_000);
    expect(elb.bytes - one).toBeGreaterThan(100 * one);
  });

  it('never more than 4 calls in flight, however many groups the cluster serves (35 here)', async () => {
    elb.delayMs = 30;
    const groups = Array.from({ length: 35 }, (_, i) =>
      elb.addTargetGroup(`k8s-${i}`, { targets: new Map([[instance, 'draining']]) }),
    );
    const reading = await targets().holding(instance, {
      served: served({ targetGroups: groups.map((g) => ({ arn: g.arn, port: 30080 })) }),
    });
    expect(reading.read && reading.holds).toHaveLength(35);
    expect(elb.maxInFlight).toBeLessThanOrEqual(4);
  });

  it("paces one reading: calls start at least 200 ms apart (5 a second, half of ELB's refill), however many groups", async () => {
    const groups = Array.from({ length: 6 }, (_, i) =>
      elb.addTargetGroup(`k8s-paced-${i}`, { targets: new Map([[instance, 'draining']]) }),
    );
    // The schedule the reading keeps, on a clock of its own: the machine's load cannot move it.
    const t0 = Date.parse('2026-11-28T10:00:00Z');
    const starts: number[] = [t0];
    const lbs = createLoadBalancerTargets({
      region: 'eu-west-1',
      credentials,
      clusterName: 'prod',
      endpoints: { v2: elb.url, classic: elb.url },
      now: () => t0,
      sleep: async (ms) => {
        starts.push(t0 + ms);
      },
    });
    const reading = await lbs.holding(instance, {
      served: served({ targetGroups: groups.map((g) => ({ arn: g.arn, port: 30080 })) }),
    });
    expect(reading.calls).toBe(6);
    expect(elb.calls).toHaveLength(6);
    const sorted = [...starts].sort((a, b) => a - b);
    expect(sorted).toHaveLength(6);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!).toBeGreaterThanOrEqual(200);
  });

  it('a group that fails is unread, not let go; the others are read; all failing fails the reading', async () => {
    const ok = elb.addTargetGroup('k8s-ok', { targets: new Map([[instance, 'draining']]) });
    const bad = elb.addTargetGroup('k8s-bad', { targets: new Map([[instance, 'draining']]) });
    elb.failing.add(bad.arn);
    const lbs = targets({ maxAttempts: 1 });
    const reading = await lbs.holding(instance, {
      served: served({ targetGroups: [{ arn: ok.arn }, { arn: bad.arn }] }),
    });
    expect(reading).toMatchObject({
      read: true,
      holds: [{ name: 'k8s-ok', state: 'draining' }],
      unread: [{ name: 'k8s-bad', state: 'unknown' }],
    });
    elb.failing.add(ok.arn);
    expect(
      await lbs.holding(instance, { served: served({ targetGroups: [{ arn: ok.arn }, { arn: bad.arn }] }) }),
    ).toMatchObject({ read: false, denied: false });
  });

  it('the in-tree controller’s Network Load Balancer: its instance target groups by the load balancer’s name', async () => {
    const nlb = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/net/a0123/0f';
    elb.networkBalancers.set('a0123', nlb);
    elb.addTargetGroup('k8s-tcp-80', { loadBalancerArn: nlb, targets: new Map([[instance, 'draining']]) });
    elb.addTargetGroup('elsewhere', { targets: new Map([[instance, 'draining']]) });
    const reading = await targets().holding(instance, { served: served({ networkNames: ['a0123', 'a-gone'] }) });
    expect(reading).toMatchObject({ read: true, holds: [{ name: 'k8s-tcp-80' }] });
  });

  it('the tag scan is opt-in: pages by 400, tags by 20, and one deleted group does not fail the rest', async () => {
    for (let i = 0; i < 430; i++) elb.addTargetGroup(`other-${i}`, { tags: { 'elbv2.k8s.aws/cluster': 'staging' } });
    const web = elb.addTargetGroup('k8s-default-web', {
      tags: { 'elbv2.k8s.aws/cluster': 'prod' },
      targets: new Map([[instance, 'draining']]),
    });
    elb.addTargetGroup('k8s-default-pods', { type: 'ip', tags: { 'elbv2.k8s.aws/cluster': 'prod' } });
    elb.addTargetGroup('team-lb', { tags: { team: 'web' }, targets: new Map([[instance, 'healthy']]) });
    elb.addClassic('legacy', {
      tags: { 'kubernetes.io/cluster/prod': 'owned' },
      instances: new Map([[instance, { state: 'InService', description: 'x' }]]),
    });
    // Deleted between the describe and the tags: DescribeTags refuses the chunk that names it.
    const realTags = elb.targetGroups.slice();
    elb.onCall = (c) => {
      if (c.action === 'DescribeTargetGroups' && !c.form['Marker'])
        elb.targetGroups.splice(elb.targetGroups.indexOf(realTags[3]!), 1);
    };
    const reading = await targets({ tagScan: { extraTags: new Map([['team', 'web']]) } }).holding(instance);
    expect(reading).toMatchObject({ read: true, holds: [{ id: web.arn }, { name: 'team-lb' }, { name: 'legacy' }] });
    expect(count('elbv2', 'DescribeTargetGroups')).toBe(2);
    expect(count('elbv2', 'DescribeTags')).toBeGreaterThanOrEqual(22);
    expect(elb.calls.find((c) => c.action === 'DescribeTargetGroups' && c.form['Marker'])?.form['Marker']).toBe('400');
  });

  it('re-reads only what still held the instance', async () => {
    const web = elb.addTargetGroup('k8s-default-web', { targets: new Map([[instance, 'draining']]) });
    const lbs = targets();
    const first = await lbs.holding(instance, { served: served({ targetGroups: [{ arn: web.arn }] }) });
    if (!first.read) throw first.error;
    const before = elb.calls.length;
    web.targets.delete(instance);
    expect(await lbs.holding(instance, { among: first.holds })).toMatchObject({ read: true, holds: [], calls: 1 });
    expect(elb.calls.slice(before).map((c) => `${c.action} ${c.form['TargetGroupArn'] ?? ''}`)).toEqual([
      `DescribeTargetHealth ${web.arn}`,
    ]);
  });

  it('an unregistered instance, a deleted target group or load balancer: not held, not a failure', async () => {
    const gone = elb.addTargetGroup('k8s-gone', { targets: new Map([[instance, 'draining']]) });
    const lbs = targets();
    const first = await lbs.holding(instance, {
      served: served({ targetGroups: [{ arn: gone.arn }], classicNames: ['never-made'] }),
    });
    expect(first).toMatchObject({ read: true, holds: [{ name: 'k8s-gone' }] });
    elb.targetGroups.splice(elb.targetGroups.indexOf(gone), 1);
    expect(await lbs.holding(instance, { among: first.read ? first.holds : [] })).toMatchObject({
      read: true,
      holds: [],
    });
  });

  it('denied: a reading that says so, never an exception', async () => {
    const g = elb.addTargetGroup('k8s-default-web');
    elb.denied = true;
    const reading = await targets().holding(instance, { served: served({ targetGroups: [{ arn: g.arn }] }) });
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
    expect(await lbs.holding(instance, { served: served({ classicNames: ['a1'] }) })).toMatchObject({
      read: false,
      denied: false,
    });
  });

  it('shared: one call answers for every instance a group or Classic Load Balancer has registered', async () => {
    const g = elb.addTargetGroup('k8s-web', {
      targets: new Map([
        [instance, 'draining'],
        ['i-0aaaaaaaaaaaaaaaa', 'healthy'],
        ['i-0bbbbbbbbbbbbbbbb', 'unused'],
      ]),
    });
    elb.addClassic('a1b2c3', {
      instances: new Map([
        [instance, { state: 'InService', description: 'Instance deregistration currently in progress.' }],
        [
          'i-0cccccccccccccccc',
          { state: 'OutOfService', description: 'Instance is not currently registered with the LoadBalancer.' },
        ],
      ]),
    });
    const t = targets();
    const [group, classic] = await t.candidates(
      served({ targetGroups: [{ arn: g.arn, port: 30080 }], classicNames: ['a1b2c3'] }),
    );
    expect(group).toMatchObject({ kind: 'target-group', id: g.arn, name: 'k8s-web', state: 'unknown', port: 30080 });
    expect(await t.registered(group!)).toEqual({
      read: true,
      targets: new Map([
        [instance, 'draining'],
        ['i-0aaaaaaaaaaaaaaaa', 'healthy'],
      ]),
      calls: 1,
    });
    expect(await t.registered(classic!)).toEqual({ read: true, targets: new Map([[instance, 'InService']]), calls: 1 });
    // Every target, not one: no Targets nor Instances asked for.
    const asked = elb.calls.filter((c) => c.action === 'DescribeTargetHealth' || c.action === 'DescribeInstanceHealth');
    expect(asked.map((c) => Object.keys(c.form).filter((k) => k.includes('member')))).toEqual([[], []]);
  });

  it('shared: a deleted group is none registered; denied, failing and throttled say so', async () => {
    const t = targets();
    const gone = {
      kind: 'target-group' as const,
      id: 'arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/x/1',
      name: 'x',
      state: 'unknown',
    };
    expect(await t.registered(gone)).toEqual({ read: true, targets: new Map(), calls: 1 });
    const g = elb.addTargetGroup('k8s-failing');
    elb.failing.add(g.arn);
    expect(await t.registered({ ...gone, id: g.arn })).toMatchObject({ read: false, denied: false, throttled: false });
    elb.failing.clear();
    elb.bucket = { capacity: 0, refillPerSecond: 0 };
    expect(await t.registered({ ...gone, id: g.arn })).toMatchObject({ read: false, denied: false, throttled: true });
    elb.bucket = undefined;
    elb.denied = true;
    expect(await t.registered({ ...gone, id: g.arn })).toMatchObject({ read: false, denied: true });
  });
});
