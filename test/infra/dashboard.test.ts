// Something to look at: the opt-in dashboard and the saved queries read what the handler
// really writes (metric names and dimensions, log messages and keys, checked against lambda/),
// and every alarm links to its runbook row and notifies again when it returns to OK.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runbookAnchor } from '../../infra/alarms.js';
import { savedQueries } from '../../infra/dashboard.js';
import { DeadlinePolicy } from '../../infra/graceful-node-termination.js';
import { logMessageMetrics } from '../../infra/metrics.js';
import { ofType } from './template-checks.js';
import { resourcesOf, root, stackWith, type Resources } from './fixtures.js';

/** Every TypeScript source of the handler, as one text. */
function lambdaSources(dir = join(root, 'lambda')): string {
  return readdirSync(dir, { withFileTypes: true })
    .map((e) =>
      e.isDirectory()
        ? lambdaSources(join(dir, e.name))
        : e.name.endsWith('.ts')
          ? readFileSync(join(dir, e.name), 'utf8')
          : '',
    )
    .join('\n');
}

/** The dashboard's body with CloudFormation's Fn::Join flattened, tokens as `<ref>`. */
function dashboardBody(resources: Resources): {
  widgets: { type: string; properties: { metrics?: unknown[][]; query?: string } }[];
} {
  const [[, dashboard]] = ofType(resources, 'AWS::CloudWatch::Dashboard') as unknown as [
    [string, { Properties: { DashboardBody: { 'Fn::Join': [string, unknown[]] } } }],
  ];
  const text = dashboard.Properties.DashboardBody['Fn::Join'][1]
    .map((part) => (typeof part === 'string' ? part : '<ref>'))
    .join('');
  return JSON.parse(text) as ReturnType<typeof dashboardBody>;
}

const sources = lambdaSources();
const emitted = (name: string) => new RegExp(`\\b${name}: \\{ unit:`).test(sources) || name in logMessageMetrics;

