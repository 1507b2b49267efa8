// Each invariant of the soak (test/soak/invariants/) finds the violation planted in observations
// built by hand, and passes the same observations without it: none can only pass.
import { describe, expect, it } from 'vitest';
import {
  noHealthyLaunchAbandoned,
  noWriteWithoutConfirmation,
  oneCompletionPerAction,
} from '../../soak/invariants/actions.js';
import { drainRulesKept, noPodEvictedTwice } from '../../soak/invariants/drain-rules.js';
import { invariants } from '../../soak/invariants/index.js';
import { marksGoneAfterOwnerEnded } from '../../soak/invariants/marks.js';
import { policyAnswersWithinAsk } from '../../soak/invariants/policy.js';
import { noReleaseWhilePodsMustLeave, noReleaseWhileVolumesOrTargetsHold } from '../../soak/invariants/release.js';
import { surgeKeepsOneReady } from '../../soak/invariants/surge.js';
import type { Observations } from '../../soak/observations.js';
import { action, at, audit, evictionOf, node, observations, pod, release, state } from './observations-fixture.js';

const names = (violations: { invariant: string }[]) => violations.map((v) => v.invariant);

describe('the soak invariants', () => {
  it('every invariant passes a run where nothing went wrong', () => {
    const o = observations();
    for (const i of invariants) expect({ name: i.name, found: i.check(o) }).toEqual({ name: i.name, found: [] });
  });

  describe('noReleaseWhilePodsMustLeave', () => {
    const web = pod('web-1', 'n-1');
    const agent = pod('agent-1', 'n-1', { ownerKind: 'DaemonSet' });
    const cache = pod('cache-1', 'n-1', { labels: { 'cluster.x-k8s.io/drain': 'skip' } });
    const snap = (names: string[], events = [{ reason: 'Drained', message: '' }]) =>
      release({
        pods: names.map((n) => ({
          uid: `uid-${n}`,
          namespace: 'soak-1',
          name: n,
          phase: 'Running',
          terminating: false,
          volumes: [],
        })),
        events,
      });

    it('finds a CONTINUE while a pod that must leave still runs', () => {
      const o = observations({ pods: [web, agent, cache], releases: [snap(['web-1', 'agent-1'])] });
      expect(noReleaseWhilePodsMustLeave(o)).toEqual([
        expect.objectContaining({
          invariant: 'noReleaseWhilePodsMustLeave',
          message: expect.stringContaining('soak-1/web-1'),
        }),
      ]);
    });

    it('lets DaemonSet and Skip pods stay, and a pod the deadline policy left when DrainTimedOut says so', () => {
      expect(
        noReleaseWhilePodsMustLeave(
          observations({ pods: [web, agent, cache], releases: [snap(['agent-1', 'cache-1'])] }),
        ),
      ).toEqual([]);
      const timedOut = snap(['web-1'], [{ reason: 'DrainTimedOut', message: 'Drain deadline reached after 60 s' }]);
      expect(noReleaseWhilePodsMustLeave(observations({ pods: [web], releases: [timedOut] }))).toEqual([]);
    });
  });

  it('noReleaseWhilePodsMustLeave: a pod running at the release and failed later (its node deleted) still had to leave', () => {
    const web = (finishedAt: number) => pod('web-1', 'n-1', { finishedMs: at(finishedAt) });
    const running = release({
      pods: [
        { uid: 'uid-web-1', namespace: 'soak-1', name: 'web-1', phase: 'Running', terminating: false, volumes: [] },
      ],
    });
    expect(names(noReleaseWhilePodsMustLeave(observations({ pods: [web(80)], releases: [running] })))).toEqual([
      'noReleaseWhilePodsMustLeave',
    ]);
    const failed = release({
      pods: [
        { uid: 'uid-web-1', namespace: 'soak-1', name: 'web-1', phase: 'Failed', terminating: false, volumes: [] },
      ],
    });
    expect(noReleaseWhilePodsMustLeave(observations({ pods: [web(40)], releases: [failed] }))).toEqual([]);
    // Unless the drainer said before the release that it no longer waits for that very pod.
    const notWaited = (names: string) => ({ reason: 'PodsNotWaitedFor', message: `Not waiting for ${names}: gone.` });
    const given = (names: string) => ({ ...running, events: [{ reason: 'Drained', message: '' }, notWaited(names)] });
    const found = (names: string) =>
      noReleaseWhilePodsMustLeave(observations({ pods: [web(80)], releases: [given(names)] })).length;
    expect([found('soak-1/api-1, soak-1/web-1'), found('soak-1/web-10'), found('soak-1/web-1x')]).toEqual([0, 1, 1]);
  });

  it('noReleaseWhilePodsMustLeave: with DaemonSet pods evicted, one left behind is found, its replacement is not', () => {
    const evicting = { ...observations().settings, evictDaemonSetPods: true };
    const agent = (createdAt: number) =>
      pod('agent-1', 'n-1', { ownerKind: 'DaemonSet', createdMs: at(createdAt), boundMs: at(createdAt) });
    const on = release({
      pods: [
        { uid: 'uid-agent-1', namespace: 'soak-1', name: 'agent-1', phase: 'Running', terminating: false, volumes: [] },
      ],
    });
    expect(
      names(noReleaseWhilePodsMustLeave(observations({ settings: evicting, pods: [agent(-100)], releases: [on] }))),
    ).toEqual(['noReleaseWhilePodsMustLeave']);
    expect(
      noReleaseWhilePodsMustLeave(observations({ settings: evicting, pods: [agent(20)], releases: [on] })),
    ).toEqual([]);
  });

  describe('noReleaseWhileVolumesOrTargetsHold', () => {
    const attached = { volumeAttachments: [{ name: 'csi-1', persistentVolume: 'pv-db-0' }] };

    it("finds a CONTINUE while a departed pod's volume is still attached", () => {
      expect(names(noReleaseWhileVolumesOrTargetsHold(observations({ releases: [release(attached)] })))).toEqual([
        'noReleaseWhileVolumesOrTargetsHold',
      ]);
    });

    it('lets it go at the deadline (VolumesNotDetached), or when a pod still on the node uses the volume', () => {
      const atDeadline = release({ ...attached, events: [{ reason: 'VolumesNotDetached', message: '' }] });
      expect(noReleaseWhileVolumesOrTargetsHold(observations({ releases: [atDeadline] }))).toEqual([]);
      const used = release({
        ...attached,
        pods: [
          { uid: 'u', namespace: 'soak-1', name: 'agent', phase: 'Running', terminating: false, volumes: ['pv-db-0'] },
        ],
      });
      expect(noReleaseWhileVolumesOrTargetsHold(observations({ releases: [used] }))).toEqual([]);
    });

    it('finds a CONTINUE while a target group still routes to the instance, unless at the maximum or unread', () => {
      const routing = release({ targets: [{ targetGroup: 'k8s-soak-web', state: 'draining' }] });
      expect(names(noReleaseWhileVolumesOrTargetsHold(observations({ releases: [routing] })))).toEqual([
        'noReleaseWhileVolumesOrTargetsHold',
      ]);
      const atMaximum = { ...routing, events: [{ reason: 'TargetsNotDeregistered', message: '' }] };
      expect(noReleaseWhileVolumesOrTargetsHold(observations({ releases: [atMaximum] }))).toEqual([]);
      // Read for others, but this drain's invocations are too short for any reading (12 s less a 5 s margin is
      // under a reading's 8 s): the fixed delay, documented.
      const short = { ...observations().settings, invocationSeconds: 12, invocationMarginSeconds: 5 };
      expect(noReleaseWhileVolumesOrTargetsHold(observations({ settings: short, releases: [routing] }))).toEqual([]);
      const enough = { ...short, invocationSeconds: 13 };
      expect(
        names(noReleaseWhileVolumesOrTargetsHold(observations({ settings: enough, releases: [routing] }))),
      ).toEqual(['noReleaseWhileVolumesOrTargetsHold']);
      const neverRead = observations({ releases: [routing], targetReads: [{ atMs: at(45), answered: false }] });
      expect(noReleaseWhileVolumesOrTargetsHold(neverRead)).toEqual([]);
    });
  });

  describe('oneCompletionPerAction', () => {
    it('finds an action completed twice, one left to the hook timeout, and one still open', () => {
      const twice = action('i-01', {
        completions: [
          { atMs: at(50), result: 'CONTINUE', accepted: true },
          { atMs: at(51), result: 'CONTINUE', accepted: true },
        ],
      });
      const expired = action('i-02', { completions: [], expiredMs: at(800) });
      const open = action('i-03', { completions: [{ atMs: at(10), result: 'CONTINUE', accepted: false }] });
      expect(oneCompletionPerAction(observations({ actions: [twice, expired, open] })).map((v) => v.message)).toEqual([
        expect.stringMatching(/completed 2 times/),
        expect.stringMatching(/left to the hook's heartbeat timeout/),
        expect.stringMatching(/still open when the soak ended/),
      ]);
    });

    it('takes a second completion refused as already done for what it is: one accepted', () => {
      const retried = action('i-01', {
        completions: [
          { atMs: at(50), result: 'CONTINUE', accepted: true },
          { atMs: at(52), result: 'CONTINUE', accepted: false },
        ],
      });
      expect(oneCompletionPerAction(observations({ actions: [retried] }))).toEqual([]);
    });
  });

  describe('noWriteWithoutConfirmation', () => {
    const cordon = (name: string, seconds: number) =>
      audit({
        verb: 'patch',
        resource: 'nodes',
        name,
        receivedMs: at(seconds),
        requestObject: {
          metadata: { labels: { 'graceful-node-termination/owner': 'soak-1' } },
          spec: { unschedulable: true },
        },
      });

    it('finds a mark on a node whose instance has no action, leaving state or Spot notice', () => {
      const found = noWriteWithoutConfirmation(observations({ audit: [cordon('n-2', 10)] }));
      expect(found).toEqual([expect.objectContaining({ message: expect.stringContaining('a mark on node n-2') })]);
    });

    it('lets a drain mark the node of its open action, a confirmed Spot drain mark its node, and anyone take marks back', () => {
      expect(noWriteWithoutConfirmation(observations({ audit: [cordon('n-1', 10)] }))).toEqual([]);
      const spot = observations({
        audit: [cordon('n-2', 10)],
        spots: [{ instanceId: 'i-02', warnedMs: at(9), reclaimMs: at(129), confirmed: true }],
      });
      expect(noWriteWithoutConfirmation(spot)).toEqual([]);
      const takeBack = audit({
        verb: 'patch',
        resource: 'nodes',
        name: 'n-2',
        requestObject: {
          metadata: { labels: { 'graceful-node-termination/owner': null } },
          spec: { unschedulable: null },
        },
      });
      expect(noWriteWithoutConfirmation(observations({ audit: [takeBack] }))).toEqual([]);
    });

    it("lets an instance refresh of the node's group mark it while the refresh lasts, not after", () => {
      const refresh = { id: 'r-1', group: 'soak-a', startedMs: at(5), endedMs: at(30) };
      expect(noWriteWithoutConfirmation(observations({ audit: [cordon('n-2', 10)], refreshes: [refresh] }))).toEqual(
        [],
      );
      expect(
        names(noWriteWithoutConfirmation(observations({ audit: [cordon('n-2', 40)], refreshes: [refresh] }))),
      ).toEqual(['noWriteWithoutConfirmation']);
    });

    it('finds an eviction and a Deployment restart for a node nobody confirmed leaving', () => {
      const p = pod('web-2', 'n-2', { deployment: 'soak-1/web' });
      const restart = audit({
        verb: 'patch',
        resource: 'deployments',
        namespace: 'soak-1',
        name: 'web',
        receivedMs: at(11),
      });
      expect(
        names(noWriteWithoutConfirmation(observations({ pods: [p], audit: [evictionOf(p, 10), restart] }))),
      ).toEqual(['noWriteWithoutConfirmation', 'noWriteWithoutConfirmation']);
    });

    it('finds a write after the action ended (a duplicate delivered late), past a few seconds', () => {
      expect(noWriteWithoutConfirmation(observations({ audit: [cordon('n-1', 52)] }))).toEqual([]);
      const late = observations({
        audit: [cordon('n-1', 90)],
        instanceStates: [
          { instanceId: 'i-01', state: 'InService', atMs: at(-120) },
          { instanceId: 'i-01', state: 'Terminating:Wait', atMs: at(0) },
          { instanceId: 'i-01', state: 'Terminated', atMs: at(55) },
        ],
      });
      expect(names(noWriteWithoutConfirmation(late))).toEqual(['noWriteWithoutConfirmation']);
    });
  });

  describe('drainRulesKept', () => {
    const check = (o: Partial<Observations>) => drainRulesKept(observations(o)).map((v) => v.message);

    it('finds the eviction of a Skip pod and of a WaitCompleted pod', () => {
      const skip = pod('cache-1', 'n-1', { labels: { 'cluster.x-k8s.io/drain': 'skip' } });
      const wait = pod('export-1', 'n-1', { ownerKind: '', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } });
      expect(check({ pods: [skip, wait], audit: [evictionOf(skip, 5, 429), evictionOf(wait, 6)] })).toEqual([
        expect.stringMatching(/cache-1, whose rule is Skip/),
        expect.stringMatching(/export-1, whose rule is WaitCompleted/),
      ]);
    });

    it('reads a finished pod as Skip from when the drainer could see it finished, not before', () => {
      // The pod garbage collector fails the pods of a deleted node: an eviction sent while the pod ran is kept.
      const web = (finishedAt: number) => pod('web-1', 'n-1', { finishedMs: at(finishedAt) });
      expect(check({ pods: [web(12)], audit: [evictionOf(web(12), 10)] })).toEqual([]);
      expect(check({ pods: [web(9)], audit: [evictionOf(web(9), 10)] })).toEqual([]);
      expect(check({ pods: [web(5)], audit: [evictionOf(web(5), 10)] })).toEqual([
        expect.stringMatching(/web-1, whose rule is Skip/),
      ]);
    });

    it('lets a Spot interruption evict a WaitCompleted pod (it waits for nothing), never a Skip pod', () => {
      const skip = pod('cache-1', 'n-2', { labels: { 'cluster.x-k8s.io/drain': 'skip' } });
      const wait = pod('export-1', 'n-2', { ownerKind: '', labels: { 'cluster.x-k8s.io/drain': 'wait-completed' } });
      const spots = [{ instanceId: 'i-02', warnedMs: at(1), reclaimMs: at(121), confirmed: true }];
      expect(check({ pods: [skip, wait], spots, audit: [evictionOf(skip, 5), evictionOf(wait, 6)] })).toEqual([
        expect.stringMatching(/cache-1, whose rule is Skip/),
      ]);
    });

    it('finds a batch pod evicted before its wait was over, not after; a do-not-disrupt duration ends the wait sooner', () => {
      const job = pod('report-1', 'n-1', { ownerKind: 'Job' });
      expect(check({ pods: [job], audit: [evictionOf(job, 10)] })).toEqual([
        expect.stringMatching(/before its batch wait/),
      ]);
      expect(check({ pods: [job], audit: [evictionOf(job, 31)] })).toEqual([]);
      const trainer = pod('trainer-1', 'n-1', { annotations: { 'karpenter.sh/do-not-disrupt': '20s' } });
      expect(check({ pods: [trainer], audit: [evictionOf(trainer, 5)] })).toEqual([]);
      const forever = pod('trainer-2', 'n-1', { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } });
      expect(check({ pods: [forever], audit: [evictionOf(forever, 5)] })).toEqual([
        expect.stringMatching(/batch wait/),
      ]);
    });

    it('finds a higher order evicted while a lower one is still on the node, not once it is gone or at the deadline', () => {
      const api = pod('api-1', 'n-1', {
        annotations: { 'graceful-node-termination/drain-order': '-10' },
        goneMs: at(20),
      });
      const web = pod('web-1', 'n-1');
      expect(check({ pods: [api, web], audit: [evictionOf(web, 10)] })).toEqual([
        expect.stringMatching(/web-1 \(order 0\) while soak-1\/api-1 \(order -10\)/),
      ]);
      expect(check({ pods: [{ ...api, goneMs: at(9.5) }, web], audit: [evictionOf(web, 10)] })).toEqual([]);
      expect(check({ pods: [{ ...api, goneMs: at(90) }, web], audit: [evictionOf(web, 61)] })).toEqual([]);
      const given = [
        {
          reason: 'PodsNotWaitedFor',
          message: 'Not waiting for soak-1/api-1: …',
          kind: 'Node',
          name: 'n-1',
          atMs: at(9),
        },
      ];
      expect(check({ pods: [api, web], audit: [evictionOf(web, 10)], events: given })).toEqual([]);
      // Named exactly: another pod whose name begins the same excuses nothing.
      const other = [{ ...given[0]!, message: 'Not waiting for soak-1/api-10: …' }];
      expect(check({ pods: [api, web], audit: [evictionOf(web, 10)], events: other })).toHaveLength(1);
    });
  });

  describe('surgeKeepsOneReady', () => {
    const surged = (o: Partial<Observations>) =>
      surgeKeepsOneReady(observations({ surgeDeployments: ['soak-1/single'], ...o })).map((v) => v.message);
    const single = pod('single-a', 'n-1', { deployment: 'soak-1/single', deletionMs: at(10), goneMs: at(12) });
    const replacement = (readyAt: number) =>
      pod('single-b', 'n-2', {
        deployment: 'soak-1/single',
        createdMs: at(3),
        boundMs: at(3),
        ready: [{ fromMs: at(readyAt) }],
      });

    it('finds the last Ready pod evicted while a node that stays could take a replacement', () => {
      expect(surged({ pods: [single, replacement(20)], audit: [evictionOf(single, 10)] })).toEqual([
        expect.stringMatching(
          /lost its last Ready pod \(single-a, evicted from n-1\) while n-2 could have taken a replacement/,
        ),
      ]);
    });

    it('passes when the replacement was Ready first, or an Event says the surge timed out', () => {
      expect(surged({ pods: [single, replacement(8)], audit: [evictionOf(single, 10)] })).toEqual([]);
      const timedOut = [{ reason: 'SurgeTimedOut', message: '', kind: 'Node', name: 'n-1', atMs: at(9) }];
      expect(surged({ pods: [single, replacement(20)], audit: [evictionOf(single, 10)], events: timedOut })).toEqual(
        [],
      );
    });

    it('passes when no node that stays could have taken a replacement', () => {
      const cordoned = [
        node('n-1', 'i-01', { final: undefined }),
        node('n-2', 'i-02', { cordons: [{ atMs: at(1), unschedulable: true }] }),
      ];
      expect(surged({ pods: [single, replacement(20)], audit: [evictionOf(single, 10)], nodes: cordoned })).toEqual([]);
    });

    it('finds a second restart for the same drain', () => {
      const restart = (s: number) =>
        audit({ verb: 'patch', resource: 'deployments', namespace: 'soak-1', name: 'single', receivedMs: at(s) });
      expect(
        surged({ pods: [single, replacement(8)], audit: [restart(2), restart(5), evictionOf(single, 10)] }),
      ).toEqual([expect.stringMatching(/restarted twice .* for the drain of n-1, whose pod single-a was still there/)]);
      expect(surged({ pods: [single, replacement(8)], audit: [restart(2), evictionOf(single, 10)] })).toEqual([]);
    });
  });

  describe('marksGoneAfterOwnerEnded', () => {
    const staying = (final: Parameters<typeof state>[0]) =>
      observations({
        nodes: [node('n-1', 'i-01', { final: undefined }), node('n-2', 'i-02', { final: state(final) })],
      });

    it('finds a cordon, a label and an annotation of ours left on a node that stays', () => {
      const left = staying({
        unschedulable: true,
        labels: {
          'graceful-node-termination/owner': 'soak-1',
          'node.kubernetes.io/exclude-from-external-load-balancers': 'true',
        },
        annotations: { 'graceful-node-termination/drain': '{}' },
      });
      const [found, ...more] = marksGoneAfterOwnerEnded(left).map((v) => v.message);
      expect(more).toEqual([]);
      expect(found).toContain('node n-2 (instance i-02 in service) is not as it was');
      expect(found).toContain(
        '+spec.unschedulable=true, +label graceful-node-termination/owner=soak-1, ' +
          '+label node.kubernetes.io/exclude-from-external-load-balancers=true, ' +
          '+annotation graceful-node-termination/drain',
      );
      expect(names(marksGoneAfterOwnerEnded(staying({ conditions: ['DrainInProgress'] })))).toEqual([
        'marksGoneAfterOwnerEnded',
      ]);
    });

    it('lets a deferral mark live as long as its owner (the deferral maximum and 15 minutes), not longer', () => {
      const deferred = (since: number) => ({
        labels: { 'graceful-node-termination/owner': 'soak-1' },
        annotations: {
          'graceful-node-termination/deferred': JSON.stringify({
            since: new Date(since).toISOString(),
            group: 'soak-a',
          }),
        },
      });
      expect(marksGoneAfterOwnerEnded(staying(deferred(at(100))))).toEqual([]);
      expect(names(marksGoneAfterOwnerEnded(staying(deferred(at(-1000)))))).toEqual(['marksGoneAfterOwnerEnded']);
    });
  });

  describe('noPodEvictedTwice', () => {
    const wave = (boundAt: number) => {
      const b = pod('web-b', 'n-3', { createdMs: at(boundAt), boundMs: at(boundAt) });
      return observations({
        pods: [b],
        nodes: [
          node('n-1', 'i-01', { final: undefined }),
          node('n-2', 'i-02'),
          node('n-3', 'i-03', { final: undefined }),
        ],
        actions: [action('i-01'), action('i-03', { openedMs: at(0), firstInvokedMs: at(0.5) })],
        audit: [evictionOf(b, 40)],
      });
    };

    it('finds a replacement that landed on a node known to be leaving, evicted again', () => {
      expect(noPodEvictedTwice(wave(20)).map((v) => v.message)).toEqual([
        expect.stringMatching(/web-b landed on node n-3 19.9 s after the drainer knew its instance i-03 was leaving/),
      ]);
    });

    it('passes one that landed before the drainer could know', () => {
      expect(noPodEvictedTwice(wave(5))).toEqual([]);
    });
  });

  describe('policyAnswersWithinAsk', () => {
    const call = (answer: string[]) =>
      observations({
        policyCalls: [
          {
            atMs: at(1),
            group: 'soak-a',
            capacity: [{ zone: 'eu-west-1a', market: 'on-demand', capacity: 1 }],
            suggested: [
              { instanceId: 'i-01', zone: 'eu-west-1a', market: 'on-demand' },
              { instanceId: 'i-02', zone: 'eu-west-1a', market: 'on-demand' },
            ],
            answer,
          },
        ],
      });

    it('finds an instance outside the suggestion, and more than asked', () => {
      expect(policyAnswersWithinAsk(call(['i-09'])).map((v) => v.message)).toEqual([
        expect.stringMatching(/i-09, outside/),
      ]);
      const asked = call(['i-01', 'i-02']).policyCalls[0]!;
      const third = { instanceId: 'i-03', zone: 'eu-west-1a', market: 'on-demand' };
      const moreThanAsked = observations({ policyCalls: [{ ...asked, suggested: [...asked.suggested, third] }] });
      expect(policyAnswersWithinAsk(moreThanAsked).map((v) => v.message)).toEqual([
        expect.stringMatching(/answered 2 instances in eu-west-1a \(on-demand\) .* where 1 were asked/),
      ]);
    });

    it("lets the fail-open answer, Auto Scaling's own suggestion whole, stand (Auto Scaling picks among them)", () => {
      expect(policyAnswersWithinAsk(call(['i-02', 'i-01']))).toEqual([]);
    });

    it('passes an answer within the ask, and a deferral (nothing)', () => {
      expect(policyAnswersWithinAsk(call(['i-02']))).toEqual([]);
      expect(policyAnswersWithinAsk(call([]))).toEqual([]);
    });
  });

  describe('noHealthyLaunchAbandoned', () => {
    it('finds a launch abandoned while its node was healthy, not one whose node never was', () => {
      const abandon = (nodeHealthy: boolean) =>
        observations({ launchAbandons: [{ instanceId: 'i-05', node: 'soak-b-node-9', atMs: at(60), nodeHealthy }] });
      expect(names(noHealthyLaunchAbandoned(abandon(true)))).toEqual(['noHealthyLaunchAbandoned']);
      expect(noHealthyLaunchAbandoned(abandon(false))).toEqual([]);
    });
  });
});
