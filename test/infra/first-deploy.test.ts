// The first-deploy checks (first-deploy-checks.ts) on the example stack and on every
// synthesized variant (vpc, alarms, Spot, retain, all at once), and cdk-nag clean on each.
// release.test.ts runs the same checks on the release template's variants.
import { App, RemovalPolicy, Stack, aws_ec2 as ec2 } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { DeadlinePolicy, type GracefulNodeTerminationProps } from '../../infra/graceful-node-termination.js';
import { describeFirstDeploy, type FirstDeployVariant } from './first-deploy-checks.js';
import {
  appsWithNag,
  exampleContext,
  exampleStack,
  fixtureOnly,
  stackWith,
  synthWithNag,
  type Resources,
} from './fixtures.js';

const alarmEmail = 'oncall@example.com';

function inVpc(s: Stack): Partial<GracefulNodeTerminationProps> {
  const vpc = new ec2.Vpc(s, 'Vpc', { maxAzs: 2, natGateways: 1 });
  fixtureOnly(vpc, 'VPC7');
  return { vpc };
}

/** The app `cdk synth` builds, with context on top of cdk.json's (buildApp registers cdk-nag). */
function example(context: Record<string, string> = {}): { app: App; stack: Stack } {
  const built = exampleStack({ ...exampleContext, ...context });
  appsWithNag.add(built.app);
  return built;
}

interface Variant extends FirstDeployVariant {
  build(): { app: App; stack: Stack };
}

const variants: readonly Variant[] = [
  { name: 'the example stack (npm run synth)', build: () => example(), vpcFunctions: 0, alarmTopics: 0 },
  { name: 'vpc', build: () => stackWith({ setup: inVpc }), vpcFunctions: 2, alarmTopics: 0 },
  { name: 'alarmEmail', build: () => example({ alarmEmail }), vpcFunctions: 0, alarmTopics: 1 },
  { name: 'spotInterruptions', build: () => example({ spotInterruptions: 'true' }), vpcFunctions: 0, alarmTopics: 0 },
  {
    name: 'removalPolicy retain',
    build: () => stackWith({ removalPolicy: RemovalPolicy.RETAIN }),
    vpcFunctions: 0,
    alarmTopics: 0,
  },
  {
    name: 'all of them, with deadlinePolicy retain',
    build: () =>
      stackWith({
        setup: inVpc,
        alarmEmail,
        spotInterruptions: true,
        removalPolicy: RemovalPolicy.RETAIN,
        deadlinePolicy: DeadlinePolicy.RETAIN,
        retentionSetOutside: true,
      }),
    vpcFunctions: 2,
    alarmTopics: 1,
  },
];

for (const variant of variants) {
  let app: App | undefined;
  describeFirstDeploy(
    variant,
    () => {
      const built = variant.build();
      app = built.app;
      return Template.fromStack(built.stack).toJSON()['Resources'] as Resources;
    },
    () => synthWithNag(app!),
  );
}
