"""A deterministic in-memory engine for protocol and runner tests (no model involved)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from contextlib import asynccontextmanager

from dualjudge.inference.types import GenerationRequest, GenerationResult


class ScriptedEngine:
    """Answers each request with `respond(request)`; an Exception instance becomes an engine error.

    Records every request it receives, so tests can check what a system or judge sent.
    """

    def __init__(
        self, respond: Callable[[GenerationRequest], str | Exception | GenerationResult], model_identity: str = "scripted@0"
    ):
        self.respond = respond
        self.model_identity = model_identity
        self.requests: list[GenerationRequest] = []

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        self.requests.append(request)
        await asyncio.sleep(0)
        out = self.respond(request)
        if isinstance(out, Exception):
            return GenerationResult(None, error=f"{type(out).__name__}: {out}")
        if isinstance(out, GenerationResult):  # a test that sets the finish reason or token counts itself
            return out
        return GenerationResult(
            out,
            finish_reason="stop",
            prompt_tokens=sum(len(m.text.split()) for m in request.messages),
            completion_tokens=len(out.split()),
            latency_s=0.001,
            constraint_kind=request.constraint.kind if request.constraint else None,
        )

    async def close(self) -> None:
        return None


def seeded_text(request: GenerationRequest) -> str:
    """Text that depends on the request's seed, as a sampled model's would."""
    tag = hashlib.sha256(f"{request.sampling.seed}|{request.messages[-1].text}".encode()).hexdigest()[:8]
    return f"I read this sign as {tag}.\nSIGN_TYPE: no_entry"


class ScriptedEngines:
    """An engine factory for the runner: every model answers with `respond`, under the identity
    "<model>@test". Records which models were loaded, and in which order."""

    def __init__(self, respond: Callable[[GenerationRequest], str | Exception]) -> None:
        self.respond = respond
        self.loaded: list[str] = []
        self.engines: dict[str, ScriptedEngine] = {}  # the first engine opened for each model
        self.opened: list[ScriptedEngine] = []  # every engine opened
        self.placed: list[tuple[str, object]] = []  # (model, device group) of every engine opened
        self.closed: list[str] = []  # models whose engine was closed, in order

    async def identity(self, card) -> str:  # type: ignore[no-untyped-def]
        return f"{card.name}@test"

    def respond_as(self, model: str, request: GenerationRequest) -> str | Exception:
        """What `model` answers (the same for every model unless a test says otherwise)."""
        return self.respond(request)

    @asynccontextmanager
    async def open(self, card, on_event=lambda _: None, group=None):  # type: ignore[no-untyped-def]
        self.loaded.append(card.name)
        self.placed.append((card.name, group))
        engine = ScriptedEngine(
            lambda request, model=card.name: self.respond_as(model, request), model_identity=f"{card.name}@test"
        )
        self.engines.setdefault(card.name, engine)
        self.opened.append(engine)
        try:
            yield engine
        finally:
            self.closed.append(card.name)


def fill_schema(schema: dict, tag: str) -> dict:
    """A JSON object that satisfies a verdict schema (any judge design), its numbers drawn from `tag`:
    integers within their bounds, booleans, the first enum value, "r" for text."""
    out: dict = {}
    for i, (name, prop) in enumerate(schema["properties"].items()):
        h = int(hashlib.sha256(f"{tag}|{name}".encode()).hexdigest()[:8], 16)
        if "enum" in prop or "const" in prop:
            out[name] = prop.get("enum", [prop.get("const")])[h % len(prop.get("enum", [0]))]
        elif prop.get("type") == "integer":
            lo, hi = prop.get("minimum", 0), prop.get("maximum", 10)
            out[name] = lo + h % (hi - lo + 1)
        elif prop.get("type") == "boolean":
            out[name] = bool(h % 2)
        else:
            out[name] = "r"
    return out


def toy_grammar_compiler(xgrammar):  # type: ignore[no-untyped-def]
    """An xgrammar compiler over a vocabulary of single printable characters (one token per character)."""
    vocab = [chr(i) for i in range(32, 127)] + ["</s>"]
    return xgrammar.GrammarCompiler(xgrammar.TokenizerInfo(vocab, stop_token_ids=[len(vocab) - 1]))


def assert_verdict_closes(xgrammar, llguidance, compiler, model, max_tokens: int) -> None:  # type: ignore[no-untyped-def]
    """A verdict's constraint compiles in xgrammar and llguidance, accepts the widest verdict with n
    characters of reasoning and refuses n+1, and that widest verdict fits in max_tokens."""
    constraint = model.constraint(max_tokens)
    compiled = compiler.compile_json_schema(constraint.spec, any_whitespace=False)
    n = model.reasoning_chars(max_tokens)
    widest = json.loads(model.widest().model_dump_json())
    for length, accepted in ((n, True), (n + 1, False)):
        text = json.dumps({**widest, "reasoning": "r" * length}, separators=(", ", ": "))
        assert xgrammar.GrammarMatcher(compiled).accept_string(text) is accepted, (model.__name__, length)
        if accepted:  # one token per character at worst, plus end of sequence
            assert len(text) + 1 <= max_tokens
    assert llguidance.LLMatcher.validate_grammar(llguidance.grammar_from("json_schema", constraint.spec)) == ""
