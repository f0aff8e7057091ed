#!/usr/bin/env python3
"""The tree keeps its design: the checks `.ci/run` runs on `src/` and `docs/DESIGN.md`.

1. No import circle: the file-level arrows (`use crate::…`, `use super::…`, `use
   self::…`, a child module named in a `use`, and `crate::…` / `super::…` paths in code,
   outside tests) have no cycle, and neither do the arrows between the crate's top-level
   modules (a folder and the files beside it). A module's arrows to its own descendants
   are not counted: a face names its children.
2. No file over 700 lines outside tests (an inline `#[cfg(test)] mod` at the end is not
   counted), unless at least half of its lines are docs (`///`, `//!`): a documented face.
3. Every invariant ID of `docs/DESIGN.md`'s index is stated ("- ID" or "ID (…):" in the
   `//!` notes) in the file its row names, and no ID is stated in two files.
4. Every file of `src/` is named in `docs/DESIGN.md`'s module map.
5. No function over 80 lines outside tests (from its `fn` line to its closing brace): a
   longer one is split by decision, as the worker's run and the waiters' wait are.
6. No `crate::Name` outside `lib.rs` and tests for a name `lib.rs` re-exports (`pub use`):
   the crate's own code names an item by its home module (`crate::future::CancelHandle`),
   so its arrows are the real ones (rule 1 sees `crate::Name` as an arrow to `lib.rs`).
7. A module map row names exactly the invariant IDs its file states (`; H1, H2` or
   `CR1-CR4`); an ID stated elsewhere is named with its file, inside parentheses
   (`(E1, E2 of mod.rs)`), and is not counted.

Usage: python3 scripts/tree_check.py [ROOT]: prints what it finds; exits 1 if anything.
       python3 scripts/tree_check.py --self-test [ROOT]: plants one change per check in a
       copy of the tree (an import from queue/ into pool/, a circle between two files of
       queue/, a file of 700 more lines, an invariant bullet removed, an ID stated in a
       second file, a file the map does not name, a function of 80 more lines, a flat
       path, an ID a map row leaves out, an ID a map row names that its file does not
       state) and exits 1 unless each is reported.
Standard library only.
"""

import os
import re
import sys

MAX_LINES = 700
MAX_FN_LINES = 80
FN = re.compile(r"\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")
TEST_FILE = re.compile(r"(^|/)(tests|loom[^/]*)\.rs$")


def modules(src):
    """Maps each module path (a tuple) to its file, relative to `src`."""
    out = {}
    for d, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(d, f), src).replace(os.sep, "/")
            parts = rel[:-3].split("/")
            if parts == ["lib"]:
                out[()] = rel
            elif parts[-1] == "mod":
                out[tuple(parts[:-1])] = rel
            else:
                out[tuple(parts)] = rel
    return out


def code_lines(text):
    """The file's lines outside test modules, test-only `use` lines and comments."""
    lines = text.split("\n")
    keep = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"\s*#\[cfg\((all\()?(test|loom)\b", line):
            j = i + 1
            while j < len(lines) and lines[j].strip().startswith("#["):
                j += 1
            nxt = lines[j] if j < len(lines) else ""
            m = re.match(r"(\s*)(pub(\([^)]*\))?\s+)?mod\s+\w+\s*(\{|;)", nxt)
            if m:
                if m.group(4) == "{":
                    indent = m.group(1)
                    k = j + 1
                    while k < len(lines) and lines[k] != indent + "}":
                        k += 1
                    i = k + 1
                else:
                    i = j + 1
                continue
            if re.match(r"\s*(pub(\([^)]*\))?\s+)?use\b", nxt):
                k = j
                while k < len(lines) and ";" not in lines[k]:
                    k += 1
                i = k + 1
                continue
        stripped = re.sub(r"//.*", "", line)
        keep.append(stripped)
        i += 1
    return "\n".join(keep)


