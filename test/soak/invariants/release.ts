// What must hold when Auto Scaling accepts a CONTINUE for a terminating instance: the node has
// let go of everything that must leave, its drained pods' volumes are detached and no target group
// routes to it, unless the documented maximum was reached and the Event says so
// (docs/how-it-works.md: the deadline, the settle phase).
import type { Observations, ReleaseSnapshot, Violation } from '../observations.js';
import { documentedRule, namesPod } from './reading.js';

const finished = (phase: string) => phase === 'Succeeded' || phase === 'Failed';
const said = (r: ReleaseSnapshot, reason: string) => r.events.some((e) => e.reason === reason);
/** Pods the drainer said, before the release, it no longer waits for (docs/how-it-works.md, docs/drain-rules.md). */
const givenUp = (r: ReleaseSnapshot, pod: { namespace: string; name: string }) =>
  r.events.some(
    (e) => (e.reason === 'PodsNotWaitedFor' || e.reason === 'PodRescheduledOnDrainingNode') && namesPod(e.message, pod),
  );

/**
 * docs/how-it-works.md: a reading of the load balancers may take 8 s, and an invocation with less than that before it
 * hands on (its timeout less INVOCATION_MARGIN_SECONDS) never reads: the settle phase waits the fixed delay.
 */
const readingMayTakeSeconds = 8;
const invocationsRead = (o: Observations) =>
  o.settings.invocationSeconds - o.settings.invocationMarginSeconds >= readingMayTakeSeconds;

const continued = (o: Observations) => o.releases.filter((r) => r.result === 'CONTINUE' && r.node !== undefined);

/**
 * No CONTINUE while a pod that must leave still runs, unless the deadline policy allowed it and DrainTimedOut says
 * so. A DaemonSet pod that came after the drain began is its controller's replacement: not chased, it goes with the
 * instance (docs/drain-rules.md, DaemonSet pods last).
 */
export function noReleaseWhilePodsMustLeave(o: Observations): Violation[] {
  return continued(o).flatMap((r) => {
    const began = o.actions.find((a) => a.token === r.token)?.openedMs ?? -Infinity;
    const stuck = r.pods.filter((p) => {
      const record = o.pods.find((q) => q.uid === p.uid);
      // The rule at the release: a pod that ran then and failed later (its node deleted) had to leave.
      const rule = record ? documentedRule(record, o.settings, r.atMs) : { behavior: 'Drain' };
      const cameBack = record?.ownerKind === 'DaemonSet' && record.createdMs > began;
      return rule.behavior !== 'Skip' && !finished(p.phase) && !cameBack && !givenUp(r, p);
    });
    if (stuck.length === 0 || said(r, 'DrainTimedOut')) return [];
    return [
      {
        invariant: 'noReleaseWhilePodsMustLeave',
        atMs: r.atMs,
        message:
          `CONTINUE for ${r.instanceId} (node ${r.node}) while ` +
          `${stuck.map((p) => `${p.namespace}/${p.name}`).join(', ')} ` +
          `still ran there, and no DrainTimedOut Event said the deadline policy let it go`,
      },
    ];
  });
}

/** No CONTINUE while a drained pod's volume is attached or a target group routes to the instance, but at the end. */
export function noReleaseWhileVolumesOrTargetsHold(o: Observations): Violation[] {
  return continued(o).flatMap((r) => {
    const out: Violation[] = [];
    const inUse = new Set(r.pods.filter((p) => !finished(p.phase)).flatMap((p) => p.volumes));
    const attached = r.volumeAttachments.filter((v) => !inUse.has(v.persistentVolume));
    if (attached.length > 0 && !said(r, 'VolumesNotDetached'))
      out.push({
        invariant: 'noReleaseWhileVolumesOrTargetsHold',
        atMs: r.atMs,
        message:
          `CONTINUE for ${r.instanceId} (node ${r.node}) while ${attached.map((v) => v.persistentVolume).join(', ')} ` +
          `of departed pods was still attached, and no VolumesNotDetached Event said the deadline was reached`,
      });
    const routing = r.targets.filter((t) => t.state !== 'unused');
    // Never read at all (throttled, failing), or invocations too short for any reading: the fixed
    // LOAD_BALANCER_DELAY_SECONDS applies instead, documented.
    const read = o.targetReads.some((c) => c.answered && c.atMs <= r.atMs) && invocationsRead(o);
    if (routing.length > 0 && read && !said(r, 'TargetsNotDeregistered'))
      out.push({
        invariant: 'noReleaseWhileVolumesOrTargetsHold',
        atMs: r.atMs,
        message:
          `CONTINUE for ${r.instanceId} (node ${r.node}) while ` +
          `${routing.map((t) => `${t.targetGroup} (${t.state})`).join(', ')} ` +
          `still routed to it, and no TargetsNotDeregistered Event said LOAD_BALANCER_MAX_WAIT_SECONDS was reached`,
      });
    return out;
  });
}
