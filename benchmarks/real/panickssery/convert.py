"""Panickssery, Bowman and Feng 2024 ("LLM Evaluators Recognize and Favor Their Own Generations", NeurIPS) as a
dualjudge pairwise table, read from a local checkout of github.com/ArjunPanickssery/self_recognition.

    python benchmarks/real/panickssery/convert.py CHECKOUT --dataset xsum --out /tmp/panickssery-xsum.csv

The repository has no licence file, so its data is not shipped here: point this script at your own checkout.
Its results/<dataset>/<judge>_results.json hold, per judge (gpt4, gpt35, llama) and article, the judge's choice
between its own summary and another source's (human, claude and the two other models) in both orders
(`forward_comparison`: its own shown first; `backward_comparison`: its own shown second; "1" or "2" the slot it
picked) and `self_preference`, its probability for its own summary averaged over the two orders (from the answer
tokens' probabilities). Each record becomes two rows, one per order; `prob_a` carries that averaged probability
on both (the two orders' own probabilities are not published apart), so the raw own-choice rate is the paper's
number. Each model is its own family (the paper's evaluators judge their own summaries, not a vendor's).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

JUDGES = ("gpt4", "gpt35", "llama")


def rows_of(checkout: Path, dataset: str) -> pd.DataFrame:
    rows = []
    for judge in JUDGES:
        path = checkout / "results" / dataset / f"{judge}_results.json"
        for record in json.loads(path.read_text()):
            common = {
                "item_id": record["key"],
                "judge_model": judge,
                "system_a": judge,
                "system_b": record["model"],
                "prob_a": record["self_preference"],
            }
            forward, backward = record["forward_comparison"], record["backward_comparison"]
            rows.append({**common, "shown_first": "a", "winner": "a" if forward == "1" else "b"})
            rows.append({**common, "shown_first": "b", "winner": "a" if backward == "2" else "b"})
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", type=Path, help="a checkout of ArjunPanickssery/self_recognition")
    ap.add_argument("--dataset", choices=("xsum", "cnn"), default="xsum")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    table = rows_of(args.checkout, args.dataset)
    table.to_csv(args.out, index=False)
    print(f"wrote {len(table):,} comparisons to {args.out}")


if __name__ == "__main__":
    main()
