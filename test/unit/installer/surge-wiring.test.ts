// Surge before evict's wiring: the Deployment as read from the API, the drain record that
// carries the surges, the variables and the prop, the RBAC and the admission policy.
import type { V1Deployment } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { selectorString, toDeploymentInfo, toReplicaPod } from '../../../lambda/adapters/kubernetes/deployment-api.js';
import { formatDrainRecord, parseDrainRecord } from '../../../lambda/cluster/marks/drain-record.js';
import { type DrainRecord } from '../../../lambda/cluster/model.js';
import { installedObjects } from '../../../lambda/installer/installed-objects.js';
import { rbacRulesFor } from '../../../lambda/installer/rbac.js';
import { renderSurgeYaml } from '../../../lambda/installer/rbac-yaml.js';
import { parseConfig, toEnvironment } from '../../../lambda/shared/config.js';
import { lifecycleAction } from '../../fixtures/drain-sources.js';

const base = { CLUSTER_NAME: 'prod', AUTO_SCALING_GROUP_NAMES: 'workers', LIFECYCLE_HOOK_NAMES: 'workers-terminate' };

describe('surge before evict wiring', () => {
  it('reads a Deployment as the decision needs it', () => {
    const d: V1Deployment = {
      metadata: {
        namespace: 'shop',
        name: 'web',
        uid: 'u',
        generation: 3,
        managedFields: [{ manager: 'argocd-controller', operation: 'Apply' }],
      },
      spec: {
        replicas: 2,
        selector: {
          matchLabels: { app: 'web' },
          matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }],
        },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0 } },
        template: {
          metadata: {
            labels: { app: 'web', tier: 'a' },
            annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-01-01T00:00:00Z' },
          },
          spec: {
            containers: [{ name: 'a', readinessProbe: { httpGet: { port: 80, path: '/' } } }, { name: 'b' }],
            affinity: {
              podAntiAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [
                  { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'web' } } },
                ],
              },
            },
          },
        },
      },
      status: { observedGeneration: 2 },
    };
    expect(toDeploymentInfo(d)).toMatchObject({
      generation: 3,
      observedGeneration: 2,
      maxSurge: 0,
      restartedAt: '2026-01-01T00:00:00Z',
      readinessProbe: false,
      selfAntiAffinityOnHostname: true,
      managers: [{ manager: 'argocd-controller', subresource: '' }],
      selector: 'app=web,tier in (a,b)',
    });
    expect(toDeploymentInfo({ spec: { selector: {}, template: {} } }).maxSurge).toBe('25%');
    expect(
      selectorString({
        matchExpressions: [
          { key: 'x', operator: 'DoesNotExist' },
          { key: 'y', operator: 'Exists' },
        ],
      }),
    ).toBe('!x,y');
    const pending = toReplicaPod({
      status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] },
    } as never);
    expect(pending.unschedulable).toBe(true);
  });

  it('keeps the surges in the drain record, and drops an unreadable one, never the record', () => {
    const r: DrainRecord = {
      source: lifecycleAction('a', 'h'),
      notifiedAtMs: 0,
      startedAtMs: 0,
      updatedAtMs: 0,
      set: ['cordon'],
      surges: [
        {
          pod: 'default/web-1',
          uid: 'u1',
          deployment: { namespace: 'default', name: 'web' },
          restartedAt: '2026-11-22T10:00:00Z',
          atMs: 1000,
          state: 'waiting',
        },
      ],
    };
    expect(parseDrainRecord(formatDrainRecord(r))?.surges).toEqual(r.surges);
    // On the node, the Deployment is namespace/name, as every version wrote it.
    expect(JSON.parse(formatDrainRecord(r)).surges[0].deployment).toBe('default/web');
    const raw = JSON.parse(formatDrainRecord(r)) as Record<string, unknown>;
    raw['surges'] = [{ pod: 'x' }, ...(raw['surges'] as unknown[])];
    expect(parseDrainRecord(JSON.stringify(raw))?.surges).toEqual(r.surges);
  });

  it('parses the variables, and the construct writes them', () => {
    const c = parseConfig({
      ...base,
      SURGE_BEFORE_EVICT: 'true',
      SURGE_NAMESPACES: 'shop, api',
      SURGE_POD_SELECTOR: 'tier=front',
      SURGE_TIMEOUT_SECONDS: '120',
    });
    expect(c.surgeBeforeEvict).toBe(true);
    expect(c.surgeNamespaces).toEqual(['shop', 'api']);
    expect(c.surgeTimeoutSeconds).toBe(120);
    expect(parseConfig(base).surgeBeforeEvict).toBe(false);
    expect(() => parseConfig({ ...base, SURGE_POD_SELECTOR: 'tier in (a)' })).toThrow(/SURGE_POD_SELECTOR/);
    expect(() => parseConfig({ ...base, SURGE_TIMEOUT_SECONDS: '5' })).toThrow(/SURGE_TIMEOUT_SECONDS/);
    const env = toEnvironment({
      clusterName: 'prod',
      autoScalingGroupNames: ['w'],
      lifecycleHookNames: ['h'],
      surgeBeforeEvict: true,
      surgePodSelector: 'app=web',
    });
    expect(env).toMatchObject({ SURGE_BEFORE_EVICT: 'true', SURGE_POD_SELECTOR: 'app=web' });
    expect(() =>
      toEnvironment({
        clusterName: 'prod',
        autoScalingGroupNames: ['w'],
        lifecycleHookNames: ['h'],
        surgePodSelector: 'app in (x)',
      }),
    ).toThrow(/podSelector/);
  });

  it('grants patch on Deployments only with surge on, and installs the policy beside it', () => {
    const has = (rules: ReturnType<typeof rbacRulesFor>) => rules.some((r) => r.resources.includes('deployments'));
    expect(has(rbacRulesFor('force'))).toBe(false);
    expect(has(rbacRulesFor('leave', true))).toBe(true);
    expect(installedObjects('g', 'force', 'gnt').map((o) => o.kind)).not.toContain('ValidatingAdmissionPolicy');
    const objects = installedObjects('team', 'force', 'gnt', { surge: true });
    const policy = objects.find((o) => o.kind === 'ValidatingAdmissionPolicy') as unknown as {
      metadata: { name: string };
      spec: { matchConditions: { expression: string }[] };
    };
    expect(policy.metadata.name).toBe('gnt-surge');
    expect(policy.spec.matchConditions[0]!.expression).toBe('request.userInfo.groups.exists(g, g == "team")');
    expect(objects.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding')?.['spec']).toEqual({
      policyName: 'gnt-surge',
      validationActions: ['Deny'],
    });
  });

  it('ships surge.yaml as rendered (run `npm run rbac:yaml` after changing it)', () => {
    const file = readFileSync(join(import.meta.dirname, '..', '..', '..', 'infra', 'kubernetes', 'surge.yaml'), 'utf8');
    expect(file).toBe(renderSurgeYaml());
    expect((loadAll(file) as { kind: string }[]).map((o) => o.kind)).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
  });
});
