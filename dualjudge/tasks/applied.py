"""The built-in uk-signs-applied task: the paper's next step, applying a sign's rule to a situation.

Each testbed sign has a machine-readable rule (data/applied_rules.toml: what it requires, of whom,
when, with which limit). A seeded generator draws situations (day and time, vehicle, speed, height,
weight, manoeuvre) and decides each one's gold verdict from the rule; the gold explanation is written
from the rule and the situation. Situations alternate allowed / not allowed, so every sign has both.
A system sees the (occluded) sign and the situation and must end with `VERDICT: allowed|not_allowed`.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dualjudge.errors import DualjudgeError
from dualjudge.paths import data_dir
from dualjudge.protocol.prompts import PromptSet
from dualjudge.protocol.seeds import derive_seed
from dualjudge.tasks.folder import task_prompts_dir, task_words
from dualjudge.tasks.task import Label, Task, TaskItem
from dualjudge.testbed.catalogue import Catalogue, default_catalogue
from dualjudge.tomlfile import first_error, read_toml

NAME = "uk-signs-applied"
SITUATIONS = 2  # per sign: one allowed, one not allowed
Verdict = Literal["allowed", "not_allowed"]
VERDICTS: tuple[Verdict, ...] = ("allowed", "not_allowed")
LABELS = (
    Label("allowed", "what the road user does is permitted by the sign's rule in this situation"),
    Label("not_allowed", "what the road user does breaks the sign's rule in this situation"),
)
DOMAIN = "UK road traffic signs and the rules they set"
QUESTION = (
    "Given the situation, is what the road user does allowed under this sign? Say what the sign requires, "
    "apply it to the situation, and decide."
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
VEHICLES = ("car", "van", "motorcycle", "minibus")
Kind = Literal["actions", "speed_max", "speed_min", "national", "height_max", "weight_max"]
NATIONAL = {"single": 60.0, "dual": 70.0}  # a car's national speed limit by carriageway


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    sign: str
    kind: Kind
    applies_to: str = Field(min_length=3)
    when: str = Field(min_length=3)
    requires: str = Field(min_length=5)
    limit: float | None = None
    allowed: tuple[str, ...] = ()
    not_allowed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Situation:
    """One situation at one sign: its facts and the gold verdict the generator decided from the rule."""

    sign: str
    index: int
    day: str
    time: str
    vehicle: str
    verdict: Verdict
    action: str | None = None
    speed: float | None = None
    carriageway: str | None = None
    height: float | None = None
    weight: float | None = None
    goods: bool = True

    @property
    def item_id(self) -> str:
        return f"{self.sign}-s{self.index}"

    def actor(self) -> str:
        """Who does what, in words: "a driver in a van turns left at the sign"."""
        if self.action is None:
            return ""
        if self.action.startswith(("a ", "an ")):
            return self.action
        who = "a motorcyclist" if self.vehicle == "motorcycle" else f"a driver in a {self.vehicle}"
        return f"{who} {self.action}"

    def text(self) -> str:
        when = f"It is {self.day}, {self.time}."
        if self.action is not None:
            return f"{when} {self.actor()[0].upper()}{self.actor()[1:]}."
        if self.speed is not None and self.carriageway is not None:
            return (
                f"{when} A driver in a car is travelling at {self.speed:g} mph on a {self.carriageway} carriageway past this sign."
            )
        if self.speed is not None:
            return (
                f"{when} A driver in a {self.vehicle} is travelling at {self.speed:g} mph on the road past this sign, "
                "in free-flowing traffic."
            )
        if self.height is not None:
            return f"{when} A {self.vehicle} {self.height:.1f} metres high, load included, drives on past this sign."
        kind = "goods vehicle" if self.goods else "coach"
        return f"{when} A {kind} with a maximum gross weight of {self.weight:g} tonnes drives on past this sign."


def evaluate(rule: Rule, s: Situation) -> Verdict:
    """The verdict the rule gives a situation, from its facts alone (never from the generator's intent)."""
    if rule.kind == "actions":
        if s.action in rule.not_allowed:
            return "not_allowed"
        if s.action in rule.allowed:
            return "allowed"
        raise ValueError(f"sign {rule.sign}: action {s.action!r} is in neither list")
    limit = rule.limit if rule.limit is not None else 0.0
    if rule.kind == "speed_max":
        return "not_allowed" if (s.speed or 0) > limit else "allowed"
    if rule.kind == "speed_min":
        return "not_allowed" if (s.speed or 0) < limit else "allowed"
    if rule.kind == "national":
        return "not_allowed" if (s.speed or 0) > NATIONAL[s.carriageway or "single"] else "allowed"
    if rule.kind == "height_max":
        return "not_allowed" if (s.height or 0) > limit + 1e-9 else "allowed"
    return "not_allowed" if s.goods and (s.weight or 0) > limit + 1e-9 else "allowed"


def situation(rule: Rule, index: int, seed: int = 0) -> Situation:
    """Situation `index` at the rule's sign: even indexes allowed, odd not allowed, drawn with a seed."""
    rng = random.Random(derive_seed(seed, "applied", rule.sign, index))
    want: Verdict = VERDICTS[index % 2]
    base = {
        "sign": rule.sign,
        "index": index,
        "day": rng.choice(DAYS),
        "time": f"{rng.randrange(24):02d}:{rng.randrange(0, 60, 5):02d}",
        "vehicle": rng.choice(VEHICLES),
        "verdict": want,
    }
    limit = rule.limit or 0.0
    if rule.kind == "actions":
        return Situation(**base, action=rng.choice(rule.allowed if want == "allowed" else rule.not_allowed))  # type: ignore[arg-type]
    if rule.kind == "speed_max":
        speed = (
            rng.randint(max(5, int(limit) - 15), int(limit)) if want == "allowed" else rng.randint(int(limit) + 1, int(limit) + 20)
        )
        return Situation(**base, speed=float(speed))  # type: ignore[arg-type]
    if rule.kind == "speed_min":
        speed = (
            rng.randint(int(limit), int(limit) + 30) if want == "allowed" else rng.randint(max(5, int(limit) - 20), int(limit) - 1)
        )
        return Situation(**base, speed=float(speed))  # type: ignore[arg-type]
    if rule.kind == "national":
        road = rng.choice(sorted(NATIONAL))
        top = int(NATIONAL[road])
        speed = rng.randint(top - 20, top) if want == "allowed" else rng.randint(top + 1, top + 20)
        return Situation(**{**base, "vehicle": "car"}, speed=float(speed), carriageway=road)  # type: ignore[arg-type]
    if rule.kind == "height_max":
        tenths = rng.randint(20, round(limit * 10)) if want == "allowed" else rng.randint(round(limit * 10) + 1, 52)
        return Situation(**{**base, "vehicle": rng.choice(("lorry", "bus", "van"))}, height=tenths / 10)  # type: ignore[arg-type]
    if want == "allowed" and rng.random() < 0.5:
        return Situation(**base, weight=float(rng.randint(12, 20)), goods=False)  # type: ignore[arg-type]
    weight = rng.randint(35, round(limit * 10)) / 10 if want == "allowed" else float(rng.randint(int(limit) + 1, 44))
    return Situation(**base, weight=weight)  # type: ignore[arg-type]


def explanation(rule: Rule, s: Situation) -> str:
    """The gold explanation: the rule, then how it applies to this situation."""
    verdict = "allowed" if s.verdict == "allowed" else "not allowed"
    if rule.kind == "actions":
        why = f"{s.actor()}, which {'keeps to' if s.verdict == 'allowed' else 'breaks'} this rule"
    elif rule.kind == "national":
        top = NATIONAL[s.carriageway or "single"]
        side = "within" if s.verdict == "allowed" else "above"
        why = f"the car's {s.speed:g} mph is {side} the {top:g} mph limit of a {s.carriageway} carriageway"
    elif rule.kind in ("speed_max", "speed_min"):
        sides = {"speed_max": ("within", "above"), "speed_min": ("at or above", "below")}[rule.kind]
        why = f"{s.speed:g} mph is {sides[0] if s.verdict == 'allowed' else sides[1]} the {rule.limit:g} mph limit"
    elif rule.kind == "height_max":
        why = f"{s.height:.1f} m is {'within' if s.verdict == 'allowed' else 'above'} the {rule.limit:g} m limit"
    elif not s.goods:
        why = "a coach is not a goods vehicle, so the weight limit does not apply to it"
    else:
        why = f"a goods vehicle of {s.weight:g} t is {'within' if s.verdict == 'allowed' else 'above'} the {rule.limit:g} t limit"
    return f"The sign applies to {rule.applies_to}, {rule.when}: they must {rule.requires}. Here {why}, so this is {verdict}."


def rules_path() -> Path:
    return data_dir() / "applied_rules.toml"


def load_rules(path: Path | None = None) -> dict[str, Rule]:
    path = path or rules_path()
    try:
        rules = [Rule(**r) for r in read_toml(path, "rules file").get("rule", [])]
    except ValidationError as e:
        where, msg = first_error(e)
        raise DualjudgeError(f"{path}: rule invalid at {where}: {msg}") from None
    for r in rules:
        if r.kind == "actions" and not (r.allowed and r.not_allowed):
            raise DualjudgeError(f"{path}: rule of sign {r.sign}: an actions rule needs allowed and not_allowed actions")
        if r.kind not in ("actions", "national") and r.limit is None:
            raise DualjudgeError(f"{path}: rule of sign {r.sign}: a {r.kind} rule needs a limit")
    return {r.sign: r for r in rules}


def uk_signs_applied(situations: int = SITUATIONS, seed: int = 0) -> Task:
    return _applied(default_catalogue(), situations, seed)


@lru_cache(maxsize=4)
def _applied(catalogue: Catalogue, situations: int, seed: int) -> Task:
    rules = load_rules()
    missing = [s.code for s in catalogue.signs if s.code not in rules]
    if missing:
        raise DualjudgeError(f"data/applied_rules.toml: no rule for sign {', '.join(missing)}")
    words = task_words(DOMAIN, QUESTION, "VERDICT", LABELS)
    prompts = PromptSet((task_prompts_dir(),), words)
    items = []
    for sign in catalogue.signs:
        rule = rules[sign.code]
        for k in range(situations):
            s = situation(rule, k, seed)
            items.append(
                TaskItem(
                    id=s.item_id,
                    reference=explanation(rule, s),
                    caption=f"{sign.caption}: {'allowed' if s.verdict == 'allowed' else 'not allowed'}",
                    label=s.verdict,
                    cluster=sign.code,
                    stratum=sign.group,
                    text=s.text(),
                    shown_to_judges=s.text(),
                    sign=sign.code,
                    metadata=(("sign", sign.code), ("rule", rule.kind), ("day", s.day), ("time", s.time)),
                    prompts=prompts,
                )
            )
    return Task(
        name=NAME,
        modalities=("image", "text"),
        domain=DOMAIN,
        question=QUESTION,
        items=tuple(items),
        label="VERDICT",
        labels=LABELS,
        noun="situation",
        prompts=prompts,
        sha256=hashlib.sha256(rules_path().read_bytes() + f"|{situations}|{seed}".encode()).hexdigest(),
        builtin=True,
        situations=True,
    )
