// graceful-node-termination rbac (scripts/rbac-command.ts): an aws-auth cluster's RBAC without a
// clone of the repository. What it prints is what the stack's installer applies (installedObjects),
// for the options or for the deployed function's own variables (Lambda stubbed at the HTTP edge,
// AWS_ENDPOINT_URL_LAMBDA); --apply server-side applies the same objects to a stub API server,
// after the installer's checks, and leaves a stack's own objects alone.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { installedObjects } from '../../../lambda/installer/installed-objects.js';
import { ownerAnnotation } from '../../../lambda/installer/rbac.js';
import { UsageError } from '../../../scripts/command-options.js';
import { KubernetesError } from '../../../scripts/failure.js';
import { main } from '../../../scripts/rbac-command.js';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly body: string;
}

const dir = mkdtempSync(join(tmpdir(), 'gnt-rbac-'));
const seen: Seen[] = [];
/** What the stub API server and Lambda answer; each test sets its own. */
const world = {
  gitVersion: 'v1.34.1-eks-3cfe0ce',
  clusterRole: undefined as object | undefined,
  variables: {} as Record<string, string>,
};
let server: Server;
let printed: string[];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', body });
      const json = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.url?.startsWith('/2015-03-31/functions/'))
        return json(200, { Environment: { Variables: world.variables } });
      if (req.url === '/version') return json(200, { major: '1', minor: '34+', gitVersion: world.gitVersion });
      if (req.method === 'GET' && req.url?.startsWith('/apis/rbac.authorization.k8s.io/v1/clusterroles/'))
        return world.clusterRole
          ? json(200, world.clusterRole)
          : json(404, { kind: 'Status', code: 404, reason: 'NotFound', message: 'not found' });
      if (req.method === 'PATCH') return json(200, JSON.parse(body) as unknown);
      json(404, { kind: 'Status', code: 404, message: `${req.method} ${req.url} is not served here` });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  writeFileSync(
    join(dir, 'kubeconfig'),
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "${url}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: aws-auth, context: {cluster: c, user: u}}]',
      'current-context: aws-auth',
    ].join('\n'),
  );
  vi.stubEnv('AWS_ENDPOINT_URL_LAMBDA', url);
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  seen.length = 0;
  printed = [];
  world.gitVersion = 'v1.34.1-eks-3cfe0ce';
  world.clusterRole = undefined;
  world.variables = {};
  vi.stubEnv('KUBECONFIG', join(dir, 'kubeconfig'));
  vi.stubEnv('AWS_REGION', 'eu-west-1');
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'secret');
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (printed.push(String(chunk)), true));
  vi.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(`${line}\n`));
});
afterEach(() => {
  vi.restoreAllMocks();
});

const objects = () => loadAll(printed.join('')) as object[];

