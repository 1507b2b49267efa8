// The version-skew check before a node group moves to a Kubernetes minor version, as the
// Kubernetes version skew policy says (https://kubernetes.io/releases/version-skew-policy/):
// the kubelet must not be newer than kube-apiserver and may be up to three minor versions
// older (two for kubelets before 1.25); and, as EKS upgrades managed groups and seed 002
// says, one minor version at a time and never down.

const minorNumber = (v: string) => Number(v.split('.')[1]);

/** Undefined when the move is allowed; otherwise the one-line reason it is refused. */
export function skewProblem(o: {
  readonly target: string;
  readonly controlPlane: string;
  readonly nodes: readonly string[];
}): string | undefined {
  const policy = '(https://kubernetes.io/releases/version-skew-policy/)';
  const target = minorNumber(o.target);
  const plane = minorNumber(o.controlPlane);
  if (o.target.split('.')[0] !== '1' || o.controlPlane.split('.')[0] !== '1')
    return `cannot compare Kubernetes ${o.target} with the control plane's ${o.controlPlane}`;
  if (target > plane)
    return `refusing: kubelet ${o.target} would be newer than the control plane (${o.controlPlane}); upgrade the control plane first ${policy}`;
  const oldest = target < 25 ? 2 : 3;
  if (plane - target > oldest)
    return `refusing: kubelet ${o.target} would be ${plane - target} minor versions older than the control plane (${o.controlPlane}); at most ${oldest} are supported ${policy}`;
  if (o.nodes.length === 0) return undefined;
  const minors = o.nodes.map(minorNumber);
  const lowest = Math.min(...minors);
  const highest = Math.max(...minors);
  if (target < highest) return `refusing: the group's nodes run 1.${highest}; ${o.target} would downgrade them`;
  if (target > lowest + 1)
    return `refusing: one minor version at a time: the group's nodes run 1.${lowest}, move them to 1.${lowest + 1} first`;
  return undefined;
}
