// The deployment's own metrics, in the namespace the drainer writes to, with its name as the
// `service` dimension: two deployments never count each other.
import { aws_cloudwatch as cloudwatch } from 'aws-cdk-lib';
import {
  drainTimedOutMessage,
  instanceRetainedMessage,
  launchAbandonedMessage,
  launchUncheckedMessage,
} from '../lambda/cluster/events/log-messages.js';
import { metricsNamespace } from '../lambda/shared/config.js';

/** Metrics counted from one exact log message each (the alarms' metric filters count them). */
export const logMessageMetrics = {
  DrainsTimedOut: drainTimedOutMessage,
  LaunchesUnchecked: launchUncheckedMessage,
  LaunchesAbandoned: launchAbandonedMessage,
  InstancesRetained: instanceRetainedMessage,
} as const;

export type LogMessageMetric = keyof typeof logMessageMetrics;

/**
 * A metric of deployment `service`, made the way lambda.Function.metricErrors() makes its
 * own: the sum over 5 minutes unless `options` say otherwise. The drainer's log lines and its
 * EMF lines (Powertools, serviceName = the deployment's name) both carry `service`.
 */
export function deploymentMetric(
  service: string,
  metricName: string,
  options: cloudwatch.MetricOptions = {},
  dimensions: Readonly<Record<string, string>> = {},
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: metricsNamespace,
    metricName,
    dimensionsMap: { service, ...dimensions },
    statistic: cloudwatch.Stats.SUM,
    ...options,
  });
}
