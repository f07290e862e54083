/**
 * calculator: arithmetic, percentages, powers, roots and unit conversion through mathjs,
 * locked down per its security guide: a private instance, no import/createUnit/evaluate in
 * expressions, and only an allow-listed set of node types and functions, so no input can
 * assign, define functions, build matrices or loop. Never `eval`.
 */
import type { MathJsInstance, MathNode } from 'mathjs';
import { errorResult, textResult, type ToolModule } from '../src/toolhost/api.js';

/** What the calculator uses, taken before the lock-down replaces them inside expressions. */
type MathKit = Pick<MathJsInstance, 'parse' | 'format' | 'Unit'>;
let loading: Promise<MathKit> | undefined;

/**
 * mathjs, loaded on the first calculation, not at start: it was ~20 MB of a daemon that mostly
 * only listens (bench-voice --memory: 174-177 MB ready instead of 193-195, peak 194-197 instead
 * of 220-222). The first calculation waits for it once: 0.2-1.5 s more on a busy 2-core machine.
 */
function loadMath(): Promise<MathKit> {
  loading ??= import('mathjs').then(({ all, create }) => {
    const math = create(all ?? {}, { number: 'number', precision: 64 });
    // eslint-disable-next-line @typescript-eslint/unbound-method -- mathjs functions do not use `this`
    const kit: MathKit = { parse: math.parse, format: math.format, Unit: math.Unit };
    const disabled = (name: string) => () => {
      throw new Error(`${name} is disabled`);
    };
    math.import(
      Object.fromEntries(
        ['import', 'createUnit', 'reviver', 'evaluate', 'parse', 'simplify', 'derivative', 'compile', 'resolve'].map(
          (name) => [name, disabled(name)],
        ),
      ),
      { override: true },
    );
    return kit;
  });
  return loading;
}

/** Longest expression accepted (characters) and most parse-tree nodes: bounds parse and evaluation. */
const MAX_EXPRESSION_CHARS = 300;
const MAX_NODES = 120;

/** Functions whose cost is bounded for any number arguments (no loops over argument size). */
const FUNCTIONS = new Set([
  'sqrt', 'cbrt', 'nthRoot', 'abs', 'round', 'floor', 'ceil', 'fix', 'exp', 'log', 'log10', 'log2', 'pow',
  'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'atan2', 'sinh', 'cosh', 'tanh', 'mod', 'max', 'min', 'hypot',
  'factorial', 'gamma', 'sign', 'square', 'cube', 'to',
]);
const CONSTANTS = new Set(['pi', 'e', 'tau', 'phi', 'PI', 'E']);
const NODE_TYPES = new Set(['ConstantNode', 'SymbolNode', 'OperatorNode', 'ParenthesisNode', 'FunctionNode']);

