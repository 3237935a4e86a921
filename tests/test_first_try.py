"""A real dataset, first try (issue 55): judges that see the question, prompts checked as a run fills them, no final
line asked of a task that has none, truncation said, and the smaller faults a new user met."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dualjudge.config import load_config
from dualjudge.inference.types import GenerationResult
from dualjudge.studies.job import preflight, run_job
from tests.helpers.hosted import hosted_card
from tests.helpers.runs import Recorder
from tests.helpers.tasks import text_task, write_items

STUDY = """
[run]
name = "t"
[task]
path = "task"
[testbed]
repeats = 1
modality = "text"
[systems]
models = ["smollm2-135m-instruct", "gemma-3-270m"]
strategies = ["sa"]
max_tokens = 96
[judges]
models = ["smollm2-135m-instruct", "gemma-3-270m"]
[engine]
backend = "vllm"
"""


def _study(tmp_path: Path, text: str = STUDY) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


class Judged(Recorder):
    """Records the user message of every judge request (a JSON-constrained one)."""

    def __init__(self) -> None:
        super().__init__()
        self.judged: list[str] = []

    def respond_as(self, model, request):  # type: ignore[no-untyped-def]
        if request.constraint is not None and request.constraint.kind == "json":
            self.judged.append(request.messages[-1].text)
        return super().respond_as(model, request)


def test_the_judges_see_the_question_and_a_task_may_turn_it_off(tmp_path):
    folder = text_task(tmp_path / "task", n=4)
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    engines = Judged()
    run_job(load_config(_study(tmp_path)), tmp_path / "run", engines=engines)
    assert engines.judged
    for row in rows:
        mine = [t for t in engines.judged if row["reference"] in t]
        assert mine and all(f"Item the candidate answered:\n<<<\n{row['text']}\n>>>" in t for t in mine)
    (folder / "task.toml").write_text((folder / "task.toml").read_text() + "judges_see_item = false\n")
    off = Judged()
    run_job(load_config(_study(tmp_path)), tmp_path / "run-off", engines=off)
    assert off.judged and not any("Item the candidate answered" in t for t in off.judged)


def test_the_task_judge_prompts_speak_of_the_item_never_of_visibility():
    for path in sorted(Path("prompts/task").glob("judge_*.toml")):
        text = path.read_text()
        assert "visible" not in text and "seen only part" not in text, path
        assert "$item_text" in text, path


def test_known_incorrect_answers_are_shown_to_the_judges_as_such(tmp_path):
    folder = text_task(tmp_path / "task", n=3)
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    rows[0]["incorrect"] = ["Seven apples.", "None at all."]
    rows[1]["incorrect"] = "Twelve apples.\nThirty apples."
    write_items(folder / "items.jsonl", rows)
    engines = Judged()
    run_job(load_config(_study(tmp_path)), tmp_path / "run", engines=engines)
    first = [t for t in engines.judged if rows[0]["reference"] in t]
    assert first and all(
        "Known incorrect answers (a response that states one of these is wrong):\n1. Seven apples.\n2. None at all." in t
        for t in first
    )
    assert any("2. Thirty apples." in t for t in engines.judged)
    assert not any("Known incorrect" in t for t in engines.judged if rows[2]["reference"] in t)


def test_a_prompt_placeholder_no_run_fills_is_one_line_at_data_task_naming_its_file(tmp_path, cli):
    folder = text_task(tmp_path / "task", n=3)
    (folder / "prompts").mkdir()
    own = Path("prompts/task/judge_quality.toml").read_text().replace('"item_text",', '"item_text", "item_question",')
    (folder / "prompts" / "judge_quality.toml").write_text(
        own.replace("$item_text$reference", "$item_text$item_question$reference")
    )
    (folder / "task.toml").write_text((folder / "task.toml").read_text() + 'prompts = "prompts"\n')
    code, out, err = cli("data", "task", str(folder))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, err
    assert f"{folder / 'prompts' / 'judge_quality.toml'}: uses $item_question, which a run does not fill" in lines[0]
    code, _, err = cli("plan", str(_study(tmp_path)))
    assert code == 2 and "uses $item_question" in err  # plan says the same


def test_a_task_without_a_final_line_on_a_hosted_model_is_not_asked_for_one(tmp_path, monkeypatch):
    text_task(tmp_path / "task", n=3)
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "gpt-4o.toml").write_text(hosted_card())
    monkeypatch.setenv("DJ_HOSTED_KEY", "sk-test-never-written-0123456789")
    text = STUDY.replace('["smollm2-135m-instruct", "gemma-3-270m"]', '["gpt-4o"]') + f'[models]\ndir = "{tmp_path / "cards"}"\n'
    checks = preflight(load_config(_study(tmp_path, text)))
    assert not [r for c in checks for r in c.failed if "regex" in r]


def test_answers_cut_at_max_tokens_are_counted_per_model_on_every_surface(tmp_path, cli):
    """One model's answers all stop at max_tokens: the run's summary, `status` and the report's findings say how
    many, and that max_tokens is not known to suffice; the other model's are not named."""
    text_task(tmp_path / "task", n=4)

    class Cut(Recorder):
        def respond_as(self, model, request):  # type: ignore[no-untyped-def]
            out = super().respond_as(model, request)
            if model == "gemma-3-270m" and (request.constraint is None or request.constraint.kind != "json"):
                return GenerationResult(str(out), finish_reason="length", completion_tokens=96, prompt_tokens=10)
            return out

    out = tmp_path / "run"
    result = run_job(load_config(_study(tmp_path)), out, engines=Cut())
    said = "4 of 4 answers of gemma-3-270m were cut at max_tokens = 96"
    assert any(said in line for line in result.report.truncated)
    assert not any("smollm2" in line for line in result.report.truncated)
    code, text, err = cli("status", str(out))
    assert code == 0 and said in " ".join(text.split())
    assert said in (out / "report.md").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["truncation"]["gemma-3-270m"]["cut"] == 4 and manifest["truncation"]["smollm2-135m-instruct"]["cut"] == 0
    assert isinstance(pd.read_parquet(out / "verdicts.parquet"), pd.DataFrame)


