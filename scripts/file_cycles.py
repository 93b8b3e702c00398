#!/usr/bin/env python3
"""Finds file-level import cycles among the Rust files of each crate (crates/*/src and src/).

A file A imports a file B of the same crate when A names B's module path: in a `use` line
(`use crate::x::y`, `use super::{y, z}`, `use self::y::*`) or in code, fully qualified
(`crate::x::y::f()`, `super::y::T`, or a path through a name that a `use` brought in, or through
a module declared in A). A path names the file of its longest module prefix: `crate::x::y::f`
names x/y.rs (or x/y/mod.rs) when there is one, else x.rs. A file's own inline modules
(`mod tests { ... }`) are part of the file; declaring a module (`mod x;`) is not an import.
A module and its ancestors (x/y.rs and x.rs, x/mod.rs or lib.rs) do not count as importing each
other: a parent declares and re-exports its children, which use the parent's items; that is how
Rust nests modules, not a cycle (`farm-studio look` counts them the same way).

Prints each strongly connected component of more than one file with the names that tie it,
and exits 1 if there is any. Run from the workspace root; stdlib only. Run by scripts/test.sh.
"""
import os
import re
import sys

IDENT = r'[A-Za-z_][A-Za-z0-9_]*'
PATH = re.compile(rf'(?<![A-Za-z0-9_:]){IDENT}(?:\s*::\s*{IDENT})+')
MOD_DECL = re.compile(rf'\bmod\s+({IDENT})\s*;')
INLINE_MOD = re.compile(rf'\bmod\s+({IDENT})\s*\{{')
USE = re.compile(r'\buse\s+([^;]*);', re.S)


