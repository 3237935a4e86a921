"""Judge kinds are one declaration (protocol/kinds.py): a kind declared here, in the test alone, runs
through the scripted runner, the store, the export, the analysis and the explorer with no module changed."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest
from pydantic import Field

from dualjudge.analysis.shared.table import read_table, table_columns
from dualjudge.protocol.kinds import JudgeKind, ScoreField, declare, declared, judge_kind, withdraw
from dualjudge.protocol.verdicts import REASONING_MAX, Verdict
from dualjudge.report.explorer import explorer_data
from dualjudge.storage.store import Store
from dualjudge.studies.job import run_job
from tests.helpers.runs import CONFIG, Recorder, config


class ReadabilityVerdict(Verdict):
    reasoning: str = Field(max_length=REASONING_MAX, description="Short justification, written first.")
    clarity: int = Field(ge=0, le=10, description="How plainly the response states the rule, 0-10.")
    plain: bool = Field(description="True when a learner driver would understand it at once.")

    @classmethod
    def widest(cls) -> ReadabilityVerdict:
        return cls(reasoning="", clarity=10, plain=False)


PROMPT = '''name = "judge_readability"
variables = ["caption", "description", "response"]
system = "You grade how readable an explanation of a UK road sign is. Reply with JSON: reasoning, clarity, plain."
user = """Sign: $caption ($description)
Response:
<<<
$response
>>>"""
'''


@pytest.fixture()
def readability(tmp_path):
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "judge_readability.toml").write_text(PROMPT)
    kind = declare(
        JudgeKind(
            "readability",
            ReadabilityVerdict,
            (ScoreField("clarity", "integer"), ScoreField("plain", "boolean")),
            value="clarity",
            decided=lambda clarity: clarity >= 5,
            prompts=folder,
        )
    )
    try:
        yield kind
    finally:
        withdraw("readability")


def test_a_third_kind_declared_in_a_test_runs_end_to_end(tmp_path, readability):
    text = CONFIG.replace(
        'models = ["smollm2-135m-instruct", "gemma-3-270m"]\n[probes]',
        'models = ["smollm2-135m-instruct", "gemma-3-270m"]\n'
        'kinds = ["quality", "equivalence", "readability"]\npasses = 2\n[probes]',
    )
    assert 'kinds = ["quality", "equivalence", "readability"]' in text
    rec = Recorder()
    result = run_job(config(tmp_path, text), tmp_path / "run", engines=rec)
    asked = [
        r
        for e in rec.opened
        for r in e.requests
        if r.constraint is not None and r.constraint.kind == "json" and r.constraint.schema.get("title") == "ReadabilityVerdict"
    ]
    assert asked and all("how readable" in r.messages[0].text for r in asked)  # its own prompt file

    # the store: its verdicts, with the declared scores
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    stored = db.execute("SELECT status, scores FROM verdicts WHERE kind = 'readability'").fetchall()
    db.close()
    answers, judges = 48, 2
    assert len(stored) == answers * judges and {s for s, _ in stored} == {"ok"}
    assert all(set(json.loads(scores)) == {"clarity", "plain"} for _, scores in stored)

    # the export: its columns after the protocol's, in the declared order; the protocol's columns untouched
    table = pd.read_csv(tmp_path / "run" / "verdicts.csv")
    assert list(table.columns) == list(table_columns())
    assert table.columns.get_loc("plain") < table.columns.get_loc("quality_status") < table.columns.get_loc("readability_status")
    assert (table["readability_status"] == "ok").all() and table["clarity"].between(0, 10).all()
    assert set(table["plain"]) <= {True, False} and (result.table["quality_status"] == "ok").all()
    passes = pd.read_csv(tmp_path / "run" / "judge_passes.csv")
    assert passes.loc[passes["kind"] == "readability", "clarity"].notna().all()  # its value, under its own name

    # the stability passes and the padding probe read its decision
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["stability"]["gemma-3-270m"]["readability"]["answers"] == answers
    padding = pd.read_csv(tmp_path / "run" / "probes_padding.csv")
    probed = padding[padding["kind"] == "readability"]
    assert len(probed) and probed["flipped"].notna().all()
    assert probed["flipped"].astype(bool).tolist() == [
        judge_kind("readability").flipped(o, p) for o, p in zip(probed["original"], probed["padded"])
    ]

    # the analysis reads the table with its columns; the protocol's statistics are unchanged by it
    read = read_table(tmp_path / "run" / "verdicts.parquet")
    assert read["clarity"].notna().all() and read["plain"].dtype == "boolean"
    assert summary["self_preference"]["overall"] is not None

    # the explorer shows it beside the other two
    store = Store(tmp_path / "run" / "results.sqlite", readonly=True)
    try:
        data = explorer_data(tmp_path / "run", store)
    finally:
        store.close()
    assert [k["name"] for k in data["kinds"]] == ["quality", "equivalence", "readability"]
    verdict = data["answers"][0]["verdicts"][0]
    assert verdict["k"]["readability"]["s"] == "ok" and 0 <= verdict["k"]["readability"]["clarity"] <= 10


def test_a_table_without_another_kinds_columns_reads_as_not_asked(tmp_path, readability):
    text = CONFIG.replace("order = true", "order = false").replace("padding = true", "padding = false")
    run_job(config(tmp_path, text), tmp_path / "run", engines=Recorder())  # the protocol's two kinds only
    table = read_table(tmp_path / "run" / "verdicts.csv")
    assert (table["readability_status"] == "skipped").all() and table["clarity"].isna().all()


def test_an_unknown_kind_in_a_configuration_is_one_line(tmp_path):
    from dualjudge.errors import DualjudgeError

    text = CONFIG.replace("[probes]", 'kinds = ["quality", "fluency"]\n[probes]', 1)
    with pytest.raises(DualjudgeError, match="unknown judge kind 'fluency'; choose from quality, equivalence"):
        config(tmp_path, text)
    assert [k.name for k in declared()][:2] == ["quality", "equivalence"]


TASK_PROMPT = '''name = "judge_readability"
variables = ["reference", "response"]
system = "You grade how readable an answer to a word problem is. Reply with JSON: reasoning, clarity, plain."
user = """Reference: $reference
Response:
<<<
$response
>>>"""
'''

TASK_STUDY = """
[run]
name = "t"
[task]
path = "apples"
[testbed]
repeats = 1
modality = "text"
[systems]
models = ["smollm2-135m-instruct"]
strategies = ["sa"]
max_tokens = 64
[judges]
models = ["gemma-3-270m"]
kinds = ["quality", "equivalence", "readability"]
[engine]
backend = "vllm"
"""


def test_a_kind_whose_prompt_a_task_folder_lacks_is_one_line_before_anything_is_written(tmp_path, readability):
    """The kind's own prompt is worded for the signs: a task folder's run refuses it, naming the file to write,
    before the run folder exists; with the file in the task's prompts folder, the run asks with it."""
    from dualjudge.errors import DualjudgeError
    from tests.helpers.tasks import text_task

    folder = text_task(tmp_path / "apples")
    cfg = config(tmp_path, TASK_STUDY)
    with pytest.raises(DualjudgeError, match=r"judge kind readability: the task has no prompt judge_readability\.toml"):
        run_job(cfg, tmp_path / "run", engines=Recorder())
    assert not (tmp_path / "run").exists()

    (folder / "prompts").mkdir()
    (folder / "prompts" / "judge_readability.toml").write_text(TASK_PROMPT)
    (folder / "task.toml").write_text((folder / "task.toml").read_text() + 'prompts = "prompts"\n')
    rec = Recorder()
    run_job(config(tmp_path, TASK_STUDY), tmp_path / "run", engines=rec)
    asked = [r for e in rec.opened for r in e.requests if r.constraint is not None and r.constraint.kind == "json"]
    readable = [r for r in asked if r.constraint.schema.get("title") == "ReadabilityVerdict"]
    assert readable and all("word problem" in r.messages[0].text and "road sign" not in r.messages[0].text for r in readable)