describe('rbac: the objects of an aws-auth deployment, printed', () => {
  it('prints, as YAML for kubectl apply, exactly the objects the installer applies', async () => {
    await expect(main(['--deployment', 'gnt-prod'])).resolves.toBe(0);
    expect(objects()).toEqual(installedObjects('gnt-prod', 'force', 'gnt-prod', { surge: false }));
    expect(printed.join('')).toMatch(/^# graceful-node-termination: the Kubernetes objects of deployment gnt-prod/);
    // Each rule keeps its reason, as the shipped rbac.yaml does.
    expect(printed.join('')).toContain('  # Evict through the eviction API so PodDisruptionBudgets hold.\n');
    expect(seen).toEqual([]);
  });

  it('follows group, deadline policy and surge: pods delete only with force, the fence with surge', async () => {
    await main(['--deployment', 'gnt-prod', '--group', 'drainers', '--deadline-policy', 'retain', '--surge']);
    const printedObjects = objects() as { kind: string; rules?: { resources: string[]; verbs: string[] }[] }[];
    expect(printedObjects).toEqual(installedObjects('drainers', 'retain', 'gnt-prod', { surge: true }));
    const pods = printedObjects[0]!.rules!.find((r) => r.resources.includes('pods'));
    expect(pods?.verbs).not.toContain('delete');
    expect(printedObjects.map((o) => o.kind)).toContain('ValidatingAdmissionPolicy');
  });

  it("reads the deployment's settings from its function's own variables (--function), with -o json", async () => {
    world.variables = {
      DEPLOYMENT_NAME: 'team-a',
      DEADLINE_POLICY: 'leave',
      SURGE_BEFORE_EVICT: 'true',
      MODE: 'observe',
    };
    await expect(main(['--function', 'team-a-drainer', '-o', 'json'])).resolves.toBe(0);
    const list = JSON.parse(printed.join('')) as { kind: string; items: object[] };
    expect(list.kind).toBe('List');
    expect(list.items).toEqual(installedObjects('team-a', 'leave', 'team-a', { surge: true }));
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['GET /2015-03-31/functions/team-a-drainer/configuration']);
  });

  it('says what is missing or wrong, as bad usage', async () => {
    await expect(main([])).rejects.toBeInstanceOf(UsageError);
    await expect(main([])).rejects.toThrow(/name the deployment with --deployment .* or read it from the function/);
    await expect(main(['--deployment', 'Prod_1'])).rejects.toThrow(/--deployment "Prod_1" is not a deployment name/);
    await expect(main(['--deployment', 'gnt', '--deadline-policy', 'delete'])).rejects.toThrow(
      '--deadline-policy "delete" is not valid; use one of: force, leave, retain',
    );
    await expect(main(['--function', 'f', '--deployment', 'gnt'])).rejects.toThrow(/give it, or --deployment/);
    await expect(main(['--deployment', 'gnt', '-o', 'table'])).rejects.toThrow(/use one of: yaml, json/);
  });
});

describe('rbac --apply', () => {
  it('server-side applies the same objects with the kubeconfig, after reading the server version', async () => {
    await expect(main(['--deployment', 'gnt-prod', '--apply'])).resolves.toBe(0);
    expect(seen[0]).toMatchObject({ method: 'GET', url: '/version' });
    const patches = seen.filter((s) => s.method === 'PATCH');
    expect(patches.map((p) => JSON.parse(p.body) as object)).toEqual(
      installedObjects('gnt-prod', 'force', 'gnt-prod', { surge: false }),
    );
    expect(patches.every((p) => p.url.includes('fieldManager=gnt-prod') && p.url.includes('force=true'))).toBe(true);
    expect(printed).toContain('applied ClusterRole gnt-prod (server-side apply)\n');
    expect(printed.at(-1)).toMatch(/^next: map the function's role to the group gnt-prod in aws-auth/);
  });

  it("leaves a stack's own objects alone (its owner annotation), and applies nothing", async () => {
    world.clusterRole = { metadata: { name: 'gnt-prod', annotations: { [ownerAnnotation]: 'arn:stack/Rbac' } } };
    const run = main(['--deployment', 'gnt-prod', '--apply']);
    await expect(run).rejects.toBeInstanceOf(KubernetesError);
    await expect(run).rejects.toThrow(
      /ClusterRole gnt-prod is installed by a stack .*arn:stack\/Rbac.*nothing was applied/,
    );
    expect(seen.filter((s) => s.method === 'PATCH')).toEqual([]);
  });

  it('refuses a cluster older than the objects (1.29; surge: 1.30), naming its version', async () => {
    world.gitVersion = 'v1.29.8-eks-1';
    await expect(main(['--deployment', 'gnt', '--surge', '--apply'])).rejects.toThrow(
      /the cluster runs Kubernetes v1\.29\.8-eks-1; surge before evict needs 1\.30 or later/,
    );
    world.gitVersion = 'v1.28.3';
    await expect(main(['--deployment', 'gnt', '--apply'])).rejects.toBeInstanceOf(KubernetesError);
    expect(seen.filter((s) => s.method === 'PATCH')).toEqual([]);
  });
});
