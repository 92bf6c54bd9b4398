#!/usr/bin/env python3
"""convert_asserts.py: rewrites the tests' assertions into the forms of
tests/unit/test.h that print both sides. Mechanical and idempotent; run it from
the repository root on the files to convert (default: tests/unit/*.c tests/e2e/*.c):

  ASSERT(a == b)              -> ASSERT_EQ(a, b)     (also != < <= > >=)
  ASSERT(strcmp(a, b) == 0)   -> ASSERT_STREQ(a, b)  (!= 0: ASSERT_STRNE)
  ASSERT(strstr(h, n) != NULL), ASSERT(strstr(h, n))  -> ASSERT_CONTAINS(h, n)
  ASSERT_EQ_U64(a, b)         -> ASSERT_EQ(a, b)
  ASSERT_STR_EQ(a, b)         -> ASSERT_STREQ(a, b)
  [if (r.status != N) e2e_show_file(...);] ASSERT_EQ(r.status, N)  -> ASSERT_STATUS(&r, N)
      (r an e2e_run: the failure shows the command's stderr and stdout)

  ASSERT(a && b == c);        -> ASSERT(a); ASSERT_EQ(b, c);  (a statement of its own,
      one assertion per operand of a top-level &&, each converted as above: the
      failure names the operand that failed and prints both sides of it)

An ASSERT whose expression is anything else (||, !, ?:, a call, several
comparisons) is left alone. Lines marked `/* assert: keep */` are left alone."""
import glob
import re
import sys

