// Where the alarms go and what there is to look at: the alarm topic or e-mail, the dashboard
// and the runbook the alarms' descriptions point to (docs/operations.md).
import type { aws_sns as sns } from 'aws-cdk-lib';

export interface ObservabilityProps {
  /**
   * Where alarms are sent.
   * @default - alarms are created without actions
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * Where alarms are sent by email: the construct creates an encrypted alarm topic with this
   * subscription (confirm the email AWS sends). Without this or `alarmTopic`, the synth warns:
   * alarms nobody receives protect nobody.
   * @default - none
   */
  readonly alarmEmail?: string;
  /**
   * Build a CloudWatch dashboard `<deploymentName>-<region>`: terminations by outcome, drain
   * duration p50/p99, evictions blocked by cause, settle waits, retained instances, reconciler
   * actions and errors. (The saved Logs Insights queries are made either way.)
   * @default false
   */
  readonly dashboard?: boolean;
  /**
   * Where your runbook is: each alarm's description says what the alarm means and its first
   * steps, then links to `<runbookUrl>#alarm-<name>` (docs/operations.md has a row with that
   * anchor for each: point it at a copy of that page or your wiki).
   * @default - no link: the descriptions carry the first steps themselves
   */
  readonly runbookUrl?: string;
}
