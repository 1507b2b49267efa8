// Which VolumeAttachments hold a node, by name, from the Node itself: the attach/detach
// controller lists every volume attached to a node in its status.volumesAttached under the
// volume's unique name, `kubernetes.io/csi/<driver>^<volume handle>` for CSI volumes (in-tree
// EBS volumes are migrated to CSI and named the same way). The CSI attacher names the
// VolumeAttachment after the handle, the driver and the node, so one GET per volume reads it:
// no list of the cluster's attachments.
//   https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/volume/csi/csi_attacher.go (getAttachmentName)
//   https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/volume/csi/csi_plugin.go (GetVolumeName: driver^handle)
// The status entry goes *before* the detach is done (the controller drops it when it starts
// detaching), so it says which attachments to wait for, never that they are gone: only the
// VolumeAttachment's disappearance (the external attacher removes its finalizer after
// ControllerUnpublishVolume) says that.
import { createHash } from 'node:crypto';

const csiPrefix = 'kubernetes.io/csi/';

/** A CSI volume's unique name as the attach/detach controller writes it. */
export function csiVolumeName(driver: string, volumeHandle: string): string {
  return `${csiPrefix}${driver}^${volumeHandle}`;
}

/**
 * The VolumeAttachment the CSI attacher creates for this volume on this node; undefined for a volume that is not CSI.
 */
export function attachmentNameOf(uniqueVolumeName: string, nodeName: string): string | undefined {
  if (!uniqueVolumeName.startsWith(csiPrefix)) return undefined;
  const rest = uniqueVolumeName.slice(csiPrefix.length);
  const sep = rest.indexOf('^');
  if (sep <= 0 || sep === rest.length - 1) return undefined;
  const driver = rest.slice(0, sep);
  const handle = rest.slice(sep + 1);
  return `csi-${createHash('sha256').update(`${handle}${driver}${nodeName}`).digest('hex')}`;
}

/**
 * The attachments to wait for: one name each (`byName`), or, when a volume is not CSI (no
 * name can be derived), undefined: the cluster-wide list is the only way to know.
 */
export function attachmentsToWaitFor(
  uniqueVolumeNames: Iterable<string>,
  nodeName: string,
): { readonly byName: readonly string[] } | undefined {
  const names = new Set<string>();
  for (const volume of uniqueVolumeNames) {
    const name = attachmentNameOf(volume, nodeName);
    if (name === undefined) return undefined;
    names.add(name);
  }
  return { byName: [...names].sort() };
}
