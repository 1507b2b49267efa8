// Parts of the construct that leave their resources' logical IDs as they were.
//
// The construct used to build everything in its own scope; it is now composed of parts (the
// hooks, the Kubernetes access, the alarms, the event rules). A logical ID is what
// CloudFormation knows a resource by: a new one replaces the resource, creating the new one
// before deleting the old. For an access entry (one per principal and cluster), a named alarm
// or a lifecycle hook (one name per group) the new one collides with the old one or is deleted
// along with it, and the RBAC custom resource would delete the objects it just applied. So a
// part is transparent: each of its resources keeps the logical ID it would have as a child
// of the part's parent, i.e. the ID it had before the split.
import { AspectPriority, Aspects, CfnElement, Names, Stack } from 'aws-cdk-lib';
import { Construct, RootConstruct, type IConstruct } from 'constructs';

const transparentParts = new WeakSet<IConstruct>();

/**
 * Leaves `part` out of the logical IDs of every resource under it, those added later included
 * (an aspect sets them at synthesis). Call it first thing in the part's constructor.
 */
export function keepParentLogicalIds(part: Construct): void {
  transparentParts.add(part);
  Aspects.of(part).add(
    {
      visit(node: IConstruct): void {
        if (!(node instanceof CfnElement)) return;
        const stack = Stack.of(node);
        // An ID someone overrode on purpose stays as it is.
        if (stack.resolve(node.logicalId) !== stack.getLogicalId(node)) return;
        node.overrideLogicalId(stableLogicalId(node));
      },
    },
    { priority: AspectPriority.MUTATING },
  );
}

/**
 * The logical ID `element` gets: CDK's own derivation from its path in the stack, with the
 * transparent parts left out. Usable before synthesis (cdk-nag names findings by it).
 */
export function stableLogicalId(element: CfnElement): string {
  const scopes = element.node.scopes;
  const path = scopes.slice(scopes.indexOf(Stack.of(element)) + 1).filter((scope) => !transparentParts.has(scope));
  // Names.uniqueId derives an ID from a construct's path below its root exactly as a stack
  // derives logical IDs from the path below the stack: rebuild the path on a detached root.
  let copy: Construct = new RootConstruct();
  for (const scope of path) copy = new Construct(copy, scope.node.id);
  return Names.uniqueId(copy);
}
