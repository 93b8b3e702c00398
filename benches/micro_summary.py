#!/usr/bin/env python3
"""Summary of one micro comparison (`abperf compare A B --format json` of two micro experiments,
or the JSON of `abperf micro -k ...`), for benches/micro_aa.sh and benches/micro_ab.sh.

Usage: micro_summary.py FILE TITLE [SECONDS]
Prints: configurations and families called different, the cautions, the SMT pressure of both
sides when the experiments carry it, the largest differences, and findings that changed."""
import json
import sys

d = json.load(open(sys.argv[1]))
title = sys.argv[2]
took = f", {float(sys.argv[3]):.0f} s" if len(sys.argv) > 3 else ""
m = d["micro_compare"]
rows = m["rows"]
diff = [r for r in rows if r["verdict"] in ("faster", "slower")]
fams = [f for f in m["families"] if f["faster"] + f["slower"] > 0]
nd = sum(r["verdict"] == "no difference" for r in rows)
within = [r for r in rows if r.get("within_process") in ("faster", "slower")]
unit = m.get("unit", "round")
if m.get("withheld"):
    unit += f"s, verdicts withheld (within one process: {len(within)} called)"
else:
    unit += f"s ({'/'.join(str(n) for n in m.get('invocations', [1, 1]))})"
print(f"{title} ({m['labels'][0]} vs {m['labels'][1]}{took}, {unit}): "
      f"{len(diff)} of {len(rows)} configurations called different "
      f"({100 * len(diff) / max(1, len(rows)):.1f}%), {len(fams)} of {len(m['families'])} families: "
      + (", ".join(f"{f['bench']} {f['faster'] + f['slower']}/{f['configurations']}" for f in fams) or "none")
      + f"; {nd} no difference within the margin")
for c in m["cautions"]:
    print(f"  caution: {c}")
pr = [e["design"].get("adds_per_cycle", {}).get("median") for e in d.get("experiments") or []]
if len(pr) == 2 and None not in pr:
    print(f"  SMT pressure (median adds/cycle): {pr[0]:.2f} and {pr[1]:.2f}")
for r in sorted(diff, key=lambda r: -abs(r["ratio"] - 1))[:6]:
    ci = r["ratio_ci"] or [float("nan")] * 2
    print(f"  {r['config']}: {100 * (r['ratio'] - 1):+.1f}% (CI {100 * (ci[0] - 1):+.1f}%.."
          f"{100 * (ci[1] - 1):+.1f}%) {r['verdict']}")
for f in m["findings"]:
    if f["a"] != f["b"] and f["a"] is not None and f["b"] is not None:
        print(f"  finding {f['bench']}/{f['key']}: {f['a']:.4g} -> {f['b']:.4g} {f['unit']}")
