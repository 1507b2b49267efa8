// The checks on the construct's props that need nothing resolved: each error names the bad
// value and the way out (settings.ts applies the defaults and checks what depends on them).
import { Token, type Duration } from 'aws-cdk-lib';
import { configVariables } from '../lambda/shared/config.js';
import { deploymentNamePattern } from '../lambda/installer/rbac.js';
import type { GracefulNodeTerminationProps } from './props.js';
import { validateTerminationPolicy } from './termination-policy.js';

/** The handler keeps this much of an invocation free to complete the action. */
export const invocationMarginSeconds = configVariables.invocationMarginSeconds.default!;

export const clusterNamePattern = /^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$/;

/** The cluster's name, from `cluster` or `clusterName`: one of them, or both naming the same cluster. */
export function resolveClusterName(props: GracefulNodeTerminationProps): string {
  const fromCluster = props.cluster?.clusterName;
  const name = fromCluster ?? props.clusterName;
  if (name === undefined)
    throw new Error(
      'GracefulNodeTermination needs its cluster: pass clusterName (the EKS cluster name) or cluster (an eks.ICluster)',
    );
  const given = props.clusterName;
  if (
    fromCluster !== undefined &&
    given !== undefined &&
    !Token.isUnresolved(fromCluster) &&
    !Token.isUnresolved(given) &&
    fromCluster !== given
  ) {
    throw new Error(
      `clusterName ${JSON.stringify(given)} is not the name of cluster ${JSON.stringify(fromCluster)}: pass one of ` +
        `them`,
    );
  }
  if (!Token.isUnresolved(name) && !clusterNamePattern.test(name)) {
    throw new Error(
      `clusterName ${JSON.stringify(name)} is not an EKS cluster name: use 1 to 100 letters, digits, "-" or "_", ` +
        `starting with a letter or digit`,
    );
  }
  return name;
}

export function validateProps(props: GracefulNodeTerminationProps): void {
  const heartbeat = props.heartbeatTimeout?.toSeconds();
  if (heartbeat !== undefined && (heartbeat < 30 || heartbeat > 7200)) {
    throw new Error(
      `heartbeatTimeout ${heartbeat} s is outside what Auto Scaling accepts: use between Duration.seconds(30) and ` +
        `Duration.hours(2)`,
    );
  }
  checkSeconds(props.drainTimeout, 'drainTimeout', configVariables.drainTimeoutSeconds);
  checkSeconds(props.loadBalancerDelay, 'loadBalancerDelay', configVariables.loadBalancerDelaySeconds);
  checkSeconds(props.loadBalancerMinWait, 'loadBalancerMinWait', configVariables.loadBalancerMinWaitSeconds);
  checkSeconds(props.loadBalancerMaxWait, 'loadBalancerMaxWait', configVariables.loadBalancerMaxWaitSeconds);
  const [min, max] = [props.loadBalancerMinWait?.toSeconds() ?? 5, props.loadBalancerMaxWait?.toSeconds() ?? 300];
  if (min > max)
    throw new Error(
      `loadBalancerMinWait ${min} s is longer than loadBalancerMaxWait ${max} s: the minimum must not exceed the ` +
        `maximum`,
    );
  checkSeconds(props.launchTimeout, 'launchTimeout', configVariables.launchTimeoutSeconds);
  checkSeconds(props.minEvictionWindow, 'minEvictionWindow', configVariables.minEvictionWindowSeconds);
  if (props.launchTimeout !== undefined && props.launchTimeout.toSeconds() > 15 * 60 - invocationMarginSeconds) {
    throw new Error(
      `launchTimeout ${props.launchTimeout.toSeconds()} s is longer than one invocation allows (880 s): use at most ` +
        `Duration.seconds(880)`,
    );
  }
  validateReconcileInterval(props.reconcileInterval);
  validateTerminationPolicy(props.terminationPolicy);
  if (props.repair !== undefined && props.reconcileMarks === false)
    throw new Error("repair runs on the reconciler's schedule: it needs reconcileMarks (leave it on, the default)");
  validateFunctionProps(props);
  if (props.deploymentName !== undefined && !deploymentNamePattern.test(props.deploymentName)) {
    throw new Error(
      `deploymentName ${JSON.stringify(props.deploymentName)} is invalid: use a DNS label (lowercase letters, digits ` +
        `and "-", at most 63, starting and ending alphanumeric)`,
    );
  }
  const group = props.kubernetesGroup;
  if (group !== undefined && (group.trim() === '' || group.startsWith('system:'))) {
    throw new Error(
      `kubernetesGroup ${JSON.stringify(group)} is invalid: EKS access entries need a non-empty group that does not ` +
        `start with "system:"`,
    );
  }
  if (!props.vpc && (props.vpcSubnets || props.securityGroups)) {
    throw new Error('vpcSubnets and securityGroups need vpc: pass the VPC the subnets belong to');
  }
}

function checkSeconds(
  value: Duration | undefined,
  field: string,
  variable: { accepts: string; parse(raw: string): unknown },
): void {
  if (value !== undefined && variable.parse(String(value.toSeconds())) === undefined) {
    throw new Error(`${field} ${value.toSeconds()} s is invalid: expected ${variable.accepts} seconds`);
  }
}

/** EventBridge rates are whole minutes; more often than a minute or rarer than a day is no schedule we want. */
function validateReconcileInterval(interval: Duration | undefined): void {
  if (interval === undefined) return;
  const seconds = interval.toSeconds({ integral: false });
  if (seconds < 60 || seconds > 86_400 || seconds % 60 !== 0) {
    throw new Error(
      `reconcileInterval ${seconds} s is invalid: use whole minutes from Duration.minutes(1) to Duration.days(1)`,
    );
  }
}

function validateFunctionProps(props: GracefulNodeTerminationProps): void {
  const reserved = props.reservedConcurrency;
  if (reserved !== undefined && (!Number.isInteger(reserved) || reserved < 1)) {
    throw new Error(
      `reservedConcurrency ${reserved} is invalid: use an integer >= 1 (0 would stop the drainer altogether)`,
    );
  }
  if (
    props.evictionConcurrency !== undefined &&
    configVariables.evictionConcurrency.parse(String(props.evictionConcurrency)) === undefined
  ) {
    throw new Error(
      `evictionConcurrency ${props.evictionConcurrency} is invalid: expected ` +
        `${configVariables.evictionConcurrency.accepts}`,
    );
  }
  const memory = props.memorySizeMiB;
  if (memory !== undefined && (!Number.isInteger(memory) || memory < 128 || memory > 10240)) {
    throw new Error(`memorySizeMiB ${memory} is invalid: Lambda accepts an integer from 128 to 10240`);
  }
  const path = props.rolePath;
  if (path !== undefined && !Token.isUnresolved(path) && !rolePathPattern.test(path)) {
    throw new Error(
      `rolePath ${JSON.stringify(path)} is invalid: IAM paths are "/" or start and end with "/" (printable ASCII ` +
        `between), at most 512 characters`,
    );
  }
}

/** IAM's path: `/`, or `/` + printable ASCII + `/`, at most 512 characters. */
export const rolePathPattern = /^(?=.{1,512}$)\/([!-~]*\/)?$/;

/** Names Auto Scaling accepts, and that fit in the comma-separated AUTO_SCALING_GROUP_NAMES. */
export function validateGroupName(name: string): void {
  if (name.trim() === '' || name.length > 255 || name.includes(',')) {
    throw new Error(
      `Auto Scaling group name ${JSON.stringify(name)} is invalid: use 1 to 255 characters without commas`,
    );
  }
}
