// Whether a lifecycle notification is ours at all: a group and a hook this deployment was
// configured for, and (when the hook says so) our cluster. A forged or misrouted message is
// refused before anything else: it must not drain a node, and must not be completed either
// (the action, if any, belongs to somebody else).
import { actionIdOfToken } from '../cluster/marks/action-id.js';
import type { Config } from '../shared/config.js';
import type { Parsed, TriggerContext } from '../trigger.js';
import { parseLifecycleMessage, type LifecycleNotification } from './lifecycle-message.js';

/** Why this deployment must not act on the notification, or undefined when it may. */
export function refusal(
  n: LifecycleNotification,
  config: Pick<Config, 'autoScalingGroupNames' | 'lifecycleHookNames' | 'clusterName'>,
): string | undefined {
  if (!config.autoScalingGroupNames.has(n.autoScalingGroupName)) {
    return `Auto Scaling group ${n.autoScalingGroupName} is not one this deployment was configured for`;
  }
  if (!config.lifecycleHookNames.has(n.lifecycleHookName)) {
    return `lifecycle hook ${n.lifecycleHookName} is not one this deployment was configured for`;
  }
  const metadataCluster = clusterFromMetadata(n.notificationMetadata);
  if (metadataCluster !== undefined && metadataCluster !== config.clusterName) {
    return `the hook's metadata names cluster ${metadataCluster}, this deployment serves ${config.clusterName}`;
  }
  return undefined;
}

/** The construct writes {"clusterName": "..."} into NotificationMetadata; other metadata is ignored. */
function clusterFromMetadata(metadata: string | undefined): string | undefined {
  if (metadata === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(metadata);
    const name = (parsed as { clusterName?: unknown } | null)?.clusterName;
    return typeof name === 'string' ? name : undefined;
  } catch {
    return undefined;
  }
}

/** A lifecycle delivery parsed and found ours, or the status it ends with (logged here). */
export function parseOurs(
  delivery: {
    readonly message: Readonly<Record<string, unknown>>;
    readonly field: string;
    readonly via: string;
    readonly id: string | undefined;
  },
  ctx: Pick<TriggerContext, 'config' | 'log'>,
): Parsed<LifecycleNotification> {
  const parsed = parseLifecycleMessage(delivery.message);
  if (!parsed.ok) {
    ctx.log.error('malformed lifecycle notification', {
      field: parsed.field,
      reason: parsed.reason,
      in: delivery.field,
      via: delivery.via,
      messageId: delivery.id,
    });
    return { status: 'malformed' };
  }
  const why = refusal(parsed.notification, ctx.config);
  if (why !== undefined) {
    ctx.log.warn('notification refused', {
      reason: why,
      autoScalingGroupName: parsed.notification.autoScalingGroupName,
      instanceId: parsed.notification.instanceId,
    });
    return { status: 'refused', instanceId: parsed.notification.instanceId };
  }
  return { work: parsed.notification };
}

/** The log keys of a lifecycle record: never its token (the record names the action by its hash). */
export function lifecycleKeys(n: LifecycleNotification): Record<string, unknown> {
  return {
    instanceId: n.instanceId,
    autoScalingGroupName: n.autoScalingGroupName,
    lifecycleHookName: n.lifecycleHookName,
    transition: n.transition,
    ...(n.lifecycleActionToken !== undefined ? { lifecycleAction: actionIdOfToken(n.lifecycleActionToken) } : {}),
    ...(n.handOff !== undefined ? { handOff: n.handOff.count } : {}),
  };
}
