// The soak's invariants (issue 39), each a named function of the observations alone; each has a
// unit test that plants its violation (test/unit/soak/invariants.test.ts).
import type { Invariant, Observations } from '../observations.js';
import { noHealthyLaunchAbandoned, noWriteWithoutConfirmation, oneCompletionPerAction } from './actions.js';
import { drainRulesKept, noPodEvictedTwice } from './drain-rules.js';
import { marksGoneAfterOwnerEnded } from './marks.js';
import { policyAnswersWithinAsk } from './policy.js';
import { noReleaseWhilePodsMustLeave, noReleaseWhileVolumesOrTargetsHold } from './release.js';
import { surgeKeepsOneReady } from './surge.js';

const continued = (o: Observations) => o.releases.filter((r) => r.result === 'CONTINUE').length;
const writes = (o: Observations) =>
  o.audit.filter((e) => ['create', 'patch', 'update', 'delete'].includes(e.verb)).length;
const podTakes = (o: Observations) =>
  o.audit.filter((e) => e.resource === 'pods' && (e.subresource === 'eviction' || e.verb === 'delete')).length;

export const invariants: readonly {
  readonly name: string;
  readonly says: string;
  readonly check: Invariant;
  /** How many things it looked at in a run (releases, actions, writes, ...), for the report. */
  readonly counts: (o: Observations) => number;
}[] = [
  {
    name: 'noReleaseWhilePodsMustLeave',
    says:
      'no CONTINUE while a pod that must leave still runs, unless the deadline policy allowed it and the Event ' +
      'says so',
    check: noReleaseWhilePodsMustLeave,
    counts: continued,
  },
  {
    name: 'noReleaseWhileVolumesOrTargetsHold',
    says:
      "no CONTINUE while a drained pod's volume is attached or a target group routes to the instance, but at " +
      'the documented maximum',
    check: noReleaseWhileVolumesOrTargetsHold,
    counts: continued,
  },
  {
    name: 'oneCompletionPerAction',
    says: "exactly one accepted completion per lifecycle action; none left to the hook's timeout",
    check: oneCompletionPerAction,
    counts: (o) => o.actions.length,
  },
  {
    name: 'noWriteWithoutConfirmation',
    says: 'no write to the cluster on behalf of an action Auto Scaling (or EC2) does not confirm',
    check: noWriteWithoutConfirmation,
    counts: writes,
  },
  {
    name: 'drainRulesKept',
    says: 'no eviction of a Skip or WaitCompleted pod, a batch pod only after its wait; orders kept',
    check: drainRulesKept,
    counts: podTakes,
  },
  {
    name: 'surgeKeepsOneReady',
    says:
      'a surge-opted Deployment never below one Ready pod when a replacement could be placed; never restarted ' +
      'twice for one drain',
    check: surgeKeepsOneReady,
    counts: (o) => o.pods.filter((p) => o.surgeDeployments.includes(p.deployment ?? '')).length,
  },
  {
    name: 'marksGoneAfterOwnerEnded',
    says: 'every mark of ours gone within one reconciler pass after its owner ended; every node that stays as before',
    check: marksGoneAfterOwnerEnded,
    counts: (o) => o.nodes.filter((n) => n.final !== undefined).length,
  },
  {
    name: 'noPodEvictedTwice',
    says: 'no pod evicted twice in a wave (a replacement landing on a node known to be leaving)',
    check: noPodEvictedTwice,
    counts: podTakes,
  },
  {
    name: 'noHealthyLaunchAbandoned',
    says: 'a launch is abandoned only when its node has not joined healthy (beyond the issue: found by the soak)',
    check: noHealthyLaunchAbandoned,
    counts: (o) => o.actions.filter((a) => a.transition === 'launch').length,
  },
  {
    name: 'policyAnswersWithinAsk',
    says:
      'the termination policy never answers an instance outside the suggestion nor more than asked (but its ' +
      'fail-open answer, the suggestion whole)',
    check: policyAnswersWithinAsk,
    counts: (o) => o.policyCalls.length,
  },
];