def expand(tree):
    """`a::{b, c::{d, e}}` -> [[a, b], [a, c, d], [a, c, e]]."""
    tree = tree.strip()
    depth = 0
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                head = [s for s in tree[:i].split("::") if s]
                inner = tree[i + 1 : tree.rindex("}")]
                out = []
                for part in split_top(inner):
                    for tail in expand(part):
                        out.append(head + tail)
                return out
            depth += 1
        elif ch == "}":
            depth -= 1
    path = re.sub(r"\s+as\s+\w+$", "", tree)
    return [[s.strip() for s in path.split("::") if s.strip()]]


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def resolve(segments, here, mods):
    """The module a path names (its longest module prefix), or None."""
    if not segments:
        return None
    first = segments[0]
    if first == "crate":
        base, rest = (), segments[1:]
    elif first in ("super", "self"):
        base, rest = here, segments
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    elif here + (first,) in mods:
        base, rest = here, segments
    else:
        return None  # another crate, or a name in scope
    best = base if base in mods else None
    cur = base
    for s in rest:
        cur = cur + (s,)
        if cur in mods:
            best = cur
        else:
            break
    return best


def arrows(src, mods):
    """(from module, to module) pairs, outside tests."""
    out = set()
    for mod, rel in mods.items():
        if TEST_FILE.search(rel):
            continue
        text = code_lines(open(os.path.join(src, rel), encoding="utf-8").read())
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            for segs in expand(m.group(1)):
                if segs and segs[-1] == "*":
                    segs = segs[:-1]
                target = resolve(segs, mod, mods)
                if target is not None:
                    out.add((mod, target))
        for m in re.finditer(r"(?<![\w:])((?:crate|super)(?:::\w+)+)", text):
            target = resolve(m.group(1).split("::"), mod, mods)
            if target is not None:
                out.add((mod, target))
    # A face naming its descendants, and a module naming itself, are not arrows.
    return {(a, b) for a, b in out if b[: len(a)] != a}


def cycles(edges):
    """The strongly connected components of more than one node (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def name(mod, mods):
    return "src/" + mods[mod]


def check_circles(src, mods):
    found = []
    edges = arrows(src, mods)
    for comp in cycles(edges):
        members = set(comp)
        ties = sorted(
            f"{name(a, mods)} -> {name(b, mods)}" for a, b in edges if a in members and b in members
        )
        found.append("IMPORT CIRCLE between files: " + "; ".join(ties))
    top = {(a[:1], b[:1]) for a, b in edges if a[:1] != b[:1] and a[:1] and b[:1]}
    for comp in cycles(top):
        members = set(comp)
        ties = sorted(
            f"{name(a, mods)} -> {name(b, mods)}"
            for a, b in edges
            if a[:1] in members and b[:1] in members and a[:1] != b[:1] and a[:1] and b[:1]
        )
        found.append(
            "IMPORT CIRCLE between top-level modules "
            + ", ".join("/".join(c) for c in comp)
            + ": "
            + "; ".join(ties)
        )
    return found


def outside_tests(path):
    """The file's lines before its test module (an inline `#[cfg(test)] mod` at the end)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for i, line in enumerate(lines):
        if re.match(r"#\[cfg\((all\()?test\b", line):
            rest = [l for l in lines[i + 1 : i + 4] if not l.startswith("#[")]
            if rest and re.match(r"(pub(\([^)]*\))?\s+)?mod\s+\w+", rest[0]):
                return lines[:i]
    return lines


def check_sizes(src, mods):
    found = []
    for rel in sorted(mods.values()):
        if TEST_FILE.search(rel):
            continue
        counted = outside_tests(os.path.join(src, rel))
        docs = sum(1 for l in counted if re.match(r"\s*//[/!]", l))
        if len(counted) > MAX_LINES and 2 * docs < len(counted):
            found.append(
                f"TOO LONG: src/{rel} has {len(counted)} lines outside tests "
                f"({docs} of docs; the limit is {MAX_LINES}, or half of it docs)"
            )
    return found


