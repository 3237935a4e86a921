"""dualjudge's self-preference on the Multivac table beside the paper's Table 3 (Darji 2026), as docs/multivac.md
shows it: per family, the inverse-variance mean of the family's identified judges' calibrated estimates.

    dualjudge analyze benchmarks/real/multivac/verdicts.csv --out runs/multivac --alias judge_gpt54=gpt_5_4
    python benchmarks/real/multivac/compare.py runs/multivac/summary.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# the paper's Table 3: family-level self-preference (corrected fixed effects, two-way standard errors)
PAPER = {
    "anthropic": (0.406, "0.312 to 0.500", "robust"),
    "minimax": (0.397, "0.154 to 0.641", "depends on the judge"),
    "qwen": (0.557, "p = .018", "not counted (fragile)"),
    "google": (0.209, "", "not significant"),
    "openai": (-0.137, "", "not significant"),
    "xai": (-0.095, "", "not significant"),
    "meta": (0.195, "", "not significant"),
    "mistral": (-0.164, "", "not significant"),
}


def family_rows(summary: dict) -> list[dict]:
    judges = summary["self_preference"]["overall"]["judges"]
    out = []
    for family in sorted({e["family"] for e in judges}):
        mine = [e for e in judges if e["family"] == family and e["estimate"] is not None and e["se"]]
        row: dict = {"family": family, "judges": len(mine), "of": sum(e["family"] == family for e in judges)}
        if mine:
            w = [1 / e["se"] ** 2 for e in mine]
            est = sum(wi * e["estimate"] for wi, e in zip(w, mine)) / sum(w)
            se = sum(w) ** -0.5
            row.update(estimate=est, low=est - 1.96 * se, high=est + 1.96 * se)
        out.append(row)
    return out


def main(path: str) -> None:
    summary = json.loads(Path(path).read_text())
    print("| family | dualjudge (judges identified) | 95% CI | the paper | its CI | its reading |")
    print("|---|---|---|---|---|---|")
    for r in family_rows(summary):
        paper = PAPER.get(r["family"])
        mine = f"{r['estimate']:+.3f} ({r['judges']} of {r['of']})" if "estimate" in r else f"- (0 of {r['of']})"
        ci = f"{r['low']:+.2f} to {r['high']:+.2f}" if "estimate" in r else ""
        theirs = (f"{paper[0]:+.3f}", paper[1], paper[2]) if paper else ("-", "", "not in Table 3")
        print(f"| {r['family']} | {mine} | {ci} | {' | '.join(theirs)} |")


if __name__ == "__main__":
    main(sys.argv[1])
