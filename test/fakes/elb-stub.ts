// A local HTTP stand-in for Elastic Load Balancing's two Query APIs (ELBv2 2015-12-01 and the
// Classic 2012-06-01), answering from an in-memory model as the real ones answer: paged
// describes (PageSize, Marker), DescribeTags by 20, DescribeTargetHealth of every target,
// DescribeInstanceHealth with InvalidInstance for an unregistered instance. No emulator
// implements target draining, so tests move targets through their states themselves.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeTargetHealth.html
// https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DescribeInstanceHealth.html
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubTargetGroup {
  readonly arn: string;
  readonly name: string;
  /** The Network Load Balancer it is attached to (DescribeTargetGroups LoadBalancerArn). */
  readonly loadBalancerArn?: string | undefined;
  readonly type: 'instance' | 'ip' | 'lambda' | 'alb';
  readonly tags: Record<string, string>;
  /** instance id -> state (healthy, draining, ...); absent: not registered. */
  readonly targets: Map<string, string>;
}

export interface StubClassic {
  readonly name: string;
  readonly tags: Record<string, string>;
  /** instance id -> state as DescribeInstanceHealth says it. */
  readonly instances: Map<string, { state: string; description: string }>;
}

export interface ElbStub {
  readonly url: string;
  readonly targetGroups: StubTargetGroup[];
  readonly classic: StubClassic[];
  /**
   * Every call, in order: which API, the action and its form; `throttled` when the bucket refused it;
   * `agent`, the caller's User-Agent when it sent one (a bench tells the Load Balancer Controller's calls by it).
   */
  readonly calls: {
    api: 'elbv2' | 'elb';
    action: string;
    form: Record<string, string>;
    atMs: number;
    throttled?: boolean;
    agent?: string;
  }[];
  /**
   * ELB's Describe token bucket, one for the account (AWS publishes none; issue 27 measured about
   * 40 calls refilled at 10 a second): a call that finds it empty is answered 400 Throttling.
   * Undefined: no throttling.
   */
  bucket: { readonly capacity: number; readonly refillPerSecond: number } | undefined;
  /** Answer every call with AccessDenied (403). */
  denied: boolean;
  /** Target groups whose DescribeTargetHealth answers 500 (InternalFailure). */
  readonly failing: Set<string>;
  /** Each answer is held this long (ms): calls in flight can be counted. */
  delayMs: number;
  /** The most calls that were in flight at once, and the bytes answered. */
  maxInFlight: number;
  bytes: number;
  /** Network Load Balancers by name -> ARN (ELBv2 DescribeLoadBalancers). */
  readonly networkBalancers: Map<string, string>;
  /** Told of each call as it is answered (the demo's timeline). */
  onCall?:
    | ((call: { api: 'elbv2' | 'elb'; action: string; form: Record<string, string> }, answer: string) => void)
    | undefined;
  addTargetGroup(name: string, o?: Partial<Omit<StubTargetGroup, 'name' | 'arn'>>): StubTargetGroup;
  addClassic(name: string, o?: Partial<Omit<StubClassic, 'name'>>): StubClassic;
  close(): Promise<void>;
}

const v2Ns = 'http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/';
const classicNs = 'http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/';
const meta = '<ResponseMetadata><RequestId>00000000-0000-0000-0000-000000000000</RequestId></ResponseMetadata>';
const ok = (action: string, ns: string, body: string) =>
  `<${action}Response xmlns="${ns}"><${action}Result>${body}</${action}Result>${meta}</${action}Response>`;
const fail = (code: string, message: string) =>
  `<ErrorResponse xmlns="${v2Ns}"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>x</RequestId></ErrorResponse>`;
const members = (items: string[]) => items.map((i) => `<member>${i}</member>`).join('');
const tagsXml = (tags: Record<string, string>) =>
  members(Object.entries(tags).map(([k, v]) => `<Key>${k}</Key><Value>${v}</Value>`));
const listed = (form: Record<string, string>, prefix: string) =>
  Object.keys(form)
    .filter((k) => k.startsWith(`${prefix}.member.`))
    .sort((a, b) => Number(a.split('.').at(-1)) - Number(b.split('.').at(-1)))
    .map((k) => form[k]!);