def strip(text):
    """The source without comments, string and char literals (their length and lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif text.startswith('/*', i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith('/*', j):
                    depth, j = depth + 1, j + 2
                elif text.startswith('*/', j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif c == 'r' and re.match(r'r#*"', text[i:i + 260]) and not re.match(r'[A-Za-z0-9_]', text[i - 1:i] or ' '):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == '\\' else 1
            out.append(re.sub(r'[^\n]', ' ', text[i:j + 1]))
            i = j + 1
        elif c == "'":
            # a char literal ('a', '\n', '\u{1F600}'), else a lifetime or label
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:i + 12])
            if m:
                out.append(' ' * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def expand_use(tree):
    """The full paths of a use tree: `a::{b, c::{d as e, *}}` -> [a::b, a::c::d, a::c::*]
    as (segments, local name or None)."""
    tree = re.sub(r'\s+', ' ', tree).strip()
    out = []

    def walk(prefix, s):
        s = s.strip()
        if not s:
            return
        if s.endswith('}') and '{' in s:
            head, body = s[:s.index('{')], s[s.index('{') + 1:-1]
            head = [p for p in head.strip().rstrip(':').split('::') if p.strip()]
            depth, start = 0, 0
            for k, ch in enumerate(body + ','):
                if ch == '{':
                    depth += 1
                elif ch == '}':
                    depth -= 1
                elif ch == ',' and depth == 0:
                    walk(prefix + [h.strip() for h in head], body[start:k])
                    start = k + 1
            return
        alias = None
        m = re.match(rf'(.*)\s+as\s+({IDENT}|_)$', s)
        if m:
            s, alias = m.group(1), m.group(2)
        segs = [p.strip() for p in s.split('::') if p.strip()]
        if segs and segs[-1] == 'self':
            segs = segs[:-1]
        full = prefix + segs
        if full:
            out.append((full, alias or (full[-1] if full[-1] != '*' else None)))

    walk([], tree.lstrip(':'))
    return out


class Crate:
    """The Rust files of one crate, by module path."""

    def __init__(self, root, top):
        self.root = root
        self.top = top  # lib.rs or main.rs
        self.files = {}  # module path (tuple) -> file
        self.modules = {}  # file -> module path
        self.add(top, ())

    def add(self, path, mod):
        if path in self.modules or not os.path.exists(path):
            return
        self.files[mod] = path
        self.modules[path] = mod
        text = strip(open(path, encoding='utf-8').read())
        here = os.path.dirname(path)
        base = os.path.basename(path)
        own = here if base in ('lib.rs', 'main.rs', 'mod.rs') else os.path.join(here, base[:-3])
        for m in MOD_DECL.finditer(text):
            name = m.group(1)
            for cand in (os.path.join(own, name + '.rs'), os.path.join(own, name, 'mod.rs')):
                if os.path.exists(cand):
                    self.add(cand, mod + (name,))
                    break

    def file_of(self, segs):
        """The file of the longest module prefix of absolute path `segs` (None: outside)."""
        for k in range(len(segs), -1, -1):
            f = self.files.get(tuple(segs[:k]))
            if f:
                return f
        return None


def scopes(text):
    """(offset, inline module path) changes: where each inline `mod x {` opens and closes."""
    events = []  # (start, end, name)
    for m in INLINE_MOD.finditer(text):
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {'{': 1, '}': -1}.get(text[j], 0)
            j += 1
        events.append((m.start(), j, m.group(1)))
    return events


def inline_path(events, at):
    """The inline modules that enclose offset `at`, outermost first."""
    return [name for (s, e, name) in sorted(events) if s < at < e]


def related(a, b):
    """Whether module `a` contains module `b` or the reverse (a crate root or mod.rs and the
    files of its submodules): not a cycle, but how Rust nests modules (the parent declares and
    re-exports its children, which use the parent's items)."""
    k = min(len(a), len(b))
    return a[:k] == b[:k]


def imports(crate, path):
    """{file: set of names} that `path` takes from other files of its crate."""
    text = strip(open(path, encoding='utf-8').read())
    file_mod = list(crate.modules[path])
    events = scopes(text)
    declared = set(MOD_DECL.findall(text))
    out = {}

    def absolute(segs, at):
        """`segs` as an absolute module path, or None when it does not start in this crate."""
        here = file_mod + inline_path(events, at)
        head = segs[0]
        if head == 'crate':
            return segs[1:]
        if head in ('self', 'super'):
            cur = list(here)
            i = 0
            while i < len(segs) and segs[i] in ('self', 'super'):
                if segs[i] == 'super':
                    if not cur:
                        return None
                    cur.pop()
                i += 1
            return cur + segs[i:]
        if head in aliases:
            return aliases[head] + segs[1:]
        if head in declared or (head in children and not inline_path(events, at)):
            return here + segs
        return None

    def note(segs, at):
        full = absolute(segs, at)
        if full is None:
            return
        target = crate.file_of(full)
        if target and target != path and not related(crate.modules[target], crate.modules[path]):
            tail = [s for s in full[len(crate.modules[target]):] if s not in ('*',)]
            out.setdefault(target, set()).add(tail[0] if tail else 'self')

    # names that `use` lines bring in (a module, or an item whose path leads to a file)
    children = {m[-1] for m in crate.files if m[:-1] == tuple(file_mod) and m}
    aliases = {}
    uses = []
    for m in USE.finditer(text):
        for segs, alias in expand_use(m.group(1)):
            uses.append((segs, m.start()))
            if alias and alias != '_' and segs[0] in ('crate', 'self', 'super'):
                full = absolute(segs, m.start())
                if full is not None:
                    aliases[alias] = full
    for segs, at in uses:
        note(segs, at)
    use_spans = [(m.start(), m.end()) for m in USE.finditer(text)]
    for m in PATH.finditer(text):
        if any(s <= m.start() < e for s, e in use_spans):
            continue
        segs = [p.strip() for p in m.group(0).split('::')]
        note(segs, m.start())
    return out


def crates():
    roots = []
    if os.path.isdir('crates'):
        for c in sorted(os.listdir('crates')):
            roots.append(os.path.join('crates', c, 'src'))
    roots.append('src')
    out = []
    for r in roots:
        for top in ('lib.rs', 'main.rs'):
            if os.path.exists(os.path.join(r, top)):
                out.append(Crate(r, os.path.join(r, top)))
        bins = os.path.join(r, 'bin')
        if os.path.isdir(bins):
            for f in sorted(os.listdir(bins)):
                if f.endswith('.rs'):
                    out.append(Crate(r, os.path.join(bins, f)))
    return out


def components(graph):
    """Tarjan's strongly connected components of {node: {node: ...}}."""
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
            comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def main():
    cycles = []
    for crate in crates():
        graph = {f: imports(crate, f) for f in crate.modules}
        for comp in components(graph):
            if len(comp) > 1:
                cycles.append((comp, graph))
    cycles.sort(key=lambda c: c[0])
    for n, (comp, graph) in enumerate(cycles, 1):
        print(f'cycle {n}: {len(comp)} files: {", ".join(comp)}')
        for a in comp:
            for b in sorted(graph[a]):
                if b in comp:
                    print(f'  {a} -> {b}: {", ".join(sorted(graph[a][b]))}')
    if cycles:
        print(f'{len(cycles)} file-level import cycle(s)', file=sys.stderr)
        sys.exit(1)


main()
