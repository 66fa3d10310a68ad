"""Arithmetic episodes: step-by-step think traces that end in a verification.

Every number is computed in Python and every claim in a trace ("7 + 8 = 15", "Check:
85 - 48 = 37") is produced from the same integers, so the traces cannot be wrong.  The
explanations are the school methods (column addition with carries, subtraction with
borrowing, partial products, long division) because a small model can learn to imitate
them digit by digit.
"""

from data_kb import FIRST_NAMES
from data_render import Sample, Turn

SYMBOLS = {  # style -> op -> written operator
    "ascii": {"+": "+", "-": "-", "*": "*", "/": "/"},
    "math": {"+": "+", "-": "-", "*": "×", "/": "÷"},
    "x": {"+": "+", "-": "-", "*": "x", "/": "/"},
}
WORDS = {"+": "plus", "-": "minus", "*": "times", "/": "divided by"}


def apply(a, op, b):
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    q, r = divmod(a, b)
    assert r == 0, (a, b)
    return q


def _digits(n):
    return [int(c) for c in reversed(str(n))]


def explain_add(a, b):
    """'37 + 48: 7 + 8 = 15, write 5 carry 1; 3 + 4 + 1 = 8, write 8; so 85'"""
    if a < 10 and b < 10:
        return f"{a} + {b} = {a + b}"
    da, db = _digits(a), _digits(b)
    n = max(len(da), len(db))
    carry = 0
    steps = []
    for i in range(n):
        x = da[i] if i < len(da) else None
        y = db[i] if i < len(db) else None
        terms = [t for t in (x, y) if t is not None] + ([carry] if carry else [])
        s = sum(terms)
        last = i == n - 1
        if len(terms) == 1:
            step = f"bring down {s}"
        else:
            step = " + ".join(map(str, terms)) + f" = {s}"
            if last:
                step += f", write {s}"
            elif s >= 10:
                step += f", write {s % 10} carry 1"
            else:
                step += f", write {s}"
        carry = s // 10 if not last else 0
        steps.append(step)
    return f"{a} + {b}: " + "; ".join(steps) + f"; so {a + b}"


def explain_sub(a, b):
    """Column subtraction with borrowing; a negative result is b - a, negated."""
    if a < b:
        inner = explain_sub(b, a)
        return (f"{a} - {b}: {b} is larger than {a}, so the result is negative. "
                f"{inner}, so {a} - {b} = {a - b}")
    if a < 10:
        return f"{a} - {b} = {a - b}"
    if b == 0:
        return f"{a} - 0 = {a}"
    da, db = _digits(a), _digits(b)
    borrow = 0
    steps = []
    for i in range(len(da)):
        x = da[i]
        y = db[i] if i < len(db) else 0
        if i >= len(db) and not borrow:
            steps.append(f"bring down {x}")
            continue
        expr = f"{x} - 1 - {y}" if borrow else f"{x} - {y}"
        top = x - borrow - y
        if top < 0:
            steps.append(f"{expr} is negative, so borrow 1: 1{x} - {borrow} - {y} = {top + 10}"
                         if borrow else f"{x} - {y}: borrow 1, {x + 10} - {y} = {top + 10}")
            borrow = 1
        else:
            steps.append(f"{expr} = {top}")
            borrow = 0
    return f"{a} - {b}: " + "; ".join(steps) + f"; so {a - b}"


def _mul_one_digit(a, d, sym):
    """'347 × 6: 7 × 6 = 42, write 2 carry 4; ...; so 2082'"""
    if a < 10:
        return f"{a} {sym} {d} = {a * d}"
    da = _digits(a)
    carry = 0
    steps = []
    for i, x in enumerate(da):
        p = x * d + carry
        expr = f"{x} {sym} {d}" + (f" + {carry}" if carry else "")
        if i == len(da) - 1:
            steps.append(f"{expr} = {p}, write {p}")
        else:
            steps.append(f"{expr} = {p}, write {p % 10}" + (f" carry {p // 10}" if p >= 10 else ""))
        carry = p // 10
    return f"{a} {sym} {d}: " + "; ".join(steps) + f"; so {a * d}"


def _place_parts(n):
    """347 -> [300, 40, 7] (zeros left out)."""
    s = str(n)
    parts = [int(c) * 10 ** (len(s) - i - 1) for i, c in enumerate(s)]
    return [p for p in parts if p] or [0]


def _sum_chain(values):
    """'6940 + 2082 = 9022': the partial products added up one at a time."""
    total = values[0]
    pieces = []
    for v in values[1:]:
        pieces.append(f"{total} + {v} = {total + v}")
        total += v
    return ", ".join(pieces), total


