// The surgeBeforeEvict prop: the SURGE_* variables as the handler parses them, and the RBAC
// installer told to grant patch on Deployments and apply the admission policy; nothing of it
// without the prop.
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../lambda/shared/config.js';
import { resourcesOf, stackWith } from './fixtures.js';

const functionEnv = (stack: Parameters<typeof resourcesOf>[0], marker: string) => {
  const fn = Object.values(resourcesOf(stack)).find(
    (r) => r.Type === 'AWS::Lambda::Function' && JSON.stringify(r.Properties).includes(marker),
  )!;
  return (fn.Properties['Environment'] as { Variables: Record<string, string> }).Variables;
};

describe('the surgeBeforeEvict prop', { timeout: 120_000 }, () => {
  it('is off by default: no SURGE_ variables, the installer grants nothing on Deployments', () => {
    const { stack } = stackWith({});
    expect(Object.keys(functionEnv(stack, 'CLUSTER_NAME')).filter((k) => k.startsWith('SURGE_'))).toEqual([]);
    expect(functionEnv(stack, 'RBAC_NAME')['SURGE_BEFORE_EVICT']).toBeUndefined();
  });

  it('writes the variables as the handler parses them, and tells the installer', () => {
    const { stack } = stackWith({
      autoScalingGroupNames: ['nodes-a'],
      surgeBeforeEvict: {
        namespaces: ['shop'],
        podSelector: 'tier=front',
        timeout: Duration.minutes(2),
        untouchableManagers: ['argocd-controller'],
      },
    });
    const env = functionEnv(stack, 'CLUSTER_NAME');
    const config = parseConfig({
      ...Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string')),
      AUTO_SCALING_GROUP_NAMES: 'nodes-a',
      HAND_OFF_TOPIC_ARN: '',
    });
    expect(config).toMatchObject({
      surgeBeforeEvict: true,
      surgeNamespaces: ['shop'],
      surgeTimeoutSeconds: 120,
      surgeUntouchableManagers: ['argocd-controller'],
    });
    expect(config.surgePodSelector).toEqual([{ key: 'tier', op: '=', value: 'front' }]);
    expect(functionEnv(stack, 'RBAC_NAME')['SURGE_BEFORE_EVICT']).toBe('true');
  });

  it('refuses a malformed pod selector at synthesis', () => {
    expect(() => stackWith({ surgeBeforeEvict: { podSelector: 'tier in (a,b)' } })).toThrow(/podSelector/);
  });
});
