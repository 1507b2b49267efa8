// The `surgeBeforeEvict` prop: surge before evict (docs/surge.md), as the handler's SURGE_*
// variables carry it. Its presence turns the feature on: the drainer's ClusterRole gains patch
// on Deployments, fenced by a ValidatingAdmissionPolicy the installer applies beside it.
import type { Duration } from 'aws-cdk-lib';
import type { ConfigInput } from '../lambda/shared/config.js';

export interface SurgeBeforeEvictProps {
  /**
   * The Deployments of these namespaces surge without an annotation (one annotated
   * `graceful-node-termination/surge-before-evict: "false"` does not).
   * @default - none: only annotated Deployments (or pods) surge
   */
  readonly namespaces?: string[];
  /**
   * The Deployments whose pod template's labels this equality-based selector matches surge
   * without an annotation (`app=web,tier!=batch,canary,!legacy`; all must hold).
   * @default - none
   */
  readonly podSelector?: string;
  /**
   * How long one pod waits for a replacement Ready on a node that stays; then it is evicted as
   * any other and the deadline policy applies. Never past the drain deadline.
   * @default Duration.minutes(5)
   */
  readonly timeout?: Duration;
  /**
   * Deployments written by one of these field managers are never restarted (refused with the
   * reason untouchable-owner): GitOps tools that would fight the restart, or `manager/scale`
   * (kube-controller-manager/scale: a HorizontalPodAutoscaler).
   * @default - none
   */
  readonly untouchableManagers?: string[];
}

export interface SurgeProps {
  /**
   * Surge before evict (docs/surge.md): before evicting the last Ready pod of a Deployment off
   * the leaving nodes, restart the Deployment as `kubectl rollout restart` does and evict once a
   * replacement is Ready elsewhere. Opt-in per workload with the annotation
   * `graceful-node-termination/surge-before-evict: "true"` on the Deployment or its pods, or
   * deployment-wide with `namespaces` / `podSelector`. Grants patch on Deployments, fenced by a
   * ValidatingAdmissionPolicy to that one annotation (Kubernetes 1.30 or later).
   * @default - off
   */
  readonly surgeBeforeEvict?: SurgeBeforeEvictProps;
}

/** The handler's variables for the prop (none when off). */
export function surgeEnvironment(p: SurgeBeforeEvictProps | undefined): Partial<ConfigInput> {
  if (p === undefined) return {};
  return {
    surgeBeforeEvict: true,
    ...(p.namespaces !== undefined && p.namespaces.length > 0 ? { surgeNamespaces: p.namespaces } : {}),
    ...(p.podSelector !== undefined ? { surgePodSelector: p.podSelector } : {}),
    ...(p.timeout !== undefined ? { surgeTimeoutSeconds: p.timeout.toSeconds() } : {}),
    ...(p.untouchableManagers !== undefined && p.untouchableManagers.length > 0
      ? { surgeUntouchableManagers: p.untouchableManagers }
      : {}),
  };
}
