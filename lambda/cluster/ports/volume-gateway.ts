// VolumeAttachments: what the settle phase waits for before the instance may go.
import { type VolumeAttachmentInfo } from '../model.js';

/** The VolumeAttachments of one node as they come and go: one list, then one watch. */
export interface VolumeAttachmentWatch {
  /** The node's attachments as last seen. Throws while the view cannot be kept current. */
  current(): readonly VolumeAttachmentInfo[];
  changed(timeoutMs: number): Promise<void>;
  close(): void;
}

export interface VolumeGateway {
  /**
   * Follows the VolumeAttachments of one node. With `names`, exactly those, each read by name
   * (a GET each, asked again every few seconds; a transient failure keeps the last view); else
   * the cluster's list and watch, this node's kept on our side (there is no field selector for
   * spec.nodeName): the fallback for volumes whose attachment cannot be named.
   */
  watchVolumeAttachments(nodeName: string, o?: { readonly names?: readonly string[] }): Promise<VolumeAttachmentWatch>;
  /** The claim a PersistentVolume is bound to (spec.claimRef), undefined when unbound or gone. */
  claimOfVolume(
    persistentVolumeName: string,
  ): Promise<{ readonly namespace: string; readonly name: string } | undefined>;
}
