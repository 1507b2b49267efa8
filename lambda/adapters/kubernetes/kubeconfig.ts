// Kubeconfig mode (KUBECONFIG_PATH): tests, the demo and clusters outside EKS.
//
// Our own small reader rather than @kubernetes/client-node's KubeConfig: that loader imports
// the whole generated API, undici and every auth plugin, a 4 MB chunk in the deployed asset
// for a mode EKS deployments never use. An unattended drainer needs only credentials that
// need no human: a token, a token file (read again before each request, so projected and
// rotated tokens keep working) or a client certificate. Anything else is refused with the
// field that asked for it.
// Format: https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { load } from 'js-yaml';
import type { KubeEndpoint, TlsAndHeaders } from './kube-http.js';

type Fields = Readonly<Record<string, unknown>>;

/** Reads the file once; certificate files are read now, a token file before every request. */
export function loadKubeconfig(path: string, context: string | undefined): KubeEndpoint {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`KUBECONFIG_PATH ${path} cannot be read: ${(error as Error).message}`);
  }
  return kubeconfigEndpoint(text, path, context);
}

interface Selected {
  readonly cluster: Fields;
  readonly clusterName: string;
  readonly user: Fields;
  readonly userName: string | undefined;
}

/** The cluster and user the context names (KUBECONFIG_CONTEXT, or the file's current one). */
function select(text: string, context: string | undefined, fail: (what: string) => never): Selected {
  let doc: unknown;
  try {
    doc = load(text);
  } catch (error) {
    return fail(`is not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  if (!isFields(doc)) return fail('is not a kubeconfig (expected a mapping at the top)');

  const contextName = context ?? stringField(doc, 'current-context', 'current-context', fail);
  if (contextName === undefined || contextName === '')
    return fail('has no current-context; set KUBECONFIG_CONTEXT to one of its contexts');
  const ctx = named(doc, 'contexts', 'context', contextName, fail);
  if (ctx === undefined) {
    return fail(
      context !== undefined
        ? `KUBECONFIG_CONTEXT ${context} is not among its contexts`
        : `current-context ${contextName} is not among its contexts`,
    );
  }
  const clusterName = stringField(ctx, 'cluster', `contexts[${contextName}].context.cluster`, fail);
  if (clusterName === undefined) return fail(`contexts[${contextName}].context.cluster is missing`);
  const cluster =
    named(doc, 'clusters', 'cluster', clusterName, fail) ??
    fail(`cluster ${clusterName} (from context ${contextName}) is not among its clusters`);
  const userName = stringField(ctx, 'user', `contexts[${contextName}].context.user`, fail);
  const user =
    userName === undefined
      ? {}
      : (named(doc, 'users', 'user', userName, fail) ??
        fail(`user ${userName} (from context ${contextName}) is not among its users`));
  return { cluster, clusterName, user, userName };
}

const at = (section: string, name: string | undefined, field: string) =>
  `${section}[${name ?? ''}].${section.slice(0, -1)}.${field}`;

export function kubeconfigEndpoint(text: string, path: string, context: string | undefined): KubeEndpoint {
  const fail = (what: string): never => {
    throw new Error(`kubeconfig ${path}: ${what}`);
  };
  const { cluster, clusterName, user, userName } = select(text, context, fail);
  const server =
    stringField(cluster, 'server', at('clusters', clusterName, 'server'), fail) ??
    fail(`${at('clusters', clusterName, 'server')} is missing`);
  if (!/^https?:\/\//.test(server)) fail(`${at('clusters', clusterName, 'server')} ${server} is not an http(s) URL`);
  if (cluster['proxy-url'] !== undefined)
    fail(`${at('clusters', clusterName, 'proxy-url')} is not supported: reach the API server directly`);
  for (const field of ['exec', 'auth-provider', 'username', 'password', 'as', 'as-groups', 'as-uid', 'as-user-extra']) {
    if (user[field] !== undefined)
      fail(
        `${at('users', userName, field)} is not supported: use token, tokenFile or client-certificate(-data) and ` +
          `client-key(-data)`,
      );
  }

  // Relative paths are relative to the kubeconfig file, as kubectl reads them.
  const base = dirname(resolve(path));
  const file = (owner: Fields, field: string, where: string): Buffer | undefined => {
    const value = stringField(owner, field, where, fail);
    if (value === undefined) return undefined;
    const full = isAbsolute(value) ? value : resolve(base, value);
    try {
      return readFileSync(full);
    } catch (error) {
      return fail(`${where} ${full} cannot be read: ${(error as Error).message}`);
    }
  };
  const pem = (owner: Fields, field: string, section: string, name: string | undefined): Buffer | undefined => {
    const data = stringField(owner, `${field}-data`, at(section, name, `${field}-data`), fail);
    return data !== undefined ? Buffer.from(data, 'base64') : file(owner, field, at(section, name, field));
  };

  const tls: TlsAndHeaders = {
    ca: pem(cluster, 'certificate-authority', 'clusters', clusterName),
    cert: pem(user, 'client-certificate', 'users', userName),
    key: pem(user, 'client-key', 'users', userName),
    rejectUnauthorized: cluster['insecure-skip-tls-verify'] !== true,
    servername: stringField(cluster, 'tls-server-name', at('clusters', clusterName, 'tls-server-name'), fail),
  };
  if ((tls.cert === undefined) !== (tls.key === undefined))
    fail(`${at('users', userName, 'client-certificate')} and client-key come together`);
  const token = stringField(user, 'token', at('users', userName, 'token'), fail);
  const tokenFile = stringField(user, 'tokenFile', at('users', userName, 'tokenFile'), fail);
  const tokenPath = tokenFile === undefined ? undefined : isAbsolute(tokenFile) ? tokenFile : resolve(base, tokenFile);

  const withoutUndefined = Object.fromEntries(Object.entries(tls).filter(([, v]) => v !== undefined)) as TlsAndHeaders;
  return {
    server: server.replace(/\/+$/, ''),
    async requestOptions() {
      const bearer = token ?? (tokenPath !== undefined ? readFileSync(tokenPath, 'utf8').trim() : undefined);
      const headers: Record<string, string> = bearer !== undefined ? { Authorization: `Bearer ${bearer}` } : {};
      return { ...withoutUndefined, headers };
    },
  };
}

function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringField(owner: Fields, field: string, where: string, fail: (what: string) => never): string | undefined {
  const value = owner[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return fail(`${where} must be a string`);
  return value;
}

/** The inner mapping of the entry called `name` in a list of `{name, <inner>: {...}}`. */
function named(
  doc: Fields,
  list: string,
  inner: string,
  name: string,
  fail: (what: string) => never,
): Fields | undefined {
  const entries = doc[list] ?? [];
  if (!Array.isArray(entries)) return fail(`${list} must be a list`);
  const entry: unknown = entries.find((e: unknown) => isFields(e) && e['name'] === name);
  if (entry === undefined) return undefined;
  const value = (entry as Fields)[inner] ?? {};
  return isFields(value) ? value : fail(`${list}[${name}].${inner} must be a mapping`);
}
