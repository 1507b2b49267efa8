// `upgrade --release`: which EKS-optimized AMI family a group runs, read off its image's name
// (the names AWS gives the images it publishes), and the public SSM parameter that names the
// image of a release of that family. The parameter paths are AWS's:
//   AL2023:       /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<arch>/<standard|nvidia|neuron>/recommended/image_id
//                 https://docs.aws.amazon.com/eks/latest/userguide/retrieve-ami-id.html
//                 a dated release: .../<flavor>/amazon-eks-node-al2023-<arch>-<flavor>-<k8s>-v<YYYYMMDD>/image_id
//                 (the image's own name; Karpenter resolves its pinned `al2023@v...` aliases so,
//                 https://github.com/aws/karpenter-provider-aws/blob/main/pkg/providers/amifamily/al2023.go)
//   Bottlerocket: /aws/service/bottlerocket/aws-k8s-<k8s>[-nvidia|-fips]/<x86_64|arm64>/latest/image_id
//                 https://docs.aws.amazon.com/eks/latest/userguide/retrieve-ami-id-bottlerocket.html
//                 a release: `latest` replaced by the version (1.26.1)

export type AmiOs = 'al2023' | 'bottlerocket';
export type AmiArch = 'x86_64' | 'arm64';

/** An EKS-optimized AMI: its family (os, arch, flavor), its Kubernetes minor and its release. */
export interface AmiRelease {
  readonly os: AmiOs;
  readonly arch: AmiArch;
  /** AL2023: standard, nvidia or neuron; Bottlerocket: '' (the plain variant), nvidia or fips. */
  readonly flavor: string;
  /** The Kubernetes minor version, "1.33". */
  readonly kubernetes: string;
  /** AL2023: v20251120; Bottlerocket: 1.26.1. */
  readonly release: string;
}

/** What DescribeImages says of the group's image. */
export interface ImageFacts {
  readonly imageId: string;
  readonly name?: string | undefined;
  readonly description?: string | undefined;
  /** x86_64 or arm64 (EC2's Architecture). */
  readonly architecture?: string | undefined;
}

const al2023Name = /^amazon-eks-node-al2023-(x86_64|arm64)-(standard|nvidia|neuron)-(\d+\.\d+)-(v\d{8})$/;
// Bottlerocket names its arm images aarch64 (bottlerocket-aws-k8s-1.33-aarch64-v1.26.1-943d9a41).
const bottlerocketName =
  /^bottlerocket-aws-k8s-(\d+\.\d+)(?:-(nvidia|fips))?-(x86_64|aarch64|arm64)-v(\d+\.\d+\.\d+)(?:-[0-9a-f]{8})?$/;
const al2Name = /^amazon-eks-(?:gpu-|arm64-)?node-(\d+\.\d+)-v\d{8}$/;

const armOf = (arch: string): AmiArch => (arch === 'aarch64' || arch === 'arm64' ? 'arm64' : 'x86_64');

/** The family and release of an image, or why it is not one `--release` can move. */
export function amiReleaseOf(image: ImageFacts): AmiRelease | { readonly refused: string } {
  const name = image.name ?? '';
  const al2023 = al2023Name.exec(name);
  if (al2023)
    return { os: 'al2023', arch: armOf(al2023[1]!), flavor: al2023[2]!, kubernetes: al2023[3]!, release: al2023[4]! };
  const bottlerocket = bottlerocketName.exec(name);
  if (bottlerocket)
    return {
      os: 'bottlerocket',
      arch: armOf(bottlerocket[3]!),
      flavor: bottlerocket[2] ?? '',
      kubernetes: bottlerocket[1]!,
      release: bottlerocket[4]!,
    };
  if (al2Name.test(name)) {
    return {
      refused: `the group runs ${image.imageId} (${name}), an Amazon Linux 2 AMI: --release moves AL2023 and Bottlerocket images only (move the group to AL2023 first)`,
    };
  }
  const said = name ? `${name}${image.description ? `, "${image.description}"` : ''}` : 'no name';
  return {
    refused: `the group's image ${image.imageId} (${said}) is not an EKS-optimized AL2023 or Bottlerocket AMI as AWS names them: use --launch-template-version with a version you made`,
  };
}

/** The SSM parameter whose value is the image of this release (`latest`: the recommended one). */
export function parameterName(
  family: Pick<AmiRelease, 'os' | 'arch' | 'flavor'>,
  kubernetes: string,
  release: string,
): string {
  const { os, arch, flavor } = family;
  if (os === 'al2023') {
    const leaf =
      release === 'latest' ? 'recommended' : `amazon-eks-node-al2023-${arch}-${flavor}-${kubernetes}-${release}`;
    return `/aws/service/eks/optimized-ami/${kubernetes}/amazon-linux-2023/${arch}/${flavor}/${leaf}/image_id`;
  }
  return `/aws/service/bottlerocket/aws-k8s-${kubernetes}${flavor ? `-${flavor}` : ''}/${arch}/${release === 'latest' ? 'latest' : release.replace(/^v/, '')}/image_id`;
}

/** A release as the family writes it, or why not: AL2023 v20251120, Bottlerocket 1.26.1. */
export function releaseProblem(os: AmiOs, release: string): string | undefined {
  if (release === 'latest') return undefined;
  if (os === 'al2023' && !/^v\d{8}$/.test(release))
    return `--release ${JSON.stringify(release)} is not an AL2023 release: use latest or vYYYYMMDD (v20251120)`;
  if (os === 'bottlerocket' && !/^v?\d+\.\d+\.\d+$/.test(release))
    return `--release ${JSON.stringify(release)} is not a Bottlerocket release: use latest or a version (1.26.1)`;
  return undefined;
}

/** "1.33" of "v1.33.5-eks-113cf36", "1.33" or "v1.33"; undefined when it is none. */
export function minorOf(version: string | undefined): string | undefined {
  const m = /^v?(\d+)\.(\d+)/.exec(version ?? '');
  return m ? `${Number(m[1])}.${Number(m[2])}` : undefined;
}

export function describeFamily(r: Pick<AmiRelease, 'os' | 'arch' | 'flavor'>): string {
  return r.os === 'al2023' ? `AL2023 ${r.flavor} ${r.arch}` : `Bottlerocket${r.flavor ? ` ${r.flavor}` : ''} ${r.arch}`;
}
