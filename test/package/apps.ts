// Fresh CDK apps that install the construct package the way a user does, each in a temp dir:
// TypeScript compiled to CommonJS, TypeScript compiled to ESM, Python in a venv. All three
// synthesize the same stack (two groups: one by name, one as an IAutoScalingGroup; the
// cluster as an eks.ICluster; the deadline policy by enum) and return its template.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const root = join(import.meta.dirname, '..', '..');
export const packageDir = join(root, 'packages', 'construct');
export const dist = join(root, 'dist');
const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};
/** The oldest aws-cdk-lib the package declares (peerDependency ^x, devDependency x): what users get at the least. */
export const cdkVersion = manifest.devDependencies['aws-cdk-lib']!;
export const constructsVersion = (
  JSON.parse(readFileSync(join(root, 'node_modules', 'constructs', 'package.json'), 'utf8')) as { version: string }
).version;

/** The one file in dist/<dir> whose name ends so; `npm run package` makes it. */
export function built(dir: 'js' | 'python', suffix: string): string {
  const names = readdirSync(join(dist, dir)).filter((name) => name.endsWith(suffix));
  if (names.length !== 1)
    throw new Error(`expected one *${suffix} in dist/${dir}, found ${names.length}: run npm run package first`);
  return join(dist, dir, names[0]!);
}

/** Node 24 (the project's) first on PATH: npm, the apps and the Python app's jsii kernel run on it. */
const env = {
  ...process.env,
  PATH: `${join(root, 'node_modules', 'node', 'bin')}:${process.env['PATH']}`,
  JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION: '1',
};

export async function run(cwd: string, command: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(command, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout ?? ''}\n${stderr ?? ''}`, {
      cause: error,
    });
  }
}

/** two-groups.ts as a user's app.ts: the construct from the package, then synthesized. */
const typescriptApp = readFileSync(join(import.meta.dirname, 'two-groups.ts'), 'utf8')
  .replace("from '../../infra/graceful-node-termination.js'", "from 'cdk-graceful-node-termination'")
  .concat(
    "\nconst app = new App({ outdir: 'cdk.out', analyticsReporting: false });\ntwoGroupStack(app);\napp.synth();\n",
  );

const pythonApp = `from aws_cdk import App, Stack, aws_autoscaling as autoscaling, aws_eks as eks
from cdk_graceful_node_termination import DeadlinePolicy, GracefulNodeTermination

app = App(outdir="cdk.out", analytics_reporting=False)
stack = Stack(app, "TwoGroups")
gnt = GracefulNodeTermination(
    stack,
    "GracefulNodeTermination",
    cluster=eks.Cluster.from_cluster_attributes(stack, "Cluster", cluster_name="prod"),
    auto_scaling_group_names=["nodes-a"],
    deadline_policy=DeadlinePolicy.LEAVE,
    alarm_email="oncall@example.com",
    dashboard=True,
)
gnt.add_auto_scaling_group(autoscaling.AutoScalingGroup.from_auto_scaling_group_name(stack, "NodesB", "nodes-b"))
app.synth()
`;

/** cluster-capacity.ts as a second app of the same fresh directory (the package installed already). */
const clusterApp = readFileSync(join(import.meta.dirname, 'cluster-capacity.ts'), 'utf8')
  .replace("from '../../infra/cluster-aspect.js'", "from 'cdk-graceful-node-termination'")
  .concat(
    "\nconst app = new App({ outdir: 'cdk.out-cluster', analyticsReporting: false });\nclusterCapacityStack(app);\napp.synth();\n",
  );

export interface SynthesizedApp {
  readonly dir: string;
  readonly template: Record<string, unknown>;
}

function template(dir: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(dir, 'cdk.out', 'TwoGroups.template.json'), 'utf8')) as Record<string, unknown>;
}

/** `npm install <tarball>`, tsc (the repository's TypeScript, against the installed .d.ts), node. */
export async function typescriptAppFrom(
  dir: string,
  tarball: string,
  format: 'commonjs' | 'module',
): Promise<SynthesizedApp> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `app-${format}`, private: true, type: format }));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        skipLibCheck: true,
        types: [],
      },
      files: ['app.ts'],
    }),
  );
  writeFileSync(join(dir, 'app.ts'), typescriptApp);
  await run(dir, 'npm', [
    'install',
    '--no-audit',
    '--no-fund',
    '--loglevel=error',
    tarball,
    `aws-cdk-lib@${cdkVersion}`,
    `constructs@${constructsVersion}`,
  ]);
  await run(dir, join(root, 'node_modules', '.bin', 'tsc'), ['-p', '.']);
  await run(dir, 'node', ['app.js']);
  return { dir, template: template(dir) };
}

/** The aspect's app in a TypeScript app directory typescriptAppFrom made: tsc, node, its template. */
export async function clusterAppIn(dir: string): Promise<Record<string, unknown>> {
  writeFileSync(join(dir, 'cluster-app.ts'), clusterApp);
  const tsconfig = JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8')) as { files: string[] };
  writeFileSync(join(dir, 'tsconfig.cluster.json'), JSON.stringify({ ...tsconfig, files: ['cluster-app.ts'] }));
  await run(dir, join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.cluster.json']);
  await run(dir, 'node', ['cluster-app.js']);
  return JSON.parse(readFileSync(join(dir, 'cdk.out-cluster', 'EksCapacity.template.json'), 'utf8')) as Record<
    string,
    unknown
  >;
}

/** A venv, `pip install <wheel>` with aws-cdk-lib and constructs from PyPI, python app.py. */
export async function pythonAppFrom(dir: string, wheel: string): Promise<SynthesizedApp> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'app.py'), pythonApp);
  await run(dir, 'python3', ['-m', 'venv', 'venv']);
  const pip = ['-m', 'pip', 'install', '--no-input', '--disable-pip-version-check', '--quiet'];
  await run(dir, join(dir, 'venv', 'bin', 'python'), [
    ...pip,
    wheel,
    `aws-cdk-lib==${cdkVersion}`,
    `constructs==${constructsVersion}`,
  ]);
  await run(dir, join(dir, 'venv', 'bin', 'python'), ['app.py']);
  return { dir, template: template(dir) };
}

/**
 * The template with every asset hash (64 hex digits: S3 keys, asset paths) replaced by
 * `<hash>`, so templates compare whatever staged the asset.
 */
export function withoutAssetHashes(template: Record<string, unknown>): unknown {
  return JSON.parse(JSON.stringify(template).replace(/[0-9a-f]{64}/g, '<hash>'));
}
