/**
 * Tally: the tiny line-oriented language the coding harness asks the model to write, and its sandboxed
 * interpreter (a tree-walker; the program never becomes host code, so no eval/Function). Integers only.
 *
 *   # comment
 *   let x = expr        declare or assign      x = expr   assign an existing variable
 *   print expr          one output line
 *   if expr / else / end
 *   while expr / end
 *
 * Expressions: integer literals, variables, ( ), unary - and not, * / % (truncating division), + -,
 * comparisons < <= > >= == != (1 or 0), and, or. Runs are bounded by a step budget and a wall-clock budget.
 */

export class TallyError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
  }
}

type Expr =
  | { k: 'num'; v: number }
  | { k: 'var'; name: string }
  | { k: 'un'; op: '-' | 'not'; e: Expr }
  | { k: 'bin'; op: string; a: Expr; b: Expr };

type Stmt =
  | { k: 'let'; line: number; name: string; e: Expr; declare: boolean }
  | { k: 'print'; line: number; e: Expr }
  | { k: 'if'; line: number; cond: Expr; yes: Stmt[]; no: Stmt[] }
  | { k: 'while'; line: number; cond: Expr; body: Stmt[] };

const KEYWORDS = new Set(['let', 'print', 'if', 'else', 'end', 'while', 'and', 'or', 'not']);
const TOKEN = /\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(<=|>=|==|!=|[-+*/%()<>]))/y;

function lexExpr(src: string, line: number): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  let pos = 0;
  while (pos < src.length) {
    if (/^\s*$/.test(src.slice(pos))) break;
    TOKEN.lastIndex = pos;
    const m = TOKEN.exec(src);
    if (!m) throw new TallyError(line, `unexpected character '${src.slice(pos).trim()[0]}'`);
    out.push(m[1] ?? m[2] ?? m[3]);
    pos = TOKEN.lastIndex;
  }
  return out;
}

const PREC: Record<string, number> = {
  or: 1,
  and: 2,
  '<': 3,
  '<=': 3,
  '>': 3,
  '>=': 3,
  '==': 3,
  '!=': 3,
  '+': 4,
  '-': 4,
  '*': 5,
  '/': 5,
  '%': 5,
};

function parseExpr(src: string, line: number): Expr {
  const toks = lexExpr(src, line);
  let i = 0;
  const primary = (): Expr => {
    const t = toks[i++];
    if (t === undefined) throw new TallyError(line, 'expression ends too early');
    if (t === '(') {
      const e = binary(0);
      if (toks[i++] !== ')') throw new TallyError(line, "missing ')'");
      return e;
    }
    if (t === '-') return { k: 'un', op: '-', e: primary() };
    if (t === 'not') return { k: 'un', op: 'not', e: primary() };
    if (/^\d+$/.test(t)) {
      const v = Number(t);
      if (!Number.isSafeInteger(v)) throw new TallyError(line, `number ${t} is too large`);
      return { k: 'num', v };
    }
    if (/^[A-Za-z_]/.test(t) && !KEYWORDS.has(t)) return { k: 'var', name: t };
    throw new TallyError(line, `unexpected '${t}' in expression`);
  };
  const binary = (minPrec: number): Expr => {
    let a = primary();
    for (;;) {
      const op = toks[i];
      const p = op === undefined ? undefined : PREC[op];
      if (p === undefined || p <= minPrec) return a;
      i++;
      a = { k: 'bin', op, a, b: binary(p) };
    }
  };
  if (toks.length === 0) throw new TallyError(line, 'missing expression');
  const e = binary(0);
  if (i < toks.length) throw new TallyError(line, `unexpected '${toks[i]}' after expression`);
  return e;
}