def check_functions(src, mods):
    """Rule 5: every function outside tests, from its `fn` line to its closing brace
    (braces in comments, strings and character literals not counted)."""
    found = []
    for rel in sorted(mods.values()):
        if TEST_FILE.search(rel):
            continue
        lines = outside_tests(os.path.join(src, rel))
        for i, line in enumerate(lines):
            m = FN.match(line)
            if not m:
                continue
            depth, opened, j = 0, False, i
            while j < len(lines):
                code = re.sub(r"//.*", "", lines[j])
                code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
                code = re.sub(r"'(\\.|[^'\\])'", "''", code)
                for ch in code:
                    if ch == "{":
                        depth, opened = depth + 1, True
                    elif ch == "}":
                        depth -= 1
                if (opened and depth == 0) or (not opened and code.rstrip().endswith(";")):
                    break
                j += 1
            n = j - i + 1
            if opened and n > MAX_FN_LINES:
                found.append(
                    f"TOO LONG A FUNCTION: {m.group(6)} in src/{rel}:{i + 1} has {n} lines "
                    f"(the limit is {MAX_FN_LINES})"
                )
    return found


def reexports(src):
    """The names `lib.rs` re-exports with `pub use`."""
    lib = code_lines(open(os.path.join(src, "lib.rs"), encoding="utf-8").read())
    names = set()
    for m in re.finditer(r"^pub use ([^;]+);", lib, re.M):
        for segs in expand(m.group(1)):
            names.add(segs[-1])
    return names


def check_flat_paths(src, mods):
    """Rule 6: `crate::Name` (a path or a `use`) for a re-exported `Name`, outside lib.rs."""
    names = reexports(src)
    found = []
    for rel in sorted(mods.values()):
        if rel == "lib.rs" or TEST_FILE.search(rel):
            continue
        text = code_lines(open(os.path.join(src, rel), encoding="utf-8").read())
        hits = set()
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            for segs in expand(m.group(1)):
                if len(segs) == 2 and segs[0] == "crate" and segs[1] in names:
                    hits.add(segs[1])
        for m in re.finditer(r"(?<![\w:])crate::([A-Z]\w*)", text):
            if m.group(1) in names:
                hits.add(m.group(1))
        for name in sorted(hits):
            found.append(
                f"FLAT PATH: src/{rel} names crate::{name}, a re-export of lib.rs "
                "(name it by its home module)"
            )
    return found


def check_invariants(root, src, mods):
    design = open(os.path.join(root, "docs/DESIGN.md"), encoding="utf-8").read()
    start = design.index("## Invariants (index)")
    idx = design[start:]
    nxt = idx.find("\n## ", 5)
    idx = idx[: nxt if nxt > 0 else len(idx)]
    rows = re.findall(r"^\| ([A-Z]+\d+(?:[–-][A-Z]*\d+)?) \| ([\w/]+\.rs) \|", idx, re.M)
    found = []
    seen = {}
    for tok, f in rows:
        if tok in seen:
            found.append(f"ONE ID, TWO ROWS in docs/DESIGN.md: {tok} ({seen[tok]}, {f})")
        seen[tok] = f
    stated = {}
    for rel, ids in stated_ids(src, mods).items():
        for ident in ids:
            stated.setdefault(ident, set()).add(rel)
    for tok, f in rows:
        p, a, b = re.match(r"([A-Z]+)(\d+)(?:[–-][A-Z]*(\d+))?$", tok).groups()
        for i in range(int(a), int(b or a) + 1):
            ident = f"{p}{i}"
            if f not in stated.get(ident, set()):
                found.append(f"NOT STATED: {ident} in src/{f} (docs/DESIGN.md's index names it)")
    for ident, files in sorted(stated.items()):
        if len(files) > 1:
            found.append(f"ONE ID, {len(files)} FILES: {ident}: " + ", ".join(sorted("src/" + f for f in files)))
    listed = set()
    for tok, _ in rows:
        p, a, b = re.match(r"([A-Z]+)(\d+)(?:[–-][A-Z]*(\d+))?$", tok).groups()
        listed.update(f"{p}{i}" for i in range(int(a), int(b or a) + 1))
    for ident, files in sorted(stated.items()):
        if ident not in listed:
            found.append(f"NOT IN THE INDEX: {ident}, stated in " + ", ".join(sorted("src/" + f for f in files)))
    return found