// The first synthesis in a worker bundles the Lambda (esbuild): give it room under load.
describe('the dashboard and the saved queries', { timeout: 120_000 }, () => {
  it('makes no dashboard unless asked, and the saved queries always', () => {
    const resources = resourcesOf(stackWith({}).stack);
    expect(ofType(resources, 'AWS::CloudWatch::Dashboard')).toEqual([]);
    const queries = ofType(resources, 'AWS::Logs::QueryDefinition').map(([, q]) => String(q.Properties['Name']));
    expect(queries.map((n) => n.split('/')[1])).toEqual(['timeline-of-one-instance', 'slowest-drains', 'what-blocked']);
  });

  it('graphs only metrics the handler writes, with the dimensions it writes them with', () => {
    const { stack, construct } = stackWith({ dashboard: true });
    const body = dashboardBody(resourcesOf(stack));
    const titles = body.widgets.map((w) => (w.properties as { title?: string }).title).filter(Boolean);
    expect(titles).toEqual([
      'Terminations by outcome',
      'Drain duration (notification to release), seconds',
      'Evictions blocked, by cause',
      'Settle waits after the drain, p99 seconds',
      'Retained instances',
      'Reconciler actions',
      'Errors',
    ]);
    const ours = body.widgets
      .flatMap((w) => w.properties.metrics ?? [])
      .filter((m) => m[0] === 'GracefulNodeTermination');
    expect(ours.length).toBeGreaterThan(8);
    // The search expressions name metrics the handler writes too.
    const searches = JSON.stringify(body).match(/MetricName=[^']*/g) ?? [];
    expect(searches.length).toBe(2);
    for (const name of ['Terminations', 'TargetDeregistrationSeconds', 'VolumeDetachSeconds'])
      expect(emitted(name), name).toBe(true);
    for (const metric of ours) {
      const [, name, ...rest] = metric as [string, string, ...unknown[]];
      expect(emitted(name), `${name} is not written by lambda/`).toBe(true);
      const dimensions = Object.fromEntries(
        rest
          .filter((x) => typeof x === 'string')
          .reduce<string[][]>(
            (pairs, x, i) => (i % 2 === 0 ? [...pairs, [x as string]] : (pairs.at(-1)!.push(x as string), pairs)),
            [],
          ),
      );
      expect(dimensions['service']).toBe(construct.deploymentName);
      if (dimensions['Transition'] !== undefined)
        expect(sources).toContain(`Transition: '${dimensions['Transition']}'`);
    }
    for (const outcome of ['drained', 'timed-out', 'retained', 'node-not-found', 'node-gone', 'superseded'])
      expect(sources).toContain(`'${outcome}'`);
  });

  it('counts in its blocked-evictions widget every refused eviction the what-blocked query counts', () => {
    const { stack } = stackWith({ dashboard: true });
    const widget = dashboardBody(resourcesOf(stack)).widgets.find((w) => w.properties.query?.includes('blocked'))!;
    const quoted = (text: string) => [...text.matchAll(/"([^"]+)"/g)].map((m) => m[1]!).sort();
    const whatBlocked = quoted(savedQueries()['what-blocked']!).filter((m) => m.startsWith('eviction'));
    expect(whatBlocked).toHaveLength(3);
    expect(quoted(widget.properties.query!)).toEqual(whatBlocked);
  });

  it('queries log messages and keys the handler writes', () => {
    for (const [name, query] of Object.entries(savedQueries())) {
      // Quoted texts are the handler's messages, but for the example instance ID.
      const messages = [...query.matchAll(/"([^"]{12,})"/g)].map((m) => m[1]!).filter((m) => !m.startsWith('i-'));
      expect(messages.length, name).toBeGreaterThan(name === 'timeline-of-one-instance' ? -1 : 0);
      for (const message of messages) expect(sources, `${name}: ${message}`).toContain(message);
      for (const key of [
        'instanceId',
        'durationMs',
        'podsEvicted',
        'outcome',
        'reason',
        'budget',
        'detail',
        'autoScalingGroupName',
      ].filter((k) => query.includes(k))) {
        expect(sources, `${name}: ${key}`).toMatch(new RegExp(`\\b${key}[,:]`));
      }
    }
  });

  it('describes each alarm with what it means and its first steps, has a row for it in docs/operations.md, and notifies on OK as on ALARM', () => {
    const operations = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');
    const { stack, construct } = stackWith({
      alarmEmail: 'oncall@example.com',
      deadlinePolicy: DeadlinePolicy.RETAIN,
      retentionSetOutside: true,
      repair: {},
    });
    const alarms = ofType(resourcesOf(stack), 'AWS::CloudWatch::Alarm');
    expect(alarms).toHaveLength(7);
    for (const [, alarm] of alarms) {
      const id = String(alarm.Properties['AlarmName']).slice(construct.deploymentName.length + 1);
      const description = String(alarm.Properties['AlarmDescription']);
      expect(description).toMatch(/\. First steps: \S.{40,}$/);
      // Without runbookUrl, no link: the steps are in the description itself.
      expect(description).not.toMatch(/Runbook:|example\.com|https?:/);
      expect(description.length, id).toBeLessThanOrEqual(1024);
      expect(operations, `docs/operations.md has no anchor ${runbookAnchor(id)}`).toContain(
        `<a id="${runbookAnchor(id)}"></a>`,
      );
      expect(alarm.Properties['OKActions']).toEqual(alarm.Properties['AlarmActions']);
      expect(alarm.Properties['OKActions']).toHaveLength(1);
    }
  });

  it('links each alarm to its row of the runbook the runbookUrl prop names, after its first steps', () => {
    const alarms = ofType(
      resourcesOf(stackWith({ runbookUrl: 'https://wiki.internal/gnt' }).stack),
      'AWS::CloudWatch::Alarm',
    );
    for (const [, alarm] of alarms)
      expect(alarm.Properties['AlarmDescription']).toMatch(
        / First steps: .+ Runbook: https:\/\/wiki\.internal\/gnt#alarm-[a-z]+$/,
      );
  });
});
