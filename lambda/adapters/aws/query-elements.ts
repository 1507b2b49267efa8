// A lean reading of a Query API answer (Auto Scaling, ELB, EC2 answer XML): every element's
// opening and every leaf's text, in document order, without building the document. The SDK's
// deserializer builds the whole answer twice over (a generic tree, then the typed output): for
// DescribeAutoScalingGroups of a 2,000-instance group (850 KB of XML) that is ~40 MiB of peak
// memory in a 256 MB function, where the few fields a pass reads cost ~2 MiB this way
// (docs/benchmarks.md, "Node auto repair per pass").
//   https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_DescribeAutoScalingGroups.html

/** Element names from the root to the current element. */
export type ElementPath = readonly string[];

export interface ElementVisitor {
  /** An element opened (its path ends with its name). */
  open?(path: ElementPath): void;
  /** A leaf element (no child element) closed, with its text, entities decoded. */
  leaf?(path: ElementPath, text: string): void;
}

// An opening, closing or empty tag; a declaration (<?xml ... ?>) or a comment does not match.
const tag = /<(\/?)([A-Za-z_][\w.:-]*)(?:\s[^>]*?)?(\/?)>/g;
const entity = /&(?:(amp|lt|gt|quot|apos)|#(\d+)|#x([0-9a-fA-F]+));/g;
const named: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export function decodeText(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(entity, (_, name: string | undefined, dec: string | undefined, hex: string | undefined) =>
    name !== undefined ? named[name]! : String.fromCodePoint(dec !== undefined ? Number(dec) : parseInt(hex!, 16)),
  );
}

/** Walks `xml`, telling `visit` of each element; a closing tag that does not match its opening throws. */
export function scanElements(xml: string, visit: ElementVisitor): void {
  const path: string[] = [];
  // Where the text of the innermost open element starts; -1 once it has a child element.
  let textFrom = -1;
  tag.lastIndex = 0;
  for (let m = tag.exec(xml); m !== null; m = tag.exec(xml)) {
    const [whole, closing, name, empty] = m as unknown as [string, string, string, string];
    if (closing === '') {
      path.push(name);
      visit.open?.(path);
      if (empty === '') {
        textFrom = m.index + whole.length;
        continue;
      }
      visit.leaf?.(path, '');
      path.pop();
      textFrom = -1;
      continue;
    }
    if (path.at(-1) !== name) throw new Error(`malformed answer: </${name}> closes <${path.at(-1) ?? '(nothing)'}>`);
    if (textFrom >= 0) visit.leaf?.(path, decodeText(xml.slice(textFrom, m.index)));
    path.pop();
    textFrom = -1;
  }
  if (path.length > 0) throw new Error(`malformed answer: <${path.at(-1)}> is never closed`);
}

/** True when `path` ends with `names` (the last ones matched, from its end). */
export function endsWith(path: ElementPath, ...names: readonly string[]): boolean {
  if (path.length < names.length) return false;
  for (let i = 1; i <= names.length; i++) if (path[path.length - i] !== names[names.length - i]) return false;
  return true;
}
