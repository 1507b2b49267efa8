// Renders infra/kubernetes/rbac.yaml and surge.yaml from lambda/installer/rbac.ts (rbac-yaml.ts); with options,
// prints the objects of one deployment instead (aws-auth clusters, where the stack cannot
// install them), exactly as `graceful-node-termination rbac` prints them (scripts/rbac-command.ts):
//   npm run rbac:yaml -- --name <DeploymentName output> [--group <group>] [--policy force|leave|retain] [--surge]
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { renderRbacYaml, renderSurgeYaml } from '../lambda/installer/rbac-yaml.js';
import { renderRbac, settingsFromOptions } from './rbac-command.js';

const { values } = parseArgs({
  options: {
    name: { type: 'string' },
    group: { type: 'string' },
    policy: { type: 'string', default: 'force' },
    surge: { type: 'boolean', default: false },
  },
});
if (values.name !== undefined) {
  const settings = settingsFromOptions({
    deployment: values.name,
    group: values.group,
    'deadline-policy': values.policy,
    surge: values.surge,
  });
  process.stdout.write(renderRbac(settings));
} else {
  const file = join(dirname(fileURLToPath(import.meta.url)), '..', 'infra', 'kubernetes', 'rbac.yaml');
  writeFileSync(file, renderRbacYaml());
  console.log(`wrote ${file}`);
  const surge = join(dirname(file), 'surge.yaml');
  writeFileSync(surge, renderSurgeYaml());
  console.log(`wrote ${surge}`);
}
