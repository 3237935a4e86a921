"""The run explorer at scale: 5,000 answers x 6 judges (two kinds each, with reasoning), generated
as a run directory; the explorer's build time, file size, and its load time in headless chromium.

    python benchmarks/perf/explorer.py [--answers 5000] [--judges 6]

Load time is the page's own clock at the end of its first render (performance.now() from navigation:
reading the file, parsing the embedded JSON and drawing the first 50 cards), and the browser's wall
time for the whole visit less that of a blank page. Without chromium only the build is measured.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dualjudge.analysis.shared.table import table_columns
from dualjudge.report.browser import dump_dom, find_chromium
from dualjudge.report.explorer import write_explorer
from dualjudge.storage.rows import VerdictRow
from dualjudge.storage.store import Store

FAMILIES = ("qwen", "google", "meta", "mistral", "microsoft", "openbmb")
REASONING = (
    "The response names the sign and states its rule, but it leaves out the exemption the reference gives "
    "and adds a penalty the reference does not mention; the figure is read correctly from the visible part."
)


def generate(out: Path, n_answers: int, n_judges: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    judges = [(f"judge-{i}", FAMILIES[i % len(FAMILIES)]) for i in range(n_judges)]
    systems = [(f"system-{i}", FAMILIES[i % len(FAMILIES)]) for i in range(6)]
    signs = [str(600 + i) for i in range(30)]
    rows, store_rows = [], []
    for a in range(n_answers):
        sign, (model, family) = signs[a % 30], systems[(a // 30) % 6]
        strategy, repeat = ("sa", "cot", "coi", "ma")[(a // 180) % 4], a // 720
        item = f"{sign}_v{(1.0, 0.5, 0.3)[a % 3]}_bottom_up"
        quality = rng.normal()
        text = (
            f"This is the {sign} sign. "
            + "It tells drivers what the rule is at this point of the road. " * 4
            + "\nSIGN_TYPE: no_entry"
        )
        for judge, jfam in judges:
            score = int(np.clip(round(5 + 2 * quality + rng.normal()), 0, 10))
            eq = bool(quality + rng.normal() > 0)
            rows.append(
                {
                    "run_id": "scale",
                    "item_id": item,
                    "sign_code": sign,
                    "category": "no_entry",
                    "visibility": (1.0, 0.5, 0.3)[a % 3],
                    "mode": "bottom_up",
                    "repeat": repeat,
                    "system": strategy,
                    "system_model": model,
                    "system_family": family,
                    "system_base_llm": family,
                    "predicted_category": "no_entry",
                    "format_ok": True,
                    "judge_model": judge,
                    "judge_family": jfam,
                    "judge_base_llm": jfam,
                    "accuracy": score,
                    "completeness": score,
                    "relevance": score,
                    "overall": float(score),
                    "equivalent": eq,
                    "quality_status": "ok",
                    "equivalence_status": "ok",
                    "response": text,
                    "system_status": "ok",
                    "overall_convention": "mean_of_subscores",
                    "judge_variant": "holistic",
                }
            )
            for kind in ("quality", "equivalence"):
                store_rows.append(
                    VerdictRow(
                        variant_id=item,
                        repeat=repeat,
                        system_model=model,
                        strategy=strategy,
                        judge_model=judge,
                        judge_variant="holistic",
                        kind=kind,
                        status="ok",
                        reasoning=REASONING,
                        overall=float(score) if kind == "quality" else None,
                        equivalent=int(eq) if kind == "equivalence" else None,
                    )
                )
    frame = pd.DataFrame(rows, columns=list(table_columns()))
    frame = frame.drop_duplicates(["item_id", "repeat", "system", "system_model", "judge_model"])
    frame.to_parquet(out / "verdicts.parquet")
    store = Store(out / "results.sqlite")
    with store.db:
        for r in store_rows:
            store.record(r)
    store.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--answers", type=int, default=5000)
    ap.add_argument("--judges", type=int, default=6)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        generate(out, args.answers, args.judges)
        answers = (
            pd.read_parquet(out / "verdicts.parquet").drop_duplicates(["item_id", "repeat", "system", "system_model"]).shape[0]
        )
        store = Store(out / "results.sqlite", readonly=True)
        t0 = time.perf_counter()
        path = write_explorer(out, store)
        built = time.perf_counter() - t0
        store.close()
        size = path.stat().st_size / 1e6
        print(f"{answers:,} answers x {args.judges} judges: explorer built in {built:.1f} s, {size:.1f} MB")
        browser = find_chromium()
        if browser is None:
            print("no chromium: load time not measured (Debian: apt-get install chromium)")
            return
        blank = out / "blank.html"
        blank.write_text("<!doctype html><html><body><p>blank</p></body></html>")
        visits = []
        for _ in range(3):  # the browser's own start and stop, to subtract
            t0 = time.perf_counter()
            dump_dom(blank.as_uri(), browser, budget_ms=0)
            visits.append(time.perf_counter() - t0)
        baseline = min(visits)
        for fragment in ("", "judge=judge-0&type=type2&sort=residual"):
            walls, renders, shown = [], [], None
            for _ in range(3):
                t0 = time.perf_counter()
                dom, _ = dump_dom(path.as_uri() + "#" + fragment, browser, budget_ms=0, timeout=300)
                walls.append(time.perf_counter() - t0)
                render = re.search(r'data-render-ms="(\d+)"', dom)
                renders.append(int(render.group(1)) if render else -1)
                match = re.search(r'data-count="(\d+)"', dom)
                shown = match.group(1) if match else "?"
            print(
                f"#{fragment or '(all answers)'}: {shown} answers match; first render done at "
                f"{min(renders)} ms after navigation (page clock, best of 3); visit {min(walls):.2f} s wall, "
                f"{min(walls) - baseline:.2f} s more than a blank page ({baseline:.2f} s)"
            )


if __name__ == "__main__":
    main()
