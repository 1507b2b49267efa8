// The drain: how long it may take, what happens at its deadline, which pods leave in which order,
// and the launch check.
import { Duration } from 'aws-cdk-lib';
import { configVariables as v, DeadlinePolicy, Mode } from '../../lambda/shared/config.js';
import { shortestHeartbeatSeconds } from '../../lambda/shared/resume-window.js';
import type { DrainRule } from '../drain-rule-props.js';
import { invocationMarginSeconds } from '../prop-checks.js';
import { choice, flag, numberOf, secondsOf, text, type Kind } from './kinds.js';
import { option, type OptionGroup } from './option.js';

/**
 * The shortest heartbeat timeout under which a reconciler every minute (the shortest
 * ReconcileIntervalMinutes) resumes a lost hand-off in time. CloudFormation cannot compare two
 * parameters, so the template asks for at least this much; the construct (and so the context)
 * checks the real pair, and the function refuses a pair that does not fit at cold start.
 */
export const minHeartbeatSeconds = shortestHeartbeatSeconds(1, invocationMarginSeconds)!;

const heartbeat: Kind<number> = (() => {
  const construct = secondsOf(v.heartbeatTimeoutSeconds);
  return { ...construct, parameter: { ...construct.parameter, MinValue: minHeartbeatSeconds } };
})();

const seconds = (d: number): Duration => Duration.seconds(d);

export const drainOptions: OptionGroup = {
  label: 'The drain',
  options: [
    option({
      name: 'Mode',
      label: 'Mode',
      description: 'observe: say what would be done and change nothing (docs/observe-mode.md); enforce: drain.',
      kind: choice(Object.values(Mode), Mode.ENFORCE),
      props: (mode) => ({ mode }),
    }),
    option({
      name: 'HeartbeatTimeoutSeconds',
      label: 'Heartbeat timeout (seconds)',
      description:
        `The hooks' HeartbeatTimeout. At least ${minHeartbeatSeconds} s; ` +
        'a longer ReconcileIntervalMinutes needs more (docs/limits.md).',
      kind: heartbeat,
      props: (d) => ({ heartbeatTimeout: seconds(d) }),
    }),
    option({
      name: 'DrainTimeoutSeconds',
      label: 'Drain timeout (seconds)',
      description: 'Longest time evicting and waiting for pods (docs/limits.md).',
      kind: secondsOf(v.drainTimeoutSeconds),
      props: (d) => ({ drainTimeout: seconds(d) }),
    }),
    option({
      name: 'DeadlinePolicy',
      label: 'At the drain deadline',
      description:
        'Pods left at the drain deadline: force deletes them, leave lets them die, ' +
        'retain completes with ABANDON (docs/cloudformation.md).',
      kind: choice(Object.values(DeadlinePolicy), DeadlinePolicy.FORCE),
      props: (deadlinePolicy) => ({ deadlinePolicy }),
    }),
    option({
      name: 'RetentionSetOutside',
      label: 'Groups retain on ABANDON',
      description:
        "With DeadlinePolicy retain: true says the groups' instance lifecycle policy retains on ABANDON " +
        '(set it yourself: docs/cloudformation.md); retain is refused without it.',
      kind: flag(false),
      props: (retentionSetOutside) => ({ retentionSetOutside }),
    }),
    option({
      name: 'BatchWaitSeconds',
      label: 'Batch wait (seconds)',
      description: 'How long Jobs and do-not-disrupt pods may run to completion before they are evicted.',
      kind: secondsOf(v.batchWaitSeconds),
      props: (d) => ({ batchWait: seconds(d) }),
    }),
    option({
      name: 'MinEvictionWindowSeconds',
      label: 'Minimum eviction window (seconds)',
      description: 'Every pod gets at least this long to be evicted before the force policy may delete it.',
      kind: secondsOf(v.minEvictionWindowSeconds),
      props: (d) => ({ minEvictionWindow: seconds(d) }),
    }),
    option({
      name: 'DrainRules',
      label: 'Drain rules (JSON)',
      description: 'JSON drain rules (docs/drain-rules.md).',
      kind: text({ accepts: v.drainRules.accepts, default: '[]', check: (t) => v.drainRules.parse(t) !== undefined }),
      // The rules' behaviors are DrainBehavior's values, checked by parseDrainRules.
      props: (t) => ({ drainRules: JSON.parse(t) as DrainRule[] }),
    }),
    option({
      name: 'EvictDaemonSetPods',
      label: 'Evict DaemonSet pods',
      description: 'Evict DaemonSet pods too, after every other pod (critical ones last). false: left running.',
      kind: flag(v.evictDaemonSetPods.default!),
      props: (evictDaemonSetPods) => ({ evictDaemonSetPods }),
    }),
    option({
      name: 'CordonDoomedSiblings',
      label: 'Cordon doomed siblings',
      description: "Before the first eviction, cordon the nodes of the group's other terminating instances.",
      kind: flag(v.cordonDoomedSiblings.default!),
      props: (cordonDoomedSiblings) => ({ cordonDoomedSiblings }),
    }),
    option({
      name: 'EvictionConcurrency',
      label: 'Evictions in flight per node',
      description: 'Evictions in flight at once for one node.',
      kind: numberOf(v.evictionConcurrency),
      props: (evictionConcurrency) => ({ evictionConcurrency }),
    }),
    option({
      name: 'LaunchTimeoutSeconds',
      label: 'Launch timeout (seconds)',
      description: 'How long a new node has to join Ready before its launch is abandoned.',
      // The construct's own limit: the launch wait runs in one 15-minute invocation.
      kind: secondsOf(v.launchTimeoutSeconds, [30, 15 * 60 - invocationMarginSeconds]),
      props: (d) => ({ launchTimeout: seconds(d) }),
    }),
  ],
};
