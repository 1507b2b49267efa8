// npm run upgrade -- <group> [--approve] [--launch-template-version V] [--max-unavailable N |
//   --max-unavailable-percentage P] [--strategy default|minimal] [--force] [--auto-rollback]
//   [--deployment NAME] [--release latest|V [--kubernetes-version 1.N] [--available-timeout S]]
//   [-o table|json|yaml] [--region R] [--profile P] [--kubeconfig F] [--context C]
//
// The upgrade command's options and wiring; the flow (preflight, plan, refresh, following) is
// upgrade.ts, tested with Auto Scaling stubbed at the SDK edge.
import { AppsV1Api, CoreV1Api, PolicyV1Api, VersionApi } from '@kubernetes/client-node';
import { minorOf } from './ami-release.js';
import { functionWindows, windowNote } from './maintenance-windows-note.js';
import { resolveAwsAccess, type AwsAccess } from './aws-access.js';
import { kubeconfigGateway, nodesOfInstances } from './cluster-access.js';
import { runAsCommand } from './run-command.js';
import { choice, exitCodes, integer, outputFormat, parseCommand, UsageError } from './command-options.js';
import { atAws, atKubernetes, guardKubernetes, type Where } from './failure.js';
import { loadKubeAccess, type KubeAccess } from './kube-access.js';
import { formatOutput } from './output.js';
import { upgradeUsage } from './usage.js';
import { runUpgrade, type UpgradeDeps } from './upgrade.js';
import { runReleaseUpgrade, type ReleaseDeps } from './upgrade-release.js';
import { askYes, renderPlan } from './upgrade-plan.js';

const upgradeOptions = {
  approve: { type: 'boolean', default: false },
  'launch-template-version': { type: 'string' },
  'max-unavailable': { type: 'string' },
  'max-unavailable-percentage': { type: 'string' },
  strategy: { type: 'string' },
  force: { type: 'boolean', default: false },
  'auto-rollback': { type: 'boolean', default: false },
  deployment: { type: 'string' },
  release: { type: 'string' },
  'kubernetes-version': { type: 'string' },
  'available-timeout': { type: 'string' },
} as const;

/** The command: `graceful-node-termination upgrade`, `npm run upgrade`. */
export async function main(args: readonly string[] = process.argv.slice(2)): Promise<number> {
  const { values, positionals } = parseCommand('upgrade', args, upgradeOptions, ['<auto-scaling-group>']);
  if (values.help) {
    console.log(upgradeUsage);
    return exitCodes.ok;
  }
  const format = outputFormat(values);
  const strategy = choice('--strategy', values.strategy, ['default', 'minimal'], 'default');
  const group = positionals[0];
  if (group === undefined) throw new UsageError('name the Auto Scaling group to upgrade (see upgrade --help)');
  const maxUnavailable = integer('--max-unavailable', values['max-unavailable']);
  const maxUnavailablePercentage = integer('--max-unavailable-percentage', values['max-unavailable-percentage']);
  const availableTimeout = integer('--available-timeout', values['available-timeout']);
  if (values.release !== undefined && values['launch-template-version'] !== undefined)
    throw new UsageError('give --release or --launch-template-version, not both');
  if (values['kubernetes-version'] !== undefined && values.release === undefined)
    throw new UsageError('--kubernetes-version needs --release (the image of that version is what moves it)');
  const kube = loadKubeAccess(values);
  const aws = await resolveAwsAccess(values);
  const where = { group, region: aws.region, profile: aws.profile, server: kube.server, context: kube.context };
  // Ctrl-C or a SIGTERM: before the start nothing is started (and the tag goes); after it,
  // following stops and the refresh keeps running.
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => (interrupted = true));
  // With -o json|yaml, stdout holds only the plan and the result; the progress goes to stderr.
  const progress = (line: string) => (format === 'table' ? console.log(line) : console.error(line));
  const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true && format === 'table';
  const request = {
    group,
    region: aws.region,
    strategy,
    maxUnavailable,
    maxUnavailablePercentage,
    launchTemplateVersion: values['launch-template-version'],
    force: values.force,
    autoRollback: values['auto-rollback'],
    deployment: values.deployment,
    approve: values.approve,
  };
  const core = guardKubernetes(kube.kc.makeApiClient(CoreV1Api), where, 'read pods, nodes and Events');
  const deps: UpgradeDeps = {
    autoScaling: aws.autoScaling,
    core,
    policy: guardKubernetes(kube.kc.makeApiClient(PolicyV1Api), where, 'read PodDisruptionBudgets'),
    nodesOf: (ids) => atKubernetes(where, 'read the nodes', () => nodesOfInstances(ids, kube.kc, aws.instances)),
    unmarkOutdated: (g, id) =>
      atKubernetes(where, "take back the refresh's marks", () =>
        kubeconfigGateway(kube.kc).unmarkOutdated(g, { refreshId: id }),
      ),
    out: progress,
    showPlan: (plan) => (format === 'table' ? renderPlan(plan).forEach((line) => console.log(line)) : undefined),
    confirm: interactive
      ? () => askYes(`start the instance refresh of ${group} in ${aws.region}? only "yes" starts it: `)
      : undefined,
    tty: process.stdout.isTTY === true,
    interrupted: () => interrupted,
    windowNote: async (arn) => {
      const read = await functionWindows(arn, {
        region: aws.region,
        credentials: aws.autoScaling.config.credentials,
        endpoint: process.env['AWS_ENDPOINT_URL_LAMBDA'] ?? process.env['AWS_ENDPOINT_URL'],
      });
      return 'unreadable' in read
        ? `its maintenance windows could not be read (${read.unreadable})`
        : windowNote(read.windows, read.zone);
    },
  };
  const release = values.release;
  const result = await atAws(where, 'the instance refresh', () => {
    if (release === undefined) return runUpgrade(request, deps);
    return runReleaseUpgrade(
      { ...request, release, kubernetesVersion: values['kubernetes-version'] },
      releaseDeps(deps, { kube, aws, where, core }, availableTimeout ?? 300),
    );
  });
  if (format !== 'table') console.log(formatOutput(format, result, () => ''));
  if (result.reason && result.exitCode === 2) throw new UsageError(result.reason);
  return result.exitCode;
}

/** What `--release` needs beyond the upgrade: EC2 and SSM, the workloads, the server's version, the nodes' kubelets. */
function releaseDeps(
  deps: UpgradeDeps,
  o: { kube: KubeAccess; aws: AwsAccess; where: Where; core: CoreV1Api },
  availableTimeoutSeconds: number,
): ReleaseDeps {
  const { kube, aws, where, core } = o;
  return {
    ...deps,
    catalog: aws.images,
    apps: guardKubernetes(kube.kc.makeApiClient(AppsV1Api), where, 'read Deployments, StatefulSets and DaemonSets'),
    controlPlaneVersion: async () => {
      const version = await atKubernetes(where, 'read the server version', () =>
        kube.kc.makeApiClient(VersionApi).getCode(),
      );
      return minorOf(version.gitVersion) ?? `${version.major}.${version.minor.replace(/\D+$/, '')}`;
    },
    nodeVersions: (names) =>
      Promise.all(
        names.map(async (name) => {
          const node = await core.readNode({ name });
          const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
          return { name, ready, kubeletVersion: node.status?.nodeInfo?.kubeletVersion };
        }),
      ),
    availableTimeoutMs: availableTimeoutSeconds * 1000,
  };
}

runAsCommand(import.meta.url, 'upgrade', main);
