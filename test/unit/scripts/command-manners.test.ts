// The manners every command shares: options refused with the valid ones named (exit 2), the
// kubeconfig found as kubectl finds it, and failures said with where they happened and what to
// try next (scripts/command-options.ts, kube-access.ts, failure.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { choice, outputFormat, parseCommand, UsageError } from '../../../scripts/command-options.js';
import { atAws, atKubernetes, KubernetesError, rootCause } from '../../../scripts/failure.js';
import { kubeconfigFiles, loadKubeAccess } from '../../../scripts/kube-access.js';

const dir = mkdtempSync(join(tmpdir(), 'gnt-manners-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const kubeconfig = (name: string, contexts: { name: string; server: string }[], current?: string) => {
  const path = join(dir, name);
  const clusters = contexts.map((c) => `{name: ${c.name}, cluster: {server: "${c.server}"}}`).join(', ');
  const ctx = contexts.map((c) => `{name: ${c.name}, context: {cluster: ${c.name}, user: u}}`).join(', ');
  writeFileSync(
    path,
    `apiVersion: v1\nkind: Config\nclusters: [${clusters}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [${ctx}]\n${current ? `current-context: ${current}\n` : ''}`,
  );
  return path;
};

describe('options', () => {
  it('refuses an unknown option, naming every valid one, and an extra argument, naming what the command takes', () => {
    expect(() => parseCommand('check', ['--jsn'], { nodes: { type: 'string' } }, ['<group>'])).toThrow(
      new UsageError(
        "unknown option '--jsn'; valid options: -h/--help, -o/--output, --json, --region, --profile, --kubeconfig, --context, --nodes (see check --help)",
      ),
    );
    expect(() => parseCommand('check', ['a', 'b'], {}, ['<group>'])).toThrow(
      new UsageError('unexpected argument "b"; it takes <group> (see check --help)'),
    );
    expect(() => parseCommand('check', ['--region'], {}, ['<group>'])).toThrow(UsageError);
  });

  it('takes -o table|json|yaml, --json as -o json, and refuses anything else or a contradiction', () => {
    expect(outputFormat({})).toBe('table');
    expect(outputFormat({ output: 'yaml' })).toBe('yaml');
    expect(outputFormat({ json: true })).toBe('json');
    expect(() => outputFormat({ output: 'xml' })).toThrow(
      new UsageError('-o/--output "xml" is not valid; use one of: table, json, yaml'),
    );
    expect(() => outputFormat({ json: true, output: 'yaml' })).toThrow(UsageError);
    expect(choice('--strategy', undefined, ['default', 'minimal'], 'default')).toBe('default');
  });
});

describe('the kubeconfig', () => {
  it('is --kubeconfig, else the files of KUBECONFIG, else ~/.kube/config', () => {
    expect(kubeconfigFiles({ kubeconfig: '/a' }, { KUBECONFIG: '/b:/c', HOME: '/h' })).toEqual(['/a']);
    expect(kubeconfigFiles({}, { KUBECONFIG: '/b:/c', HOME: '/h' })).toEqual(['/b', '/c']);
    expect(kubeconfigFiles({}, { HOME: '/h' })).toEqual(['/h/.kube/config']);
  });

  it('merges the files of KUBECONFIG as kubectl does and takes --context from any of them', () => {
    const first = kubeconfig('first', [{ name: 'prod', server: 'https://prod.example:443' }], 'prod');
    const second = kubeconfig('second', [{ name: 'staging', server: 'https://staging.example:443' }], 'staging');
    expect(loadKubeAccess({}, { KUBECONFIG: `${first}:${second}` })).toMatchObject({
      context: 'prod',
      server: 'https://prod.example:443',
    });
    expect(loadKubeAccess({ context: 'staging' }, { KUBECONFIG: `${first}:${second}` })).toMatchObject({
      context: 'staging',
      server: 'https://staging.example:443',
    });
  });

  it('says which files it looked at, and which contexts there are', () => {
    expect(() => loadKubeAccess({}, { KUBECONFIG: join(dir, 'none') })).toThrow(
      /^no kubeconfig at .*none: pass --kubeconfig, set KUBECONFIG, or run: aws eks update-kubeconfig/,
    );
    const path = kubeconfig('two', [
      { name: 'a', server: 'https://a:443' },
      { name: 'b', server: 'https://b:443' },
    ]);
    expect(() => loadKubeAccess({ kubeconfig: path, context: 'c' }, {})).toThrow(
      new UsageError(`no context "c" in the kubeconfig ${path}; contexts there: a, b (pass --context)`),
    );
    expect(() => loadKubeAccess({ kubeconfig: path }, {})).toThrow(
      new UsageError(`no current context in the kubeconfig ${path}; contexts there: a, b (pass --context)`),
    );
  });
});

describe('failures', () => {
  const where = {
    server: 'https://api.example:443',
    context: 'prod',
    region: 'eu-west-1',
    profile: 'ops',
    group: 'workers',
  };
  const refused = Object.assign(new TypeError('fetch failed'), {
    cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' }),
  });

  it('name the API server and the context, the innermost cause and the next step', async () => {
    expect(rootCause(refused)).toBe('connect ECONNREFUSED 10.0.0.1:443');
    await expect(atKubernetes(where, 'list pods', () => Promise.reject(refused))).rejects.toThrow(
      new KubernetesError(
        'cannot reach the Kubernetes API at https://api.example:443 (context prod): connect ECONNREFUSED 10.0.0.1:443; check the kubeconfig (--kubeconfig, --context) and the network',
      ),
    );
    await expect(
      atKubernetes(where, 'list pods', () => Promise.reject(Object.assign(new Error('Forbidden'), { code: 403 }))),
    ).rejects.toThrow(
      'the Kubernetes API at https://api.example:443 (context prod) refused to list pods (403): check the context',
    );
  });

  it('name the AWS call, group, region and profile; refused credentials point at the profile', async () => {
    const expired = Object.assign(new Error('The security token included in the request is expired'), {
      name: 'ExpiredTokenException',
    });
    await expect(atAws(where, 'DescribeAutoScalingGroups', () => Promise.reject(expired))).rejects.toThrow(
      'DescribeAutoScalingGroups for group workers in eu-west-1 (profile ops) failed: ExpiredTokenException: The security token included in the request is expired; check the credentials of profile ops (aws sts get-caller-identity --profile ops; aws sso login when it uses SSO)',
    );
  });

  it('keep the first place that said it: a Kubernetes failure inside an AWS step stays a Kubernetes failure', async () => {
    const inner = atKubernetes(where, 'list pods', () => Promise.reject(refused));
    await expect(atAws(where, 'the instance refresh', () => inner)).rejects.toBeInstanceOf(KubernetesError);
  });
});
