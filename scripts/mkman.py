#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""man pages from the public headers' comments, so that each contract is
written once, in the header.

    scripts/mkman.py OUTDIR [--srcdir DIR] include/bgalloc.h include/bgalloc/*.h

writes, from the headers alone and the source tree's CHANGELOG.md,
docs/PERSISTENCE.md and tests/abi/include-0.1.0 (the 0.1.0 headers):

  OUTDIR/man3/NAME.3     every function declared BGA_EXTERN;
  OUTDIR/man3/NAME.3type struct bga_config, bga_request, bga_extent,
                         bga_stats and bga_io (STRUCT_PAGES);
  OUTDIR/man3/bgalloc.3, bgalloc_counter.3, ...
                         one overview per header, from its opening comment;
  OUTDIR/man7/bgalloc.7  the overview: <bgalloc.h>'s opening comment and
                         the persistence guide, docs/PERSISTENCE.md.

<bgalloc.h> is written in parts, the <bgalloc/NAME.h> headers it includes:
what they declare is <bgalloc.h>'s, in its order, and their pages say
#include <bgalloc.h>.

A function's comment is its page.  The comment opens with a sentence that
is the page's NAME line, whole; then its description; then its contract in
three tagged parts, each starting a line of its own:

  Returns: what a success returns               -> RETURN VALUE
  Errors: none.  | Errors: then one line per errno,
   -EINVAL  when, continued on indented lines   -> ERRORS
  Threads: who may call it, what it waits on    -> ATTRIBUTES

A clearer name for an old call says "Alias of: OLD." instead, and its page
takes RETURN VALUE, ERRORS and ATTRIBUTES from OLD's comment.

A header's opening comment may hold a "Threads:" paragraph that serves each
of its functions without one.  VERSIONS comes from the source tree: 0.1.0
when the 0.1.0 headers declare the function, else the oldest release of
CHANGELOG.md whose section names it.  SYNOPSIS includes every header that
defines a struct or enum the prototype names.  Old pages are removed first,
so a function taken out loses its page.

The parsing knows the habits of these headers, not C: declarations and
definitions at the top level, comments on lines of their own above what
they describe.  A BGA_EXTERN declaration it cannot name is an error.
tests/system/man_check.py checks the pages against the headers with a
parser of its own.
"""
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_]\w*")
PERSISTENCE_GUIDE = os.path.join("docs", "PERSISTENCE.md")  # bgalloc(7)'s PERSISTENCE GUIDE, whole


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


def parts_of(path):
    """The headers <bgalloc.h> is written in: the <bgalloc/NAME.h> it
    includes, in its order."""
    return re.findall(r"^#include <(bgalloc/\w+\.h)>", open(path, encoding="utf-8").read(), re.M)


def merge_parts(main_h, headers):
    """Fold the parts of <bgalloc.h> into it: what they declare is
    <bgalloc.h>'s, in the order it includes them, and their pages say
    #include <bgalloc.h>; a part's opening comment is its own, not an
    overview page's."""
    by_inc = {h.include: h for h in headers}
    for inc in parts_of(main_h.path):
        part = by_inc.get(inc)
        if part is None:
            continue
        base = max((f[3] for f in main_h.funcs), default=0)
        main_h.funcs += [(n, p, c, g + base) for n, p, c, g in part.funcs]
        main_h.types.update(part.types)
        main_h.anon_enums += part.anon_enums
        main_h.macros.update(part.macros)
        headers.remove(part)


def esc(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


TAGS = ("Returns:", "Errors:", "Threads:", "Alias of:")
# an entry of "Errors:": the errno at the start of its line (indented at
# most 3 spaces); deeper lines continue the entry above
ERRNO_LINE = re.compile(r"^\s{0,3}(-E[A-Z0-9]+)\b\s*(.*)$")
STRUCT_PAGES = ["bga_config", "bga_request", "bga_extent", "bga_stats", "bga_io"]


class Contract:
    def __init__(self):
        self.desc = []     # the description's lines
        self.returns = []  # the text after "Returns:"
        self.errors = []   # (errno, [lines]) in order
        self.no_errors = False  # "Errors: none."
        self.threads = []
        self.alias = None  # "Alias of: NAME.": the contract is NAME's


def contract(comment):
    """Split a function's comment into its description and tagged parts."""
    c = Contract()
    part = None
    for line in comment:
        st = line.strip()
        tag = next((t for t in TAGS if st.startswith(t)), None)
        if tag:
            part = tag
            rest = st[len(tag):].strip()
            if tag == "Returns:":
                c.returns.append(rest)
            elif tag == "Threads:":
                c.threads.append(rest)
            elif tag == "Alias of:":
                c.alias = rest.rstrip(".").rstrip("()").strip()
            elif rest.rstrip(".").lower() == "none":
                c.no_errors = True
            elif rest:
                m = ERRNO_LINE.match(rest)
                c.errors.append((m.group(1), [m.group(2)]) if m else ("", [rest]))
            continue
        if part is None:
            c.desc.append(line)
        elif part == "Returns:":
            c.returns.append(st)
        elif part == "Threads:":
            c.threads.append(st)
        else:
            m = ERRNO_LINE.match(line)
            if m:
                c.errors.append((m.group(1), [m.group(2)]))
            elif c.errors and st:
                c.errors[-1][1].append(st)
    while c.desc and not c.desc[-1].strip():
        c.desc.pop()
    return c


def intro_threads(intro):
    """A header's "Threads:" paragraph, which serves its functions."""
    out, on = [], False
    for line in intro:
        st = line.strip()
        if st.startswith("Threads:"):
            on = True
            out.append(st[len("Threads:"):].strip())
        elif on and st:
            out.append(st)
        elif on:
            break
    return out


def summary(comment):
    """The comment's first sentence, whole: the NAME line, never cut.  A
    sentence ends at a period followed by two spaces or by the end of its
    line (the headers' style; "e.g. x" keeps going)."""
    words = []
    for l in comment:
        st = l.strip()
        if not st:
            if words:
                break
            continue
        m = re.search(r"[^.]\.(  |$)", st)
        if m:
            words.append(st[:m.start() + 1])
            break
        words.append(st)
    text = " ".join(words)
    if not text:
        return "part of bgalloc"
    # man's NAME line starts in lower case ("bga_free \- free a range")
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return text


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
        listy = any(l.lstrip().startswith("- ") or re.match(r"\s*-E[A-Z]+\s\s", l) for l in p) or len(set(ind)) > 1
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


def th(name, section, version, title="bgalloc Library Functions"):
    return [f'.TH {name.upper()} {section} "" "bgalloc {version}" "{title}"']


def related(text, all_types, skip):
    """The struct/enum/typedef definitions that `text` names, as (title,
    body) pairs, each once."""
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


class Versions:
    """Since which release each function exists: 0.1.0 for what the 0.1.0
    headers declare, else the oldest release section of CHANGELOG.md that
    names it (in backquotes); the [Unreleased] section counts as the
    header's version while CHANGELOG.md has no section of that version,
    and as the release after it once it has."""

    def __init__(self, srcdir, current):
        self.old = set()
        inc = os.path.join(srcdir, "tests", "abi", "include-0.1.0")
        for root, _, files in os.walk(inc):
            for f in files:
                if f.endswith(".h"):
                    text = open(os.path.join(root, f), encoding="utf-8").read()
                    self.old |= set(re.findall(r"BGA_EXTERN[^;(]*?\b(\w+)\s*\(", text, re.S))
        self.sections = []  # (version, text), newest first
        path = os.path.join(srcdir, "CHANGELOG.md")
        if os.path.exists(path):
            cur = None
            for line in open(path, encoding="utf-8"):
                m = re.match(r"^## \[([^\]]+)\]", line)
                if m:
                    v = m.group(1)
                    cur = [("unreleased" if v.lower() == "unreleased" else v), []]
                    self.sections.append(cur)
                elif cur:
                    cur[1].append(line)
        self.current = current

    def since(self, name):
        if name in self.old:
            return "0.1.0"
        found = None
        for v, lines in self.sections:  # newest first: the last match is the oldest
            if re.search(rf"`{name}`|`{name}\(", "".join(lines)):
                found = v
        if found == "unreleased":
            # the header's version, until a section of CHANGELOG.md is
            # released under it; then the next one's
            if any(v == self.current for v, _ in self.sections):
                return f"the first release after {self.current}"
            return f"{self.current}, not yet released"
        return found


def versions_roff(name, since):
    if since is None:
        return [".PP", f"{esc(name)}() is not named in CHANGELOG.md yet."]
    if re.match(r"^[0-9.]+$", since):
        return [".PP", f"{esc(name)}() first appeared in bgalloc {esc(since)}."]
    return [".PP", f"{esc(name)}() first appears in bgalloc {esc(since)} (CHANGELOG.md, [Unreleased])."]


def md_roff(lines):
    """The guide's markdown, as it uses it: paragraphs, "- " lists
    (nested by indentation), numbered lists, ``` blocks, `code`, **bold**,
    and ### headings as .SS."""
    out, in_code, para = [], False, []

    def inline(t):
        t = esc(t)
        t = re.sub(r"\*\*(.+?)\*\*", r"\\fB\1\\fP", t)
        t = re.sub(r"`([^`]+)`", r"\\fI\1\\fP", t)
        return t

    def flush():
        if para:
            out.extend(para)
            para.clear()

    for raw in lines:
        line = raw.rstrip("\n")
        if line.startswith("```"):
            flush()
            if in_code:
                out += [".fi", ".RE"]
            else:
                out += [".PP", ".RS 4", ".nf"]
            in_code = not in_code
            continue
        if in_code:
            out.append(esc(line.replace("\t", "        ")))
            continue
        st = line.strip()
        if not st:
            flush()
            continue
        if line.startswith("### "):
            flush()
            out.append(".SS " + inline(line[4:].strip()))
            continue
        m = re.match(r"^(\s*)(- |\d+\. )(.*)$", line)
        if m:
            flush()
            depth = len(m.group(1)) // 2
            bullet = "\\(bu" if m.group(2) == "- " else m.group(2).strip()
            para.append(f".IP {bullet} {4 + 4 * depth}")
            para.append(inline(m.group(3)))
            continue
        if not para:
            para.append(".PP")
        para.append(inline(st))
    flush()
    return out


def doc_page(srcdir, rel):
    """The lines of the markdown page REL under srcdir, its "# " title and
    its anchor lines (<a id="..."></a>, for links into the page) left out."""
    path = os.path.join(srcdir, rel)
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path, encoding="utf-8"):
        if not out and (line.startswith("# ") or not line.strip()):
            continue
        if re.match(r'^\s*<a id="[^"]*"></a>\s*$', line):
            continue
        out.append(line)
    return out


def see_also(refs):
    return [".SH SEE ALSO"] + [r + "," for r in refs[:-1]] + refs[-1:]


def write(path, page):
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(page) + "\n")


def main():
    args = sys.argv[1:]
    srcdir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(args) >= 2 and args[1] == "--srcdir":
        srcdir = args[2]
        del args[1:3]
    if len(args) < 2:
        sys.exit(__doc__)
    outdir = os.path.join(args[0], "man3")
    out7 = os.path.join(args[0], "man7")
    headers = []
    for p in args[1:]:
        inc = p.split("include/", 1)[1] if "include/" in p else os.path.basename(p)
        headers.append(parse(p, inc))
    main_h = next(h for h in headers if h.include == "bgalloc.h")
    merge_parts(main_h, headers)
    version = re.search(r'"(.*)"', main_h.macros["BGA_VERSION_STRING"]).group(1)
    vers = Versions(srcdir, version)
    all_types, all_macros, anon, type_home = {}, {}, [], {}
    for h in headers:
        all_types.update(h.types)
        all_macros.update(h.macros)
        anon += h.anon_enums
        for k in h.types:
            type_home[k] = h.include
    funcs = {f[0]: (h, f) for h in headers for f in h.funcs}
    for d in (outdir, out7):
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if re.search(r"\.(3|3type|7)$", f):
                os.unlink(os.path.join(d, f))

    for h in headers:
        if not h.funcs:
            continue
        ov = overview_name(h)
        default_threads = intro_threads(h.intro)
        for name, proto, comment, gid in h.funcs:
            members = [f for f in h.funcs if f[3] == gid and f[2] is comment]
            if not members:
                members = [(name, proto, comment, gid)]
            c = contract(comment)
            if c.alias:
                if c.alias not in funcs:
                    sys.exit(f"mkman: {name}: alias of {c.alias}, which no header declares")
                t = contract(funcs[c.alias][1][2])
                c.returns, c.errors, c.no_errors = t.returns, t.errors, t.no_errors
                c.threads = c.threads or t.threads
            text = "\n".join([proto] + [m[1] for m in members] + comment)
            # every header that defines a type the prototypes name
            incs = [h.include]
            for m in members:
                for t in re.finditer(r"\b(struct|enum)\s+(\w+)", m[1]):
                    home = type_home.get(f"{t.group(1)} {t.group(2)}")
                    if home and home not in incs:
                        incs.append(home)
            page = th(name, 3, version)
            page += [".SH NAME", f"{esc(name)} \\- {esc(summary(comment))}", ".SH SYNOPSIS", ".nf"]
            page += [f".B #include <{i}>" for i in incs] + [".PP"]
            for m in members:
                page.append(esc(m[1]))
            page += [".fi", ".PP", "Link with \\fI\\-lbgalloc\\fP (\\fBpkg\\-config \\-\\-libs bgalloc\\fP)."]
            page.append(".SH DESCRIPTION")
            page += body_roff(c.desc) if c.desc else [".PP", "No contract is written for it yet."]
            page.append(".SH RETURN VALUE")
            ret = " ".join(l for l in c.returns if l)
            if ret:
                page += [".PP", esc(f"{name}() returns {ret}")]
            else:
                page += [".PP", "Not stated in the header."]
            if c.errors:
                page += [".PP", "On failure it returns a negative errno, as ERRORS says, and changes nothing"
                         " the API shows unless ERRORS says otherwise."]
            page.append(".SH ERRORS")
            if c.errors:
                for errno, lines in c.errors:
                    page += [".TP", f".B {esc(errno)}" if errno else ".B (other)"]
                    page += [esc(l) for l in lines if l]
            else:
                page += [".PP", "None: the function does not fail." if c.no_errors else "Not stated in the header."]
            page.append(".SH ATTRIBUTES")
            threads = " ".join(l for l in (c.threads or default_threads) if l)
            page += [".TP", "Thread safety and waits",
                     esc(threads[0].upper() + threads[1:]) if threads else "Not stated in the header."]
            page.append(".SH VERSIONS")
            page += versions_roff(name, vers.since(name))
            defs, done = related(text, all_types, set())
            for _, (_, body) in list(defs):  # the structs' own fields name more types
                more, done = related(body, all_types, done)
                defs += more
            flag_enums = []
            for ec, body in anon:
                ctext = " ".join(ec)
                if re.search(rf"\b{name}\b", ctext) or any(
                        re.search(rf"\b{k.split()[-1]}\.", ctext) for k, _ in defs if k.startswith("struct ")):
                    flag_enums.append((ec, body))
            used = "\n".join([text] + [b for _, (_, b) in defs] + [b for _, b in flag_enums])
            macros = [m for m in all_macros if re.search(rf"\b{m}\b", used) and m != name]
            if defs or flag_enums or macros:
                page.append(".SH DEFINITIONS")
                for key, (dc, body) in defs + [(None, fe) for fe in flag_enums]:
                    page += body_roff(dc)
                    page += pre(body)
                if macros:
                    page += pre("\n".join(all_macros[m] for m in macros))
            see = []
            for w in sorted(set(re.findall(r"\b(bga_\w+)\b", used))):
                if w in funcs and w != name and w not in [m[0] for m in members]:
                    see.append(w)
            refs = [".BR bgalloc (7)", f".BR {ov} (3)"] + [f".BR {esc(w)} (3)" for w in see]
            refs += [f".BR {esc(m[0])} (3)" for m in members if m[0] != name]
            refs += [f".BR {esc(k.split()[1])} (3type)" for k, _ in defs
                     if k.startswith("struct ") and k.split()[1] in STRUCT_PAGES]
            page += see_also(refs)
            write(os.path.join(outdir, name + ".3"), page)

        page = th(ov, 3, version)
        what = "a block and extent allocator" if ov == "bgalloc" else summary(h.intro)
        page += [".SH NAME", f"{esc(ov)} \\- {esc(what)}", ".SH SYNOPSIS", ".nf",
                 f".B #include <{h.include}>", ".fi", ".SH DESCRIPTION"]
        page += body_roff(h.intro)
        if ov == "bgalloc":
            page += [".PP", f"This page is of bgalloc {esc(version)}; the version a program runs against is",
                     ".BR bga_version (3).", "The model, the errors and the persistence guide are in",
                     ".BR bgalloc (7)."]
        page.append(".SH FUNCTIONS")
        for name, proto, comment, gid in h.funcs:
            page += [".TP", f".BR {esc(name)} (3)", esc(summary(comment))]
        others = [overview_name(o) for o in headers if o is not h and o.funcs]
        page += see_also([".BR bgalloc (7)"] + [f".BR {o} (3)" for o in others])
        write(os.path.join(outdir, ov + ".3"), page)

    # the public structs, one page each
    for sname in STRUCT_PAGES:
        key = f"struct {sname}"
        if key not in all_types:
            sys.exit(f"mkman: {key} is not defined in the headers")
        sc, body = all_types[key]
        page = th(sname, "3type", version)
        page += [".SH NAME", f"{esc(sname)} \\- {esc(summary(sc) if sc else 'a public struct of bgalloc')}",
                 ".SH SYNOPSIS", ".nf", f".B #include <{type_home[key]}>", ".fi"]
        page += pre(body)
        page.append(".SH DESCRIPTION")
        page += body_roff(sc) if sc else [".PP", "No comment is written for it yet."]
        page += [".PP", "Each field's comment in the definition above gives its meaning, its range and"
                 " its default."]
        users = sorted(n for n, (_, f) in funcs.items() if re.search(rf"\bstruct\s+{sname}\b", f[1]))
        page.append(".SH VERSIONS")
        page += [".PP", "The struct grows only at its end (docs/ABI.md)."]
        page += see_also([".BR bgalloc (7)"] + [f".BR {esc(u)} (3)" for u in users])
        write(os.path.join(outdir, sname + ".3type"), page)

    # bgalloc(7): the overview and the persistence guide
    page = th("bgalloc", 7, version, "bgalloc Overview")
    page += [".SH NAME", "bgalloc \\- a block and extent allocator for file systems and storage engines in user space",
             ".SH SYNOPSIS", ".nf", ".B #include <bgalloc.h>", ".fi", ".PP",
             "Link with \\fI\\-lbgalloc\\fP (\\fBpkg\\-config \\-\\-libs bgalloc\\fP).", ".SH DESCRIPTION"]
    page += body_roff(main_h.intro)
    guide = doc_page(srcdir, PERSISTENCE_GUIDE)
    if not guide:
        sys.exit(f"mkman: {PERSISTENCE_GUIDE} is missing or empty: bgalloc(7) needs its persistence guide")
    page.append(".SH PERSISTENCE GUIDE")
    page += md_roff(guide)
    page += see_also([f".BR {overview_name(h)} (3)" for h in headers if h.funcs] +
                     [f".BR {s} (3type)" for s in STRUCT_PAGES] +
                     [".BR bga_store (3)", ".BR bga_load (3)", ".BR bga_commit (3)", ".BR bga-inspect (1)"])
    write(os.path.join(out7, "bgalloc.7"), page)


if __name__ == "__main__":
    main()
