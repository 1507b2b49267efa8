// Renders infra/kubernetes/rbac.yaml from lambda/rbac.ts.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderRbacYaml } from '../lambda/rbac.js';

const file = join(dirname(fileURLToPath(import.meta.url)), '..', 'infra', 'kubernetes', 'rbac.yaml');
writeFileSync(file, renderRbacYaml());
console.log(`wrote ${file}`);