def test_reproduce_goes_round_every_kind_of_request_and_says_which_a_small_sample_left_out(tmp_path, monkeypatch, cli):
    """A sample of 4 over two models: each model's two picks are of two kinds (an answer and a verdict, or a probe),
    the kinds the sample did not reach are named, and no line reads "0 of 0" or "everything matched" of nothing."""
    from dualjudge.studies.reproduce import reproduce
    from tests.helpers.runs import CONFIG, config

    out = tmp_path / "run"
    run_job(config(tmp_path, CONFIG), out, engines=Recorder())
    small = reproduce(out, sample=4, seed=2, engines=Recorder())
    for model in {c.model for c in small.compared}:
        assert len({c.stage for c in small.compared if c.model == model}) == 2
    said = " ".join(small.left_out)
    assert "not in this sample of 4" in said and "order probe" in said + " ".join(c.stage for c in small.compared)
    monkeypatch.setattr("dualjudge.studies.reproduce.Engines", lambda *a, **k: Recorder())
    code, text, err = cli("reproduce", str(out), "--sample", "2", "--seed", "5")
    assert " 0 of 0" not in text and ("none in this sample" in text or text.count("byte-identical") == 2), text
    assert "everything sent again matched (2 requests)" in " ".join(text.split())


def test_status_gives_totals_the_share_done_and_the_time_left(tmp_path, cli):
    from tests.helpers.runs import CONFIG, config

    out = tmp_path / "run"
    run_job(config(tmp_path, CONFIG), out, engines=Recorder(fail_after=30))  # the engine goes down part-way
    code, text, err = cli("status", str(out))
    line = next(x for x in " ".join(text.split()).split("requests: ")[1:] if " done" in x)
    done, total = (int(n) for n in line.split(" done")[0].split(" of "))
    assert code == 0 and 0 < done < total and f"{total - done} left, about " in line and "on this machine" in line
    run_job(config(tmp_path, CONFIG), out, engines=Recorder())
    code, text, _ = cli("status", str(out))
    assert f"requests: {total} of {total} done (100%); 0 left" in " ".join(text.split())