def check_map(root, mods):
    """Every file of `src/` is named in docs/DESIGN.md's module map (a folder's `mod.rs`
    by its folder, the others by their file name)."""
    design = open(os.path.join(root, "docs/DESIGN.md"), encoding="utf-8").read()
    start = design.index("## Module map")
    block = design[start : design.index("```", design.index("```text", start) + 7)]
    names = set(re.findall(r"[\w./-]+", block))
    found = []
    for rel in sorted(mods.values()):
        parts = rel.split("/")
        if parts[-1] == "mod.rs":
            want = [parts[-2] + "/", "/".join(parts[-2:])]
        else:
            want = [parts[-1], "/".join(parts[-2:])]
        if not any(w in names or any(n.endswith("/" + w) for n in names) for w in want):
            found.append(f"NOT IN THE MAP: src/{rel} (docs/DESIGN.md, \"Module map\")")
    return found


def stated_ids(src, mods):
    """{file: the IDs its `//!` notes state as `- ID`}, outside tests."""
    stated = {}
    for rel in mods.values():
        if TEST_FILE.search(rel):
            continue
        notes = "\n".join(
            l.strip()[3:] for l in open(os.path.join(src, rel), encoding="utf-8") if l.strip().startswith("//!")
        )
        for m in re.finditer(r"^\s*- ([A-Z]{1,3}\d+)\b(?: \([^)]*\))?:?", notes, re.M):
            stated.setdefault(rel, set()).add(m.group(1))
    return stated


def map_rows(root):
    """The module map's rows: (path under src/, the row's description), for the rows of one
    file (a folder's row and a row of several test files are left out)."""
    design = open(os.path.join(root, "docs/DESIGN.md"), encoding="utf-8").read()
    start = design.index("```text", design.index("## Module map")) + len("```text\n")
    block = design[start : design.index("```", start)]
    rows, stack = [], []
    for line in block.split("\n"):
        m = re.match(r"^(\s*)(\S+)(.*)$", line)
        if not m:
            continue
        indent, tok = len(m.group(1)), m.group(2)
        if rows and indent > rows[-1][0] + 6:
            rows[-1][3].append(m.group(0).strip())  # a description's next line
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        folder = "/".join(f for _, f in stack[1:])  # below `src/`
        if tok.endswith("/"):
            stack.append((indent, tok.rstrip("/")))
        rows.append([indent, folder, tok, [m.group(3).strip()]])
    out = []
    for _, folder, tok, desc in rows:
        if tok.endswith("/") or tok.endswith(","):
            continue
        out.append(((folder + "/" if folder else "") + tok, " ".join(desc)))
    return out


def ids_in(text):
    """The invariant IDs a description names (`E1`, `CR1-CR4`, `I4–I8`), outside
    parentheses that name a file (`(E1, E2 of mod.rs)`: IDs stated elsewhere)."""
    text = re.sub(r"\([^()]*\.rs[^()]*\)", "", text)
    out = set()
    for m in re.finditer(r"(?<![\w-])([A-Z]{1,3})(\d+)(?:[-–]\1?(\d+))?(?!\w)", text):
        p, a, b = m.groups()
        out.update(f"{p}{i}" for i in range(int(a), int(b or a) + 1))
    return out


def check_map_ids(root, src, mods):
    """Rule 7: a map row's IDs are the IDs its file states."""
    stated = stated_ids(src, mods)
    found = []
    for rel, desc in map_rows(root):
        if TEST_FILE.search(rel) or rel not in mods.values():
            continue
        named, have = ids_in(desc), stated.get(rel, set())
        if named != have:
            extra = ", ".join(sorted(named - have)) or "none"
            missing = ", ".join(sorted(have - named)) or "none"
            found.append(
                f"MAP IDS: src/{rel}: docs/DESIGN.md's map row names {extra} that the file "
                f"does not state, and leaves out {missing} that it does"
            )
    return found


