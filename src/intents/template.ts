/**
 * Sentence templates, hassil-style: `(a | b)` alternatives, `[x]` optional words, `{slot}`
 * slots. One template compiles two ways: to a JSGF rule body for pocketsphinx's grammar, and
 * to a regular expression for the local-path matcher, so what IRIS can hear and what it
 * understands come from the same line. No npm package compiles hassil-style templates for
 * JavaScript (none found on the registry); this is the small compiler that fills the gap.
 */

export type Node =
  | { type: 'word'; text: string }
  | { type: 'slot'; name: string }
  | { type: 'seq'; items: Node[] }
  | { type: 'alt'; options: Node[] }
  | { type: 'opt'; item: Node };

export class TemplateError extends Error {
  override name = 'TemplateError' as const;
}

/** Parse one template. Throws TemplateError with the template and position on bad syntax. */
export function parseTemplate(template: string): Node {
  const tokens = template.match(/[()[\]{}|]|[^\s()[\]{}|]+/g) ?? [];
  let at = 0;
  const fail = (what: string): never => {
    throw new TemplateError(`${what} at token ${at} of "${template}"`);
  };
  const alternatives = (close: string | undefined): Node => {
    const options: Node[] = [];
    let items: Node[] = [];
    for (;;) {
      const token = tokens[at];
      if (token === undefined) {
        if (close !== undefined) fail(`missing "${close}"`);
        break;
      }
      if (token === close) {
        at += 1;
        break;
      }
      at += 1;
      if (token === '|') {
        options.push(seq(items));
        items = [];
      } else if (token === '(') items.push(alternatives(')'));
      else if (token === '[') items.push({ type: 'opt', item: alternatives(']') });
      else if (token === '{') {
        const name = tokens[at];
        if (name === undefined || !/^\w+$/.test(name) || tokens[at + 1] !== '}') fail('bad slot');
        items.push({ type: 'slot', name: name as string });
        at += 2;
      } else if (/^[)\]}]$/.test(token)) fail(`unexpected "${token}"`);
      else items.push({ type: 'word', text: token.toLowerCase() });
    }
    options.push(seq(items));
    return options.length === 1 ? (options[0] as Node) : { type: 'alt', options };
  };
  const node = alternatives(undefined);
  if (at < tokens.length) fail('trailing tokens');
  return node;
}

const seq = (items: Node[]): Node => (items.length === 1 ? (items[0] as Node) : { type: 'seq', items });

/** Call `fn` on `node` and every node inside it. */
function visit(node: Node, fn: (n: Node) => void): void {
  fn(node);
  if (node.type === 'seq') node.items.forEach((item) => visit(item, fn));
  else if (node.type === 'alt') node.options.forEach((item) => visit(item, fn));
  else if (node.type === 'opt') visit(node.item, fn);
}

/** Every slot name in `node`. */
export function slotsOf(node: Node, into = new Set<string>()): Set<string> {
  visit(node, (n) => n.type === 'slot' && into.add(n.name));
  return into;
}

/** Every word in `node` (slots excluded). */
export function wordsOf(node: Node, into = new Set<string>()): Set<string> {
  visit(node, (n) => n.type === 'word' && into.add(n.text));
  return into;
}

/**
 * The JSGF body of `node`; a slot `{x}` becomes the rule reference `<x>`. A word `knows`
 * rejects makes its branch impossible: the branch is dropped (`undefined` when nothing is left).
 */
export function toJsgf(node: Node, knows: (word: string) => boolean = () => true): string | undefined {
  switch (node.type) {
    case 'word':
      return knows(node.text) ? node.text : undefined;
    case 'slot':
      return `<${node.name}>`;
    case 'opt': {
      const inner = toJsgf(node.item, knows);
      return inner === undefined ? '' : `[ ${inner} ]`;
    }
    case 'seq': {
      const parts = node.items.map((item) => toJsgf(item, knows));
      if (parts.some((part) => part === undefined)) return undefined;
      return parts.filter(Boolean).join(' ');
    }
    case 'alt': {
      const options = node.options.map((item) => toJsgf(item, knows)).filter((o): o is string => o !== undefined && o !== '');
      return options.length === 0 ? undefined : `( ${options.join(' | ')} )`;
    }
  }
}

/** What the matcher's regular expression needs from outside: slot patterns and skip words. */
export interface RegexParts {
  /** A regular expression source for each slot's value (no capture groups, no trailing space). */
  slotPattern: (name: string) => string;
  /** A regular expression source for one skip phrase (its own trailing space included), or
   * undefined for none. Skip phrases may come before, between and after template items. */
  skip?: string;
}

export interface CompiledSentence {
  regex: RegExp;
  /** The slot name of each capture group, in order. */
  groups: string[];
}

/**
 * A regular expression that matches text in the matcher's form (lower case, words separated
 * and followed by one space) against `node`; each slot is a capture group.
 */
export function toRegex(node: Node, parts: RegexParts): CompiledSentence {
  const groups: string[] = [];
  const gap = parts.skip === undefined ? '' : `(?:${parts.skip})*`;
  const walk = (n: Node): string => {
    switch (n.type) {
      case 'word':
        return `${escape(n.text)} ${gap}`;
      case 'slot':
        groups.push(n.name);
        return `(${parts.slotPattern(n.name)}) ${gap}`;
      case 'opt':
        return `(?:${walk(n.item)})?`;
      case 'seq':
        return n.items.map(walk).join('');
      case 'alt':
        return `(?:${n.options.map(walk).join('|')})`;
    }
  };
  const source = `^${gap}${walk(node)}$`;
  return { regex: new RegExp(source), groups };
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
