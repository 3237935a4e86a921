"""The rubric editor's request and the check of its rewrite (`dualjudge rubric clarify`).

One request per arm rewrites all of the arm's clauses. The JSON schema names exactly those clause ids
and bounds each text to a sentence or three followed by the three score bands ("... 2: ...; 1: ...;
0: ..."), so a constrained editor cannot drop a clause, add one, or lose a band, and its reply closes
within max_tokens. Engines that do not enforce the schema (hosted ones in the OpenAI dialect, for
example) can still break it: `check_rewrite` refuses such a rewrite, and the arm is retried with a
new seed and then reported, never used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from dualjudge.inference.types import Constraint, GenerationRequest, Message, Sampling
from dualjudge.protocol.prompts import SIGN_PROMPTS, PromptSet
from dualjudge.protocol.rubric import Rubric, check_rewrite
from dualjudge.protocol.verdicts import SAFE_CHAR

LEAD_MIN, LEAD_RUNS = 10, (100, 100, 50)  # the clause's statement: 10 to 250 characters, in runs of <= 100
BAND_MIN, BAND_MAX = 3, 100  # each band's text
BANDS = (" 2: ", "; 1: ", "; 0: ")
EDITOR_TEMPERATURE = 0.7  # sampled, so that a retry with another seed can give another rewrite
ATTEMPTS = 4


def clause_pattern() -> str:
    """A clause text: a statement, then the bands '2: ...; 1: ...; 0: ...' (JSON-string safe characters)."""
    lead = f"{SAFE_CHAR}{{{LEAD_MIN},{LEAD_RUNS[0]}}}" + "".join(f"{SAFE_CHAR}{{0,{n}}}" for n in LEAD_RUNS[1:])
    band = f"{SAFE_CHAR}{{{BAND_MIN},{BAND_MAX}}}"
    return "^" + lead + "".join(marker + band for marker in BANDS) + "$"


def clause_chars() -> int:
    """The longest clause text the pattern allows."""
    return sum(LEAD_RUNS) + sum(len(marker) + BAND_MAX for marker in BANDS)


def editor_max_tokens(ids: tuple[str, ...]) -> int:
    """Enough tokens for the widest reply (one token per character at worst, plus the end of sequence)."""
    widest = {cid: "x" * clause_chars() for cid in ids}
    return len(json.dumps(widest, separators=(", ", ": "))) + 1


def editor_constraint(ids: tuple[str, ...]) -> Constraint:
    schema = {
        "title": "RubricRewrite",
        "type": "object",
        "additionalProperties": False,
        "required": list(ids),
        "properties": {cid: {"type": "string", "pattern": clause_pattern()} for cid in ids},
    }
    return Constraint.json_schema(schema)


def build_editor_request(rubric: Rubric, ids: tuple[str, ...], seed: int, prompts: PromptSet = SIGN_PROMPTS) -> GenerationRequest:
    """The request that rewrites clauses `ids` of `rubric` (the same instruction for either arm), in the task's words."""
    prompt = prompts.load("rubric_editor")
    chosen = "\n".join(f"- {cid}: {rubric.text_of(cid)}" for cid in ids)
    system, user = prompts.render(prompt, rubric=rubric.block(), clauses=chosen)
    sampling = Sampling(temperature=EDITOR_TEMPERATURE, max_tokens=editor_max_tokens(ids), seed=seed)
    return GenerationRequest(
        (Message("system", system), Message("user", user)), sampling, editor_constraint(ids), (prompt.sha256, rubric.sha256)
    )


@dataclass(frozen=True)
class Rewrite:
    """One attempt: the texts when usable, else what was wrong."""

    texts: dict[str, str] | None
    problems: tuple[str, ...]


def read_rewrite(rubric: Rubric, ids: tuple[str, ...], text: str | None, error: str | None = None) -> Rewrite:
    """The editor's reply, checked: JSON, an object of strings, only and all the given clause ids, each
    with its score bands, within length. A reply that fails is never used."""
    if text is None:
        return Rewrite(None, (f"no reply ({error or 'engine error'})",))
    try:
        data = json.loads(text, strict=False)
    except json.JSONDecodeError as e:
        return Rewrite(None, (f"not JSON: {e.msg} at char {e.pos}",))
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        return Rewrite(None, ("not an object of clause texts",))
    texts = {k: v.strip() for k, v in data.items()}
    problems = check_rewrite(rubric, texts, set(ids))
    return Rewrite(None, tuple(problems)) if problems else Rewrite(texts, ())
