"""How constraints travel to an OpenAI-compatible endpoint, declared once per dialect.

A card's `weights.structured_outputs` names its dialect. "vllm": vLLM's `structured_outputs` request
field, which enforces JSON schemas and regexes during decoding. "openai": `response_format` with a
JSON schema, as hosted APIs take it: no regex (a study whose systems need the SIGN_TYPE regex must use
`systems.sign_type = "parsed"`), and the schema is not known to be enforced, so a verdict that comes
back truncated or off-schema is asked again (protocol/judges.py: UNCONSTRAINED_RETRIES). "sglang":
SGLang's OpenAI-compatible server, which enforces a `response_format` JSON schema and takes a regex in
its own top-level `regex` request field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

DialectName = Literal["vllm", "openai", "sglang"]
# The model servers dualjudge starts (`engine.backend`): backend NAME is served by the SERVER class of
# inference/NAME_server.py and speaks the dialect of the same name. A new server backend is that module,
# its name here with its dialect below, and (if it takes its own arguments) a table in the card.
ServerBackend = Literal["vllm", "sglang"]


@dataclass(frozen=True)
class Dialect:
    name: DialectName
    regex: bool  # can it enforce a regex constraint
    enforces_schema: bool  # is a JSON-schema verdict guaranteed to parse (else it is retried when it does not)
    json_field: str  # the request field a JSON schema travels in
    regex_field: str | None = None  # the request field a regex travels in (None: it cannot be sent)

    def enforces(self, kind: str) -> bool:
        """Whether a constraint of this kind ("regex" or "json") is kept during decoding."""
        return self.regex if kind == "regex" else self.enforces_schema


DIALECTS: dict[DialectName, Dialect] = {
    "vllm": Dialect("vllm", regex=True, enforces_schema=True, json_field="structured_outputs", regex_field="structured_outputs"),
    "openai": Dialect("openai", regex=False, enforces_schema=False, json_field="response_format"),
    "sglang": Dialect("sglang", regex=True, enforces_schema=True, json_field="response_format", regex_field="regex"),
}
assert set(DIALECTS) == set(get_args(DialectName)), "every dialect declared"
assert set(get_args(ServerBackend)) <= set(DIALECTS), "every server backend speaks its own dialect"


def dialect(name: DialectName) -> Dialect:
    return DIALECTS[name]
