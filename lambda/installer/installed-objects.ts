// Every object a deployment installs in the cluster, in the order the installer applies them (deleted
// in reverse): the RBAC (rbac.ts), the shared readings' namespace and Role (reading-rbac.ts), the priority
// level (flow-control.ts), surge's policy when on.
import { flowControlObjects } from './flow-control.js';
import { readingObjects } from './reading-rbac.js';
import { type KubernetesObject, surgeObjects, rbacObjects } from './rbac.js';

/** Every object a deployment installs, in the order they are applied (deleted in reverse). */
export function installedObjects(
  group: string,
  deadlinePolicy: string,
  name: string,
  o: { readonly owner?: string; readonly alsoBound?: readonly string[]; readonly surge?: boolean } = {},
): readonly KubernetesObject[] {
  const surge = o.surge ? surgeObjects(group, name, o.owner) : [];
  return [
    ...rbacObjects(group, deadlinePolicy, name, o),
    ...readingObjects(group, name, o),
    ...flowControlObjects(group, name, o.owner),
    ...surge,
  ];
}
