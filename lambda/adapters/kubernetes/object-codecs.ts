// API objects to the cluster model and back. client-node provides the object types only.
import type { CoreV1Event, V1Node, V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import type { ClusterEvent, NodeInfo, PodInfo, VolumeAttachmentInfo } from '../../cluster/model.js';
import {
  deferralAnnotation,
  drainAnnotation,
  handOffAnnotation,
  migrationAnnotation,
  outOfServiceAnnotation,
  refreshGroupAnnotation,
  repairAnnotation,
} from '../../cluster/marks/mark-keys.js';
import { parseDeferral } from '../../cluster/marks/deferral-mark.js';
import { parseDrainRecord } from '../../cluster/marks/drain-record.js';
import { parseMigrationRecord } from '../../cluster/marks/migration-record.js';
import { parseRepairRecord } from '../../cluster/marks/repair-record.js';

export const reportingComponent = 'graceful-node-termination';

/**
 * Lists as they come over the wire. client-node's model types are used for the items, but
 * its list metadata names `continue` as `_continue` (it renames reserved words when it
 * deserializes, which this client does not do).
 */
export interface WireList<T> {
  readonly metadata?: { readonly continue?: string; readonly resourceVersion?: string };
  readonly items: readonly T[];
}

/**
 * What toNodeInfo never reads of a node, passed over unbuilt when a list is read item by item
 * (list-stream.ts): the bulk of a node's JSON (cached images, managedFields).
 */
export const nodeFieldsNotRead = [
  'metadata.managedFields',
  'status.images',
  'status.nodeInfo',
  'status.capacity',
  'status.allocatable',
  'status.addresses',
  'status.daemonEndpoints',
  'status.volumesInUse',
  'status.config',
  'status.features',
  'status.runtimeHandlers',
] as const;

export function toNodeInfo(node: V1Node): NodeInfo {
  const annotations = node.metadata?.annotations ?? {};
  return {
    name: node.metadata?.name ?? '',
    uid: node.metadata?.uid ?? '',
    providerId: node.spec?.providerID ?? '',
    unschedulable: node.spec?.unschedulable === true,
    labels: node.metadata?.labels ?? {},
    ready: node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    taints: (node.spec?.taints ?? []).map((t) => ({
      key: t.key,
      effect: t.effect,
      ...(t.value !== undefined ? { value: t.value } : {}),
    })),
    handOffClaim: annotations[handOffAnnotation],
    drain: parseDrainRecord(annotations[drainAnnotation]),
    refreshGroup: annotations[refreshGroupAnnotation],
    ...(annotations[migrationAnnotation] !== undefined
      ? { migration: parseMigrationRecord(annotations[migrationAnnotation]) }
      : {}),
    hasAnnotations: node.metadata?.annotations !== undefined,
    resourceVersion: node.metadata?.resourceVersion,
    ...(node.status?.volumesAttached !== undefined
      ? { attachedVolumes: node.status.volumesAttached.map((v) => v.name) }
      : {}),
    ...(annotations[deferralAnnotation] !== undefined
      ? { deferral: parseDeferral(annotations[deferralAnnotation]) }
      : {}),
    ...(annotations[outOfServiceAnnotation] !== undefined ? { outOfService: annotations[outOfServiceAnnotation] } : {}),
    conditions: (node.status?.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason ?? '',
      // Parsed from the wire: a string (client-node's type says Date).
      sinceMs: c.lastTransitionTime ? Date.parse(String(c.lastTransitionTime)) : Number.NaN,
    })),
    ...(annotations[repairAnnotation] !== undefined
      ? { repair: parseRepairRecord(annotations[repairAnnotation]) }
      : {}),
  };
}

export function toPodInfo(pod: V1Pod): PodInfo {
  const controller = pod.metadata?.ownerReferences?.find((o) => o.controller);
  return {
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    phase: pod.status?.phase ?? 'Unknown',
    controllerKind: controller?.kind,
    controllerUid: controller?.uid,
    annotations: pod.metadata?.annotations ?? {},
    labels: pod.metadata?.labels ?? {},
    startedAt: startOf(pod),
    priorityClassName: pod.spec?.priorityClassName,
    deletionTimestamp: pod.metadata?.deletionTimestamp ? new Date(pod.metadata.deletionTimestamp) : undefined,
    tolerations: (pod.spec?.tolerations ?? []).map((t) => ({
      key: t.key,
      operator: t.operator,
      value: t.value,
      effect: t.effect,
    })),
    terminationGracePeriodSeconds: pod.spec?.terminationGracePeriodSeconds,
    finalizers: pod.metadata?.finalizers ?? [],
    claims: (pod.spec?.volumes ?? []).flatMap((v) => {
      if (v.persistentVolumeClaim?.claimName) return [v.persistentVolumeClaim.claimName];
      // A generic ephemeral volume's claim is named after the pod and the volume.
      return v.ephemeral ? [`${pod.metadata?.name ?? ''}-${v.name}`] : [];
    }),
  };
}

// Karpenter counts a do-not-disrupt duration from status.startTime (the kubelet took the pod on);
// before the kubelet says so, from the binding (PodScheduled). https://github.com/kubernetes-sigs/karpenter/pull/2874
function startOf(pod: V1Pod): Date | undefined {
  const scheduled = pod.status?.conditions?.find(
    (c) => c.type === 'PodScheduled' && c.status === 'True',
  )?.lastTransitionTime;
  const at = pod.status?.startTime ?? scheduled;
  return at === undefined ? undefined : new Date(at);
}

export function toVolumeAttachmentInfo(attachment: V1VolumeAttachment): VolumeAttachmentInfo {
  return {
    name: attachment.metadata?.name ?? '',
    uid: attachment.metadata?.uid ?? '',
    nodeName: attachment.spec?.nodeName ?? '',
    attacher: attachment.spec?.attacher ?? '',
    persistentVolumeName: attachment.spec?.source?.persistentVolumeName,
  };
}

export function toCoreEvent(event: ClusterEvent, reportingInstance: string): CoreV1Event {
  const now = new Date();
  const r = event.regarding;
  return {
    metadata: { name: `${r.name}.${randomBytes(8).toString('hex')}`, namespace: r.namespace ?? 'default' },
    involvedObject: { apiVersion: 'v1', kind: r.kind, name: r.name, namespace: r.namespace, uid: r.uid },
    type: event.type,
    reason: event.reason,
    message: event.message,
    source: { component: reportingComponent },
    reportingComponent,
    reportingInstance,
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}
