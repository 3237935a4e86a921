"""Hosted models beside local ones: a card with weights.source = "remote", driven through the real
engine path against a local OpenAI-style server (a vLLM server stands in in test_engines.py)."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dualjudge.config import RunConfig
from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import ModelCard, load_card
from dualjudge.inference.engines import Engines, open_engine, weights_identity
from dualjudge.inference.preflight import check_models
from dualjudge.inference.settings import EngineSettings
from dualjudge.inference.types import Constraint, GenerationRequest, Message, Sampling
from dualjudge.protocol import QualityVerdict, sign_type_pattern
from dualjudge.studies.job import run_job
from tests.helpers.hosted import KEY, hosted_card


class FakeApi(ThreadingHTTPServer):
    """An OpenAI-style chat endpoint: schema-valid JSON for response_format requests, a SIGN_TYPE
    answer otherwise; the first `limited` requests get 429 with Retry-After: 0."""

    def __init__(self, limited: int = 0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.limited = limited
        self.bodies: list[dict] = []
        self.keys: set[str] = set()
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: FakeApi

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.bodies.append(body)
            self.server.keys.add(self.headers.get("Authorization", ""))
            limited = self.server.limited > 0
            self.server.limited -= 1
        if limited:
            self._send(429, {"error": {"message": "rate limit", "type": "rate_limit_error"}}, {"Retry-After": "0"})
            return
        fmt = body.get("response_format")
        if fmt:
            title = fmt["json_schema"]["name"]
            verdict = {
                "QualityVerdict": {"reasoning": "r", "accuracy": 8, "completeness": 7, "relevance": 9},
                "EquivalenceVerdict": {"reasoning": "r", "equivalent": True},
                "PairwiseVerdict": {"reasoning": "r", "winner": "A"},
            }[title]
            text = json.dumps(verdict)
        else:
            text = "A red ring and a white bar: no entry.\nSIGN_TYPE: no_entry"
        self._send(
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )

    def _send(self, code: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def api():
    server = FakeApi()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _card(tmp_path: Path, text: str) -> ModelCard:
    path = tmp_path / "gpt-4o.toml"
    path.write_text(text)
    return load_card(path)


def test_a_hosted_card_needs_no_architecture_or_size_but_a_local_one_does(tmp_path):
    card = _card(tmp_path, hosted_card())
    assert card.hosted and card.architecture is None and card.parameters_b is None
    assert weights_identity(card) == "gpt-4o@hosted:gpt-4o-2024-08-06@2024-08-06@openai"
    other = _card(tmp_path, hosted_card(version="2024-11-20"))
    assert weights_identity(other) != weights_identity(card)  # a new provider version is a new cache key
    local = hosted_card().replace('source = "remote"', 'source = "hub"\nrepo = "a/b"\nrevision = "main"')
    local = "\n".join(line for line in local.splitlines() if not line.startswith(("base_url", "model", "version", "api_")))
    with pytest.raises(DualjudgeError, match="architecture: required for a model loaded here"):
        _card(tmp_path, local)


def test_preflight_checks_the_key_variable_and_the_regex_a_hosted_api_cannot_enforce(tmp_path, monkeypatch):
    card = _card(tmp_path, hosted_card())
    monkeypatch.delenv("DJ_HOSTED_KEY", raising=False)
    (check,) = check_models({"gpt-4o": ["system"]}, {"gpt-4o": card}, modality="image")
    assert check.status == "warn" and "DJ_HOSTED_KEY is not set" in check.reasons[1]
    assert "not reproducible offline" in check.reasons[0]
    (check,) = check_models({"gpt-4o": ["system"]}, {"gpt-4o": card}, for_run=True, regex="SIGN_TYPE")
    assert check.status == "fail" and any('sign_type = "parsed"' in r for r in check.failed)
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    (check,) = check_models({"gpt-4o": ["system", "judge"]}, {"gpt-4o": card}, for_run=True, regex=None)
    assert check.failed == []
    vllm_hosted = _card(tmp_path, hosted_card(structured_outputs="vllm"))
    (check,) = check_models({"gpt-4o": ["system"]}, {"gpt-4o": vllm_hosted}, for_run=True, regex="SIGN_TYPE")
    assert check.failed == []  # a hosted vLLM enforces the regex itself


def _open(card: ModelCard, events: list[str]):
    return open_engine(card, Engines(EngineSettings(retries=3)), events.append)


def test_json_goes_as_response_format_regex_is_refused_unsent_and_429s_back_off(tmp_path, api, monkeypatch):
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    card = _card(tmp_path, hosted_card(api.url))
    api.limited = 2
    events: list[str] = []
    judge = GenerationRequest(
        (Message("user", "judge this"),), Sampling(temperature=0.0, max_tokens=64, seed=0), QualityVerdict.constraint()
    )
    regex = GenerationRequest((Message("user", "answer"),), Sampling(), Constraint.regex(sign_type_pattern(10)))

    async def go():
        async with _open(card, events) as engine:
            return await engine.generate(judge), await engine.generate(regex)

    judged, refused = asyncio.run(go())
    assert judged.ok and json.loads(judged.text)["accuracy"] == 8 and judged.tries == 3
    assert refused.error and "cannot enforce a regex" in refused.error and refused.tries == 0
    assert len(api.bodies) == 3  # two refused for the rate limit, one answered; the regex request never left
    sent = api.bodies[-1]
    assert sent["model"] == "gpt-4o-2024-08-06" and "structured_outputs" not in json.dumps(sent)
    assert sent["response_format"]["json_schema"]["schema"] == QualityVerdict.constraint().schema
    assert api.keys == {f"Bearer {KEY}"}
    assert any("2 request(s) for its rate limit (HTTP 429)" in e for e in events)


def test_a_missing_key_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.delenv("DJ_HOSTED_KEY", raising=False)
    card = _card(tmp_path, hosted_card())

    async def go():
        async with _open(card, []):
            pass

    with pytest.raises(DualjudgeError, match="set DJ_HOSTED_KEY to its API key"):
        asyncio.run(go())


def test_a_hosted_system_and_judge_run_through_the_runner_and_leave_no_key_behind(tmp_path, api, monkeypatch):
    cards = tmp_path / "cards"
    cards.mkdir()
    (cards / "gpt-4o.toml").write_text(hosted_card(api.url))
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    config = RunConfig(
        **{
            "run": {"name": "hosted", "seed": 1},
            "testbed": {
                "signs": ["616"],
                "visibilities": [1.0, 0.5],
                "modes": ["bottom_up"],
                "repeats": 1,
                "modality": "text",
                "size": 64,
            },
            "systems": {"models": ["gpt-4o"], "strategies": ["sa", "ma"], "sign_type": "parsed", "max_tokens": 64},
            "judges": {"models": ["gpt-4o"], "max_tokens": 128},
            "probes": {"order": True, "order_pairs": 1, "padding": False},
            "models": {"dir": str(cards)},
        }
    )
    out = tmp_path / "run"
    result = run_job(config, out)
    assert result.report.models_loaded == ["gpt-4o"]  # the system model judges in the same session
    table = result.table
    assert len(table) == 4 and (table["quality_status"] == "ok").all() and (table["overall"] == 8).all()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["reproducible_offline"] is False
    assert manifest["not_reproducible_because"] == ["gpt-4o is a hosted model"]
    assert manifest["models"]["gpt-4o"]["card"]["weights"]["api_key_env"] == "DJ_HOSTED_KEY"
    leaked = [p for p in out.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []
    sent = len(api.bodies)
    again = run_job(config, out)  # everything from the cache: the API is not called again
    assert again.report.models_loaded == [] and len(api.bodies) == sent
