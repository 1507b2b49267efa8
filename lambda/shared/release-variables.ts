// What happens after a release (termination/instance-terminated.ts): defined here, spread into
// the one list (config-variables.ts).
import { flag, type Variable } from './variable.js';

export const releaseVariables = {
  outOfServiceAfterRelease: {
    name: 'OUT_OF_SERVICE_AFTER_RELEASE',
    description:
      'When EC2 says an instance of a served group is terminated (an EventBridge state-change event, confirmed ' +
      'with DescribeInstances) and our drain had released it with pods still on its node (a deadline, a Spot ' +
      'reclaim), taint the Node node.kubernetes.io/out-of-service=nodeshutdown:NoExecute so its pods and volumes ' +
      'go at once instead of when the Node object is deleted; never while the instance runs; taken back if the ' +
      'Node is Ready again as another instance.',
    accepts: 'true or false',
    default: true,
    parse: flag,
    format: String,
  } as Variable<boolean>,
} as const;

export interface ReleaseConfig {
  readonly outOfServiceAfterRelease: boolean;
}

export interface ReleaseConfigInput {
  readonly outOfServiceAfterRelease?: boolean;
}
