// The RBAC installer against the real API server: server-side apply creates exactly the
// shipped ClusterRole and binding, is idempotent, and Delete removes them. It ends by
// re-installing them, as the rest of the suite relies on them.
import { afterAll, describe, expect, it } from 'vitest';
import type { KubeEndpoint } from '../../lambda/adapters/kubernetes/kube-http.js';
import { physicalIdFor } from '../../lambda/installer/custom-resource.js';
import {
  createInstallerHandler,
  type CustomResourceEvent,
  type CustomResourceResponse,
} from '../../lambda/installer/rbac-installer.js';
import { flowControlObjects } from '../../lambda/installer/flow-control.js';
import { rbacName, rbacRules } from '../../lambda/installer/rbac.js';
import { MemoryLog } from '../fakes/fake-world.js';
import { readAudit, until } from './kube.js';
import { adminToken } from './plane/plane.js';
import { a, plane } from './head.js';

const endpoint: KubeEndpoint = {
  server: plane.server,
  requestOptions: async () => ({ ca: plane.caPem, headers: { Authorization: `Bearer ${adminToken}` } }),
};

const responses: CustomResourceResponse[] = [];
const handle = createInstallerHandler({
  settings: {
    name: rbacName,
    clusterName: 'local-plane',
    group: rbacName,
    deadlinePolicy: 'force',
    region: 'eu-west-1',
    stackId: 'stack',
  },
  connect: async () => endpoint,
  respond: async (_url, response) => void responses.push(response),
  log: new MemoryLog(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  authRetryMs: 0,
});

const request = (type: CustomResourceEvent['RequestType']): CustomResourceEvent => ({
  RequestType: type,
  ResponseURL: 'https://cloudformation-custom-resource-response-euwest1.s3.eu-west-1.amazonaws.com/response',
  StackId: 'stack',
  RequestId: `req-${responses.length}`,
  LogicalResourceId: 'Rbac',
  PhysicalResourceId: type === 'Create' ? undefined : physicalIdFor(rbacName, rbacName),
  ResourceProperties: { ClusterName: 'local-plane', KubernetesGroup: rbacName },
});

const get = (kind: 'clusterrole' | 'clusterrolebinding' | 'flowschema' | 'prioritylevelconfiguration') => {
  try {
    return JSON.parse(a.kubectl('get', kind, rbacName, '-o', 'json', '--show-managed-fields')) as Record<
      string,
      unknown
    > & { metadata: { managedFields?: { manager: string }[] } };
  } catch {
    return undefined;
  }
};

describe('the RBAC installer (CloudFormation custom resource) on a real API server', () => {
  afterAll(async () => {
    // Whatever happened above, leave the drainer's RBAC installed.
    await handle(request('Create'));
  });

  it('applies exactly the shipped ClusterRole, binding, FlowSchema and priority level, idempotently', async () => {
    await handle(request('Create'));
    await handle(request('Update'));
    expect(responses.map((r) => r.Status)).toEqual(['SUCCESS', 'SUCCESS']);
    const role = get('clusterrole')!;
    expect(role['rules']).toEqual(
      rbacRules.map(({ apiGroups, resources, verbs }) => ({ apiGroups, resources, verbs })),
    );
    expect(role.metadata.managedFields?.map((f) => f.manager)).toContain(rbacName);
    expect(get('clusterrolebinding')!['subjects']).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: rbacName },
    ]);
    const [level, schema] = flowControlObjects(rbacName, rbacName) as unknown as { spec: Record<string, unknown> }[];
    // The server defaults nothing we set differently: our spec is a subset of what it stored.
    expect(get('prioritylevelconfiguration')!['spec']).toMatchObject(level!.spec);
    expect(get('flowschema')!['spec']).toMatchObject(schema!.spec);
  });

  it('removes both on Delete, and a second Delete still succeeds', async () => {
    responses.length = 0;
    await handle(request('Delete'));
    await handle(request('Delete'));
    expect(responses.map((r) => r.Status)).toEqual(['SUCCESS', 'SUCCESS']);
    expect(get('clusterrole')).toBeUndefined();
    expect(get('clusterrolebinding')).toBeUndefined();
    expect(get('flowschema')).toBeUndefined();
    expect(get('prioritylevelconfiguration')).toBeUndefined();
  });

  it('with surge before evict: patch on Deployments and the admission policy, both taken back when it is turned off', async () => {
    const name = 'gnt-surge-installer';
    const installer = (surge: boolean) =>
      createInstallerHandler({
        settings: {
          name,
          clusterName: 'local-plane',
          group: name,
          deadlinePolicy: 'leave',
          surge,
          region: 'eu-west-1',
          stackId: 'stack',
        },
        connect: async () => endpoint,
        respond: async (_url, response) => void responses.push(response),
        log: new MemoryLog(),
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        authRetryMs: 0,
      });
    const event = (type: CustomResourceEvent['RequestType']) => ({
      ...request(type),
      PhysicalResourceId: type === 'Create' ? undefined : physicalIdFor(name, name),
    });
    const has = (kind: string) =>
      a.kubectl('get', kind, `${name}-surge`, '--ignore-not-found', '-o', 'name').trim() !== '';
    const deploymentRules = () =>
      (
        JSON.parse(a.kubectl('get', 'clusterrole', name, '-o', 'json')) as {
          rules: { resources: string[]; verbs: string[] }[];
        }
      ).rules.filter((r) => r.resources.includes('deployments'));
    responses.length = 0;
    await installer(true)(event('Create'));
    expect(deploymentRules()).toEqual([{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'patch'] }]);
    expect([has('validatingadmissionpolicy'), has('validatingadmissionpolicybinding')]).toEqual([true, true]);
    await installer(false)(event('Update'));
    expect(deploymentRules()).toEqual([]);
    expect([has('validatingadmissionpolicy'), has('validatingadmissionpolicybinding')]).toEqual([false, false]);
    await installer(true)(event('Update'));
    await installer(true)(event('Delete'));
    expect(responses.map((r) => r.Status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']);
    expect([has('validatingadmissionpolicy'), has('validatingadmissionpolicybinding')]).toEqual([false, false]);
    expect(a.kubectl('get', 'clusterrole', name, '--ignore-not-found', '-o', 'name').trim()).toBe('');
  });

  const installerOf = (name: string, stackId: string, group = name, grants?: string[]) =>
    createInstallerHandler({
      settings: { name, clusterName: 'local-plane', group, deadlinePolicy: 'force', region: 'eu-west-1', stackId },
      connect: async () => endpoint,
      respond: async (_url, response) => void responses.push(response),
      access: grants
        ? { grant: async () => void grants.push('grant'), revoke: async () => void grants.push('revoke') }
        : undefined,
      log: new MemoryLog(),
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      authRetryMs: 0,
    });
  const eventOf = (
    type: CustomResourceEvent['RequestType'],
    stackId: string,
    physicalId?: string,
  ): CustomResourceEvent => ({
    ...request(type),
    StackId: stackId,
    PhysicalResourceId: physicalId,
  });
  const canEvict = (group: string) => {
    try {
      return a
        .kubectl('auth', 'can-i', 'create', 'pods', '--subresource=eviction', '--as=probe', `--as-group=${group}`)
        .trim();
    } catch (error) {
      return String((error as { stdout?: string }).stdout ?? '').trim();
    }
  };
  const bindingNames = () =>
    JSON.parse(
      a.kubectl('get', 'clusterrolebinding', '-l', 'app.kubernetes.io/name=graceful-node-termination', '-o', 'json'),
    ).items.map((i: { metadata: { name: string } }) => i.metadata.name);
  const [teamA, teamB] = ['graceful-node-termination-0000aaaa', 'graceful-node-termination-0000bbbb'];

  it('lets two deployments share the cluster: deleting one leaves the other installed and granting', async () => {
    responses.length = 0;
    await installerOf(teamA, 'stack-a')(eventOf('Create', 'stack-a'));
    await installerOf(teamB, 'stack-b')(eventOf('Create', 'stack-b'));
    expect(responses.map((r) => [r.Status, r.Reason])).toEqual([
      ['SUCCESS', undefined],
      ['SUCCESS', undefined],
    ]);
    // The authorizer's cache follows RBAC objects through a watch: give it a moment.
    await until('both groups may evict', 10_000, async () => canEvict(teamA) === 'yes' && canEvict(teamB) === 'yes');

    await installerOf(teamA, 'stack-a')(eventOf('Delete', 'stack-a', physicalIdFor(teamA, teamA)));

    expect(responses.map((r) => r.Status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
    await until('team A no longer may evict', 10_000, async () => canEvict(teamA) === 'no');
    expect(canEvict(teamB)).toBe('yes');
    expect(bindingNames()).toContain(teamB);
    expect(bindingNames()).not.toContain(teamA);
  });

  it('refuses a forged Delete naming the second deployment: its objects stay, it keeps evicting', async () => {
    await until('team B may evict', 10_000, async () => canEvict(teamB) === 'yes');
    const since = Date.now();
    // Whoever may invoke deployment A's installer, with a well-formed request for A's own stack.
    await installerOf(teamA, 'stack-a')(eventOf('Delete', 'stack-a', physicalIdFor(teamB, teamB)));
    // ... or naming another stack altogether: refused before it connects to anything.
    await installerOf(teamA, 'stack-a')(eventOf('Delete', 'stack-b', physicalIdFor(teamB, teamB)));

    expect(bindingNames()).toContain(teamB);
    expect(canEvict(teamB)).toBe('yes');
    expect(
      readAudit(plane, (e) => e.atMs >= since && e.verb === 'delete' && e.resource === 'clusterrolebindings'),
    ).toEqual([]);
    expect(responses.at(-1)).toMatchObject({ Status: 'FAILED', Reason: expect.stringMatching(/refused/) });
    await installerOf(teamB, 'stack-b')(eventOf('Delete', 'stack-b', physicalIdFor(teamB, teamB)));
    expect(bindingNames()).not.toContain(teamB);
  });

  it('binds the new group before CloudFormation switches the access entry, and drops the old one only on the Delete of the old id', async () => {
    const name = 'graceful-node-termination-0000cccc';
    const grants: string[] = [];
    await installerOf(name, 'stack-c', 'team-old', grants)(eventOf('Create', 'stack-c'));
    await until('the old group may evict', 10_000, async () => canEvict('team-old') === 'yes');
    // The deployer changes kubernetesGroup: an Update with the old physical id.
    await installerOf(
      name,
      'stack-c',
      'team-new',
      grants,
    )(eventOf('Update', 'stack-c', physicalIdFor(name, 'team-old')));
    expect(responses.at(-1)).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: physicalIdFor(name, 'team-new') });
    await until(
      'both groups may evict while the access entry switches',
      10_000,
      async () => canEvict('team-new') === 'yes' && canEvict('team-old') === 'yes',
    );
    // CloudFormation's cleanup, after the access entry switched: the Delete of the old id.
    await installerOf(
      name,
      'stack-c',
      'team-new',
      grants,
    )(eventOf('Delete', 'stack-c', physicalIdFor(name, 'team-old')));
    await until(
      'only the new group may evict',
      10_000,
      async () => canEvict('team-new') === 'yes' && canEvict('team-old') === 'no',
    );
    // Cluster admin was held only around each request.
    expect(grants).toEqual(['grant', 'revoke', 'grant', 'revoke', 'grant', 'revoke']);
    await installerOf(name, 'stack-c', 'team-new')(eventOf('Delete', 'stack-c', physicalIdFor(name, 'team-new')));
  });
});

