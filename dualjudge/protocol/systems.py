"""The four systems under test (prompting strategies) and how one answers a variant.

SA, CoT and CoI are one call; MA is three calls in sequence (Vision specialist, Text/Symbol
specialist, Integration specialist), each seeing the input and the previous outputs. Every answer
ends in a `SIGN_TYPE: <category>` line: enforced by the regex in `constrained` mode, measured by
the parse in `parsed` mode (the paper's format compliance).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from dualjudge.inference.types import Caller, Constraint, GenerationRequest, GenerationResult, Image, Message, Sampling
from dualjudge.outcome import Status
from dualjudge.protocol.prompts import SIGN_PROMPTS, PromptSet
from dualjudge.protocol.seeds import derive_seed
from dualjudge.protocol.vocabulary import FinalLine, sign_type_line

Strategy = Literal["sa", "cot", "coi", "ma"]
Modality = Literal["image", "text"]
SignTypeMode = Literal["constrained", "parsed"]
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
STEPS: dict[str, tuple[str, ...]] = {
    "sa": ("sa",),
    "cot": ("cot",),
    "coi": ("coi",),
    "ma": ("ma_vision", "ma_symbol", "ma_integration"),
}
SIGN_LINE_TOKENS = 48  # budget kept back for the final SIGN_TYPE line
DEFAULT_SYSTEM_SAMPLING = Sampling(temperature=0.7, max_tokens=768)


@dataclass(frozen=True)
class Item:
    """One variant as a system sees it: the image (image modality) or the scene text (text modality),
    and any text shown with it in either (an applied-rule situation); the task's prompts, its labels
    and the final line its answers end with (None: a task without labels, answers end freely).
    `sign_code` is the task item's id (a sign's code in uk-signs)."""

    variant_id: str
    sign_code: str
    scene_text: str
    image: Image | None = None
    context: str = ""
    prompts: PromptSet = SIGN_PROMPTS
    final: FinalLine | None = None
    categories: str = ""

    @staticmethod
    def of_sign(variant_id: str, code: str, scene_text: str, image: Image | None = None) -> Item:
        """A uk-signs variant: the project's prompts, SIGN_TYPE over the catalogue's categories."""
        return Item(variant_id, code, scene_text, image, final=sign_type_line(), categories=categories_block())

    def item_text(self, modality: Modality) -> str:
        """What the task prompts show as text: the scene text (text modality) and the context, as a block."""
        parts = [self.scene_text] if modality == "text" and self.scene_text else []
        parts += [self.context] if self.context else []
        return "".join(f"{p}\n\n" for p in parts)


@dataclass(frozen=True)
class Call:
    step: str
    prompt: str
    request: GenerationRequest
    result: GenerationResult


@dataclass(frozen=True)
class SystemAnswer:
    text: str | None
    predicted_category: str | None
    format_ok: bool
    status: Status
    calls: tuple[Call, ...]
    detail: str | None = None

    @property
    def prompt_tokens(self) -> int:
        return sum(c.result.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.result.completion_tokens for c in self.calls)

    @property
    def latency_s(self) -> float:
        return sum(c.result.latency_s for c in self.calls)


def categories_block() -> str:
    """uk-signs' 25 categories, one line each (read on first use: the task is built on the protocol)."""
    from dualjudge.tasks.signs import uk_signs

    return uk_signs().labels_block()


def system_seed(run_seed: int, item: Item, repeat: int, strategy: str, step: str) -> int:
    return derive_seed(run_seed, "system", item.variant_id, repeat, strategy, step)


def build_step_request(
    strategy: Strategy,
    step_index: int,
    item: Item,
    *,
    modality: Modality,
    sign_type_mode: SignTypeMode,
    sampling: Sampling,
    previous: tuple[str, ...] = (),
) -> GenerationRequest:
    """The request for one step of a strategy, given the outputs of its earlier steps."""
    step = STEPS[strategy][step_index]
    prompt = item.prompts.load(f"{step}.{modality}")
    values: dict[str, str] = {"categories": item.categories, "scene_text": item.scene_text, "item_text": item.item_text(modality)}
    if step in ("ma_symbol", "ma_integration"):
        values["vision_report"] = previous[0]
    if step == "ma_integration":
        values["symbol_report"] = previous[1]
    system, user = item.prompts.render(prompt, **values)
    if modality == "image" and item.image is None:
        raise ValueError(f"variant {item.variant_id} has no image for the image modality")
    messages = (Message("system", system), Message("user", user, item.image if modality == "image" else None))
    final = step_index == len(STEPS[strategy]) - 1
    constraint = None
    if final and sign_type_mode == "constrained" and item.final is not None:
        constraint = Constraint.regex(item.final.pattern(max(0, sampling.max_tokens - SIGN_LINE_TOKENS)))
    return GenerationRequest(messages, sampling, constraint, (prompt.sha256,))


async def run_system(
    strategy: Strategy,
    item: Item,
    call: Caller,
    *,
    modality: Modality,
    sign_type_mode: SignTypeMode,
    sampling: Sampling = DEFAULT_SYSTEM_SAMPLING,
    run_seed: int = 0,
    repeat: int = 0,
) -> SystemAnswer:
    """Answer one variant with one strategy. MA runs its three specialists in order."""
    calls: list[Call] = []
    outputs: list[str] = []
    for i, step in enumerate(STEPS[strategy]):
        seeded = Sampling(
            temperature=sampling.temperature,
            max_tokens=sampling.max_tokens,
            seed=system_seed(run_seed, item, repeat, strategy, step),
            top_p=sampling.top_p,
        )
        request = build_step_request(
            strategy, i, item, modality=modality, sign_type_mode=sign_type_mode, sampling=seeded, previous=tuple(outputs)
        )
        result = await call(request)
        calls.append(Call(step, f"{step}.{modality}", request, result))
        if not result.ok:
            return SystemAnswer(None, None, False, "error", tuple(calls), result.error or "no text returned")
        outputs.append(result.text or "")
    text = outputs[-1]
    if item.final is None:  # a task without labels: any answer with text is well formed
        return SystemAnswer(text, None, bool(text.strip()), "ok", tuple(calls))
    category = item.final.parse(text)
    if category is None and sign_type_mode == "constrained":
        return SystemAnswer(
            text,
            None,
            False,
            "parse_failure",
            tuple(calls),
            f"constrained answer has no valid {item.final.name} line (engine ignored the constraint?)",
        )
    return SystemAnswer(text, category, category is not None, "ok", tuple(calls))