function page<T>(items: T[], form: Record<string, string>): { items: T[]; marker: string } {
  const size = Number(form['PageSize'] ?? 400);
  const start = Number(form['Marker'] ?? 0);
  const next = start + size;
  return { items: items.slice(start, next), marker: next < items.length ? `<NextMarker>${next}</NextMarker>` : '' };
}

function answerV2(stub: ElbStub, action: string, form: Record<string, string>): [number, string] {
  if (action === 'DescribeLoadBalancers') {
    const names = listed(form, 'Names');
    const missing = names.find((n) => !stub.networkBalancers.has(n));
    if (missing !== undefined) return [400, fail('LoadBalancerNotFound', `Load balancers '[${missing}]' not found`)];
    const found = names.map(
      (n) =>
        `<LoadBalancerArn>${stub.networkBalancers.get(n)}</LoadBalancerArn><LoadBalancerName>${n}</LoadBalancerName><Type>network</Type>`,
    );
    return [200, ok(action, v2Ns, `<LoadBalancers>${members(found)}</LoadBalancers>`)];
  }
  if (action === 'DescribeTargetGroups') {
    const scope =
      form['LoadBalancerArn'] !== undefined
        ? stub.targetGroups.filter((g) => g.loadBalancerArn === form['LoadBalancerArn'])
        : stub.targetGroups;
    const { items, marker } = page(scope, form);
    const groups = items.map(
      (g) =>
        `<TargetGroupArn>${g.arn}</TargetGroupArn><TargetGroupName>${g.name}</TargetGroupName><Protocol>TCP</Protocol><Port>30080</Port><TargetType>${g.type}</TargetType>`,
    );
    return [200, ok(action, v2Ns, `<TargetGroups>${members(groups)}</TargetGroups>${marker}`)];
  }
  if (action === 'DescribeTags') {
    const arns = listed(form, 'ResourceArns');
    if (arns.length > 20) return [400, fail('TooManyTags', 'at most 20 resources')];
    // As ELBv2 does: one ARN that is not there fails the whole call.
    if (arns.some((arn) => !stub.targetGroups.some((g) => g.arn === arn)))
      return [400, fail('TargetGroupNotFound', 'One or more target groups not found')];
    const found = arns.flatMap((arn) => stub.targetGroups.filter((g) => g.arn === arn));
    return [
      200,
      ok(
        action,
        v2Ns,
        `<TagDescriptions>${members(found.map((g) => `<ResourceArn>${g.arn}</ResourceArn><Tags>${tagsXml(g.tags)}</Tags>`))}</TagDescriptions>`,
      ),
    ];
  }
  if (action === 'DescribeTargetHealth') {
    const group = stub.targetGroups.find((g) => g.arn === form['TargetGroupArn']);
    if (group === undefined) return [400, fail('TargetGroupNotFound', 'One or more target groups not found')];
    if (stub.failing.has(group.arn)) return [500, fail('InternalFailure', 'We encountered an internal error')];
    // One target asked for (Targets.member.1): that one only, `unused` when not registered.
    const one = form['Targets.member.1.Id'];
    const targets = one !== undefined ? [[one, group.targets.get(one) ?? 'unused'] as const] : [...group.targets];
    const health = targets.map(
      ([id, state]) =>
        `<Target><Id>${id}</Id><Port>30080</Port></Target><TargetHealth><State>${state}</State></TargetHealth>`,
    );
    return [200, ok(action, v2Ns, `<TargetHealthDescriptions>${members(health)}</TargetHealthDescriptions>`)];
  }
  return [400, fail('InvalidAction', `${action} is not served by this stand-in`)];
}

