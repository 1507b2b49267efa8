// Metrics as CloudWatch Embedded Metric Format log lines (Powertools Metrics): no API call,
// no extra permission; CloudWatch extracts them from the function's log group.
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MetricsSink } from '../ports.js';

export const metricsNamespace = 'GracefulNodeTermination';

export function createEmfMetrics(serviceName: string): MetricsSink {
  return {
    emit(dimensions, values) {
      // One instance per data point set: dimensions differ from record to record.
      const metrics = new Metrics({ namespace: metricsNamespace, serviceName });
      for (const [name, value] of Object.entries(dimensions)) metrics.addDimension(name, value);
      for (const [name, { unit, value }] of Object.entries(values)) {
        metrics.addMetric(name, unit === 'Seconds' ? MetricUnit.Seconds : MetricUnit.Count, value);
      }
      metrics.publishStoredMetrics();
    },
  };
}
