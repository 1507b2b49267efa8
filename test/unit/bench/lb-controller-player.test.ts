// The bench's AWS Load Balancer Controller stand-in (bench/lb-controller-player.ts) against the
// ELB stand-in: a target is deregistered only once the controller has read its group, drains for
// the group's delay, and the controller's reads spend (and meet) the account's Describe bucket.
import type { V1Node } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { controllerAgent, excludeLabel, startControllerPlayer } from '../../../bench/lb-controller-player.js';
import { startElbStub, type ElbStub } from '../../fakes/elb-stub.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const node = (name: string, o: { excluded?: boolean; cordoned?: boolean } = {}): V1Node => ({
  metadata: { name, labels: o.excluded ? { [excludeLabel]: 'true' } : {} },
  spec: o.cordoned ? { unschedulable: true } : {},
});

describe('the Load Balancer Controller stand-in', () => {
  let elb: ElbStub;
  let stop: (() => void) | undefined;
  afterEach(async () => {
    stop?.();
    await elb.close();
  });

  async function world(o: { delaysSeconds: [number, number]; bucket?: ElbStub['bucket'] }) {
    elb = await startElbStub();
    const a = elb.addTargetGroup('k8s-a', {
      targets: new Map([
        ['i-a', 'healthy'],
        ['i-b', 'healthy'],
      ]),
    });
    const b = elb.addTargetGroup('k8s-b', { targets: new Map([['i-b', 'healthy']]) });
    elb.bucket = o.bucket;
    let tell: (n: V1Node) => void = () => {};
    const player = startControllerPlayer({
      elb,
      nodes: (seen) => {
        tell = seen;
        return () => {};
      },
      groups: [
        { group: a, deregistrationDelaySeconds: o.delaysSeconds[0] },
        { group: b, deregistrationDelaySeconds: o.delaysSeconds[1] },
      ],
      instanceOf: (name) => ({ 'node-a': 'i-a', 'node-b': 'i-b' })[name],
      periodicReadSeconds: 0,
    });
    stop = player.stop;
    // The start-up reads (one per group) answered first.
    await until('the start-up reads', () => elb.calls.length === 2);
    return { a, b, player, tell: (n: V1Node) => tell(n) };
  }

  it('deregisters an excluded node from the groups that hold it, each for its delay; reads a group whose targets are not all healthy first', async () => {
    const { a, b, player, tell } = await world({ delaysSeconds: [0.3, 0.8] });
    tell(node('node-a'));
    await sleep(100);
    expect(a.targets.get('i-a')).toBe('healthy'); // neither excluded nor cordoned: still a traffic proxy
    // The start-up read left every target healthy in the controller's cache: no read before deregistering.
    tell(node('node-b', { excluded: true }));
    await until(
      'node-b draining in both groups',
      () => a.targets.get('i-b') === 'draining' && b.targets.get('i-b') === 'draining',
    );
    expect(elb.calls).toHaveLength(2);
    // Group a now holds a target that is not healthy: the next reconcile reads it before deregistering.
    tell(node('node-a', { excluded: true }));
    await until('node-a draining in a', () => a.targets.get('i-a') === 'draining');
    expect(
      elb.calls.slice(2).map((c) => [c.action, c.form['TargetGroupArn'], c.form['Targets.member.1.Id'], c.agent]),
    ).toEqual([['DescribeTargetHealth', a.arn, 'i-b', `${controllerAgent} reconcile`]]);
    expect(elb.calls[2]!.atMs).toBeLessThanOrEqual(player.deregisteredAtMs.get('i-a')!.get(a.arn)!);
    await until('node-b gone from a', () => !a.targets.has('i-b'));
    expect(b.targets.get('i-b')).toBe('draining');
    await until('node-b gone from b', () => !b.targets.has('i-b'));
    const left = player.letGoAtMs.get('i-b')!;
    const drained = (arn: string) => left.get(arn)! - player.deregisteredAtMs.get('i-b')!.get(arn)!;
    expect(drained(a.arn)).toBeGreaterThanOrEqual(290);
    expect(drained(b.arn)).toBeGreaterThanOrEqual(790);
    expect(player.counts.deregisterCalls).toBe(3);
  });

  it('a cordoned node is deregistered too (the controller before the exclusion label)', async () => {
    const { a, tell } = await world({ delaysSeconds: [5, 5] });
    tell(node('node-a', { cordoned: true }));
    await until('node-a draining', () => a.targets.get('i-a') === 'draining');
  });

  it("meets the account's bucket: a throttled read is retried, and the target deregistered only once a read is answered", async () => {
    // Two tokens, both spent by the start-up reads; one back a second.
    const { a, player, tell } = await world({ delaysSeconds: [5, 5], bucket: { capacity: 2, refillPerSecond: 1 } });
    tell(node('node-b', { excluded: true }));
    await until('node-b draining', () => a.targets.get('i-b') === 'draining');
    tell(node('node-a', { excluded: true }));
    await until('node-a draining', () => a.targets.get('i-a') === 'draining', 20_000);
    const reads = elb.calls.slice(2);
    expect(reads[0]).toMatchObject({ throttled: true, agent: `${controllerAgent} reconcile` });
    const answered = reads.find((c) => !c.throttled)!;
    expect(answered.atMs).toBeLessThanOrEqual(player.deregisteredAtMs.get('i-a')!.get(a.arn)!);
    expect(player.deregisteredAtMs.get('i-a')!.get(a.arn)! - reads[0]!.atMs).toBeGreaterThan(0);
  });

  it('reads nothing more once stopped', async () => {
    const { player, tell } = await world({ delaysSeconds: [5, 5] });
    player.stop();
    tell(node('node-a', { excluded: true }));
    await sleep(200);
    expect(elb.calls).toHaveLength(2);
  });
});