function answerClassic(stub: ElbStub, action: string, form: Record<string, string>): [number, string] {
  if (action === 'DescribeLoadBalancers') {
    const { items, marker } = page(stub.classic, form);
    const balancers = items.map(
      (b) =>
        `<LoadBalancerName>${b.name}</LoadBalancerName><Instances>${members([...b.instances.keys()].map((id) => `<InstanceId>${id}</InstanceId>`))}</Instances>`,
    );
    return [
      200,
      ok(action, classicNs, `<LoadBalancerDescriptions>${members(balancers)}</LoadBalancerDescriptions>${marker}`),
    ];
  }
  if (action === 'DescribeTags') {
    const names = listed(form, 'LoadBalancerNames');
    if (names.length > 20) return [400, fail('TooManyTags', 'at most 20 load balancers')];
    const found = names.flatMap((name) => stub.classic.filter((b) => b.name === name));
    return [
      200,
      ok(
        action,
        classicNs,
        `<TagDescriptions>${members(found.map((b) => `<LoadBalancerName>${b.name}</LoadBalancerName><Tags>${tagsXml(b.tags)}</Tags>`))}</TagDescriptions>`,
      ),
    ];
  }
  if (action === 'DescribeInstanceHealth') {
    const balancer = stub.classic.find((b) => b.name === form['LoadBalancerName']);
    if (balancer === undefined) return [400, fail('LoadBalancerNotFound', 'There is no ACTIVE Load Balancer')];
    const stateXml = (id: string, state: { state: string; description: string }) =>
      `<InstanceId>${id}</InstanceId><State>${state.state}</State><ReasonCode>N/A</ReasonCode><Description>${state.description}</Description>`;
    const id = form['Instances.member.1.InstanceId'];
    // No instance named: every registered instance, as the API answers then.
    if (id === undefined)
      return [
        200,
        ok(
          action,
          classicNs,
          `<InstanceStates>${members([...balancer.instances].map(([i, s]) => stateXml(i, s)))}</InstanceStates>`,
        ),
      ];
    const state = balancer.instances.get(id);
    if (state === undefined) return [400, fail('InvalidInstance', `Could not find EC2 instance ${id}.`)];
    return [200, ok(action, classicNs, `<InstanceStates>${members([stateXml(id, state)])}</InstanceStates>`)];
  }
  return [400, fail('InvalidAction', `${action} is not served by this stand-in`)];
}

export async function startElbStub(): Promise<ElbStub> {
  let server: Server;
  const stub: ElbStub = {
    url: '',
    targetGroups: [],
    classic: [],
    calls: [],
    denied: false,
    bucket: undefined,
    failing: new Set(),
    delayMs: 0,
    maxInFlight: 0,
    bytes: 0,
    networkBalancers: new Map(),
    addTargetGroup(name, o = {}) {
      const group: StubTargetGroup = {
        arn: `arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/${name}/${(stub.targetGroups.length + 1).toString(16).padStart(16, '0')}`,
        name,
        type: o.type ?? 'instance',
        loadBalancerArn: o.loadBalancerArn,
        tags: o.tags ?? {},
        targets: o.targets ?? new Map(),
      };
      stub.targetGroups.push(group);
      return group;
    },
    addClassic(name, o = {}) {
      const balancer: StubClassic = { name, tags: o.tags ?? {}, instances: o.instances ?? new Map() };
      stub.classic.push(balancer);
      return balancer;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  let inFlight = 0;
  let tokens: { left: number; atMs: number; of: ElbStub['bucket'] } = { left: 0, atMs: 0, of: undefined };
  /** Takes a token from the bucket; false when it is empty (a new bucket starts full). */
  const take = (): boolean => {
    const b = stub.bucket;
    if (b === undefined) return true;
    const now = Date.now();
    if (tokens.of !== b) tokens = { left: b.capacity, atMs: now, of: b };
    tokens.left = Math.min(b.capacity, tokens.left + ((now - tokens.atMs) / 1000) * b.refillPerSecond);
    tokens.atMs = now;
    if (tokens.left < 1) return false;
    tokens.left -= 1;
    return true;
  };
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    inFlight++;
    stub.maxInFlight = Math.max(stub.maxInFlight, inFlight);
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      if (stub.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, stub.delayMs));
      inFlight--;
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      const api = form['Version'] === '2012-06-01' ? 'elb' : 'elbv2';
      const action = form['Action'] ?? '';
      const throttled = !take();
      const agent = req.headers['user-agent'];
      stub.calls.push({
        api,
        action,
        form,
        atMs: Date.now(),
        ...(throttled ? { throttled } : {}),
        ...(agent !== undefined ? { agent } : {}),
      });
      const [status, body] = stub.denied
        ? [403, fail('AccessDenied', `User is not authorized to perform: elasticloadbalancing:${action}`)]
        : throttled
          ? [400, fail('Throttling', 'Rate exceeded')]
          : api === 'elb'
            ? answerClassic(stub, action, form)
            : answerV2(stub, action, form);
      stub.onCall?.({ api, action, form }, body);
      const text = `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
      stub.bytes += Buffer.byteLength(text);
      res.writeHead(status, { 'content-type': 'text/xml' }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (stub as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return stub;
}