/** Spoken and typed forms mathjs does not read, rewritten to ones it does. */
const REWRITES: [RegExp, string][] = [
  [/^the\s+/i, ''],
  [/[×✕]/g, '*'],
  [/÷/g, '/'],
  [/−/g, '-'],
  [/\bmultiplied by\b|\btimes\b/gi, '*'],
  [/\bdivided by\b|\bover\b/gi, '/'],
  [/\bplus\b/gi, '+'],
  [/\bminus\b/gi, '-'],
  [/\bto the power of\b|\braised to\b/gi, '^'],
  [/\bsquared\b/gi, '^2'],
  [/\bcubed\b/gi, '^3'],
  [/\bsquare root of\b/gi, 'sqrt '],
  [/\bcube root of\b/gi, 'cbrt '],
  [/\bpercent\b|\bper cent\b/gi, '%'],
  [/(\d+(?:\.\d+)?)\s*%\s*of\b/gi, '($1 / 100) *'],
  [/(\d+(?:\.\d+)?)\s*%(?!\s*[\d(])/g, '($1 / 100)'],
];
/** Digit groups such as 2,340 or 1,000,000, but not the arguments of f(27,3). */
const THOUSANDS = /(?<![\w.(,])\d{1,3}(?:,\d{3})+(?![\d,])/g;

/** Rewrite spoken forms; what cannot be read stays for the parser to reject. */
export function normaliseExpression(input: string): string {
  let text = input.trim().replace(/[?=]+\s*$/, '').replace(THOUSANDS, (m) => m.replace(/,/g, ''));
  for (const [pattern, replacement] of REWRITES) text = text.replace(pattern, replacement);
  return text.replace(/\bsqrt\s+(\d+(?:\.\d+)?)/g, 'sqrt($1)').replace(/\bcbrt\s+(\d+(?:\.\d+)?)/g, 'cbrt($1)');
}

export interface Calculation {
  expression: string;
  value: number | string;
  /** The result as it should be said: "397.8", "8.04672 km". */
  text: string;
}

/** Parse, check against the allow-list, evaluate. A string result explains the failure. */
export async function calculate(input: string): Promise<Calculation | string> {
  if (input.length > MAX_EXPRESSION_CHARS) return `The expression is longer than ${MAX_EXPRESSION_CHARS} characters.`;
  const expression = normaliseExpression(input);
  const { parse, format, Unit } = await loadMath();
  let tree: MathNode;
  try {
    tree = parse(expression);
  } catch (error) {
    return `Cannot read "${input}": ${(error as Error).message}. Write it like "17% of 2340", "sqrt(2)" or "5 miles to km".`;
  }
  const problem = checkTree(tree, Unit.isValuelessUnit.bind(Unit));
  if (problem !== undefined) return problem;
  let value: unknown;
  try {
    value = tree.evaluate({});
  } catch (error) {
    return `Cannot calculate "${input}": ${(error as Error).message}.`;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return `The result of "${input}" is too large or undefined.`;
    return { expression, value, text: format(value, { precision: 12, lowerExp: -9, upperExp: 15 }) };
  }
  if (value instanceof Unit) {
    const amount = value.toNumber();
    if (!Number.isFinite(amount)) return `The result of "${input}" is too large or undefined.`;
    const text = format(value, { precision: 8, lowerExp: -9, upperExp: 15 });
    return { expression, value: text, text };
  }
  return `"${input}" does not give a single number.`;
}

function checkTree(tree: MathNode, isUnit: (name: string) => boolean): string | undefined {
  let nodes = 0;
  let problem: string | undefined;
  tree.traverse((node, _path, parent) => {
    nodes += 1;
    if (problem !== undefined) return;
    if (!NODE_TYPES.has(node.type)) {
      problem = `Only arithmetic is allowed here (${node.type.replace('Node', '').toLowerCase()} is not).`;
    } else if (node.type === 'FunctionNode') {
      const name = (node as unknown as { fn: { name?: string } }).fn.name ?? '';
      if (!FUNCTIONS.has(name)) problem = `The function "${name}" is not available.`;
    } else if (node.type === 'SymbolNode') {
      const name = (node as unknown as { name: string }).name;
      const isCallee = parent?.type === 'FunctionNode';
      if (!isCallee && !CONSTANTS.has(name) && !isUnit(name)) {
        problem = `"${name}" is not a number, constant or unit.`;
      }
    }
  });
  if (nodes > MAX_NODES) return `The expression is too complex (over ${MAX_NODES} parts).`;
  return problem;
}

const calculator: ToolModule = {
  toggle: 'calculator',
  create() {
    return {
      tools: [
        {
          name: 'calculator',
          description: 'Arithmetic and unit conversion, e.g. "17% of 2340", "5 miles to km".',
          inputSchema: {
            type: 'object',
            properties: { expression: { type: 'string' } },
            required: ['expression'],
          },
          annotations: { readOnlyHint: true },
          async run(args) {
            const result = await calculate(args.expression as string);
            if (typeof result === 'string') return errorResult(result);
            return textResult(result.text, { expression: result.expression, result: result.value });
          },
        },
      ],
    };
  },
};

export default calculator;
