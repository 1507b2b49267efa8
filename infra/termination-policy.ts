// The drainer as the groups' custom termination policy: Auto Scaling's service-linked role may
// invoke the function, and its ARN is an output (the CLI's `termination-policy enable` puts it
// first in a group's TerminationPolicies). Auto Scaling calls it only for groups that name it.
// https://docs.aws.amazon.com/autoscaling/ec2/userguide/lambda-custom-termination-policy.html
import { Duration, Stack, Token, aws_iam as iam, aws_lambda as lambda } from 'aws-cdk-lib';
import { configVariables } from '../lambda/shared/config.js';

export interface TerminationPolicyOptions {
  /**
   * How long one scale-in may be deferred because every candidate is costly (running batch
   * work, the only ready replica, an exhausted budget) or the maintenance window is closed;
   * then Auto Scaling's own choice stands. An instance refresh is deferred 50 minutes at most.
   * @default Duration.minutes(5)
   */
  readonly maximumDeferral?: Duration;
  /**
   * Voluntary terminations only inside these windows: a five-field cron expression for when
   * each opens, `for` and how long (`0 22 * * MON-FRI for 6h`), in `maintenanceTimeZone`.
   * @default - any time
   */
  readonly maintenanceWindows?: string[];
  /**
   * The IANA time zone the windows are read in.
   * @default 'UTC'
   */
  readonly maintenanceTimeZone?: string;
  /**
   * The service-linked role the groups use (a custom suffix: `AWSServiceRoleForAutoScaling_<suffix>`).
   * @default - the account's AWSServiceRoleForAutoScaling
   */
  readonly serviceLinkedRoleArn?: string;
}

/** The environment the handler reads for the policy. */
export function terminationPolicyEnvironment(o: TerminationPolicyOptions | undefined) {
  return {
    terminationDeferralMaxSeconds: o?.maximumDeferral?.toSeconds(),
    maintenanceWindows: o?.maintenanceWindows,
    maintenanceTimeZone: o?.maintenanceTimeZone,
  };
}

export function validateTerminationPolicy(o: TerminationPolicyOptions | undefined): void {
  if (o === undefined) return;
  const deferral = o.maximumDeferral?.toSeconds();
  if (deferral !== undefined && configVariables.terminationDeferralMaxSeconds.parse(String(deferral)) === undefined) {
    throw new Error(
      `terminationPolicy.maximumDeferral ${deferral} s is invalid: expected ` +
        `${configVariables.terminationDeferralMaxSeconds.accepts} seconds`,
    );
  }
  for (const w of o.maintenanceWindows ?? []) {
    if (!Token.isUnresolved(w) && (w.includes(';') || configVariables.maintenanceWindows.parse(w) === undefined)) {
      throw new Error(
        `terminationPolicy.maintenanceWindows ${JSON.stringify(w)} is invalid: expected one window each, ` +
          `${configVariables.maintenanceWindows.accepts}`,
      );
    }
  }
  const zone = o.maintenanceTimeZone;
  if (
    zone !== undefined &&
    !Token.isUnresolved(zone) &&
    configVariables.maintenanceTimeZone.parse(zone) === undefined
  ) {
    throw new Error(
      `terminationPolicy.maintenanceTimeZone ${JSON.stringify(zone)} is invalid: expected ` +
        `${configVariables.maintenanceTimeZone.accepts}`,
    );
  }
}

/** Lets Auto Scaling's service-linked role of this account invoke the function (the unqualified ARN). */
export function allowTerminationPolicyCalls(fn: lambda.Function, o: TerminationPolicyOptions | undefined): void {
  const stack = Stack.of(fn);
  const linkedRole = 'aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling';
  const role = o?.serviceLinkedRoleArn ?? `arn:${stack.partition}:iam::${stack.account}:role/${linkedRole}`;
  fn.addPermission('AutoScalingTerminationPolicy', {
    principal: new iam.ArnPrincipal(role),
    action: 'lambda:InvokeFunction',
  });
}