OPS = ["==", "!=", "<=", ">=", "<", ">"]
NAMES = {"==": "EQ", "!=": "NE", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE"}


def skip_literal(text, i):
    """Index just past the string or character literal that opens at i."""
    q, n = text[i], len(text)
    i += 1
    while i < n and text[i] != q:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def top_level(expr):
    """(i, c, two) for each character c of expr at bracket depth 0 and outside
    string and character literals; two is expr[i:i + 2]."""
    depth, i, n = 0, 0, len(expr)
    while i < n:
        c = expr[i]
        if c in "\"'":
            i = skip_literal(expr, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            yield i, c, expr[i:i + 2]
        i += 1


def split_top(expr):
    """The top-level tokens of interest in expr: [(pos, op)], or None when expr
    holds a top-level &&, ||, ?:, ',' or assignment (not a plain comparison)."""
    found, skip = [], 0
    for i, c, two in top_level(expr):
        if i < skip:
            continue
        if two in ("&&", "||", "<<", ">>", "->"):
            if two in ("&&", "||"):
                return None
            skip = i + 2
        elif c in "?,":
            return None
        elif two in ("==", "!=", "<=", ">="):
            found.append((i, two))
            skip = i + 2
        elif c in "<>":
            found.append((i, c))
        elif c == "=":
            return None  # an assignment
    return found


def split_and(expr):
    """The operands of expr's top-level && chain (two or more), or None when it
    has none or holds a top-level ||, ?: or ','."""
    parts, start, skip = [], 0, 0
    for i, c, two in top_level(expr):
        if i < skip:
            continue
        if two == "||" or c in "?,":
            return None
        if two == "&&":
            parts.append(expr[start:i].strip())
            start = skip = i + 2
    parts.append(expr[start:].strip())
    return parts if len(parts) > 1 and all(parts) else None


def standalone(text, start, close):
    """Whether the ASSERT at start (its ')' at close) is a statement of its own:
    alone on its line(s), ended by ';', not the body of an unbraced if, for,
    while or else, and not in a macro."""
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start].strip() or text[close + 1:close + 2] != ";":
        return False
    if "\\\n" in text[start:close] or text[close + 2:close + 3] == "\\":
        return False
    prev = text[:line_start].rstrip()
    return not (prev.endswith(")") or prev.endswith("else") or prev.endswith("\\"))


def call_args(expr, fname):
    """For expr == 'fname(x, y)' exactly, [x, y]; else None."""
    expr = expr.strip()
    if not expr.startswith(fname + "(") or not expr.endswith(")"):
        return None
    inner = expr[len(fname) + 1:-1]
    args, depth, start, i = [], 0, 0, 0
    while i < len(inner):
        c = inner[i]
        if c in "\"'":
            q = c
            i += 1
            while i < len(inner) and inner[i] != q:
                i += 2 if inner[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif c == "," and depth == 0:
            args.append(inner[start:i].strip())
            start = i + 1
        i += 1
    args.append(inner[start:].strip())
    return args if depth == 0 else None


def convert_expr(expr):
    """The new macro call for ASSERT(expr), or None to keep it."""
    e = " ".join(expr.split()) if "\n" in expr else expr.strip()
    # strstr(h, n) [!= NULL]
    for form in (e, e[:-len("!= NULL")].strip() if e.endswith("!= NULL") else None):
        if form is not None:
            a = call_args(form, "strstr")
            if a and len(a) == 2:
                return "ASSERT_CONTAINS(%s, %s)" % (a[0], a[1])
    tops = split_top(e)
    if not tops or len(tops) != 1:
        return None
    pos, op = tops[0]
    lhs, rhs = e[:pos].strip(), e[pos + len(op):].strip()
    if not lhs or not rhs:
        return None
    a = call_args(lhs, "strcmp")
    if a and len(a) == 2 and rhs == "0" and op in ("==", "!="):
        return "ASSERT_STR%s(%s, %s)" % ("EQ" if op == "==" else "NE", a[0], a[1])
    return "ASSERT_%s(%s, %s)" % (NAMES[op], lhs, rhs)


def find_close(text, open_pos):
    """Index of the ')' closing the '(' at open_pos, or -1."""
    depth, i, n = 0, open_pos, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            i = skip_literal(text, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def convert(text):
    out, i = [], 0
    pat = re.compile(r"\bASSERT(_EQ_U64|_STR_EQ)?\(")
    while True:
        m = pat.search(text, i)
        if not m:
            out.append(text[i:])
            break
        close = find_close(text, m.end() - 1)
        line_end = text.find("\n", close)
        line = text[text.rfind("\n", 0, m.start()) + 1:line_end if line_end >= 0 else len(text)]
        if close < 0 or "assert: keep" in line:
            out.append(text[i:m.end()])
            i = m.end()
            continue
        inner = text[m.end():close]
        new = None
        if m.group(1) == "_EQ_U64":
            new = "ASSERT_EQ(%s)" % inner
        elif m.group(1) == "_STR_EQ":
            new = "ASSERT_STREQ(%s)" % inner
        else:
            e = " ".join(inner.split())
            parts = split_and(e) if standalone(text, m.start(), close) else None
            if parts:
                indent = line[:len(line) - len(line.lstrip())]
                new = (";\n" + indent).join(convert_expr(x) or "ASSERT(%s)" % x for x in parts)
            else:
                new = convert_expr(inner)
        out.append(text[i:m.start()])
        out.append(new if new else text[m.start():close + 1])
        i = close + 1
    text = "".join(out)
    # if (r.status != N) e2e_show_file("stderr", r.err); ASSERT_EQ(r.status, N);
    status = re.compile(
        r"if \((?P<r>\w+)(?P<arrow>\.|->)status != (?P<n>\d+)\)\n\s*e2e_show_file\(\"stderr\", (?P=r)(?P=arrow)err\);\n"
        r"(?P<ind>[ \t]*)ASSERT_EQ\((?P=r)(?P=arrow)status, (?P=n)\);")
    text = status.sub(lambda m: "ASSERT_STATUS(%s%s, %s);" % (
        "&" if m.group("arrow") == "." else "", m.group("r"), m.group("n")), text)
    # ASSERT_EQ(r.status, N) of an e2e_run r
    runs = set(re.findall(r"\be2e_run\s*\*?\s*(\w+)", text))
    plain = re.compile(r"ASSERT_EQ\((?P<r>\w+)(?P<arrow>\.|->)status, (?P<n>\d+)\);")
    text = plain.sub(lambda m: "ASSERT_STATUS(%s%s, %s);" % (
        "&" if m.group("arrow") == "." else "", m.group("r"), m.group("n"))
        if m.group("r") in runs else m.group(0), text)
    return text


def main(argv):
    files = argv[1:] or sorted(glob.glob("tests/unit/*.c") + glob.glob("tests/e2e/*.c"))
    for f in files:
        if f.endswith("runner.c"):
            continue
        old = open(f).read()
        new = convert(old)
        if new != old:
            open(f, "w").write(new)
            print("converted", f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
