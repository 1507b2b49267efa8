import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadKubeconfig } from '../../../../lambda/adapters/kubernetes/kubeconfig.js';

const connectWithKubeconfig = async (path: string, context: string | undefined) => loadKubeconfig(path, context);
import { kubeconfigEndpoint } from '../../../../lambda/adapters/kubernetes/kubeconfig.js';

const caPem = '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n';
const b64 = (s: string) => Buffer.from(s).toString('base64');

function kubeconfig(
  o: { cluster?: Record<string, unknown>; user?: Record<string, unknown>; current?: string | null } = {},
): string {
  const cluster = { server: 'https://10.0.0.1:6443', 'certificate-authority-data': b64(caPem), ...o.cluster };
  const user = o.user ?? { token: 'static-token' };
  return [
    'apiVersion: v1',
    'kind: Config',
    ...(o.current === null ? [] : [`current-context: ${o.current ?? 'main'}`]),
    'clusters:',
    `- name: c1`,
    `  cluster: ${JSON.stringify(cluster)}`,
    'users:',
    `- name: u1`,
    `  user: ${JSON.stringify(user)}`,
    'contexts:',
    '- name: main',
    '  context: { cluster: c1, user: u1 }',
  ].join('\n');
}

describe('kubeconfig reader', () => {
  let dir: string;
  beforeEach(() => void (dir = mkdtempSync(join(tmpdir(), 'gnt-kubeconfig-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the current context: server, CA data and a bearer token', async () => {
    const endpoint = kubeconfigEndpoint(
      kubeconfig({ cluster: { server: 'https://10.0.0.1:6443/' } }),
      '/k/config',
      undefined,
    );
    expect(endpoint.server).toBe('https://10.0.0.1:6443');
    const options = await endpoint.requestOptions();
    expect(options.ca?.toString()).toBe(caPem);
    expect(options.rejectUnauthorized).toBe(true);
    expect(options.headers).toEqual({ Authorization: 'Bearer static-token' });
    expect(options).not.toHaveProperty('cert');
  });

  it('resolves certificate files relative to the kubeconfig and selects KUBECONFIG_CONTEXT', async () => {
    writeFileSync(join(dir, 'ca.pem'), caPem);
    writeFileSync(join(dir, 'client.pem'), 'CLIENT CERT');
    writeFileSync(join(dir, 'client.key'), 'CLIENT KEY');
    const path = join(dir, 'config');
    writeFileSync(
      path,
      [
        'current-context: main',
        'clusters:',
        '- { name: c1, cluster: { server: "https://10.0.0.1:6443" } }',
        '- { name: c2, cluster: { server: "https://other:443", certificate-authority: ca.pem } }',
        'users:',
        '- { name: u1, user: { token: t } }',
        `- { name: u2, user: { client-certificate: client.pem, client-key: "${join(dir, 'client.key')}" } }`,
        'contexts:',
        '- { name: main, context: { cluster: c1, user: u1 } }',
        '- { name: certs, context: { cluster: c2, user: u2 } }',
      ].join('\n'),
    );
    const endpoint = await connectWithKubeconfig(path, 'certs');
    expect(endpoint.server).toBe('https://other:443');
    const options = await endpoint.requestOptions();
    expect(options.ca?.toString()).toBe(caPem);
    expect(options.cert?.toString()).toBe('CLIENT CERT');
    expect(options.key?.toString()).toBe('CLIENT KEY');
    expect(options.headers).toEqual({});
  });

  it('reads a tokenFile again before every request, so rotated tokens keep working', async () => {
    const tokenPath = join(dir, 'token');
    writeFileSync(tokenPath, 'first\n');
    const endpoint = kubeconfigEndpoint(kubeconfig({ user: { tokenFile: 'token' } }), join(dir, 'config'), undefined);
    expect((await endpoint.requestOptions()).headers).toEqual({ Authorization: 'Bearer first' });
    writeFileSync(tokenPath, 'second\n');
    expect((await endpoint.requestOptions()).headers).toEqual({ Authorization: 'Bearer second' });
  });

  it('honours insecure-skip-tls-verify and tls-server-name, and accepts JSON', async () => {
    const json = JSON.stringify({
      'current-context': 'x',
      clusters: [
        {
          name: 'c',
          cluster: { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true, 'tls-server-name': 'kubernetes' },
        },
      ],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    });
    const options = await kubeconfigEndpoint(json, '/k/config.json', undefined).requestOptions();
    expect(options.rejectUnauthorized).toBe(false);
    expect(options.servername).toBe('kubernetes');
  });

  const failures: [string, () => unknown, RegExp][] = [
    [
      'fails when the user runs an exec plugin, naming the field',
      () => kubeconfigEndpoint(kubeconfig({ user: { exec: { command: 'aws' } } }), '/k/c', undefined),
      /kubeconfig \/k\/c: users\[u1\]\.user\.exec is not supported: use token, tokenFile or client-certificate/,
    ],
    [
      'fails when the user has an auth-provider',
      () => kubeconfigEndpoint(kubeconfig({ user: { 'auth-provider': { name: 'oidc' } } }), '/k/c', undefined),
      /users\[u1\]\.user\.auth-provider is not supported/,
    ],
    [
      'fails when KUBECONFIG_CONTEXT is not among the contexts',
      () => kubeconfigEndpoint(kubeconfig(), '/k/c', 'nope'),
      /KUBECONFIG_CONTEXT nope is not among its contexts/,
    ],
    [
      'fails when there is no current-context and none is configured',
      () => kubeconfigEndpoint(kubeconfig({ current: null }), '/k/c', undefined),
      /has no current-context; set KUBECONFIG_CONTEXT/,
    ],
    [
      'fails when the context names a cluster that is not there',
      () => kubeconfigEndpoint(kubeconfig().replace('cluster: c1, user', 'cluster: c9, user'), '/k/c', undefined),
      /cluster c9 \(from context main\) is not among its clusters/,
    ],
    [
      'fails when the server is missing',
      () => kubeconfigEndpoint(kubeconfig({ cluster: { server: undefined } }), '/k/c', undefined),
      /clusters\[c1\]\.cluster\.server is missing/,
    ],
    [
      'fails when the server is not a URL',
      () => kubeconfigEndpoint(kubeconfig({ cluster: { server: '10.0.0.1' } }), '/k/c', undefined),
      /server 10\.0\.0\.1 is not an http\(s\) URL/,
    ],
    [
      'fails when a proxy is required',
      () => kubeconfigEndpoint(kubeconfig({ cluster: { 'proxy-url': 'http://proxy:3128' } }), '/k/c', undefined),
      /proxy-url is not supported/,
    ],
    [
      'fails when a certificate file cannot be read',
      () =>
        kubeconfigEndpoint(
          kubeconfig({ cluster: { 'certificate-authority-data': undefined, 'certificate-authority': 'missing.pem' } }),
          '/k/c',
          undefined,
        ),
      /clusters\[c1\]\.cluster\.certificate-authority \/k\/missing\.pem cannot be read/,
    ],
    [
      'fails when a client certificate comes without its key',
      () => kubeconfigEndpoint(kubeconfig({ user: { 'client-certificate-data': b64('C') } }), '/k/c', undefined),
      /client-certificate and client-key come together/,
    ],
    [
      'fails when a field has the wrong type',
      () => kubeconfigEndpoint(kubeconfig({ user: { token: 42 } }), '/k/c', undefined),
      /users\[u1\]\.user\.token must be a string/,
    ],
    [
      'fails when the file is not YAML',
      () => kubeconfigEndpoint('a: [b', '/k/c', undefined),
      /kubeconfig \/k\/c: is not valid YAML/,
    ],
    [
      'fails when the file is not a mapping',
      () => kubeconfigEndpoint('- a\n- b\n', '/k/c', undefined),
      /is not a kubeconfig/,
    ],
  ];
  for (const [name, run, message] of failures) it(name, () => expect(run).toThrow(message));

  it('fails when KUBECONFIG_PATH cannot be read', async () => {
    await expect(connectWithKubeconfig(join(dir, 'absent'), undefined)).rejects.toThrow(
      /KUBECONFIG_PATH .*absent cannot be read/,
    );
  });
});
