// The node lifecycle conditions (cluster/rules/lifecycle-conditions.ts) on the Node's status subresource:
// a strategic merge patch, which merges status.conditions by type (a JSON merge patch would
// replace the kubelet's conditions with ours), and its delete directive to take ours back.
// https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/#notes-on-the-strategic-merge-patch
import type { NodeInfo } from '../../cluster/model.js';
import { isOurCondition, lifecycleConditionTypes } from '../../cluster/rules/lifecycle-conditions.js';
import { type ConditionsGateway } from '../../cluster/ports/conditions-gateway.js';
import { classify, statusOf } from './api-errors.js';
import type { KubeHttp } from './kube-http.js';

const strategicMerge = 'application/strategic-merge-patch+json';

export function createConditionsApi(kube: KubeHttp): ConditionsGateway {
  const patch = async (name: string, conditions: object[], what: string): Promise<void> => {
    try {
      await kube.request('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}/status`, {
        body: { status: { conditions } },
        contentType: strategicMerge,
      });
    } catch (error) {
      // A node already gone has no conditions to set.
      if (statusOf(error) === 404) return;
      throw classify(error, what);
    }
  };
  return {
    async setConditions(name, conditions) {
      const now = new Date().toISOString();
      await patch(
        name,
        conditions.map((c) => ({ ...c, lastTransitionTime: now, lastHeartbeatTime: now })),
        `set the lifecycle conditions of node ${name}`,
      );
    },
    async removeOurConditions(node: NodeInfo) {
      const types = (node.conditions ?? [])
        .filter((c) => (lifecycleConditionTypes as readonly string[]).includes(c.type) && isOurCondition(c))
        .map((c) => c.type);
      if (types.length === 0) return;
      await patch(
        node.name,
        types.map((type) => ({ type, $patch: 'delete' })),
        `take the lifecycle conditions off node ${node.name}`,
      );
    },
  };
}
