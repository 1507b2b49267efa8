// Everything the demo and the benchmark share: the local control plane, the shipped RBAC,
// the local AWS endpoint and the real handler (lambda/runtime.ts) in EKS mode, with its
// token checked by the plane's webhook, exactly as in production.
import { randomUUID } from 'node:crypto';
import { createRuntime, type LambdaHandler } from '../lambda/runtime.js';
import { captureHandlerLogs } from '../test/cluster/handler-logs.js';
import { admin, type Admin, rbacFile } from '../test/cluster/kube.js';
import { startPlane, type Plane } from '../test/cluster/plane/plane.js';
import { testAws } from '../test/cluster/plane/token-webhook.js';
import { lifecycleMessage, snsEvent } from '../test/fixtures/notifications.js';
import { localAwsEnvironment, startLocalAws, type LocalAws } from './local-aws.js';

export const groupName = 'demo-workers';
export const terminateHook = 'graceful-node-termination-terminate';

export interface EnvironmentOptions {
  readonly log: (line: string) => void;
  readonly loadBalancerDelaySeconds: number;
  readonly drainTimeoutSeconds?: number;
  /** Users whose requests the audit log also records (the benchmark audits kubectl). */
  readonly auditUsers?: readonly string[];
}

export interface Environment {
  readonly plane: Plane;
  readonly admin: Admin;
  readonly aws: LocalAws;
  /** Every log line the handler wrote, parsed, as it arrives. */
  onHandlerLog(listener: (entry: Record<string, unknown>) => void): void;
  /** The environment the handler runs with (the Lambda function's variables, here). */
  readonly handlerEnvironment: Readonly<Record<string, string | undefined>>;
  /** Opens a lifecycle action and returns the SNS event Auto Scaling would send for it. */
  notify(instanceId: string): { token: string; notifiedMs: number; event: unknown };
  /** Sends the terminate notification Auto Scaling would send, and runs the handler on it. */
  terminate(instanceId: string): Promise<{ token: string; notifiedMs: number; result: unknown }>;
  stop(): Promise<void>;
}

export async function startEnvironment(options: EnvironmentOptions): Promise<Environment> {
  const plane = await startPlane({ log: options.log, auditUsers: options.auditUsers });
  let aws: LocalAws | undefined;
  let stopCapture: (() => void) | undefined;
  try {
    const a = admin(plane);
    a.kubectl('apply', '-f', rbacFile);
    aws = await startLocalAws({ name: testAws.clusterName, endpoint: plane.server, caPem: plane.caPem });
    const listeners: ((entry: Record<string, unknown>) => void)[] = [];
    stopCapture = captureHandlerLogs((entry) => listeners.forEach((l) => l(entry)));
    // The default credential chain reads these; the plane's webhook knows the same test key.
    Object.assign(process.env, localAwsEnvironment(aws), {
      AWS_ACCESS_KEY_ID: testAws.accessKeyId,
      AWS_SECRET_ACCESS_KEY: testAws.secretAccessKey,
      AWS_REGION: testAws.region,
    });
    const handlerEnvironment = {
      ...process.env,
      CLUSTER_NAME: testAws.clusterName,
      AUTO_SCALING_GROUP_NAMES: groupName,
      LIFECYCLE_HOOK_NAMES: terminateHook,
      DRAIN_TIMEOUT_SECONDS: String(options.drainTimeoutSeconds ?? 600),
      LOAD_BALANCER_DELAY_SECONDS: String(options.loadBalancerDelaySeconds),
    };
    const handler: LambdaHandler = createRuntime(handlerEnvironment);
    const localAws = aws;
    const capture = stopCapture;
    const notify = (instanceId: string) => {
      const token = randomUUID();
      localAws.openAction(token);
      const notifiedMs = Date.now();
      const event = snsEvent(
        lifecycleMessage({
          EC2InstanceId: instanceId,
          LifecycleActionToken: token,
          AutoScalingGroupName: groupName,
          LifecycleHookName: terminateHook,
          Time: new Date(notifiedMs).toISOString(),
          NotificationMetadata: JSON.stringify({ clusterName: testAws.clusterName }),
        }),
      );
      return { token, notifiedMs, event };
    };
    return {
      plane,
      admin: a,
      aws: localAws,
      handlerEnvironment,
      notify,
      onHandlerLog: (listener) => void listeners.push(listener),
      async terminate(instanceId) {
        const { token, notifiedMs, event } = notify(instanceId);
        // Lambda's 15 minutes.
        const end = notifiedMs + 900_000;
        const result = await handler(event, { getRemainingTimeInMillis: () => end - Date.now() });
        return { token, notifiedMs, result };
      },
      async stop() {
        capture();
        await localAws.stop();
        await plane.stop();
      },
    };
  } catch (error) {
    stopCapture?.();
    await aws?.stop();
    await plane.stop();
    throw error;
  }
}