def test_progress_is_printed_as_lines_at_least_every_interval_when_not_on_a_terminal(capsys, monkeypatch):
    from dualjudge.cli.run import LineProgress

    monkeypatch.setattr(LineProgress, "EVERY_S", 0.05)
    progress = LineProgress()
    try:
        stage = progress.stage("answers: smollm2", 4)
        stage.advance(10)
        stage.advance(20)
        import time

        time.sleep(0.3)
        stage.end()
    finally:
        progress.close()
    err = capsys.readouterr().err
    assert "answers: smollm2: 2 of 4 (50%)" in err and "s left" in err and "answers: smollm2: 2 of 4 done in" in err


def test_a_strategy_gap_is_one_number_and_the_wrong_winner_chance_follows_its_test(tmp_path):
    """Decision risk's mean difference is the paired test's delta on per-group means, printed alike; its chance of
    naming the wrong winner is that test's one-sided p, never 0% from a percentile bootstrap over seven groups."""
    from dualjudge.analysis.simulated.simulate import simulate
    from dualjudge.report.build import analyze

    frame = simulate(n_signs=7, items_per_sign=3, repeats=4, seed=4)  # every cell holds all four strategies
    table = tmp_path / "t.parquet"
    frame.to_parquet(table, index=False)
    summary = analyze(table, tmp_path / "a", n_resamples=100)
    md = (tmp_path / "a" / "report.md").read_text()
    for name, test in summary.paired_tests.items():
        pair = next((k, v) for k, v in summary.decision_risk.pairs.items() if set(k.split(" vs ")) == {name, "sa"})
        key, risk = pair
        sign = 1 if key.startswith(name) else -1
        clustered = test.sign_clustered
        assert sign * risk.mean_difference == pytest.approx(clustered.delta_overall)
        assert risk.p_wrong_winner == pytest.approx(clustered.p / 2)  # the same test, one-sided
        assert risk.p_wrong_winner > 0
        row = next(line for line in md.splitlines() if line.startswith(f"| {key} |"))
        assert f"| {abs(risk.mean_difference):.2f} |" in row.replace("-", "")
    assert "Not a per-judge estimate: the pooled model" in md


def test_the_help_the_report_and_its_captions_say_what_holds_for_any_task(cli, tmp_path):
    """--help speaks of any reference-based task; the report names the probes that were not run; a judge's figure of
    its two verdicts says so, not 'the two judges'."""
    from dualjudge.analysis.simulated.simulate import simulate
    from dualjudge.report.build import analyze

    code, text, _ = cli("--help")
    assert code == 0 and "any reference-based task" in " ".join(text.split())
    table = tmp_path / "t.parquet"
    simulate(n_signs=6, items_per_sign=2, repeats=1, seed=1).to_parquet(table, index=False)
    analyze(table, tmp_path / "a", n_resamples=100)
    md = (tmp_path / "a" / "report.md").read_text()
    assert "Not run (no probe table beside the verdicts): the presentation-order probe ([probes] order), the padding probe" in md
    assert "Joint distribution of the two judges" not in md and "its quality verdicts split by its equivalence verdicts" in md


def test_a_vllm_imported_to_read_its_registry_says_nothing_at_import():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "from dualjudge.inference import vllm_api; vllm_api.registry()"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "Triton" not in done.stderr and "WARNING" not in done.stderr, done.stderr
