"""Run configuration: a TOML file validated with pydantic.

The configuration is strict: unknown keys, values of the wrong type (`repeats = true`,
`temperature = "0.7"`), empty lists and repeated entries are one-line errors that name the key and the
file; nothing is coerced or silently deduplicated. The part of the
configuration that decides results (everything but engine plumbing) has a fingerprint; a run
directory refuses to resume under a configuration with a different fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import ModelCard, all_cards, get_card, user_cards_dir
from dualjudge.inference.settings import EngineSettings
from dualjudge.protocol.judges import DEFAULT_JUDGE_SAMPLING, verdict_type
from dualjudge.protocol.kinds import PAIRWISE, PROTOCOL_KINDS, declared
from dualjudge.protocol.probes import PADDING_SAMPLING
from dualjudge.protocol.systems import DEFAULT_SYSTEM_SAMPLING, STRATEGIES, Strategy
from dualjudge.protocol.variants import HOLISTIC, variant_problem, variant_rubric
from dualjudge.protocol.verdicts import OverallConvention
from dualjudge.schema import Bool, Distinct, Float, Int, Str, result_fields, setting
from dualjudge.tasks.registry import DEFAULT as DEFAULT_TASK
from dualjudge.tasks.registry import default_rubric, resolve
from dualjudge.tasks.signs import sign_codes
from dualjudge.tasks.task import Task, TaskItem
from dualjudge.tomlfile import first_error, read_toml
from dualjudge.variants.occlusion import MODES, VISIBILITIES, Mode, check_visibility


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunSection(_Section):
    # a folder name under runs/: letters, digits, "_", "-" and ".", with at least one that is not "."
    name: Str = Field(default="run", pattern=r"^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    seed: Int = Field(default=0, ge=0, le=2**63 - 1)


RECORDED_TASK = "recorded_task"  # the validation context's key for a run's record of its task folder


class TaskSection(_Section):
    """Which task the run studies: a built-in one by name (uk-signs, uk-signs-applied), or a task folder."""

    # the fingerprint records the task's name and content hash, not where its folder lies
    name: Str | None = setting(None, affects_results=False, pattern=r"^[a-z0-9][a-z0-9_-]{0,47}$")
    path: Str | None = setting(None, affects_results=False)

    _recorded: Task | None = PrivateAttr(default=None)  # what a run recorded of its task folder (an export's)

    @model_validator(mode="after")
    def _one(self, info: ValidationInfo) -> TaskSection:
        if self.name and self.path:
            raise ValueError("name a built-in task or give a task folder's path, not both")
        recorded = (info.context or {}).get(RECORDED_TASK)
        if self.path and isinstance(recorded, Task):
            self._recorded = recorded
        return self

    def load(self) -> Task:
        """The task, read (a folder) or built (a built-in one); a one-line error if it cannot be. A run's stored
        configuration read for an export holds the run's record of its folder instead (validation context)."""
        return self._recorded if self._recorded is not None else resolve(self.name, self.path)


