// Renders infra/kubernetes/rbac.yaml from lambda/rbac.ts; with options, prints the RBAC of one
// deployment instead (aws-auth clusters, where the stack cannot install it):
//   npm run rbac:yaml -- --name <DeploymentName output> [--group <group>] [--policy force|leave|retain]
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { deploymentNamePattern } from '../lambda/installer/rbac.js';
import { renderRbacYaml, renderSurgeYaml } from '../lambda/installer/rbac-yaml.js';

const { values } = parseArgs({
  options: { name: { type: 'string' }, group: { type: 'string' }, policy: { type: 'string', default: 'force' } },
});
if (values.name !== undefined) {
  if (!deploymentNamePattern.test(values.name))
    throw new Error(`--name ${values.name} is not a deployment name (a DNS label)`);
  if (!['force', 'leave', 'retain'].includes(values.policy!))
    throw new Error(`--policy ${values.policy} is invalid: expected force, leave or retain`);
  process.stdout.write(renderRbacYaml(values.group ?? values.name, values.policy, values.name));
} else {
  const file = join(dirname(fileURLToPath(import.meta.url)), '..', 'infra', 'kubernetes', 'rbac.yaml');
  writeFileSync(file, renderRbacYaml());
  console.log(`wrote ${file}`);
  const surge = join(dirname(file), 'surge.yaml');
  writeFileSync(surge, renderSurgeYaml());
  console.log(`wrote ${surge}`);
}
