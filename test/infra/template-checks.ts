// Checks of a template's resources that more than one suite runs: what a resource waits for,
// which policies grant what, and what the drainer needs before a hook may notify it
// (first-deploy.test.ts on every synthesized variant, release.test.ts on the release template).
import type { Resource, Resources, Statement } from './fixtures.js';

/** Every logical ID a resource waits for: its DependsOn and every Ref and GetAtt in its properties and metadata (the release's conditional dependencies). */
export function waitsFor(resource: Resource): Set<string> {
  const ids = new Set(resource.DependsOn ?? []);
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    const node = value as Record<string, unknown>;
    if (typeof node['Ref'] === 'string') ids.add(node['Ref']);
    if (Array.isArray(node['Fn::GetAtt'])) ids.add(String(node['Fn::GetAtt'][0]));
    Object.values(node).forEach(visit);
  };
  visit(resource.Properties);
  visit(resource.Metadata);
  return ids;
}

export const ofType = (resources: Resources, type: string) =>
  Object.entries(resources).filter(([, r]) => r.Type === type);
export const statementsOf = (policy: Resource) =>
  (policy.Properties['PolicyDocument'] as { Statement: Statement[] }).Statement;
export const grants = (s: Statement, action: string) => s.Effect === 'Allow' && [s.Action].flat().includes(action);
/** The logical ID a `{ Ref }` or `{ Fn::GetAtt }` points at. */
export const target = (value: unknown): string | undefined => {
  const node = value as { Ref?: string; 'Fn::GetAtt'?: [string, string] } | undefined;
  return node?.Ref ?? node?.['Fn::GetAtt']?.[0];
};

/** The identity policies attached to `roleId` that grant every one of `actions`. */
export function policiesGranting(resources: Resources, roleId: string, actions: readonly string[]): string[] {
  return ofType(resources, 'AWS::IAM::Policy')
    .filter(([, p]) => (p.Properties['Roles'] as unknown[]).some((r) => target(r) === roleId))
    .filter(([, p]) => actions.every((a) => statementsOf(p).some((s) => grants(s, a))))
    .map(([id]) => id);
}

/** What the drainer needs before any hook may send it a notification. */
export function drainerPrerequisites(resources: Resources, hook: Resource): Record<string, string[]> {
  const [drainerId, drainer] = ofType(resources, 'AWS::Lambda::Function').find(
    ([, r]) => r.Properties['Handler'] === 'index.handler',
  )!;
  const drainerRole = target(drainer.Properties['Role'])!;
  const topic = target(hook.Properties['NotificationTargetARN']);
  return {
    'the drainer may complete and heartbeat lifecycle actions': policiesGranting(resources, drainerRole, [
      'autoscaling:CompleteLifecycleAction',
      'autoscaling:RecordLifecycleActionHeartbeat',
    ]),
    'SNS may invoke the drainer': ofType(resources, 'AWS::Lambda::Permission')
      .filter(
        ([, p]) =>
          p.Properties['Principal'] === 'sns.amazonaws.com' && target(p.Properties['FunctionName']) === drainerId,
      )
      .map(([id]) => id),
    'the drainer is subscribed to the topic': ofType(resources, 'AWS::SNS::Subscription')
      .filter(
        ([, s]) =>
          s.Properties['Protocol'] === 'lambda' &&
          target(s.Properties['Endpoint']) === drainerId &&
          target(s.Properties['TopicArn']) === topic,
      )
      .map(([id]) => id),
    'the hook role may publish to the topic': policiesGranting(resources, target(hook.Properties['RoleARN'])!, [
      'sns:Publish',
    ]),
  };
}