class TestbedSection(_Section):
    signs: Literal["all"] | Annotated[tuple[Str, ...], Distinct] = "all"
    items: Literal["all"] | Annotated[tuple[Str, ...], Distinct] = "all"  # the task's items to run
    visibilities: Annotated[tuple[Float, ...], Distinct] = VISIBILITIES
    modes: Annotated[tuple[Mode, ...], Distinct] = MODES
    repeats: Int = Field(default=3, ge=1, le=100)
    modality: Literal["image", "text"] = "image"
    size: Int = Field(default=512, ge=32, le=2048)
    images: Str | None = None  # folder of official artwork to use instead of renders
    sample: Int | None = Field(default=None, ge=1, le=100_000)  # this many of the task's items, drawn by sample_seed
    sample_seed: Int = Field(default=0, ge=0, le=2**63 - 1)
    _drawn: tuple[str, ...] | None = PrivateAttr(default=None)  # the sample a run drew at its start (its store keeps it)

    @model_validator(mode="after")
    def _one_selection(self) -> TestbedSection:
        if self.sample is not None and (self.items != "all" or self.signs != "all"):
            raise ValueError("testbed.sample draws the items: name them (testbed.items, testbed.signs) or sample, not both")
        return self

    def drawn(self, ids: tuple[str, ...]) -> TestbedSection:
        """This section with the sample a run drew at its start (a task folder that grew since draws no other)."""
        section = self.model_copy()
        section._drawn = ids
        return section

    @field_validator("signs")
    @classmethod
    def _known_signs(cls, v: str | tuple[str, ...]) -> str | tuple[str, ...]:
        if not isinstance(v, str):
            known = set(sign_codes())
            for code in v:
                if code not in known:
                    raise ValueError(f"unknown sign code {code!r}")
        return v

    @field_validator("visibilities")
    @classmethod
    def _levels(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        for x in v:
            try:
                check_visibility(x)
            except DualjudgeError as e:
                raise ValueError(str(e)) from None
        return v

    def codes(self) -> tuple[str, ...] | None:
        return None if self.signs == "all" else tuple(self.signs)

    def item_ids(self) -> tuple[str, ...] | None:
        return None if self.items == "all" else tuple(self.items)


class SystemsSection(_Section):
    models: Annotated[tuple[Str, ...], Distinct]
    strategies: Annotated[tuple[Strategy, ...], Distinct] = STRATEGIES
    sign_type: Literal["constrained", "parsed"] = "constrained"
    temperature: Float = Field(default=DEFAULT_SYSTEM_SAMPLING.temperature, ge=0, le=2)
    top_p: Float = Field(default=1.0, gt=0, le=1)
    max_tokens: Int = Field(default=DEFAULT_SYSTEM_SAMPLING.max_tokens, ge=64, le=8192)


class JudgesSection(_Section):
    models: Annotated[tuple[Str, ...], Distinct]
    kinds: Annotated[tuple[Str, ...], Distinct] = PROTOCOL_KINDS  # judge kinds declared in protocol/kinds.py
    temperature: Float = Field(default=DEFAULT_JUDGE_SAMPLING.temperature, ge=0, le=2)
    # at least 128: the verdict's reasoning is bounded to what max_tokens leaves (protocol/verdicts.py)
    max_tokens: Int = Field(default=DEFAULT_JUDGE_SAMPLING.max_tokens, ge=128, le=4096)
    # overall: the mean of the three integer sub-scores (the paper's convention), or the judge's own integer
    overall: OverallConvention = "mean_of_subscores"
    # stability: k >= 2 extra passes of every verdict, sampled at pass_temperature with a seed per pass
    passes: Int = Field(default=1, ge=1, le=10)
    pass_temperature: Float = Field(default=0.7, gt=0, le=2)
    # judge designs compared side by side: holistic, rubric, rubric:NAME (protocol/variants.py)
    variants: Annotated[tuple[Str, ...], Distinct] = (HOLISTIC,)
    rubrics: dict[Str, Str] = {}  # NAME -> rubric file, for the rubric:NAME variants
    # the pairwise judge's pairs (kinds with "pairwise"), each asked in both orders: each judge's own family's answer
    # against every other family's to the same prompt (own_vs_other, Panickssery et al.'s design), every pair of
    # system models (all), or N pairs per item drawn by the run's seed (the same pairs for every judge)
    pairs: Literal["own_vs_other", "all"] | Int = "own_vs_other"
    # an image study's judges see the image the system answered (its occluded variant) beside the reference and the
    # answer; every judge must read images. Off: the judges see text only (the paper's protocol)
    see_image: bool = False

    @property
    def pointwise(self) -> tuple[str, ...]:
        """The kinds that judge one answer at a time (every kind but the pairwise judge)."""
        return tuple(k for k in self.kinds if k != PAIRWISE)

    @property
    def pairwise(self) -> bool:
        return PAIRWISE in self.kinds

    @model_validator(mode="after")
    def _variants_known(self) -> JudgesSection:
        known = [*(k.name for k in declared()), PAIRWISE]
        for kind in self.kinds:
            if kind not in known:
                raise ValueError(f"unknown judge kind {kind!r}; choose from {', '.join(known)}")
        if isinstance(self.pairs, int) and self.pairs < 1:
            raise ValueError("judges.pairs: a number of pairs per item is at least 1 (or own_vs_other, all)")
        for name in self.variants:
            problem = variant_problem(name, self.rubrics)
            if problem:
                raise ValueError(problem)
        if self.overall == "judge_given" and any(v != HOLISTIC for v in self.variants):
            raise ValueError(
                'the rubric variants use the paper\'s overall (mean_of_subscores); set judges.overall = "mean_of_subscores"'
            )
        for name in self.variants:
            try:
                rubric = variant_rubric(name, self.rubrics)
            except DualjudgeError as e:
                raise ValueError(f"judges.rubrics: {e}") from None
            for kind in (*self.pointwise, "pairwise") if rubric else ():
                try:
                    verdict_type(kind, self.overall, rubric).reasoning_chars(self.max_tokens)
                except ValueError as e:  # the clause scores need room before the reasoning's bound
                    raise ValueError(f"judges.max_tokens: judge variant {name!r}: {e}") from None
        return self


class ProbesSection(_Section):
    order: Bool = False
    order_pairs: Int = Field(default=50, ge=1)
    padding: Bool = False
    padding_samples: Int = Field(default=50, ge=1)
    padding_max_tokens: Int = Field(default=PADDING_SAMPLING.max_tokens, ge=64, le=4096)
    # self-recognition: each judge model's own answer against another family's, in both orders, "which did you write?"
    recognition: Bool = False
    recognition_pairs: Int = Field(default=50, ge=1)  # per judge model
    recognition_single: Bool = False  # also each answer of a pair alone: "did you write this?"


EngineSection = EngineSettings  # declared once, in inference/settings.py


class ModelsSection(_Section):
    # a folder of the user's own model cards (overriding built-ins by name); default DUALJUDGE_MODELS
    dir: Str | None = setting(None, affects_results=False)


class RunConfig(_Section):
    run: RunSection = RunSection()
    task: TaskSection = TaskSection()
    testbed: TestbedSection = TestbedSection()
    systems: SystemsSection
    judges: JudgesSection
    probes: ProbesSection = ProbesSection()
    engine: EngineSection = EngineSection()
    models: ModelsSection = ModelsSection()

    @model_validator(mode="before")
    @classmethod
    def _modality_of_the_task(cls, data: Any, info: ValidationInfo) -> Any:
        """testbed.modality, when not set: the task's own (a task folder states it in task.toml); uk-signs,
        which has both, runs on images."""
        if not isinstance(data, dict) or not isinstance(data.get("testbed", {}), dict):
            return data
        testbed = dict(data.get("testbed") or {})
        if "modality" in testbed:
            return data
        task = data.get("task", {})
        try:
            section = task if isinstance(task, TaskSection) else TaskSection.model_validate(task or {}, context=info.context)
        except ValidationError:
            return data  # the task section's own error is reported where it is validated
        modalities = section.load().modalities
        testbed["modality"] = modalities[0] if len(modalities) == 1 else "image"
        return {**data, "testbed": testbed}

    @model_validator(mode="after")
    def _models_exist(self) -> RunConfig:
        for name in (*self.systems.models, *self.judges.models, *self.engine.endpoints):
            self.card(name)  # raises a DualjudgeError naming the unknown model
        task, t = self.task.load(), self.testbed
        if t.modality not in task.modalities:
            raise ValueError(f"testbed.modality: task {task.name} is {' and '.join(task.modalities)} only")
        signed = all(i.sign is not None for i in task.items)
        if t.signs != "all" and not signed:
            raise ValueError(f"testbed.signs: task {task.name} has no signs; select its items with testbed.items")
        if t.images and not signed:
            raise ValueError(f"testbed.images: task {task.name} has no signs to take artwork for")
        for item_id in t.item_ids() or ():
            if item_id not in task.ids:
                raise ValueError(f"testbed.items: task {task.name} has no item {item_id!r}")
        if not self.items():
            raise ValueError(f"testbed: no item of task {task.name} is selected (testbed.signs and testbed.items)")
        if self.judges.pairwise:
            if len(self.systems.models) < 2:
                raise ValueError("judges.kinds: the pairwise judge compares two system models' answers; name two or more")
            families = {self.card(m).family for m in self.systems.models}
            if self.judges.pairs == "own_vs_other" and len(families) < 2:
                raise ValueError(
                    'judges.pairs: own_vs_other pairs answers of different families, and the systems are all of one; use "all"'
                )
        if self.testbed.modality == "image":
            for name in self.systems.models:
                if "image" not in self.card(name).modalities:
                    raise ValueError(f'systems.models: {name} is text-only; set testbed.modality = "text"')
        if self.judges.see_image:
            if self.testbed.modality != "image":
                raise ValueError("judges.see_image: the study's items are text, so there is no image to show the judges")
            blind = [m for m in self.judges.models if "image" not in self.card(m).modalities]
            if blind:
                raise ValueError(f"judges.see_image: {', '.join(blind)} cannot read images; leave them out or turn it off")
        return self

    def fingerprint(self) -> str:
        """Hash of every setting that can change a result, as the settings' schemas declare it (not
        concurrency, endpoints, timeouts, the cache file, nor another backend's grammar backend)."""
        backend = self.engine.backend
        data = {name: result_fields(getattr(self, name), backend) for name in type(self).model_fields}
        data = {name: fields for name, fields in data.items() if fields}  # a plumbing-only section adds nothing
        if data.get("testbed", {}).get("items") == "all":  # as before tasks: a run's fingerprint is unchanged
            data["testbed"] = {k: v for k, v in data["testbed"].items() if k != "items"}
        if "testbed" in data and data["testbed"].get("sample") is None:  # as before samples: unchanged
            data["testbed"] = {k: v for k, v in data["testbed"].items() if k not in ("sample", "sample_seed")}
        if "judges" in data and not data["judges"].get("see_image"):  # as before judges saw images: unchanged
            data["judges"] = {k: v for k, v in data["judges"].items() if k != "see_image"}
        task = self.task.load()
        if task.name != DEFAULT_TASK:  # uk-signs adds nothing (runs from before tasks resume)
            data["task"] = {"name": task.name, "sha256": self.task_hash()}
        if self.judges.rubrics and "judges" in data:  # a rubric is its text, wherever its file lies
            hashes = self.rubric_hashes()
            data["judges"] = {
                **data["judges"],
                "rubrics": {name: hashes.get(f"rubric:{name}", "unused") for name in sorted(self.judges.rubrics)},
            }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def rubric_hashes(self) -> dict[str, str]:
        """Each rubric variant's rubric, by the sha256 of what its judges are shown."""
        from dualjudge.protocol.variants import variant_rubric

        out = {}
        for name in self.judges.variants:
            rubric = variant_rubric(name, self.judges.rubrics, self.default_rubric())
            if rubric is not None:
                out[name] = rubric.sha256
        return out

    def items(self) -> tuple[TaskItem, ...]:
        """The task's items this run asks about: those named (testbed.items), of the signs named (testbed.signs), or
        a seeded sample (testbed.sample: the one the run drew at its start, once it has)."""
        task, t = self.task.load(), self.testbed
        if t.sample is not None:
            if t._drawn is not None:
                missing = [i for i in t._drawn if i not in task.ids]
                if missing:
                    raise DualjudgeError(
                        f"task {task.name}: item {missing[0]} of this run's sample is no longer in it; "
                        "restore it, or use another --out"
                    )
                return task.select(t._drawn)
            return task.sample(t.sample, t.sample_seed)
        chosen = task.select(self.testbed.item_ids())
        codes = self.testbed.codes()
        return chosen if codes is None else tuple(i for i in chosen if i.sign in codes)

    def task_hash(self) -> str | None:
        """What a run's task is, as a hash: the whole task folder; for a sample, the task's own files and the sampled
        items alone (the folder may grow by other items and the run resumes)."""
        task = self.task.load()
        return task.content_of(self.items()) if self.testbed.sample is not None else task.sha256

    def default_rubric(self) -> Path | None:
        """The `rubric` variant's rubric: the task's own, the task folders' default, or (uk-signs) the shipped one."""
        return default_rubric(self.task.load())

    def cards(self) -> dict[str, ModelCard]:
        """Every model card this configuration can name: built-in, and the user's folder."""
        return all_cards(user_dir=user_cards_dir(self.models.dir))

    def card(self, name: str) -> ModelCard:
        return get_card(name, user_dir=user_cards_dir(self.models.dir))

    def roles(self) -> dict[str, list[str]]:
        """Each model of the study and its roles in it ("system", "judge")."""
        out: dict[str, list[str]] = {}
        for name in self.systems.models:
            out.setdefault(name, []).append("system")
        for name in self.judges.models:
            out.setdefault(name, []).append("judge")
        return out

    def all_models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.systems.models, *self.judges.models)))


PATH_SETTINGS = (("models", "dir"), ("testbed", "images"), ("engine", "cache"), ("task", "path"))  # and every [judges.rubrics] file


def _anchor(value: object, folder: Path) -> object:
    """A relative path written in a configuration, as a path from the configuration file's folder."""
    if not isinstance(value, str) or not value or value.startswith("~") or Path(value).is_absolute():
        return value
    return str(folder / value)


def anchor_paths(raw: dict[str, object], folder: Path) -> dict[str, object]:
    """Paths in a configuration are relative to the configuration file, not to the working directory."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for section, key in PATH_SETTINGS:
        part = out.get(section)
        if isinstance(part, dict) and key in part:
            part[key] = _anchor(part[key], folder)
    judges = out.get("judges")
    if isinstance(judges, dict) and isinstance(judges.get("rubrics"), dict):
        judges["rubrics"] = {name: _anchor(file, folder) for name, file in judges["rubrics"].items()}
    return out


def load_config(path: Path) -> RunConfig:
    raw = anchor_paths(read_toml(path, "config file"), path.resolve().parent)
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as e:
        where, msg = first_error(e)
        raise DualjudgeError(f"{path}: {where}: {msg}") from None
