// The release template's parameters: what a CloudFormation user sets
// instead of the construct's props. Defaults and ranges come from the handler's own variable
// definitions (lambda/shared/config-variables.ts); release-coverage.ts says, for every prop,
// which parameter stands for it or why none does.
import { aws_logs as logs } from 'aws-cdk-lib';
import { configVariables, DeadlinePolicy, Mode } from '../lambda/shared/config.js';
import { deploymentNamePattern, rbacName } from '../lambda/installer/rbac.js';
import { shortestHeartbeatSeconds } from '../lambda/shared/resume-window.js';
import { defaultRunbookUrl } from './alarms.js';
import { parameterNames as p, reconcileIntervalChoices } from './release-names.js';
import type { JsonObject } from './release-rewrite.js';
import { rolePathPattern } from './prop-checks.js';

/** The log retentions CloudWatch Logs accepts (never-expire left out: choose a number of days). */
const retentionChoices = Object.values(logs.RetentionDays).filter(
  (d): d is number => typeof d === 'number' && d !== logs.RetentionDays.INFINITE,
);

/** The ends of the integer range a variable's parser accepts (it accepts one interval). */
function rangeOf(variable: { readonly default?: unknown; parse(raw: string): unknown }): [number, number] {
  const ok = (n: number) => variable.parse(String(n)) !== undefined;
  const edge = (yes: number, no: number): number => {
    while (Math.abs(no - yes) > 1) {
      const mid = Math.floor((yes + no) / 2);
      if (ok(mid)) yes = mid;
      else no = mid;
    }
    return yes;
  };
  const start = Number(variable.default);
  return [ok(0) ? 0 : edge(start, 0), edge(start, 10_000_000)];
}

const numberFrom = (
  description: string,
  variable: { readonly default?: unknown; parse(raw: string): unknown },
  limits?: [number, number],
): JsonObject => {
  const [min, max] = limits ?? rangeOf(variable);
  return { Type: 'Number', Description: description, Default: Number(variable.default), MinValue: min, MaxValue: max };
};
const flag = (description: string, value: boolean): JsonObject => ({
  Type: 'String',
  Description: description,
  Default: String(value),
  AllowedValues: ['true', 'false'],
});
const optional = (description: string, pattern: string): JsonObject => ({
  Type: 'String',
  Description: description,
  Default: '',
  AllowedPattern: `^$|${pattern}`,
});
const list = (description: string): JsonObject => ({
  Type: 'CommaDelimitedList',
  Description: description,
  Default: '',
});

/**
 * The shortest heartbeat timeout under which a reconciler every minute (the shortest
 * ReconcileIntervalMinutes) resumes a lost hand-off in time; CloudFormation cannot compare the
 * two parameters, so a longer interval with too short a timeout is refused by the function.
 */
const minHeartbeatSeconds = shortestHeartbeatSeconds(1, configVariables.invocationMarginSeconds.default!)!;

/** The longest launch wait one 15-minute invocation allows (the construct's own limit). */
const maxLaunchTimeoutSeconds = 15 * 60 - configVariables.invocationMarginSeconds.default!;

export function releaseParameters(defaultCodeKey: string): JsonObject {
  return {
    ...whereParameters(),
    ...drainParameters(),
    ...featureParameters(),
    ...placementParameters(),
    ...codeParameters(defaultCodeKey),
  };
}

/** The cluster, the groups and the deployment's name. */
function whereParameters(): JsonObject {
  return {
    [p.clusterName]: {
      Type: 'String',
      Description: 'Name of the EKS cluster the node groups join (Kubernetes 1.29 or later).',
      AllowedPattern: '^[0-9A-Za-z][A-Za-z0-9\\-_]{0,99}$',
    },
    [p.groups]: {
      Type: 'CommaDelimitedList',
      Description: 'Existing Auto Scaling groups to serve, comma-separated: each gets a launch and a terminate hook.',
    },
    [p.deploymentName]: {
      Type: 'String',
      Description: 'Names the hooks, alarms, RBAC and metrics; one per deployment on a cluster. A DNS label.',
      Default: rbacName,
      AllowedPattern: deploymentNamePattern.source,
    },
  };
}

/** The hook timing, the drain and the settle waits. */
function drainParameters(): JsonObject {
  const v = configVariables;
  return {
    // At least what a reconciler every minute needs to resume a lost hand-off in time (docs/limits.md).
    [p.heartbeatTimeout]: numberFrom(
      `The hooks' HeartbeatTimeout. At least ${minHeartbeatSeconds} s; a longer ReconcileIntervalMinutes needs more (docs/limits.md).`,
      v.heartbeatTimeoutSeconds,
      [minHeartbeatSeconds, 7200],
    ),
    [p.drainTimeout]: numberFrom('Longest time evicting and waiting for pods (docs/limits.md).', v.drainTimeoutSeconds),
    [p.loadBalancerDelay]: numberFrom(
      'Fixed wait after the drain when WaitForTargets is false or the load balancers cannot be read.',
      v.loadBalancerDelaySeconds,
    ),
    [p.launchTimeout]: numberFrom(
      'How long a new node has to join Ready before its launch is abandoned.',
      v.launchTimeoutSeconds,
      [30, maxLaunchTimeoutSeconds],
    ),
    [p.batchWait]: numberFrom(
      'How long Jobs and do-not-disrupt pods may run to completion before they are evicted.',
      v.batchWaitSeconds,
    ),
    [p.deadlinePolicy]: {
      Type: 'String',
      Description:
        'Pods left at the drain deadline: force deletes them, leave lets them die, retain completes with ABANDON (docs/cloudformation.md).',
      Default: DeadlinePolicy.FORCE,
      AllowedValues: Object.values(DeadlinePolicy),
    },
    [p.mode]: {
      Type: 'String',
      Description: 'observe: say what would be done and change nothing (docs/observe-mode.md); enforce: drain.',
      Default: Mode.ENFORCE,
      AllowedValues: Object.values(Mode),
    },
    [p.waitForTargets]: flag(
      "After the drain, wait until the cluster's load balancers let the instance go (true), or LoadBalancerDelaySeconds (false).",
      v.waitForTargets.default!,
    ),
    [p.loadBalancerMinWait]: numberFrom(
      'With WaitForTargets: the shortest wait after the drain. At most LoadBalancerMaxWaitSeconds.',
      v.loadBalancerMinWaitSeconds,
    ),
    [p.loadBalancerMaxWait]: numberFrom(
      'With WaitForTargets: the longest wait after the drain for the load balancers.',
      v.loadBalancerMaxWaitSeconds,
    ),
    ...terminationPolicyParameters(),
    [p.drainRules]: { Type: 'String', Description: 'JSON drain rules (docs/drain-rules.md).', Default: '[]' },
    [p.waitForVolumeDetach]: flag(
      "Release the instance only once its departed pods' volumes are detached (within the drain deadline).",
      v.waitForVolumeDetach.default!,
    ),
  };
}