/** Parses a program; throws TallyError with the line number of the first problem. */
export function parseTally(source: string): Stmt[] {
  const lines = source.split('\n');
  const stack: { stmts: Stmt[]; open?: Stmt & { k: 'if' | 'while' }; inElse?: boolean }[] = [{ stmts: [] }];
  const push = (s: Stmt) => {
    const top = stack[stack.length - 1];
    if (top.open?.k === 'if' && top.inElse) top.open.no.push(s);
    else if (top.open?.k === 'if') top.open.yes.push(s);
    else if (top.open?.k === 'while') top.open.body.push(s);
    else top.stmts.push(s);
  };
  for (let n = 0; n < lines.length; n++) {
    const line = n + 1;
    const text = lines[n].replace(/#.*$/, '').trim();
    if (text === '') continue;
    const [head] = text.split(/\s+/, 1);
    const rest = text.slice(head.length).trim();
    if (head === 'let' || /^[A-Za-z_][A-Za-z0-9_]*\s*=[^=]/.test(text)) {
      const body = head === 'let' ? rest : text;
      const m = /^([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)(.*)$/.exec(body);
      if (!m) throw new TallyError(line, "expected 'let NAME = EXPR'");
      if (KEYWORDS.has(m[1])) throw new TallyError(line, `'${m[1]}' is a keyword`);
      push({ k: 'let', line, name: m[1], e: parseExpr(m[2], line), declare: head === 'let' });
    } else if (head === 'print') push({ k: 'print', line, e: parseExpr(rest, line) });
    else if (head === 'if' || head === 'while') {
      const s: Stmt & { k: 'if' | 'while' } =
        head === 'if'
          ? { k: 'if', line, cond: parseExpr(rest, line), yes: [], no: [] }
          : { k: 'while', line, cond: parseExpr(rest, line), body: [] };
      push(s);
      stack.push({ stmts: [], open: s });
    } else if (head === 'else') {
      const top = stack[stack.length - 1];
      if (rest !== '' || top.open?.k !== 'if' || top.inElse)
        throw new TallyError(line, "'else' without a matching 'if'");
      top.inElse = true;
    } else if (head === 'end') {
      if (rest !== '' || stack.length === 1)
        throw new TallyError(line, "'end' without a matching 'if' or 'while'");
      stack.pop();
    } else throw new TallyError(line, `unknown statement '${head}'`);
  }
  if (stack.length > 1) {
    const open = stack[stack.length - 1].open;
    throw new TallyError(open?.line ?? lines.length, `'${open?.k}' is never closed with 'end'`);
  }
  return stack[0].stmts;
}

export interface RunLimits {
  maxSteps?: number;
  maxMs?: number;
  maxOutputLines?: number;
}

export interface RunResult {
  output: string[];
  error?: string;
  steps: number;
}

/** Runs a program with preset integer inputs. Never throws: errors and exhausted budgets come back in `error`. */
export function runTally(source: string, inputs: Record<string, number>, limits: RunLimits = {}): RunResult {
  const maxSteps = limits.maxSteps ?? 20_000;
  const maxMs = limits.maxMs ?? 200;
  const maxOut = limits.maxOutputLines ?? 200;
  const output: string[] = [];
  let steps = 0;
  const vars = new Map<string, number>(Object.entries(inputs));
  const t0 = Date.now();
  const evalE = (e: Expr, line: number): number => {
    switch (e.k) {
      case 'num':
        return e.v;
      case 'var': {
        const v = vars.get(e.name);
        if (v === undefined) throw new TallyError(line, `unknown variable '${e.name}'`);
        return v;
      }
      case 'un': {
        const v = evalE(e.e, line);
        return e.op === '-' ? -v : v === 0 ? 1 : 0;
      }
      case 'bin': {
        if (e.op === 'and') return evalE(e.a, line) !== 0 && evalE(e.b, line) !== 0 ? 1 : 0;
        if (e.op === 'or') return evalE(e.a, line) !== 0 || evalE(e.b, line) !== 0 ? 1 : 0;
        const a = evalE(e.a, line);
        const b = evalE(e.b, line);
        let r: number;
        switch (e.op) {
          case '+':
            r = a + b;
            break;
          case '-':
            r = a - b;
            break;
          case '*':
            r = a * b;
            break;
          case '/':
          case '%':
            if (b === 0) throw new TallyError(line, 'division by zero');
            r = e.op === '/' ? Math.trunc(a / b) : a % b;
            break;
          case '<':
            return a < b ? 1 : 0;
          case '<=':
            return a <= b ? 1 : 0;
          case '>':
            return a > b ? 1 : 0;
          case '>=':
            return a >= b ? 1 : 0;
          case '==':
            return a === b ? 1 : 0;
          default:
            return a !== b ? 1 : 0;
        }
        if (!Number.isSafeInteger(r)) throw new TallyError(line, 'integer overflow');
        return r;
      }
    }
  };
  const tick = (line: number) => {
    steps++;
    if (steps > maxSteps) throw new TallyError(line, `stopped after ${maxSteps} steps (infinite loop?)`);
    if ((steps & 255) === 0 && Date.now() - t0 > maxMs)
      throw new TallyError(line, `stopped after ${maxMs} ms (time limit)`);
  };
  const exec = (stmts: Stmt[]): void => {
    for (const s of stmts) {
      tick(s.line);
      switch (s.k) {
        case 'let':
          if (!s.declare && !vars.has(s.name))
            throw new TallyError(s.line, `assignment to undeclared variable '${s.name}' (use let)`);
          vars.set(s.name, evalE(s.e, s.line));
          break;
        case 'print':
          if (output.length >= maxOut) throw new TallyError(s.line, `more than ${maxOut} output lines`);
          output.push(String(evalE(s.e, s.line)));
          break;
        case 'if':
          exec(evalE(s.cond, s.line) !== 0 ? s.yes : s.no);
          break;
        case 'while':
          while (evalE(s.cond, s.line) !== 0) {
            exec(s.body);
            tick(s.line);
          }
          break;
      }
    }
  };
  try {
    exec(parseTally(source));
    return { output, steps };
  } catch (e) {
    if (e instanceof TallyError) return { output, steps, error: e.message };
    // A host-level failure (e.g. stack overflow from absurd nesting) is still the program's error.
    return { output, steps, error: `runtime failure: ${(e as Error).message}` };
  }
}
