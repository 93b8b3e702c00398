#!/usr/bin/env python3
"""Reference variance components of nested replication levels (hosts > boots > runs), computed
with statsmodels' MixedLM (REML), for abperf's nested levels (crates/stats/src/nested.rs).

Run by hand, from the repository root (pip install numpy pandas statsmodels):

    python3 tools/levels_reference.py

It writes tests/data/levels/nested.csv (seeded data with known components, in the format of
`abperf import --format csv`, docs/import.md#table) and tests/data/levels/nested_reml.json
(statsmodels' REML components per variant). tests/levels_import.rs imports the CSV with the real
binary and checks that abperf's components equal statsmodels' to 1e-6 relative. The product
never calls Python.
"""

import csv
import json
import os

import numpy as np
import pandas as pd
import statsmodels
import statsmodels.formula.api as smf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "levels")

# Per variant: mean, SDs of host, boot and run effects, hosts, boots per host; runs per boot vary
# (3..8) so the design is unbalanced and REML differs from ANOVA.
VARIANTS = [
    ("base", 1000.0, (20.0, 10.0, 5.0), 6, 4),
    ("patched", 1010.0, (15.0, 12.0, 6.0), 6, 4),
]
SEED = 20260126


def generate():
    rng = np.random.default_rng(SEED)
    rows = []
    seq = 0
    for name, mu, (sh, sb, sr), hosts, boots in VARIANTS:
        for h in range(hosts):
            uh = sh * rng.standard_normal()
            for b in range(boots):
                ub = sb * rng.standard_normal()
                for r in range(int(rng.integers(3, 9))):
                    value = mu + uh + ub + sr * rng.standard_normal()
                    rows.append({
                        "variant": name,
                        "seq": seq,
                        "host": f"host{h}",
                        "boot": f"host{h}-boot{b}",
                        "invocation": f"host{h}-boot{b}-inv{r}",
                        "wall_ns [ns]": repr(round(float(value), 6)),
                    })
                    seq += 1
    return rows


def fit(df):
    """REML components of one variant: host (random intercept) and boot within host (variance
    component), and the residual, fitted tightly (a second optimiser from the first's optimum)."""
    model = smf.mixedlm("y ~ 1", df, groups=df["host"], re_formula="1",
                        vc_formula={"boot": "0 + C(boot)"})
    first = model.fit(reml=True, method=["lbfgs"])
    m = model.fit(reml=True, start_params=first.params_object, method=["bfgs"],
                  gtol=1e-12, maxiter=2000)
    return {
        "var_host": float(m.cov_re.iloc[0, 0]),
        "var_boot": float(m.vcomp[0]),
        "var_run": float(m.scale),
        "mean": float(m.fe_params.iloc[0]),
        "converged": bool(m.converged),
        "reml_llf": float(m.llf),
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = generate()
    columns = ["variant", "seq", "host", "boot", "invocation", "wall_ns [ns]"]
    with open(os.path.join(OUT, "nested.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    df = pd.DataFrame(rows)
    df["y"] = df["wall_ns [ns]"].astype(float)
    out = {"statsmodels": statsmodels.__version__, "seed": SEED, "variants": {}}
    for name, *_ in VARIANTS:
        out["variants"][name] = fit(df[df["variant"] == name].reset_index(drop=True))
    with open(os.path.join(OUT, "nested_reml.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
