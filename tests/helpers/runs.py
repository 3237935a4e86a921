"""A scripted study: the configuration the runner tests share, the engines that answer it, and the
requests a finished run made per stage."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from dualjudge.config import RunConfig, load_config
from tests.helpers.engines import ScriptedEngines, fill_schema

CONFIG = """
[run]
name = "t"
seed = 3
[testbed]
signs = ["616", "670V30"]
visibilities = [1.0, 0.5]
modes = ["bottom_up", "random_block"]
repeats = 2
modality = "text"
size = 64
[systems]
models = ["smollm2-135m-instruct", "gemma-3-270m"]
strategies = ["sa", "ma"]
max_tokens = 96
[judges]
models = ["smollm2-135m-instruct", "gemma-3-270m"]
[probes]
order = true
order_pairs = 3
padding = true
padding_samples = 2
[engine]
backend = "vllm"
"""


def respond(request):
    if request.constraint is not None and request.constraint.kind == "json":
        title = request.constraint.schema["title"]
        if title == "QualityVerdict":
            n = len(request.messages[1].text) % 11
            return json.dumps({"reasoning": "r", "accuracy": n, "completeness": (n + 3) % 11, "relevance": 7})
        if title == "EquivalenceVerdict":
            return json.dumps({"reasoning": "r", "equivalent": len(request.messages[1].text) % 2 == 0})
        if title == "PairwiseVerdict":
            return json.dumps({"reasoning": "r", "winner": "A"})
        if title == "ComparisonVerdict":  # the pairwise judge: A, B or tie by the prompt's length
            return json.dumps({"reasoning": "r", "winner": ("A", "B", "tie")[len(request.messages[1].text) % 3]})
        return json.dumps(fill_schema(request.constraint.schema, request.messages[1].text))  # a rubric judge
    final = "SIGN_TYPE: no_entry"
    if request.constraint is not None and request.constraint.kind == "regex" and "SIGN_TYPE" not in request.constraint.spec:
        line = request.constraint.spec.rsplit("\\n", 1)[1]  # another task's final line: NAME: (a|b|...)
        name, ids = line.split(": ", 1)
        final = f"{name}: {ids.strip('()').split('|')[-1]}"
    return f"answer seeded {request.sampling.seed} " + "word " * 3 + "\n" + final


class Recorder(ScriptedEngines):
    """The scripted engines, counting calls; after `fail_after` calls every request is an engine error."""

    def __init__(self, fail_after: int | None = None, distinct: bool = True):
        super().__init__(self._respond)
        self.fail_after = fail_after
        self.distinct = distinct  # each system model answers in its own words (no request repeats another)
        self.calls = 0

    def respond_as(self, model, request):
        out = self._respond(request)
        if self.distinct and isinstance(out, str) and (request.constraint is None or request.constraint.kind != "json"):
            return f"{model}: {out}"
        return out

    def _respond(self, request):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            return ConnectionError("engine down")
        return respond(request)


def config(tmp_path: Path, text: str = CONFIG) -> RunConfig:
    p = tmp_path / "c.toml"
    p.write_text(text)
    return load_config(p)


STAGE_SQL = {  # the requests a finished run made, per stage, read from its store
    "answers": "SELECT system_model, SUM(calls) FROM answers GROUP BY system_model",
    "padding": "SELECT system_model, COUNT(*) FROM padding_texts GROUP BY system_model",
    "verdicts": "SELECT judge_model, COUNT(*) FROM verdicts GROUP BY judge_model",
    "order probe": "SELECT judge_model, 2 * COUNT(*) FROM order_probe GROUP BY judge_model",
    "padding judged": "SELECT judge_model, COUNT(*) FROM padding_probe GROUP BY judge_model",
    "stability passes": "SELECT judge_model, COUNT(*) FROM judge_passes GROUP BY judge_model",
    "pairwise": "SELECT judge_model, COUNT(*) FROM comparisons GROUP BY judge_model",
    # both orders of a pair, and each answer alone where the single form asked it
    "recognition probe": "SELECT judge_model, 2 * COUNT(*) + 2 * COUNT(claims_own) FROM recognition_probe GROUP BY judge_model",
}


def made(db: Path) -> dict[tuple[str, str], int]:
    with sqlite3.connect(db) as con:
        return {(model, stage): int(n) for stage, sql in STAGE_SQL.items() for model, n in con.execute(sql)}
