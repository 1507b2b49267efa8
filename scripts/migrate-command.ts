// npm run migrate -- --from OLD --to NEW [--approve] [--min-ready N] [--max-unavailable N]
//   [--cordon-all] [--lease S] [--ready-timeout S] [--batch-timeout S] [--deployment NAME]
//   [-o table|json|yaml] [--region R] [--profile P] [--kubeconfig F] [--context C]
//
// The migrate command's options and wiring; the flow is migrate.ts.
import { CoreV1Api } from '@kubernetes/client-node';
import { resolveAwsAccess } from './aws-access.js';
import { kubeconfigGateway, nodeNamesOfInstances } from './cluster-access.js';
import { exitCodes, integer, outputFormat, parseCommand, UsageError } from './command-options.js';
import { atAws, atKubernetes, guardKubernetes } from './failure.js';
import { loadKubeAccess } from './kube-access.js';
import { runMigrate } from './migrate.js';
import { renderMigratePlan } from './migrate-plan.js';
import { formatOutput } from './output.js';
import { runAsCommand } from './run-command.js';
import { askYes } from './upgrade-plan.js';
import { migrateUsage } from './usage.js';

const migrateOptions = {
  from: { type: 'string' },
  to: { type: 'string' },
  approve: { type: 'boolean', default: false },
  'min-ready': { type: 'string' },
  'max-unavailable': { type: 'string' },
  'cordon-all': { type: 'boolean', default: false },
  lease: { type: 'string' },
  'ready-timeout': { type: 'string' },
  'batch-timeout': { type: 'string' },
  deployment: { type: 'string' },
} as const;

const atLeast = (option: string, raw: string | undefined, min: number, fallback: number | undefined) => {
  const n = integer(option, raw);
  if (n !== undefined && n < min) throw new UsageError(`${option} ${n} is not valid: expected an integer >= ${min}`);
  return n ?? fallback;
};

/** The command: `graceful-node-termination migrate`, `npm run migrate`. */
export async function main(args: readonly string[] = process.argv.slice(2)): Promise<number> {
  const { values } = parseCommand('migrate', args, migrateOptions, []);
  if (values.help) {
    console.log(migrateUsage);
    return exitCodes.ok;
  }
  const format = outputFormat(values);
  if (values.from === undefined || values.to === undefined)
    throw new UsageError('name both groups: --from OLD --to NEW (see migrate --help)');
  const request = {
    from: values.from,
    to: values.to,
    deployment: values.deployment,
    minReady: atLeast('--min-ready', values['min-ready'], 0, undefined),
    maxUnavailable: atLeast('--max-unavailable', values['max-unavailable'], 1, 1)!,
    cordonAll: values['cordon-all'],
    leaseSeconds: atLeast('--lease', values.lease, 5, 300)!,
    readyTimeoutSeconds: atLeast('--ready-timeout', values['ready-timeout'], 0, 900)!,
    batchTimeoutSeconds: atLeast('--batch-timeout', values['batch-timeout'], 0, 3600)!,
    approve: values.approve,
  };
  const kube = loadKubeAccess(values);
  const aws = await resolveAwsAccess(values);
  const where = {
    group: `${values.from} -> ${values.to}`,
    region: aws.region,
    profile: aws.profile,
    server: kube.server,
    context: kube.context,
  };
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => (interrupted = true));
  const progress = (line: string) => (format === 'table' ? console.log(line) : console.error(line));
  const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true && format === 'table';
  const gateway = kubeconfigGateway(kube.kc);
  const result = await atAws(where, 'the migration', () =>
    runMigrate(
      { ...request, region: aws.region },
      {
        autoScaling: aws.autoScaling,
        cluster: guardKubernetes(gateway, where, 'read and mark nodes'),
        core: guardKubernetes(kube.kc.makeApiClient(CoreV1Api), where, 'read pods and Events'),
        nodesOf: (ids) =>
          atKubernetes(where, 'read the nodes', () => nodeNamesOfInstances(ids, kube.kc, aws.instances)),
        out: progress,
        showPlan: (plan) =>
          format === 'table' ? renderMigratePlan(plan).forEach((line) => console.log(line)) : undefined,
        confirm: interactive
          ? () => askYes(`migrate ${values.from} to ${values.to} in ${aws.region}? only "yes" starts it: `)
          : undefined,
        interrupted: () => interrupted,
      },
    ),
  );
  await gateway.flush?.(5_000);
  if (format !== 'table') console.log(formatOutput(format, result, () => ''));
  if (result.reason && result.exitCode === 2) throw new UsageError(result.reason);
  return result.exitCode;
}

runAsCommand(import.meta.url, 'migrate', main);
