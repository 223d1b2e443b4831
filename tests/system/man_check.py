#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The man pages say what the headers say (the man_pages test).

    tests/system/man_check.py MANDIR INCLUDEDIR

For every function a public header declares BGA_EXTERN, read from the
header with a parser of its own (not scripts/mkman.py's):

  - its comment has "Returns:", "Errors:" and "Threads:" (or its header's
    opening comment has a "Threads:" paragraph), or says "Alias of: OLD."
    and OLD's has them;
  - man3/NAME.3 has NAME, SYNOPSIS, DESCRIPTION, RETURN VALUE, ERRORS,
    ATTRIBUTES, VERSIONS (with a version number) and SEE ALSO;
  - the NAME line is the comment's first sentence, whole: not cut, no
    "..." or an ellipsis;
  - its ERRORS lists exactly the errnos of the header's "Errors:", one
    entry each;
  - its SYNOPSIS includes every header that defines a struct or enum the
    prototype names.

And the pages of the public structs (3type) and bgalloc(7), with the
persistence guide and the words for -EAGAIN and -ENOSPC.  Prints every
problem; exits 1 if there is any.
"""
import os
import re
import sys

SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "RETURN VALUE", "ERRORS", "ATTRIBUTES", "VERSIONS", "SEE ALSO"]
STRUCTS = ["bga_config", "bga_request", "bga_extent", "bga_stats", "bga_io"]
EAGAIN = ("-EAGAIN: the same request, retried after every pending transaction commits and nothing else "
          "changes, would succeed.")
ENOSPC = "-ENOSPC: it would not."


def lines_of(comment):
    out = []
    for line in comment.split("\n"):
        line = re.sub(r"^\s*/?\*+/?", "", line.rstrip())
        line = re.sub(r"\*/\s*$", "", line)
        out.append(line[1:] if line.startswith(" ") else line)
    return out


def functions(path):
    """(name, prototype, comment lines) of each BGA_EXTERN declaration, and
    the opening comment's lines.  A declaration's comment is the last one
    above it with only declarations, typedefs and blank lines between."""
    text = open(path, encoding="utf-8").read()
    tokens = []  # (kind, start, end, text)
    for m in re.finditer(r"/\*.*?\*/", text, re.S):
        tokens.append(("c", m.start(), m.end(), m.group(0)))
    for m in re.finditer(r"^BGA_EXTERN\b[^;]*;", text, re.M | re.S):
        tokens.append(("d", m.start(), m.end(), m.group(0)))
    tokens.sort(key=lambda t: t[1])
    comments = [t for t in tokens if t[0] == "c" and "SPDX" not in t[3]]
    intro = lines_of(comments[0][3]) if comments else []
    out, last, last_end = [], None, 0
    for kind, start, end, body in tokens:
        between = text[last_end:start]
        if last is not None and re.sub(r"typedef[^;]*;|struct \w+;|BGA_EXTERN[^;]*;|\s", "", between, flags=re.S):
            last = None  # something else stood between: the comment was not its
        if kind == "c":
            last = body
        else:
            proto = re.sub(r"\s+", " ", body.replace("BGA_EXTERN", "")).strip()
            name = re.search(r"(\w+)\s*\(", proto).group(1)
            out.append((name, proto, lines_of(last) if last else []))
        last_end = end
    return out, intro


def tagged(comment, tag):
    """The lines of a tagged part, or None when the comment has no such tag."""
    got, on = None, False
    for line in comment:
        st = line.strip()
        if re.match(r"^(Returns|Errors|Threads|Alias of):", st):
            on = st.startswith(tag)
            if on:
                got = [st[len(tag):].strip()]
            continue
        if on:
            got.append(line)
    return got


def first_sentence(comment):
    """Up to the first period that ends a line or has two spaces after it
    (the headers' style: "e.g. x" goes on), within the first paragraph."""
    para = "\n".join(l.strip() for l in comment).strip().split("\n\n")[0]
    m = re.search(r"[^.]\.(?=  |\n|$)", para)
    return " ".join((para[:m.end()] if m else para).split())


def unroff(s):
    s = s.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")
    s = re.sub(r"\\f[BIPR]", "", s)
    return re.sub(r"\s+", " ", s).strip()


def sections(page):
    out, cur = {}, None
    for line in page.split("\n"):
        if line.startswith(".SH "):
            cur = line[4:].strip().strip('"')
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def main():
    man, inc = sys.argv[1], sys.argv[2]
    problems = []
    headers = [os.path.join(inc, "bgalloc.h")] + sorted(
        os.path.join(inc, "bgalloc", f) for f in os.listdir(os.path.join(inc, "bgalloc"))
        if f.endswith(".h") and f != "export.h")
    # <bgalloc.h> is written in parts, the <bgalloc/NAME.h> it includes: a
    # part's types are <bgalloc.h>'s, the one include a program writes
    parts = set(re.findall(r"^#include <(bgalloc/\w+\.h)>", open(headers[0], encoding="utf-8").read(), re.M))
    defined = {}  # "struct x" -> the include line
    for h in headers:
        rel = os.path.relpath(h, inc)
        rel = "bgalloc.h" if rel in parts else rel
        for m in re.finditer(r"^(?:typedef\s+)?(struct|enum)\s+(\w+)\s*\{", open(h, encoding="utf-8").read(), re.M):
            defined[f"{m.group(1)} {m.group(2)}"] = rel
    nfuncs = 0
    comments = {}
    for h in headers:
        for name, _, comment in functions(h)[0]:
            comments[name] = comment
    for h in headers:
        funcs, intro = functions(h)
        intro_threads = any(l.strip().startswith("Threads:") for l in intro)
        for name, proto, comment in funcs:
            nfuncs += 1
            where = f"{os.path.relpath(h, inc)}: {name}"
            if not comment:
                problems.append(f"{where}: no comment")
                continue
            first = re.sub(r"\s+", " ", first_sentence(comment)).rstrip(".")
            alias = tagged(comment, "Alias of:")
            if alias is not None:  # a clearer name: the contract is the old call's
                old = alias[0].rstrip(".").rstrip("()").strip()
                if old not in comments:
                    problems.append(f"{where}: alias of {old}, which no header declares")
                    continue
                comment = comments[old]
            errors = tagged(comment, "Errors:")
            if tagged(comment, "Returns:") is None:
                problems.append(f"{where}: no \"Returns:\" in its comment")
            if errors is None:
                problems.append(f"{where}: no \"Errors:\" in its comment")
                errors = []
            if tagged(comment, "Threads:") is None and not intro_threads:
                problems.append(f"{where}: no \"Threads:\" in its comment or its header's")
            want = [m.group(1) for l in errors for m in [re.match(r"^\s{0,3}(-E[A-Z0-9]+)\b", l)] if m]
            if errors and errors[0].rstrip(".").lower() != "none" and not want:
                problems.append(f"{where}: \"Errors:\" names no errno and does not say none")
            path = os.path.join(man, "man3", name + ".3")
            if not os.path.exists(path):
                problems.append(f"{where}: no page {path}")
                continue
            sec = sections(open(path, encoding="utf-8").read())
            for s in SECTIONS:
                if s not in sec:
                    problems.append(f"{name}.3: no {s} section")
            if "NAME" in sec:
                nl = unroff(" ".join(sec["NAME"]))
                summ = nl.split(" - ", 1)[1] if " - " in nl else ""
                if not nl.startswith(name + " - ") or not summ:
                    problems.append(f"{name}.3: NAME is not '{name} - summary': {nl}")
                if "..." in nl or "\u2026" in nl:
                    problems.append(f"{name}.3: NAME is cut: {nl}")
                if summ.lower() != first.lower():
                    problems.append(f"{name}.3: NAME '{summ}' is not the comment's first sentence '{first}'")
            if "ERRORS" in sec:
                got = [unroff(l[3:]) for l in sec["ERRORS"] if l.startswith(".B ") and re.match(r"-E", unroff(l[3:]))]
                if sorted(got) != sorted(want):
                    problems.append(f"{name}.3: ERRORS lists {got}, the header {want}")
                if len(set(got)) != len(got):
                    problems.append(f"{name}.3: an errno listed twice in ERRORS: {got}")
            if "VERSIONS" in sec and not re.search(r"\d+\.\d+\.\d+", " ".join(sec["VERSIONS"])):
                problems.append(f"{name}.3: VERSIONS names no version: {' '.join(sec['VERSIONS'])}")
            if "SYNOPSIS" in sec:
                syn = " ".join(sec["SYNOPSIS"])
                for m in re.finditer(r"\b(struct|enum)\s+(\w+)", proto):
                    home = defined.get(f"{m.group(1)} {m.group(2)}")
                    if home and f"<{home}>" not in syn:
                        problems.append(f"{name}.3: SYNOPSIS lacks <{home}>, which defines {m.group(0)}")
    for s in STRUCTS:
        path = os.path.join(man, "man3", s + ".3type")
        if not os.path.exists(path):
            problems.append(f"no page {path} for struct {s}")
            continue
        sec = sections(open(path, encoding="utf-8").read())
        for want in ("NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"):
            if want not in sec:
                problems.append(f"{s}.3type: no {want} section")
        if "SYNOPSIS" in sec and f"struct {s} {{" not in unroff(" ".join(sec["SYNOPSIS"])):
            problems.append(f"{s}.3type: SYNOPSIS does not define struct {s}")
    path = os.path.join(man, "man7", "bgalloc.7")
    if not os.path.exists(path):
        problems.append(f"no page {path}")
    else:
        page = open(path, encoding="utf-8").read()
        sec = sections(page)
        for want in ("NAME", "DESCRIPTION", "PERSISTENCE GUIDE", "SEE ALSO"):
            if want not in sec:
                problems.append(f"bgalloc.7: no {want} section")
        flat = unroff(" ".join(l for l in page.split("\n") if not l.startswith(".")))
        for words in (EAGAIN, ENOSPC):
            if words not in flat:
                problems.append(f"bgalloc.7 does not say: {words}")
        guide = unroff(" ".join(sec.get("PERSISTENCE GUIDE", [])))
        for words in ("bga_store", "bga_commit", "journal", "clean close", "first store after a load"):
            if words not in guide:
                problems.append(f"bgalloc.7: the persistence guide does not mention '{words}'")
    for p in problems:
        print("man_check: " + p)
    if not nfuncs:
        print("man_check: no BGA_EXTERN function found in " + inc)
        return 1
    if not problems:
        print(f"man_check: {nfuncs} functions: every section, ERRORS as the headers say, NAME whole; "
              f"{len(STRUCTS)} struct pages; bgalloc(7)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