def check(root):
    src = os.path.join(root, "src")
    mods = modules(src)
    found = (
        check_circles(src, mods)
        + check_sizes(src, mods)
        + check_functions(src, mods)
        + check_flat_paths(src, mods)
        + check_map_ids(root, src, mods)
        + check_invariants(root, src, mods)
        + check_map(root, mods)
    )
    return mods, found


# Planted changes, each of which one check must report (`--self-test`): (file, edit, the
# start of the line the check prints).
PLANTS = [
    (
        "src/queue/heap/mod.rs",
        lambda s: s + "\nuse crate::pool::Shared;\n",
        "IMPORT CIRCLE between top-level modules",
    ),
    (
        "src/queue/lane.rs",
        lambda s: s + "\nfn _planted() -> crate::queue::store::Store<u8, u8> { todo!() }\n",
        "IMPORT CIRCLE between files",
    ),
    (
        "src/throttle.rs",
        lambda s: "".join(f"// planted line {i}\n" for i in range(700)) + s,
        "TOO LONG: src/throttle.rs",
    ),
    (
        "src/throttle.rs",
        lambda s: "fn _planted() {\n" + "    let _ = 1;\n" * 80 + "}\n" + s,
        "TOO LONG A FUNCTION: _planted in src/throttle.rs",
    ),
    (
        "src/stats.rs",
        lambda s: "use crate::ScheduledFuture;\n" + s,
        "FLAT PATH: src/stats.rs names crate::ScheduledFuture",
    ),
    (
        "docs/DESIGN.md",
        lambda s: s.replace("the timer precision; P1-P3", "the timer precision; P1, P2", 1),
        "MAP IDS: src/queue/park.rs: docs/DESIGN.md's map row names none that the file does not state, and leaves out P3",
    ),
    (
        "docs/DESIGN.md",
        lambda s: s.replace("re-queue (E1, E2 of mod.rs)", "re-queue; E1, E2", 1),
        "MAP IDS: src/pool/submit.rs: docs/DESIGN.md's map row names E1, E2",
    ),
    (
        "src/queue/sharded.rs",
        lambda s: s.replace("//! - Q4:", "//! Q4 once said:", 1),
        "NOT STATED: Q4 in src/queue/sharded.rs",
    ),
    (
        "src/clock.rs",
        lambda s: "//! - Q4: planted twice.\n" + s,
        "ONE ID, 2 FILES: Q4",
    ),
    (
        "src/queue/planted_file.rs",
        lambda s: s + "//! A file the map does not name.\n",
        "NOT IN THE MAP: src/queue/planted_file.rs",
    ),
]


def self_test(root):
    """Each planted change makes its check fail; the tree as it is passes."""
    import shutil
    import tempfile

    _, found = check(root)
    if found:
        print("self-test: the tree itself does not pass; run without --self-test")
        return 1
    failures = 0
    for path, edit, expect in PLANTS:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(os.path.join(root, "src"), os.path.join(tmp, "src"))
            shutil.copytree(os.path.join(root, "docs"), os.path.join(tmp, "docs"))
            target = os.path.join(tmp, path)
            text = open(target, encoding="utf-8").read() if os.path.exists(target) else ""
            changed = edit(text)
            assert changed != text, f"the plant in {path} changed nothing"
            open(target, "w", encoding="utf-8").write(changed)
            _, found = check(tmp)
            hit = [f for f in found if f.startswith(expect)]
            print(f"self-test: planted in {path}: {'caught' if hit else 'MISSED'} ({expect})")
            failures += not hit
    return 1 if failures else 0


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else "."
    if "--self-test" in sys.argv[1:]:
        sys.exit(self_test(root))
    mods, found = check(root)
    for f in found:
        print(f)
    if not found:
        print(
            f"tree check: {len(mods)} files, no circle, no file or function too long, no flat path, "
            "every invariant stated once, every file in the map"
        )
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
