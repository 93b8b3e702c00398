#!/usr/bin/env python3
"""Lists production functions longer than LIMIT lines (default 120) in the workspace's Rust
sources (src/ and crates/*/src/; `#[cfg(test)]` modules and tests/ are not production).
Exit status 1 when there is one. Run by scripts/test.sh."""
import os, re, sys

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 120
FN = re.compile(r'^\s*(pub(\([a-z]+\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"C"\s+)?fn\s+([A-Za-z0-9_]+)')


def strip(line):
    """The line without string/char literals and // comments (rough, enough for braces)."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split('//')[0]


def scan(path):
    lines = open(path, encoding='utf-8').read().split('\n')
    out, i = [], 0
    skip_depth = None
    depth = 0
    while i < len(lines):
        line = lines[i]
        if skip_depth is None and re.match(r'^\s*#\[cfg\(test\)\]', line):
            # skip the next item (a test module or function) entirely
            j = i + 1
            d = 0
            opened = False
            while j < len(lines):
                s = strip(lines[j])
                d += s.count('{') - s.count('}')
                opened = opened or '{' in s
                if opened and d <= 0:
                    break
                if not opened and s.rstrip().endswith(';'):
                    break
                j += 1
            i = j + 1
            continue
        m = FN.match(line)
        if m:
            j = i
            d = 0
            opened = False
            while j < len(lines):
                s = strip(lines[j])
                if not opened and s.rstrip().endswith(';') and '{' not in s:
                    break  # a declaration without a body
                d += s.count('{') - s.count('}')
                opened = opened or '{' in s
                if opened and d <= 0:
                    break
                j += 1
            n = j - i + 1
            if opened and n > LIMIT:
                out.append((n, m.group(7), i + 1))
        i += 1
    return out


def main():
    roots = ['src'] + [os.path.join('crates', c, 'src') for c in sorted(os.listdir('crates'))] if os.path.isdir('crates') else ['src']
    found = []
    for r in roots:
        for dp, _, fs in os.walk(r):
            for f in fs:
                if f.endswith('.rs'):
                    p = os.path.join(dp, f)
                    for n, name, line in scan(p):
                        found.append((n, f'{p}:{line}', name))
    for n, where, name in sorted(found, reverse=True):
        print(f'{n:5d}  {where}  {name}')
    if found:
        print(f'{len(found)} production function(s) over {LIMIT} lines', file=sys.stderr)
        sys.exit(1)


main()