/** The custom termination policy: how long a scale-in may wait, and when. */
function terminationPolicyParameters(): JsonObject {
  const v = configVariables;
  return {
    [p.terminationDeferral]: numberFrom(
      'Termination policy: longest deferral of one scale-in (costly candidates, window closed).',
      v.terminationDeferralMaxSeconds,
    ),
    [p.maintenanceWindows]: {
      Type: 'String',
      Description: "Termination policy: only inside these windows, e.g. '0 22 * * MON-FRI for 6h'. Empty: any time.",
      Default: '',
    },
    [p.maintenanceTimeZone]: {
      Type: 'String',
      Description: 'IANA time zone of MaintenanceWindows.',
      Default: v.maintenanceTimeZone.default!,
    },
  };
}

/** Spot, the reconciler, Kubernetes access and the alarms. */
function featureParameters(): JsonObject {
  const v = configVariables;
  return {
    [p.spotInterruptions]: flag(
      'Drain on EC2 Spot interruption warnings for instances of the groups (EventBridge rules).',
      false,
    ),
    [p.reconcileMarks]: flag(
      'Run the reconciler: takes back marks whose owner is gone, resumes drains whose hand-off was lost.',
      v.reconcileMarks.default!,
    ),
    [p.reconcileInterval]: {
      Type: 'Number',
      Description: 'How often the reconciler runs, in minutes.',
      Default: 5,
      AllowedValues: [...reconcileIntervalChoices],
    },
    [p.repair]: {
      Type: 'String',
      Description: 'Node auto repair: off, on or a JSON object of its knobs; no Reboot rules (docs/repair.md).',
      Default: 'off',
    },
    [p.manageKubernetesAccess]: flag(
      'Create the access entries and install the RBAC. false: aws-auth clusters (docs/deploy.md).',
      true,
    ),
    [p.alarmTopicArn]: optional(
      'SNS topic the alarms notify (cloudwatch.amazonaws.com may publish). Empty: AlarmEmail.',
      '^arn:[a-z-]+:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$',
    ),
    [p.alarmEmail]: optional(
      'Without AlarmTopicArn: an encrypted alarm topic with this e-mail subscription (confirm the e-mail AWS sends).',
      '^[^\\s@,]+@[^\\s@,]+$',
    ),
    [p.runbookUrl]: {
      Type: 'String',
      Description: "Each alarm's description links to <RunbookUrl>#alarm-<name>.",
      Default: defaultRunbookUrl,
      AllowedPattern: '^https?://\\S+$',
    },
    [p.dashboard]: flag('A CloudWatch dashboard <DeploymentName>-<region>.', false),
  };
}

/** Where the functions run and what their roles and logs look like. */
function placementParameters(): JsonObject {
  return {
    [p.subnetIds]: list('Subnets for the functions (private cluster endpoints), comma-separated. Empty: not in a VPC.'),
    [p.securityGroupIds]: list(
      'Security groups for the functions, with SubnetIds (the cluster security group must admit them on 443).',
    ),
    [p.memorySize]: {
      Type: 'Number',
      Description: 'Memory of the drainer, MiB.',
      Default: 256,
      MinValue: 128,
      MaxValue: 10240,
    },
    [p.logRetention]: {
      Type: 'Number',
      Description: "Days the functions' logs are kept.",
      Default: logs.RetentionDays.ONE_MONTH,
      AllowedValues: retentionChoices,
    },
    [p.permissionsBoundary]: optional(
      'Permissions boundary for every role the stack creates. Empty: none.',
      '^arn:aws[a-z-]*:iam::([0-9]{12}|aws):policy/.+$',
    ),
    [p.rolePath]: {
      Type: 'String',
      Description: 'IAM path of every role the stack creates.',
      Default: '/',
      AllowedPattern: rolePathPattern.source,
      MaxLength: 512,
    },
  };
}

/** Where the release's Lambda zip is. */
function codeParameters(defaultCodeKey: string): JsonObject {
  return {
    [p.codeBucket]: {
      Type: 'String',
      Description: 'S3 bucket in this region holding the Lambda zip of this release.',
      AllowedPattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
    },
    [p.codeKey]: {
      Type: 'String',
      Description: "Key of the Lambda zip in that bucket (the release's file name).",
      Default: defaultCodeKey,
    },
  };
}