def explain_mul(a, b, sym="×"):
    if a == 0 or b == 0:
        return f"{a} {sym} {b}: anything times 0 is 0; so 0"
    if b < 10:
        return _mul_one_digit(a, b, sym)
    if a < 10:
        return _mul_one_digit(b, a, sym).replace(f"{b} {sym} {a}:", f"{a} {sym} {b} = {b} {sym} {a}:", 1)
    parts = _place_parts(b)
    prods = [a * p for p in parts]
    lines = [f"{a} {sym} {b} = " + " + ".join(f"{a} {sym} {p}" for p in parts)]
    for p, v in zip(parts, prods):
        lines.append(f"{a} {sym} {p} = {v}")
    chain, total = _sum_chain(prods)
    lines.append(chain)
    return "; ".join(lines) + f"; so {total}"


def check_mul(a, b, sym="×"):
    """Verify a product the other way round: b times the place parts of a."""
    if a == 0 or b == 0:
        return f"{b} {sym} {a} = 0"
    parts = _place_parts(a)
    if len(parts) == 1:
        return f"{b} {sym} {a} = {a * b}"
    prods = [b * p for p in parts]
    return (f"{b} {sym} {a} = " + " + ".join(f"{b} {sym} {p}" for p in parts) + " = "
            + " + ".join(map(str, prods)) + f" = {a * b}")


def explain_div(a, d, sym="÷", msym="×"):
    """Long division of an exact quotient, digit by digit."""
    q = a // d
    assert q * d == a
    if a == 0:
        return f"0 {sym} {d} = 0"
    if q < 10 and a < 100:
        return f"{a} {sym} {d}: {d} {msym} {q} = {a}; so {q}"
    s = str(a)
    i = 1
    while i < len(s) and int(s[:i]) < d:
        i += 1  # the shortest leading part that d goes into
    cur = int(s[:i])
    steps = []
    while True:
        k = cur // d
        rem = cur - k * d
        count = {0: "zero times", 1: "once", 2: "twice"}.get(k, f"{k} times")
        steps.append(f"{d} goes into {cur} {count} ({d} {msym} {k} = {k * d}), remainder {rem}")
        if i >= len(s):
            break
        cur = rem * 10 + int(s[i])
        steps.append(f"bring down {s[i]} to make {cur}")
        i += 1
    return f"{a} {sym} {d}: " + "; ".join(steps) + f"; so {q}"


def explain(a, op, b, style="math"):
    sym = SYMBOLS[style][op]
    msym = SYMBOLS[style]["*"]
    if op == "+":
        return explain_add(a, b)
    if op == "-":
        return explain_sub(a, b)
    if op == "*":
        return explain_mul(a, b, sym)
    return explain_div(a, b, sym, msym)


def check(a, op, b, r, style="math"):
    """The inverse operation, as a sentence fragment ending in the recovered operand."""
    m = SYMBOLS[style]["*"]
    if op == "+":
        return f"{r} - {b} = {a}"
    if op == "-":
        return f"{r} + {b} = {a}"
    if op == "*":
        return check_mul(a, b, m)
    # r = a / b  ->  r * b = a
    if r == 0:
        return f"0 {m} {b} = 0"
    return check_mul(r, b, m) if r >= 10 and b >= 10 else f"{r} {m} {b} = {a}"


def _operand(rng, hi_digits=3):
    d = rng.choice([1, 2, 2, 3, 3]) if hi_digits >= 3 else rng.choice([1, 2])
    lo = 0 if d == 1 else 10 ** (d - 1)
    return rng.randint(lo, 10 ** d - 1)


