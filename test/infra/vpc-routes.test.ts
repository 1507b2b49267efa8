// docs/deploy.md's routes for functions in a VPC are the services the policies grant (derived by
// scripts/vpc-routes.ts): a grant without its route (elasticloadbalancing, once) fails here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grantedActions, noRouteNeeded, withVpcRoutes } from '../../scripts/vpc-routes.js';
import { root } from './fixtures.js';

describe('the VPC routes in docs/deploy.md', { timeout: 120_000 }, () => {
  it('are the services the functions are granted, as npm run docs generates them', () => {
    const page = readFileSync(join(root, 'docs', 'deploy.md'), 'utf8');
    expect(page).toBe(withVpcRoutes(page));
    const services = [...grantedActions().keys()];
    expect(services).toEqual(expect.arrayContaining(['autoscaling', 'ec2', 'eks', 'elasticloadbalancing', 'sns']));
    for (const service of services)
      expect(page).toContain(service in noRouteNeeded ? `- no route for \`${service}\`` : `- \`${service}\`: `);
  });
});
