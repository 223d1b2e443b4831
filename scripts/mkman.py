#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""man(3) pages from the public headers' comments, so that each contract is
written once, in the header.

    scripts/mkman.py OUTDIR include/bgalloc.h include/bgalloc/*.h

writes OUTDIR/man3/NAME.3 for every function declared BGA_EXTERN, and one
overview page per header that declares any (bgalloc.3 for <bgalloc.h>,
bgalloc_counter.3 for <bgalloc/counter.h>, ...) from the header's opening
comment.  A function's page has its prototype, the comment above it (a
comment over several declarations serves each of them, and each page then
shows them all), the definitions of the structs, enums, typedefs and
macros it names, and SEE ALSO the functions its text names.  Old pages in
OUTDIR/man3 are removed first, so a function taken out loses its page.

The parsing knows the habits of these headers, not C: declarations and
definitions at the top level, comments on lines of their own above what
they describe.  A BGA_EXTERN declaration it cannot name is an error.
"""
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_]\w*")


class Header:
    def __init__(self, path, include):
        self.path = path
        self.include = include  # as a program writes it: bgalloc.h, bgalloc/counter.h
        self.intro = []  # the opening comment's lines
        self.funcs = []  # (name, prototype, comment lines, group id)
        self.types = {}  # "struct bga_config" / "enum bga_lock_kind" / typedef name -> (comment, text)
        self.anon_enums = []  # (comment lines, text)
        self.macros = {}  # name -> text


def comment_lines(raw):
    """The text of a /* */ comment, one entry per line, indentation kept."""
    body = raw.strip()
    body = body[2:] if body.startswith("/*") else body
    body = body[:-2] if body.endswith("*/") else body
    out = []
    for line in body.split("\n"):
        s = line.rstrip()
        m = re.match(r"^\s*\* ?(.*)$", s)
        if m:
            s = m.group(1)
        else:
            s = s.strip() if not out else re.sub(r"^\s{0,3}", "", s)
        out.append(s.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def parse(path, include):
    h = Header(path, include)
    text = open(path, encoding="utf-8").read()
    lines = text.split("\n")
    i, depth = 0, 0
    last = None  # comment lines waiting for what follows
    seen_decl = False
    group = 0
    prev_extern = False
    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if prev_extern and s and "BGA_EXTERN" not in s:
            last = None  # a comment serves the run of declarations right below it
        if depth == 0 and s.startswith("/*"):
            raw = line
            while "*/" not in raw[raw.index("/*") + 2:] and i + 1 < len(lines):
                i += 1
                raw += "\n" + lines[i]
            c = comment_lines(raw)
            i += 1
            if c and c[0].startswith("SPDX-License-Identifier"):
                continue
            if not seen_decl and not h.intro and not h.funcs:
                h.intro = c  # the header's own, not the next declaration's
                continue
            last = c
            prev_extern = False
            continue
        if depth == 0 and s.startswith("#define "):
            m = re.match(r"#define\s+(\w+)", s)
            if m and not m.group(1).endswith("_H"):
                full = line
                while full.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    full += "\n" + lines[i]
                h.macros[m.group(1)] = full.strip()
            i += 1
            continue
        if depth == 0 and "BGA_EXTERN" in s:
            seen_decl = True
            decl = line
            while ";" not in decl and i + 1 < len(lines):
                i += 1
                decl += "\n" + lines[i]
            i += 1
            proto = re.sub(r"\s+", " ", decl.replace("BGA_EXTERN", "")).strip()
            m = re.search(r"(\w+)\s*\(", proto)
            if not m:
                sys.exit(f"mkman: {path}: cannot name the declaration: {proto}")
            if not prev_extern:
                group += 1
            h.funcs.append((m.group(1), proto, last or [], group))
            prev_extern = True
            continue
        if depth == 0 and re.match(r"(typedef\s+)?(struct|enum|union)\b[^;]*\{", s) or (
                depth == 0 and re.match(r"(typedef\s+)?(struct|enum|union)\s*\w*\s*$", s)
                and i + 1 < len(lines) and lines[i + 1].strip().startswith("{")):
            start = i
            d = 0
            while True:
                d += lines[i].count("{") - lines[i].count("}")
                if d <= 0 and "}" in lines[i] and ";" in lines[i]:
                    break
                i += 1
            body = "\n".join(lines[start:i + 1])
            i += 1
            seen_decl = True
            m = re.match(r"(?:typedef\s+)?(struct|enum|union)\s+(\w+)", s)
            if m:
                h.types[f"{m.group(1)} {m.group(2)}"] = (last or [], body)
            elif s.startswith("enum"):
                h.anon_enums.append((last or [], body))
            last = None
            prev_extern = False
            continue
        if depth == 0 and s.startswith("typedef"):
            decl = line
            while ";" not in decl and i + 1 < len(lines):
                i += 1
                decl += "\n" + lines[i]
            names = re.findall(r"\(\s*\*\s*(\w+)\s*\)", decl) or re.findall(r"(\w+)\s*;", decl)
            if names:
                h.types[names[0]] = ([], decl.strip())
            i += 1
            seen_decl = True
            continue
        if s.startswith("static inline"):  # not exported: not a page; its body is skipped
            d = 0
            while True:
                d += lines[i].count("{") - lines[i].count("}")
                if d <= 0 and "}" in lines[i]:
                    break
                i += 1
            i += 1
            prev_extern = False
            continue
        if s and not s.startswith("#") and s not in ("}", 'extern "C" {'):
            seen_decl = True
            if s.startswith("struct ") and s.endswith(";"):
                pass  # a forward declaration keeps the comment for what follows
            prev_extern = False
        i += 1
    return h


def esc(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def summary(comment, name):
    text = " ".join(l.strip() for l in comment if l.strip())
    if not text:
        return "part of bgalloc"
    m = re.match(r"(.+?[^.])\.(\s+[A-Z(]|$)", text)
    first = m.group(1) if m else text
    if len(first) > 90:
        first = first[:87].rsplit(" ", 1)[0] + "..."
    return first


def paragraphs(comment):
    paras, cur = [], []
    for l in comment:
        if l.strip():
            cur.append(l)
        elif cur:
            paras.append(cur)
            cur = []
    if cur:
        paras.append(cur)
    return paras


def body_roff(comment):
    out = []
    for p in paragraphs(comment):
        ind = [len(l) - len(l.lstrip()) for l in p]
        listy = any(l.lstrip().startswith("- ") or re.match(r"\s*-E[A-Z]+", l) for l in p) or len(set(ind)) > 1
        out.append(".PP")
        if listy:
            out.append(".nf")
            out += [esc(l) for l in p]
            out.append(".fi")
        else:
            out += [esc(l.strip()) for l in p]
    return out


def pre(text):
    return [".PP", ".nf", ".RS 4"] + [esc(l.replace("\t", "        ")) for l in text.split("\n")] + [".RE", ".fi"]


def overview_name(h):
    base = os.path.basename(h.include)[:-2]
    return "bgalloc" if h.include == "bgalloc.h" else "bgalloc_" + base


def th(name, version):
    return [f'.TH {name.upper()} 3 "" "bgalloc {version}" "bgalloc Library Functions"']


def related(text, h, all_types, all_macros, skip):
    """The struct/enum/typedef definitions, flag enums and macros that
    `text` names, as (title, body) pairs, each once."""
    out, done = [], set(skip)
    for m in re.finditer(r"\b(struct|enum)\s+(\w+)", text):
        key = f"{m.group(1)} {m.group(2)}"
        if key in all_types and key not in done:
            done.add(key)
            out.append((key, all_types[key]))
    for key in all_types:
        if " " not in key and re.search(rf"\b{key}\b", text) and key not in done:
            done.add(key)
            out.append((key, all_types[key]))
    return out, done


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    outdir = os.path.join(sys.argv[1], "man3")
    headers = []
    for p in sys.argv[2:]:
        inc = p.split("include/", 1)[1] if "include/" in p else os.path.basename(p)
        headers.append(parse(p, inc))
    main_h = next(h for h in headers if h.include == "bgalloc.h")
    version = re.search(r'"(.*)"', main_h.macros["BGA_VERSION_STRING"]).group(1)
    all_types, all_macros, anon = {}, {}, []
    for h in headers:
        all_types.update(h.types)
        all_macros.update(h.macros)
        anon += h.anon_enums
    funcs = {f[0]: (h, f) for h in headers for f in h.funcs}
    os.makedirs(outdir, exist_ok=True)
    for f in os.listdir(outdir):
        if f.endswith(".3"):
            os.unlink(os.path.join(outdir, f))

    for h in headers:
        if not h.funcs:
            continue
        ov = overview_name(h)
        for name, proto, comment, gid in h.funcs:
            members = [f for f in h.funcs if f[3] == gid and f[2] is comment]
            if not members:
                members = [(name, proto, comment, gid)]
            text = "\n".join([proto] + [m[1] for m in members] + comment)
            page = th(name, version)
            page += [".SH NAME", f"{esc(name)} \\- {esc(summary(comment, name))}", ".SH SYNOPSIS", ".nf",
                     f".B #include <{h.include}>", ".PP"]
            for m in members:
                page.append(esc(m[1]))
            page += [".fi", ".PP", "Link with \\fI\\-lbgalloc\\fP (\\fBpkg\\-config \\-\\-libs bgalloc\\fP)."]
            page.append(".SH DESCRIPTION")
            page += body_roff(comment) if comment else [".PP", "No contract is written for it yet."]
            defs, done = related(text, h, all_types, all_macros, set())
            # the structs' own fields name more types (struct bga_rsv, enums)
            for _, (_, body) in list(defs):
                more, done = related(body, h, all_types, all_macros, done)
                defs += more
            flag_enums = []
            for c, body in anon:
                ctext = " ".join(c)
                if re.search(rf"\b{name}\b", ctext) or any(
                        re.search(rf"\b{k.split()[-1]}\.", ctext) for k, _ in defs if k.startswith("struct ")):
                    flag_enums.append((c, body))
            used = "\n".join([text] + [b for _, (_, b) in defs] + [b for _, b in flag_enums])
            macros = [m for m in all_macros if re.search(rf"\b{m}\b", used) and m != name]
            if defs or flag_enums or macros:
                page.append(".SH DEFINITIONS")
                for key, (c, body) in defs + [(None, fe) for fe in flag_enums]:
                    page += body_roff(c)
                    page += pre(body)
                if macros:
                    page += pre("\n".join(all_macros[m] for m in macros))
            see = []
            for w in sorted(set(re.findall(r"\b(bga_\w+)\b", used))):
                if w in funcs and w != name and w not in [m[0] for m in members]:
                    see.append(w)
            page.append(".SH SEE ALSO")
            refs = [f".BR {ov} (3)"] + [f".BR {esc(w)} (3)" for w in see] + [f".BR {esc(m[0])} (3)"
                                                                               for m in members if m[0] != name]
            page += [r + "," for r in refs[:-1]] + refs[-1:]
            with open(os.path.join(outdir, name + ".3"), "w", encoding="utf-8") as out:
                out.write("\n".join(page) + "\n")

        page = th(ov, version)
        what = "a block and extent allocator" if ov == "bgalloc" else summary(h.intro, ov)
        page += [".SH NAME", f"{esc(ov)} \\- {esc(what)}", ".SH SYNOPSIS", ".nf",
                 f".B #include <{h.include}>", ".fi", ".SH DESCRIPTION"]
        page += body_roff(h.intro)
        if ov == "bgalloc":
            page += [".PP", f"This page is of bgalloc {esc(version)}; the version a program runs against is",
                     ".BR bga_version (3)."]
        page.append(".SH FUNCTIONS")
        for name, proto, comment, gid in h.funcs:
            page += [".TP", f".BR {esc(name)} (3)", esc(summary(comment, name))]
        others = [overview_name(o) for o in headers if o is not h and o.funcs]
        page.append(".SH SEE ALSO")
        refs = [f".BR {o} (3)" for o in others]
        page += [r + "," for r in refs[:-1]] + refs[-1:]
        with open(os.path.join(outdir, ov + ".3"), "w", encoding="utf-8") as out:
            out.write("\n".join(page) + "\n")


if __name__ == "__main__":
    main()