def make_problem(rng):
    """A single operation (a, op, b) with integers of up to 3 digits and an exact quotient."""
    op = rng.choices(["+", "-", "*", "/"], [3, 3, 3, 2])[0]
    if op == "+":
        return _operand(rng), op, _operand(rng)
    if op == "-":
        a, b = _operand(rng), _operand(rng)
        if a < b and rng.random() < 0.8:
            a, b = b, a  # mostly non-negative results; some negatives keep it honest
        return a, op, b
    if op == "*":
        a = _operand(rng)
        b = rng.randint(0, 9) if rng.random() < 0.45 else rng.randint(10, 99 if a > 99 else 999)
        if rng.random() < 0.5:
            a, b = b, a
        return a, op, b
    d = rng.randint(2, 12) if rng.random() < 0.6 else rng.randint(13, 99)
    q = rng.randint(1, 999 // d)
    return q * d, op, d


def fmt_expr(tokens, style, words=False):
    out = []
    for t in tokens:
        if t in ("+", "-", "*", "/"):
            out.append(WORDS[t] if words else SYMBOLS[style][t])
        else:
            out.append(str(t))
    return " ".join(out).replace("( ", "(").replace(" )", ")")


def _two_step(rng):
    """(tokens, steps, result, first_is_left): steps = [(x, op, y, r)] in evaluation order;
    first_is_left says whether the first result is the left operand of the second step."""
    for _ in range(100):
        shape = rng.choice(["plain", "plain", "left", "right"])
        o1 = rng.choice(["+", "-", "*", "/"])
        o2 = rng.choice(["+", "-", "*", "/"])
        a, b, c = (rng.randint(1, 99) if rng.random() < 0.7 else rng.randint(100, 999)
                   for _ in range(3))
        if "*" in (o1, o2):
            # keep products small enough to read: one factor is a single digit or two digits
            if o1 == "*":
                b = rng.randint(2, 12)
            if o2 == "*":
                c = rng.randint(2, 12)
        if shape == "right" or (shape == "plain" and o2 in "*/" and o1 in "+-"):
            # b o2 c first
            if o2 == "/":
                c = rng.randint(2, 12)
                b = c * rng.randint(1, 999 // c)
            s1 = apply(b, o2, c) if o2 != "/" or b % c == 0 else None
            if s1 is None or s1 < 0:
                continue
            if o1 == "/":
                if s1 == 0 or a % s1:
                    continue
            r = apply(a, o1, s1)
            if r < 0:
                continue
            steps = [(b, o2, c, s1), (a, o1, s1, r)]
            first_is_left = False
            if shape == "right":
                tokens = [a, o1, "(", b, o2, c, ")"]
            else:
                tokens = [a, o1, b, o2, c]
        else:
            if o1 == "/":
                b = rng.randint(2, 12)
                a = b * rng.randint(1, 999 // b)
            s1 = apply(a, o1, b)
            if s1 < 0:
                continue
            if o2 == "/":
                c = rng.randint(2, 12)
                if s1 % c:
                    continue
            r = apply(s1, o2, c)
            if r < 0:
                continue
            steps = [(a, o1, b, s1), (s1, o2, c, r)]
            first_is_left = True
            needs_parens = o2 in "*/" and o1 in "+-"
            if shape == "left" or needs_parens:
                tokens = ["(", a, o1, b, ")", o2, c]
            else:
                tokens = [a, o1, b, o2, c]
        if r > 99999 or s1 == 0:
            continue
        # the flat form must evaluate the same way in Python (precedence sanity check)
        py = fmt_expr(tokens, "ascii").replace("/", "//")
        if eval(py, {"__builtins__": {}}) != r:  # noqa: S307 - our own digits and operators
            continue
        return tokens, steps, r, first_is_left
    raise RuntimeError("could not make a two-step problem")


def _rule_sentence(tokens, steps):
    first = steps[0]
    if "(" in tokens:
        return "The brackets come first"
    if first[1] in "*/" and steps[1][1] in "+-":
        name = "Multiplication" if first[1] == "*" else "Division"
        other = "addition" if steps[1][1] == "+" else "subtraction"
        return f"{name} comes before {other}"
    return "Working from left to right"


def _inverse_step(x, op, y, r, first_is_left, style):
    """Undo r = x op y to recover the operand that was computed earlier."""
    m, dv = SYMBOLS[style]["*"], SYMBOLS[style]["/"]
    if first_is_left:   # recover x
        return {"+": f"{r} - {y} = {x}", "-": f"{r} + {y} = {x}",
                "*": f"{r} {dv} {y} = {x}", "/": f"{r} {m} {y} = {x}"}[op]
    return {"+": f"{r} - {x} = {y}", "-": f"{x} - {r} = {y}",     # recover y
            "*": f"{r} {dv} {x} = {y}", "/": f"{x} {dv} {r} = {y}"}[op]


def arithmetic_sample(rng, settings):
    """One arithmetic chat document: a bare sum or a word problem."""
    thinking, effort, system = settings
    style = rng.choice(["ascii", "math", "math", "x"]) if rng.random() < 0.9 else "ascii"
    kind = rng.choices(["single", "two", "word"], [5, 3, 2])[0]
    if kind == "word":
        q, reasoning, answer, meta = word_problem(rng, style)
    elif kind == "single":
        a, op, b = make_problem(rng)
        r = apply(a, op, b)
        words = rng.random() < 0.15
        expr = fmt_expr([a, op, b], style, words)
        q = _ask(rng, expr)
        reasoning = (f"{explain(a, op, b, style)}. Check: {check(a, op, b, r, style)}. Correct.")
        if effort == "max" or (effort is None and rng.random() < 0.5):
            reasoning = f"I need to compute {fmt_expr([a, op, b], style)}. " + reasoning
        answer = f"{expr} is {r}." if words else f"{expr} = {r}."
        meta = {"expr": fmt_expr([a, op, b], "ascii").replace("/", "//"), "result": r}
    else:
        tokens, steps, r, first_is_left = _two_step(rng)
        expr = fmt_expr(tokens, style)
        q = _ask(rng, expr)
        (x1, o1, y1, s1), (x2, o2, y2, r2) = steps
        lines = [f"{_rule_sentence(tokens, steps)}: {explain(x1, o1, y1, style)}.",
                 f"Then {explain(x2, o2, y2, style)}."]
        undo2 = _inverse_step(x2, o2, y2, r2, first_is_left, style)
        undo1 = _inverse_step(x1, o1, y1, s1, True, style)
        lines.append(f"Check: {undo2}, and {undo1}. Correct.")
        reasoning = " ".join(lines)
        answer = f"{expr} = {r}."
        meta = {"expr": fmt_expr(tokens, "ascii").replace("/", "//"), "result": r}
    msgs = ([{"role": "system", "content": system}] if system else []) + \
        [{"role": "user", "content": q}]
    return Sample("arith", msgs, thinking, Turn(reasoning if thinking else "", answer),
                  effort=effort, meta=meta)


def _ask(rng, expr):
    return rng.choice([
        "What is {e}?", "What's {e}?", "Compute {e}.", "Calculate {e}.", "{e} = ?",
        "{e}", "Please work out {e}.", "Can you tell me what {e} is?", "Solve {e}.",
        "How much is {e}?", "Quick question: what is {e}?",
    ]).format(e=expr)


ITEMS = ["apples", "pencils", "stickers", "marbles", "cookies", "books", "stamps",
         "balloons", "cards", "oranges", "shells", "coins", "sweets", "eggs", "flowers"]


def word_problem(rng, style):
    name = rng.choice(FIRST_NAMES)
    friend = rng.choice([n for n in FIRST_NAMES if n != name])
    item = rng.choice(ITEMS)
    kind = rng.choice(["add", "sub", "mul", "div", "mulsub"])
    if kind == "add":
        a, b = rng.randint(2, 300), rng.randint(2, 300)
        r = a + b
        q = rng.choice([
            f"{name} has {a} {item} and buys {b} more. How many {item} does {name} have now?",
            f"{name} collected {a} {item} on Monday and {b} on Tuesday. How many {item} is that in total?",
        ])
        steps = (f"{name} starts with {a} {item} and gets {b} more, so I add. "
                 f"{explain_add(a, b)}. Check: {r} - {b} = {a}. Correct.")
        ans = f"{name} has {r} {item}." if "now" in q else f"That is {r} {item} in total."
        expr = f"{a}+{b}"
    elif kind == "sub":
        a = rng.randint(10, 500)
        b = rng.randint(2, a - 1)
        r = a - b
        q = rng.choice([
            f"{name} had {a} {item} and gave {b} to {friend}. How many {item} does {name} have left?",
            f"There were {a} {item} in a basket. {name} took {b} of them. How many are left in the basket?",
        ])
        steps = (f"{b} {item} are taken away from {a}, so I subtract. {explain_sub(a, b)}. "
                 f"Check: {r} + {b} = {a}. Correct.")
        ans = f"{name} has {r} {item} left." if "have left" in q else f"There are {r} {item} left."
        expr = f"{a}-{b}"
    elif kind == "mul":
        a, b = rng.randint(2, 40), rng.randint(2, 25)
        r = a * b
        m = SYMBOLS[style]["*"]
        q = (f"There are {a} boxes with {b} {item} in each box. "
             f"How many {item} are there altogether?")
        steps = (f"{a} boxes of {b} each means multiplying. {explain_mul(a, b, m)}. "
                 f"Check: {check_mul(a, b, m)}. Correct.")
        ans = f"There are {r} {item} altogether."
        expr = f"{a}*{b}"
    elif kind == "div":
        b = rng.randint(2, 12)
        r = rng.randint(2, 60)
        a = r * b
        dv, m = SYMBOLS[style]["/"], SYMBOLS[style]["*"]
        q = (f"{name} shares {a} {item} equally among {b} friends. "
             f"How many {item} does each friend get?")
        steps = (f"Sharing {a} equally among {b} means dividing. {explain_div(a, b, dv, m)}. "
                 f"Check: {r} {m} {b} = {a}. Correct.")
        ans = f"Each friend gets {r} {item}."
        expr = f"{a}//{b}"
    else:
        a, b = rng.randint(2, 12), rng.randint(2, 12)
        c = rng.randint(1, a * b - 1)
        p = a * b
        r = p - c
        m, dv = SYMBOLS[style]["*"], SYMBOLS[style]["/"]
        q = (f"{name} buys {a} packs of {item} with {b} in each pack, then gives {c} "
             f"to {friend}. How many {item} does {name} have left?")
        steps = (f"First the total: {a} {m} {b} = {p}. Then {c} are given away: "
                 f"{explain_sub(p, c)}. Check: {r} + {c} = {p}, and {p} {dv} {b} = {a}. Correct.")
        ans = f"{name} has {r} {item} left."
        expr = f"{a}*{b}-{c}"
    return q, steps, ans, {"expr": expr, "result": r}
