# SPDX-License-Identifier: LGPL-2.1-or-later
"""The library's functions and calls, read from its sources.

A small C reader, enough for this code base: comments, strings and
preprocessor lines are dropped, every function defined at file scope
(static or not, inline or not, in a .c or a .h) is found with its body,
and every `name(` in a body is a call when `name` is a function of the
library.  Macros are not expanded (a call hidden in a macro is found by
callcycles.py's symbol tables, for the .c files).

Used by callcycles.py (the inline headers' edges and the layer rule) and
route.py (the stays of bga_alloc's route).
"""
import os
import re

KEYWORDS = {
    "if", "for", "while", "switch", "return", "sizeof", "do", "else", "case", "goto",
    "__attribute__", "typeof", "__typeof__", "_Alignof", "_Static_assert", "defined",
    "__builtin_expect", "asm", "__asm__", "__asm", "_Generic",
}


def strip(text):
    """Comments, string and character literals, preprocessor lines -> blanks
    (newlines kept, so offsets keep their lines)."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # a preprocessor line, with its continuations
            j = i
            while j < n:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            seg = text[i:k]
            out.append(re.sub(r"[^\n]", " ", seg))
            i = k
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
            continue
        if c == "\n":
            line_start = True
        elif not c.isspace():
            line_start = False
        out.append(c)
        i += 1
    return "".join(out)


def functions(text):
    """[(name, is_static, body)] of the functions defined at file scope."""
    s = strip(text)
    res, depth, i, n = [], 0, 0, len(s)
    stmt_start = 0
    while i < n:
        c = s[i]
        if c == "{":
            if depth == 0:
                head = s[stmt_start:i]
                m = None
                # name ( params ) [attributes] {   -- not `= {`, struct, enum
                if not re.search(r"=\s*$", head) and not re.search(r"\b(struct|union|enum)\b[^()]*$", head):
                    h = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", head, flags=re.S).rstrip()
                    if h.endswith(")"):
                        # the parameter list's opening parenthesis
                        d, k = 0, len(h) - 1
                        while k >= 0:
                            if h[k] == ")":
                                d += 1
                            elif h[k] == "(":
                                d -= 1
                                if d == 0:
                                    break
                            k -= 1
                        m = re.search(r"([A-Za-z_]\w*)\s*$", h[:k])
                # the body
                d, j = 0, i
                while j < n:
                    if s[j] == "{":
                        d += 1
                    elif s[j] == "}":
                        d -= 1
                        if d == 0:
                            break
                    j += 1
                if m and m.group(1) not in KEYWORDS:
                    params = h[k + 1:-1] if h.endswith(")") else ""
                    res.append((m.group(1), bool(re.search(r"\bstatic\b", head)), s[i:j + 1], params))
                i = j + 1
                stmt_start = i
                continue
        elif c == ";" and depth == 0:
            stmt_start = i + 1
        i += 1
    return res


def declarations(text):
    """The names of the functions a file declares at file scope without
    defining them there (prototypes; not function pointers or typedefs)."""
    s = strip(text)
    out, i, n, start = [], 0, len(s), 0
    while i < n:
        c = s[i]
        if c == "{":
            # a body, a struct's or an initializer's braces: skipped whole
            d, j = 0, i
            while j < n:
                if s[j] == "{":
                    d += 1
                elif s[j] == "}":
                    d -= 1
                    if d == 0:
                        break
                j += 1
            i = j + 1
            if not re.search(r"(=|\b(struct|union|enum)\b[^()]*)\s*$", s[start:j]):
                start = i  # a function's body ends its statement
            continue
        if c == ";":
            stmt = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", s[start:i], flags=re.S).strip()
            start = i + 1
            if stmt.startswith("typedef") or "{" in stmt:
                i += 1
                continue
            # name ( ... ) -- not a pointer's (*name)(...)
            m = re.match(r"[^(=]*?\b([A-Za-z_]\w*)\s*\((?!\s*\*)", stmt)
            if m and m.group(1) not in KEYWORDS:
                out.append(m.group(1))
        i += 1
    return out


def calls(body):
    return [m.group(1) for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", body) if m.group(1) not in KEYWORDS]


def split_args(text):
    """Top-level comma-separated parts of text."""
    out, d, cur = [], 0, []
    for c in text:
        if c in "([{":
            d += 1
        elif c in ")]}":
            d -= 1
        if c == "," and d == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur))
    return out


def param_names(params):
    """The names of a parameter list's parameters, in order."""
    names = []
    for p in split_args(params):
        m = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*$", p.strip())
        names.append(m.group(1) if m and p.strip() != "void" else None)
    return names


def call_sites(body):
    """[(name, [argument texts])] of the calls in body, in order."""
    out = []
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", body):
        if m.group(1) in KEYWORDS:
            continue
        d, j = 1, m.end()
        while j < len(body) and d:
            if body[j] == "(":
                d += 1
            elif body[j] == ")":
                d -= 1
            j += 1
        out.append((m.group(1), split_args(body[m.end():j - 1])))
    return out


class Lib:
    """Every function of the sources under root: file (relative path) ->
    {name: (is_static, body)}, and how a call from a file resolves."""

    def __init__(self, root):
        self.root = root
        self.files = {}
        self.params = {}
        self.declared = {}
        for d, _, fs in os.walk(root):
            for f in sorted(fs):
                if f.endswith((".c", ".h")):
                    p = os.path.join(d, f)
                    with open(p, encoding="utf-8") as fh:
                        rel = os.path.relpath(p, root)
                        text = fh.read()
                        fns = functions(text)
                        if f.endswith(".h"):
                            self.declared[rel] = declarations(text)
                        self.files[rel] = {nm: (st, b) for nm, st, b, _ in fns}
                        for nm, _, _, ps in fns:
                            self.params[(rel, nm)] = param_names(ps)
        # names visible from other files: a header's functions, a .c file's non-static ones
        self.public = {}
        for f, fns in self.files.items():
            for nm, (st, _) in fns.items():
                if f.endswith(".h") or not st:
                    self.public.setdefault(nm, []).append(f)

    def homeless(self):
        """[(header, name, [files that define it])] for every function a
        header declares that no file of the header's own folder defines."""
        out = []
        for h, names in sorted(self.declared.items()):
            home = os.path.dirname(h)
            for nm in names:
                where = sorted(f for f, fns in self.files.items() if nm in fns and (f.endswith(".h") or not fns[nm][0]))
                if not any(os.path.dirname(f) == home for f in where):
                    out.append((h, nm, where))
        return out

    def resolve(self, f, name):
        """The file that defines the function `name` as called from f, or None."""
        if name in self.files.get(f, {}):
            return f
        owners = self.public.get(name)
        if not owners:
            return None
        hs = [o for o in owners if o.endswith(".h")]
        return (hs or owners)[0]

    def edges(self):
        """{(file, file): [names]} for every call from one file into another."""
        out = {}
        for f, fns in self.files.items():
            for nm, (_, body) in fns.items():
                for c in calls(body):
                    g = self.resolve(f, c)
                    if g is not None and g != f:
                        out.setdefault((f, g), set()).add(c)
        return out
