// A list answer read as it arrives: each item of `items` is cut out of the text and parsed on
// its own, the fields a caller never reads are passed over without being built (each reads
// as null), and only what the caller keeps of an item outlives it. A page of nodes is 1.5-2.5 MB
// of JSON, most of it managedFields and cached images: parsed whole, a page's objects live
// long enough to be promoted, and a pass's peak memory grows with the cluster (docs/benchmarks.md,
// "Node auto repair per pass"). Here the largest string alive is one item.
import type { WireList } from './object-codecs.js';

export interface ListItems<T> {
  /** What the caller keeps of one item, parsed from its JSON (undefined: nothing). */
  readonly itemOf: (raw: unknown) => T | undefined;
  /** Fields of each item not to build, as dotted paths from the item (`metadata.managedFields`). */
  readonly skip?: readonly string[];
}

const quote = 0x22;
const backslash = 0x5c;
const comma = 0x2c;
const colon = 0x3a;
const isOpen = (c: number) => c === 0x7b || c === 0x5b;
const isClose = (c: number) => c === 0x7d || c === 0x5d;
/** Whitespace, as JSON allows it between tokens. */
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** A value passed over: its nesting, and whether it is inside a string. */
interface Skipping {
  nest: number;
  inString: boolean;
}

/**
 * Feeds on text chunks of a JSON object whose `items` is an array of objects (a Kubernetes
 * list), cut anywhere; `end` gives the list with its items as `itemOf` made them.
 */
export class ListStream<T> {
  private readonly skip: ReadonlySet<string>;
  /** One entry a container open: true for an object. */
  private readonly objects: boolean[] = [];
  /** The dotted path of the key being read, by depth (inside an item, from the item's root). */
  private readonly paths: string[] = [];
  private readonly items: T[] = [];
  private outer = '';
  private itemText = '';
  private inString = false;
  private escaped = false;
  private expectKey = false;
  private keyOpen = false;
  private key = '';
  /** The depth of the items array once open; -2 before, -1 when the next value may be it. */
  private itemsAt = -2;
  private skipping: Skipping | undefined;

  constructor(private readonly o: ListItems<T>) {
    this.skip = new Set(o.skip ?? []);
  }

  push(chunk: string): void {
    let itemFrom = this.inItem() && this.skipping === undefined ? 0 : -1;
    let outerFrom = this.inItems() ? -1 : 0;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (this.skipping !== undefined) {
        const after = this.passOver(c);
        if (after === undefined) continue;
        itemFrom = i + after;
        if (after === 1) continue;
      }
      if (this.inString) {
        this.readString(c, chunk[i]!);
        continue;
      }
      if (this.itemsAt === -1 && !isSpace(c)) this.itemsAt = c === 0x5b ? this.objects.length : -2;
      else if (this.inItems() && !this.inItem() && !isSpace(c) && c !== comma && c !== 0x7b && c !== 0x5d)
        throw new Error('the list answer has an item that is not an object');
      if (c === quote) {
        this.inString = true;
        this.keyOpen = this.expectKey;
        this.key = '';
      } else if (isOpen(c)) {
        if (this.objects.length === this.itemsAt + 1) itemFrom = i;
        this.objects.push(c === 0x7b);
        this.expectKey = c === 0x7b;
        if (this.objects.length - 1 === this.itemsAt) {
          this.outer += chunk.slice(outerFrom, i + 1);
          outerFrom = -1;
        }
      } else if (isClose(c)) {
        const depth = this.objects.length - 1;
        this.objects.pop();
        this.expectKey = false;
        if (depth === this.itemsAt + 1) {
          this.finishItem(this.itemText + chunk.slice(itemFrom, i + 1));
          itemFrom = -1;
        } else if (depth === this.itemsAt) {
          this.itemsAt = -2;
          outerFrom = i;
        }
      } else if (c === comma) this.expectKey = this.objects.at(-1) === true;
      else if (c === colon && this.colon()) {
        this.itemText += chunk.slice(itemFrom, i + 1) + 'null';
        itemFrom = -1;
      }
    }
    if (itemFrom >= 0) this.itemText += chunk.slice(itemFrom);
    if (outerFrom >= 0) this.outer += chunk.slice(outerFrom);
  }

  end(): WireList<T> {
    if (this.objects.length > 0 || this.inString || this.skipping !== undefined)
      throw new Error('the list answer ended inside a value');
    const list = JSON.parse(this.outer) as WireList<unknown> | null;
    if (typeof list !== 'object' || list === null || Array.isArray(list))
      throw new Error('the list answer is not a JSON object');
    return { ...list, items: this.items };
  }

  private inItems(): boolean {
    return this.itemsAt >= 0 && this.objects.length > this.itemsAt;
  }

  private inItem(): boolean {
    return this.itemsAt >= 0 && this.objects.length > this.itemsAt + 1;
  }

  private readString(c: number, ch: string): void {
    if (this.escaped) this.escaped = false;
    else if (c === backslash) this.escaped = true;
    else if (c === quote) {
      this.inString = false;
      return;
    }
    if (this.keyOpen) this.key += ch;
  }

  /** A key's colon: true when its value is passed over. */
  private colon(): boolean {
    if (!this.keyOpen) return false;
    this.keyOpen = false;
    this.expectKey = false;
    const depth = this.objects.length - 1;
    if (depth === 0 && this.key === 'items' && this.itemsAt === -2) this.itemsAt = -1;
    if (!this.inItem()) return false;
    const path = this.pathOf(depth);
    if (!this.skip.has(path)) {
      this.paths[depth] = path;
      return false;
    }
    this.skipping = { nest: 0, inString: false };
    return true;
  }

  /** The dotted path of the key just read in the object at `depth`; an array on the way breaks it. */
  private pathOf(depth: number): string {
    if (depth === this.itemsAt + 1) return this.key;
    if (this.objects[depth - 1] !== true) return '[]';
    return `${this.paths[depth - 1] ?? '[]'}.${this.key}`;
  }

  /**
   * One character of a passed-over value. undefined: still inside it; 1: it ended with this
   * character; 0: it ended before this character, which is then read as usual.
   */
  private passOver(c: number): 0 | 1 | undefined {
    const s = this.skipping!;
    if (s.inString) {
      if (this.escaped) this.escaped = false;
      else if (c === backslash) this.escaped = true;
      else if (c === quote) {
        s.inString = false;
        if (s.nest === 0) return this.passed(1);
      }
      return undefined;
    }
    if (c === quote) s.inString = true;
    else if (isOpen(c)) s.nest++;
    else if (isClose(c)) {
      if (s.nest === 0) return this.passed(0);
      if (--s.nest === 0) return this.passed(1);
    } else if (c === comma && s.nest === 0) return this.passed(0);
    return undefined;
  }

  private passed(after: 0 | 1): 0 | 1 {
    this.skipping = undefined;
    return after;
  }

  private finishItem(text: string): void {
    this.itemText = '';
    const kept = this.o.itemOf(JSON.parse(text));
    if (kept !== undefined) this.items.push(kept);
  }
}
