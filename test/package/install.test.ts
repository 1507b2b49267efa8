// Proof the construct package installs where users live: `npm run package` left the npm
// tarball and the Python wheel in dist/; fresh apps install them from disk (aws-cdk-lib and
// constructs from the registries) and synthesize the same stack as the repository's construct.
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  built,
  clusterAppIn,
  packageDir,
  pythonAppFrom,
  run,
  typescriptAppFrom,
  withoutAssetHashes,
  type SynthesizedApp,
} from './apps.js';
import { clusterCapacityStack } from './cluster-capacity.js';
import { twoGroupStack } from './two-groups.js';

const work = mkdtempSync(join(tmpdir(), 'gnt-package-'));
const apps: Record<'commonjs' | 'module' | 'python', SynthesizedApp> = {} as never;
/** The aspect's app (cluster-capacity.ts), from the package in the CommonJS app's directory. */
let clusterTemplate: Record<string, unknown>;

/** The same stack as the apps build, from the repository's own construct (infra/). */
function repositoryTemplate(): Record<string, unknown> {
  const app = new App({ outdir: join(work, 'repository.out'), analyticsReporting: false });
  return Template.fromStack(twoGroupStack(app)).toJSON() as Record<string, unknown>;
}

beforeAll(async () => {
  const tarball = built('js', '.jsii.tgz');
  const wheel = built('python', '.whl');
  // The three installs at once: they mostly wait on the registries.
  const [commonjs, module, python] = await Promise.all([
    typescriptAppFrom(join(work, 'commonjs'), tarball, 'commonjs'),
    typescriptAppFrom(join(work, 'module'), tarball, 'module'),
    pythonAppFrom(join(work, 'python'), wheel),
  ]);
  Object.assign(apps, { commonjs, module, python });
  clusterTemplate = await clusterAppIn(commonjs.dir);
}, 900_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the construct package', () => {
  it('synthesizes the same stack in a CommonJS TypeScript app, an ESM TypeScript app and a Python app as the repository does', () => {
    const expected = withoutAssetHashes(repositoryTemplate());
    expect(withoutAssetHashes(apps.commonjs.template)).toEqual(expected);
    expect(withoutAssetHashes(apps.module.template)).toEqual(expected);
    expect(withoutAssetHashes(apps.python.template)).toEqual(expected);
    // Two groups, two hooks each, and the policy given by enum.
    const resources = Object.values(
      apps.python.template['Resources'] as Record<string, { Type: string; Properties: Record<string, unknown> }>,
    );
    expect(
      resources
        .filter((r) => r.Type === 'AWS::AutoScaling::LifecycleHook')
        .map((r) => r.Properties['AutoScalingGroupName']),
    ).toEqual(['nodes-a', 'nodes-a', 'nodes-b', 'nodes-b']);
    expect(JSON.stringify(apps.python.template)).toContain('"DEADLINE_POLICY":"leave"');
  });

  it('stages the prebuilt asset, identical in every app, and needs neither esbuild nor the AWS SDK to do it', () => {
    const assetHashes = Object.values(apps).map(
      (app) => JSON.stringify(app.template).match(/"S3Key":"([0-9a-f]{64})\.zip"/)?.[1],
    );
    expect(new Set(assetHashes).size).toBe(1);
    for (const app of Object.values(apps))
      expect(existsSync(join(app.dir, 'cdk.out', `asset.${assetHashes[0]}`, 'index.mjs'))).toBe(true);
    for (const app of [apps.commonjs, apps.module]) {
      const modules = join(app.dir, 'node_modules');
      const installed = readdirSync(modules).flatMap((name) =>
        name.startsWith('@') ? readdirSync(join(modules, name)).map((scoped) => `${name}/${scoped}`) : [name],
      );
      expect(installed).toEqual(expect.arrayContaining(['aws-cdk-lib', 'cdk-graceful-node-termination', 'constructs']));
      expect(
        installed.filter((name) =>
          /^(esbuild|@esbuild\/|@aws-sdk\/|@smithy\/|@aws-lambda-powertools\/|@kubernetes\/|tsx$)/.test(name),
        ),
      ).toEqual([]);
    }
    // The CommonJS app really is CommonJS, the ESM app ESM.
    expect(readFileSync(join(apps.commonjs.dir, 'app.js'), 'utf8')).toContain(
      'require("cdk-graceful-node-termination")',
    );
    expect(readFileSync(join(apps.module.dir, 'app.js'), 'utf8')).toContain("from 'cdk-graceful-node-termination'");
  });

  it('packs only what a user needs: no sources, tests, fixtures or source maps', async () => {
    const [packed] = JSON.parse(await run(packageDir, 'npm', ['pack', '--dry-run', '--json', '--loglevel=error'])) as [
      { files: { path: string }[] },
    ];
    const files = packed.files.map((f) => f.path);
    expect(
      files.filter((f) => /\.map$|(?<!\.d)\.ts$|(^|\/)(src|test|tests|fixtures?|prebuilt|node_modules)\//.test(f)),
    ).toEqual([]);
    expect(files).toEqual(
      expect.arrayContaining([
        '.jsii',
        'API.md',
        'LICENSE',
        'README.md',
        'package.json',
        'lib/index.js',
        'lib/index.d.ts',
        'assets/lambda/index.mjs',
        'assets/lambda/rbac-installer.mjs',
      ]),
    );
    for (const file of files.filter((f) => f.endsWith('.js')))
      expect(readFileSync(join(packageDir, file), 'utf8')).not.toContain('sourceMappingURL');
  });

  it("serves an eks.Cluster's self-managed groups with the aspect in a fresh app, as the repository does, without aws-cdk-lib's Spot handler", () => {
    type Resource = { Type: string; Properties: Record<string, unknown> };
    const ours = (t: Record<string, unknown>) =>
      withoutAssetHashes(
        Object.fromEntries(
          Object.entries(t['Resources'] as Record<string, Resource>).filter(([id]) =>
            id.includes('GracefulNodeTermination'),
          ),
        ),
      );
    const app = new App({ outdir: join(work, 'repository-cluster.out'), analyticsReporting: false });
    const repository = Template.fromStack(clusterCapacityStack(app)).toJSON() as Record<string, unknown>;
    expect(ours(clusterTemplate)).toEqual(ours(repository));
    const resources = Object.values(clusterTemplate['Resources'] as Record<string, Resource>);
    const hooked = resources
      .filter((r) => r.Type === 'AWS::AutoScaling::LifecycleHook')
      .map((r) => String((r.Properties['AutoScalingGroupName'] as { Ref: string }).Ref).replace(/ASG[0-9A-F]*$/, ''));
    expect(hooked.sort()).toEqual([
      'ClusterOnDemand',
      'ClusterOnDemand',
      'ClusterSpot',
      'ClusterSpot',
      'Connected',
      'Connected',
    ]);
    expect(resources.filter((r) => r.Type === 'Custom::AWSCDK-EKS-HelmChart')).toEqual([]);
    expect(JSON.stringify(clusterTemplate)).toContain('"SPOT_INTERRUPTIONS":"true"');
    // aws-cdk-lib's default authentication mode is aws-auth: the drainer is mapped there, its RBAC applied with kubectl.
    expect(JSON.stringify(clusterTemplate)).toMatch(
      /ClusterGracefulNodeTerminationRole[^]*ClusterRoleBinding|ClusterRoleBinding[^]*ClusterGracefulNodeTerminationRole/,
    );
  });
});