// From the adversarial review of issue 19 (it broke e12925a; was test/cluster/review-attacks.test.ts).
// Found (medium): server-side apply with force takes over a same-named deployment's objects.
describe('the RBAC installer and a same-named deployment of another stack', () => {
  const responses: CustomResourceResponse[] = [];
  const name = 'graceful-node-termination-0000eeee';
  const installerOf = (stackId: string) =>
    createInstallerHandler({
      settings: {
        name,
        clusterName: 'local-plane',
        group: name,
        deadlinePolicy: 'force',
        region: 'eu-west-1',
        stackId,
      },
      connect: async () => endpoint,
      respond: async (_url, response) => void responses.push(response),
      log: new MemoryLog(),
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      authRetryMs: 0,
    });
  const request = (type: CustomResourceEvent['RequestType'], stackId: string): CustomResourceEvent => ({
    RequestType: type,
    ResponseURL: 'https://cloudformation-custom-resource-response-euwest1.s3.eu-west-1.amazonaws.com/response',
    StackId: stackId,
    RequestId: `req-${responses.length}`,
    LogicalResourceId: 'Rbac',
    PhysicalResourceId: type === 'Create' ? undefined : physicalIdFor(name, name),
    ResourceProperties: {},
  });
  const binding = () => {
    try {
      return JSON.parse(a.kubectl('get', 'clusterrolebinding', name, '-o', 'json')) as {
        metadata: { annotations?: Record<string, string> };
      };
    } catch {
      return undefined;
    }
  };
  afterAll(() => {
    a.kubectl(
      'delete',
      'clusterrole,clusterrolebinding,flowschema,prioritylevelconfiguration',
      name,
      '--ignore-not-found',
    );
  });

  it("a second stack's Create does not take over the first stack's objects, and its Delete leaves them", async () => {
    await installerOf('stack-a')(request('Create', 'stack-a'));
    await installerOf('stack-b')(request('Create', 'stack-b'));
    const ownerAfterB = binding()?.metadata.annotations?.['graceful-node-termination/owner'];
    await installerOf('stack-b')(request('Delete', 'stack-b'));
    expect({ ownerAfterB, aStillInstalled: binding() !== undefined }).toEqual({
      ownerAfterB: 'stack-a/Rbac',
      aStillInstalled: true,
    });
  });
});
