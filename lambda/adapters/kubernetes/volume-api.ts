// The volumes attached to a draining node (storage.k8s.io/v1 VolumeAttachment), and the claim
// a PersistentVolume is bound to. Named attachments are read by name (named-attachments.ts);
// otherwise, as the API server has no field selector for a VolumeAttachment's spec.nodeName,
// the view lists and watches the cluster's attachments and keeps this node's: the fallback.
//   https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/volume-attachment-v1/
import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { VolumeAttachmentInfo } from '../../cluster/model.js';
import type { VolumeGateway } from '../../cluster/ports/volume-gateway.js';
import type { Log } from '../../shared/log.js';
import { classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';
import { openListWatch, watchTimeoutSeconds } from './list-watch.js';
import { openNamedAttachments } from './named-attachments.js';
import { toVolumeAttachmentInfo } from './object-codecs.js';

export function createVolumeApi(kube: KubeHttp, log: Log): VolumeGateway {
  return {
    watchVolumeAttachments: (nodeName, o) =>
      o?.names !== undefined
        ? openNamedAttachments(kube, o.names, log)
        : openListWatch<VolumeAttachmentInfo>(kube, {
            what: `volume attachments of node ${nodeName}`,
            path: '/apis/storage.k8s.io/v1/volumeattachments',
            timeoutSeconds: watchTimeoutSeconds,
            toInfo: toVolumeAttachmentInfo,
            keep: (attachment) => attachment.nodeName === nodeName,
            log,
          }),

    async claimOfVolume(persistentVolumeName) {
      try {
        const pv = await kube.request<V1PersistentVolume>(
          'GET',
          `/api/v1/persistentvolumes/${encodeURIComponent(persistentVolumeName)}`,
        );
        const ref = pv.spec?.claimRef;
        return ref?.name ? { namespace: ref.namespace ?? 'default', name: ref.name } : undefined;
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw classify(error, `get persistentvolume ${persistentVolumeName}`);
      }
    },
  };
}
