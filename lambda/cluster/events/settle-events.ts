// The Events of the settle phase: the departed pods' volumes detached, the load balancers let go.
import { type NodeRef, onNode, listed } from './event-shapes.js';

// --- settle: volumes detached, load balancers let go ------------------------------------

/** A volume as Events name it: the PersistentVolume and the driver that attaches it. */
export interface VolumeRef {
  readonly persistentVolume: string;
  readonly attacher: string;
}

const volumeText = (v: VolumeRef) => `${v.persistentVolume} (${v.attacher})`;

const tookText = (x: { name: string; seconds: number }) => `${x.name} ${x.seconds} s`;

export const waitingForVolumeDetach = (node: NodeRef, volumes: readonly VolumeRef[]) =>
  onNode(
    node,
    'Normal',
    'WaitingForVolumeDetach',
    `Releasing the instance once ${volumes.length} volume(s) of departed pods are detached: ` +
      `${listed(volumes.map(volumeText))}.`,
  );

export const volumesDetached = (node: NodeRef, detached: readonly (VolumeRef & { seconds: number })[]) =>
  onNode(
    node,
    'Normal',
    'VolumesDetached',
    `${detached.length} volume(s) detached after the drain: ` +
      `${listed(detached.map((v) => `${volumeText(v)} in ${v.seconds} s`))}.`,
  );

export const volumesNotDetached = (node: NodeRef, left: readonly VolumeRef[], why: string) =>
  onNode(
    node,
    'Warning',
    'VolumesNotDetached',
    `Releasing the instance with ${left.length} volume(s) still attached (${why}): ` +
      `${listed(left.map(volumeText))}. EC2 detaches them when the instance is gone; until then their pods' ` +
      `replacements cannot attach them.`,
  );

export const waitingForTargets = (node: NodeRef, holds: readonly { name: string; state: string }[]) =>
  onNode(
    node,
    'Normal',
    'WaitingForTargetDeregistration',
    `Releasing the instance once ${holds.length} load balancer(s) let it go: ` +
      `${listed(holds.map((h) => `${h.name} (${h.state})`))}.`,
  );

export const targetsDeregistered = (node: NodeRef, took: readonly { name: string; seconds: number }[]) =>
  onNode(
    node,
    'Normal',
    'TargetsDeregistered',
    `Deregistered from ${took.length} load balancer(s) after the drain: ${listed(took.map(tookText))}.`,
  );

export const targetsNotDeregistered = (
  node: NodeRef,
  holds: readonly { name: string; state: string }[],
  seconds: number,
) =>
  onNode(
    node,
    'Warning',
    'TargetsNotDeregistered',
    `Releasing the instance ${seconds} s after the drain (its longest wait) while ${holds.length} load ` +
      `balancer(s) still hold it: ${listed(holds.map((h) => `${h.name} (${h.state})`))}.`,
  );

/** The load balancers could not be read: the fixed delay stands in for their deregistration, unconfirmed. */
export const targetsNotRead = (node: NodeRef, why: string, delaySeconds: number) =>
  onNode(
    node,
    'Warning',
    'TargetsNotRead',
    `Could not read the load balancers (${why}): waiting the fixed LOAD_BALANCER_DELAY_SECONDS, ` +
      `${delaySeconds} s after the drain, without knowing whether they let the instance go.`,
  );
