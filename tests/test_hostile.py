"""Hostile providers and hostile text (issue 24): a rerun never changes the study's design, no markup from
models, names or tables is executed, a malformed reply fails that request only, exit codes say what
happened, hosted verdicts are not lost to truncation, and bad input is refused before anything is written.

The provider is tests/provider.py: a local OpenAI-compatible server with switchable faults, used through
a hosted card, so each fault runs in seconds without vLLM."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dualjudge.analysis.simulated.simulate import simulate
from dualjudge.config import RunConfig, load_config
from dualjudge.errors import DualjudgeError
from dualjudge.inference.endpoint_engine import Endpoint, EndpointEngine
from dualjudge.inference.types import GenerationRequest, Message, Sampling
from dualjudge.protocol import QualityVerdict
from dualjudge.storage.rows import OrderProbeRow, PaddingTextRow
from dualjudge.storage.store import Store
from dualjudge.studies.job import run_job, stored_config
from tests.helpers.engines import ScriptedEngines
from tests.helpers.hosted import HOSTED_RUN, KEY, hosted_card, hosted_config
from tests.helpers.provider import MARKUP, Provider
from tests.helpers.refusals import refused, snapshot
from tests.helpers.runs import CONFIG, respond

ROOT = Path(__file__).resolve().parent.parent


def _config(tmp_path: Path, text: str = CONFIG) -> RunConfig:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return load_config(path)


# -- 1. probe samples are drawn from the design, once ---------------------------------------------------------
class FailFirst(ScriptedEngines):
    """The system models fail every answer of the first sign in the first session (errors)."""

    def __init__(self, failing: bool) -> None:
        super().__init__(respond)
        self.failing = failing

    def respond_as(self, model: str, request: GenerationRequest) -> str | Exception:
        if (
            self.failing
            and request.constraint is not None
            and request.constraint.kind == "regex"
            and "616" in " ".join(m.text for m in request.messages)
        ):
            return RuntimeError("HTTP 503: provider unavailable")
        return respond(request)


def _probe_keys(out: Path) -> tuple[set, set]:
    store = Store(out / "results.sqlite")
    try:
        return ({r.key() for r in store.read(OrderProbeRow)}, {r.key() for r in store.read(PaddingTextRow)})
    finally:
        store.close()


def test_a_rerun_after_failures_draws_the_same_probe_samples_as_a_run_without_them(tmp_path):
    cfg = _config(tmp_path)
    run_job(cfg, tmp_path / "healthy", engines=ScriptedEngines(respond))
    run_job(cfg, tmp_path / "broken", engines=FailFirst(failing=True))
    run_job(cfg, tmp_path / "broken", engines=FailFirst(failing=False))
    healthy, broken = _probe_keys(tmp_path / "healthy"), _probe_keys(tmp_path / "broken")
    judges = len(cfg.judges.models)
    assert len(healthy[0]) == cfg.probes.order_pairs * judges  # 3 pairs per judge, never 6
    assert broken[0] == healthy[0] and broken[1] == healthy[1]  # the same pairs, the same padded answers
    assert len(healthy[1]) <= cfg.probes.padding_samples


# -- 2. a rubric edited between sessions ----------------------------------------------------------------------
def test_a_rubric_edited_between_sessions_is_refused_on_resume_and_the_manifest_keeps_its_hash(tmp_path):
    rubric = tmp_path / "mine.toml"
    rubric.write_text((ROOT / "prompts" / "rubrics" / "rubric.toml").read_text())
    text = CONFIG.replace(
        "[judges]\nmodels", '[judges]\nvariants = ["rubric:mine"]\nmax_tokens = 320\nrubrics = {mine = "mine.toml"}\nmodels'
    )
    cfg = _config(tmp_path, text)  # the rubric path is relative to the configuration file
    run_job(cfg, tmp_path / "run", engines=ScriptedEngines(respond))
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert set(manifest["rubrics"]) == {"rubric:mine"} and len(manifest["rubrics"]["rubric:mine"]) == 64
    rubric.write_text(rubric.read_text().replace('text = "Sign identified:', 'text = "Road sign identified:', 1))
    with pytest.raises(DualjudgeError, match="the rubric of judge variant rubric:mine changed since this run started"):
        run_job(_config(tmp_path, text), tmp_path / "run", engines=ScriptedEngines(respond))


def test_paths_in_a_configuration_are_relative_to_its_file(tmp_path, monkeypatch):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "cards").mkdir()
    (tmp_path / "conf" / "c.toml").write_text(CONFIG + '\n[models]\ndir = "cards"\n')
    monkeypatch.chdir(tmp_path)  # another working directory
    cfg = load_config(Path("conf") / "c.toml")
    assert Path(cfg.models.dir) == (tmp_path / "conf" / "cards").resolve()


# -- 3 and 4. markup from names, tables and model outputs is never executed ----------------------------------
PWNED_NAME = "<img src=x onerror=\"document.title='pwned'\">"


def test_report_html_shows_markup_in_names_as_text(cli, tmp_path):
    frame = simulate(n_signs=6, items_per_sign=3, repeats=1, seed=2)
    judge = frame["judge_model"].iloc[0]
    frame.loc[frame["judge_model"] == judge, "judge_model"] = PWNED_NAME
    frame.loc[frame["system_family"] == frame["system_family"].iloc[0], "system_family"] = "<script>alert(1)</script>"
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    code, _, err = cli("analyze", str(path), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    html = (tmp_path / "a" / "report.html").read_text()
    assert "<img src=x" not in html and "<script>alert" not in html
    assert "&lt;img src=x" in html
    # report.md read in any Markdown viewer that passes raw HTML through: the names are still text
    from markdown_it import MarkdownIt

    viewed = MarkdownIt("commonmark", {"html": True}).enable("table").render((tmp_path / "a" / "report.md").read_text())
    assert "<img src=x" not in viewed and "<script>" not in viewed and "&lt;script&gt;alert(1)" in viewed
    from dualjudge.report.browser import dump_dom, find_chromium

    browser = find_chromium()
    if browser is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    dom, _ = dump_dom((tmp_path / "a" / "report.html").resolve().as_uri(), browser)
    assert "<title>dualjudge report</title>" in dom and "pwned" not in dom.split("</title>")[0]


def test_names_that_hold_markdown_images_links_or_newlines_stay_text(cli, tmp_path):
    frame = simulate(n_signs=6, items_per_sign=3, repeats=1, seed=2)
    first = frame["system_family"].iloc[0]
    frame.loc[frame["system_family"] == first, "system_family"] = "![x](http://host/p.png)"
    other = frame["judge_model"].iloc[-1]
    frame.loc[frame["judge_model"] == other, "judge_model"] = "two\nlines | and a [link](https://host/)"
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, index=False)
    code, _, err = cli("analyze", str(path), "--out", str(tmp_path / "a"), "--resamples", "100")
    assert code == 0, err
    html = (tmp_path / "a" / "report.html").read_text()
    assert 'src="http://host' not in html and 'href="https://host' not in html  # shown as text, never fetched
    assert "![x](http://host/p.png)" in html
    md = (tmp_path / "a" / "report.md").read_text()
    cells = [line for line in md.splitlines() if line.startswith("| two")]  # the judge's rows of every table
    assert cells and all("two\\nlines \\| and a" in line for line in cells)  # one row each, the newline as text
    assert not any(line.startswith("lines") for line in md.splitlines())  # no table row or sentence was split
    from markdown_it import MarkdownIt

    viewed = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)  # any Markdown viewer
    assert 'src="http://host' not in viewed and 'href="https://host' not in viewed and "![x](http://host/p.png)" in viewed


def test_the_explorer_shows_every_answer_whatever_the_answers_contain(tmp_path):
    from tests.helpers.browser import card_keys, open_page

    def hostile(request: GenerationRequest) -> str:
        out = respond(request)
        return (
            out
            if request.constraint is None or request.constraint.kind == "json"
            else MARKUP.replace("SIGN_TYPE: no_entry", out.splitlines()[-1])
        )

    cfg = _config(
        tmp_path,
        CONFIG.replace(
            'models = ["smollm2-135m-instruct", "gemma-3-270m"]\nstrategies', 'models = ["smollm2-135m-instruct"]\nstrategies'
        ),
    )
    result = run_job(cfg, tmp_path / "run", engines=ScriptedEngines(hostile))
    page = open_page(tmp_path / "run" / "explorer.html", "limit=all")  # no script error, the page is ready
    answers = result.table.drop_duplicates(["item_id", "repeat", "system", "system_model"])
    assert len(set(card_keys(page))) == len(answers) > 0
    assert result.table["response"].str.contains("<!--<script>", regex=False).all()


# -- 5 to 8. a provider that misbehaves ----------------------------------------------------------------------
def _hosted_config(api: Provider, tmp_path: Path, **engine: object) -> RunConfig:
    return hosted_config(api.url, tmp_path, **engine)


def _request() -> GenerationRequest:
    return GenerationRequest(
        (Message("user", "judge"),), Sampling(temperature=0.0, max_tokens=64, seed=0), QualityVerdict.constraint()
    )


@pytest.mark.parametrize(
    "fault",
    ["html", "not_json", "empty_choices", "deep_content", "huge_int", "surrogate", "huge_usage", "negative_usage", "deep_body"],
)
def test_a_malformed_reply_fails_that_request_and_a_retry_recovers(fault):
    with Provider(served=("m",)) as api:

        async def go():
            engine = EndpointEngine("m", [Endpoint(api.url)], "m@0", retries=2, backoff_s=0.01, dialect="openai")
            try:
                api.script(fault)
                recovered = await engine.generate(_request())
                api.script(fault, fault, fault)
                lost = await engine.generate(_request())
                return recovered, lost
            finally:
                await engine.close()

        recovered, lost = asyncio.run(go())
    assert recovered.ok and recovered.tries == 2
    assert not lost.ok and lost.tries == 3
    assert "not a chat completion" in lost.error or "outside the bounds a reply must keep" in lost.error
    assert "\n" not in lost.error and len(lost.error) < 400


@pytest.mark.parametrize("fault, text", [("parts", '{"equivalent": true, "reasoning": "x"}'), ("one_part", "SIGN_TYPE: no_entry")])
def test_content_given_as_parts_is_joined_as_text(fault, text):
    """A list of content parts, or one part object, is its text: never the Python repr of a list or a dict."""
    with Provider(served=("m",)) as api:

        async def go():
            engine = EndpointEngine("m", [Endpoint(api.url)], "m@0", retries=0, dialect="openai")
            try:
                api.script(fault)
                return await engine.generate(_request())
            finally:
                await engine.close()

        result = asyncio.run(go())
    assert result.ok and result.text == text


@pytest.mark.parametrize("fault", ["deep_content", "huge_int", "surrogate", "huge_usage"])
def test_a_hostile_reply_in_a_run_is_retried_never_cached_and_the_run_finishes(tmp_path, monkeypatch, fault):
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    with Provider() as api:
        api.script("ok", "ok", "ok", "ok", fault)  # the four answers, then the first verdict is hostile
        result = run_job(_hosted_config(api, tmp_path), tmp_path / "run")
    assert (result.table["quality_status"] == "ok").all() and (result.table["equivalence_status"] == "ok").all()
    store = Store(tmp_path / "run" / "results.sqlite", readonly=True)
    try:
        texts = [t for (t,) in store.db.execute("SELECT text FROM cache")]
    finally:
        store.close()
    assert not any("[[[[" in (t or "") or "9999999999" in (t or "") for t in texts)


def test_an_unreadable_cached_verdict_is_asked_again_not_replayed(tmp_path, monkeypatch):
    """A reply cached before the bounds existed (here: written into the cache by hand) no longer ends every
    rerun in the same crash: it is dropped and its request sent again."""
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    with Provider() as api:
        run_job(_hosted_config(api, tmp_path), tmp_path / "run")
        with __import__("sqlite3").connect(tmp_path / "run" / "results.sqlite") as con:
            key = con.execute("SELECT key FROM cache WHERE constraint_kind = 'json' LIMIT 1").fetchone()[0]
            con.execute("UPDATE cache SET text = ? WHERE key = ?", ("[" * 20000 + "]" * 20000, key))
            con.execute("DELETE FROM verdicts")
        sent = len(api.bodies)
        result = run_job(_hosted_config(api, tmp_path), tmp_path / "run")
        assert len(api.bodies) == sent + 1  # only the unreadable one went out again
    assert (result.table["quality_status"] == "ok").all()


def test_malformed_replies_in_a_run_end_as_results_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    with Provider() as api:
        api.script("ok", "html", "ok", "empty_choices", "not_json")
        result = run_job(_hosted_config(api, tmp_path), tmp_path / "run")
    assert len(result.table) == 4 and (result.table["quality_status"] == "ok").all()


def test_exit_3_when_nothing_could_be_answered_and_2_for_a_base_url_without_v1(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    (tmp_path / "cards").mkdir()
    config = tmp_path / "c.toml"
    config.write_text(HOSTED_RUN)
    with Provider() as api:
        api.always = "429"
        (tmp_path / "cards" / "gpt-4o.toml").write_text(hosted_card(api.url))
        code, _, err = cli("run", str(config), "--out", str(tmp_path / "run"))
        assert code == 3 and "no answer came back usable" in err and "exit 3" in err
        (tmp_path / "cards" / "gpt-4o.toml").write_text(hosted_card(api.url.removesuffix("/v1")))
        code, _, err = cli("run", str(config), "--out", str(tmp_path / "run2"))
    assert code == 2 and "answers 404 at /models" in err and "/v1" in err


def test_status_says_a_killed_sessions_jobs_were_cut_off(cli, tmp_path):
    cfg = _config(tmp_path)
    out = tmp_path / "run"
    run_job(cfg, out, engines=ScriptedEngines(respond))
    store = Store(out / "results.sqlite")
    try:
        jobs = json.loads(store.get_meta("jobs") or "[]")
        jobs[-1]["ended_at"] = None  # as a SIGKILL leaves it: started, never ended
        store.set_meta("jobs", json.dumps(jobs))
    finally:
        store.close()
    code, out_text, _ = cli("status", str(out))
    assert code == 0 and "cut off" in out_text and "running for" not in out_text


def test_unconstrained_hosted_verdicts_that_come_back_truncated_or_off_schema_are_asked_again(tmp_path, monkeypatch):
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    with Provider() as api:
        api.script(*["ok"] * 4, "length", "off_schema", "length")  # the four answers, then bad verdicts
        result = run_job(_hosted_config(api, tmp_path), tmp_path / "run")
        bodies = list(api.bodies)
    table = result.table
    assert (table["quality_status"] == "ok").all() and (table["equivalence_status"] == "ok").all()
    retried = [b for b in bodies if "response_format" in b and b.get("temperature", 0) > 0]  # verdicts asked again
    assert len(retried) == 3 and len({b["seed"] for b in retried}) >= 2  # fresh seeds, sampled


def test_a_reply_that_inflates_past_the_bound_is_an_error_retried_never_held_whole():
    """A gzip body of about 60 KB that inflates to 60 MiB: refused as it streams (the bound applies after
    decompression), an error outcome after its retries, and the next good reply is taken."""
    from dualjudge.inference.chat_http import MAX_REPLY_BYTES

    assert MAX_REPLY_BYTES < 60 * 2**20
    with Provider(served=("m",)) as api:

        async def go(retries):
            engine = EndpointEngine("m", [Endpoint(api.url)], "m@0", retries=retries, dialect="openai")
            try:
                return await engine.generate(_request())
            finally:
                await engine.close()

        api.always = "gzip_bomb"
        lost = asyncio.run(go(0))
        api.always = None
        api.script("gzip_bomb")
        kept = asyncio.run(go(1))
    assert not lost.ok and "over 32 MiB once decompressed" in lost.error
    assert kept.ok and kept.tries == 2


def test_a_hung_request_says_which_setting_bounds_it():
    with Provider(served=("m",), hang_limit_s=5) as api:
        api.always = "hang"

        async def go():
            engine = EndpointEngine("m", [Endpoint(api.url)], "m@0", retries=0, timeout_s=0.5)
            try:
                return await engine.generate(_request())
            finally:
                await engine.close()

        started = time.monotonic()
        result = asyncio.run(go())
    assert not result.ok and "engine.request_timeout_s = 0.5 s" in result.error
    assert time.monotonic() - started < 4


# -- secrets: never stored, never printed ---------------------------------------------------------------------
@pytest.mark.parametrize("fault", ["key_in_content", "key_in_body"])
def test_a_key_in_any_reply_is_replaced_before_it_is_stored(tmp_path, monkeypatch, fault):
    """The key written into a 200 answer's content, or into a non-JSON 200 body where the error shows its first
    80 characters, reaches no table of the store (the key is replaced in the reply's bytes, wherever it is)."""
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    with Provider() as api:
        api.always = fault
        run_job(_hosted_config(api, tmp_path), tmp_path / "run")
    raw = b"".join(p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert KEY.encode() not in raw and KEY[:20].encode() not in raw
    with __import__("sqlite3").connect(tmp_path / "run" / "results.sqlite") as con:
        shown = [t for row in con.execute("SELECT text, error FROM answers") for t in row if t]
    assert shown and any("***" in t for t in shown)


def test_a_key_a_provider_echoes_back_is_stored_and_shown_scrubbed(tmp_path, monkeypatch):
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    with Provider() as api:
        api.always = "echo_401"
        run_job(_hosted_config(api, tmp_path), tmp_path / "run")
    raw = (tmp_path / "run" / "results.sqlite").read_bytes()
    for extra in (tmp_path / "run").glob("results.sqlite-*"):
        raw += extra.read_bytes()
    assert KEY.encode() not in raw
    with __import__("sqlite3").connect(tmp_path / "run" / "results.sqlite") as con:
        details = [d for (d,) in con.execute("SELECT error FROM answers")]
    assert details and all("Incorrect API key: Bearer ***" in d for d in details)


@pytest.mark.parametrize(
    "url, needle",
    [
        ("http://user:sk-secret@host:8000/v1", "holds credentials"),
        ("http://host:99999/v1", "Port out of range"),
        ("ftp://host/v1", "not an http(s) URL"),
        ("https://api.example.com/v1?api_key=sk-secret-0123456789", "holds a query or a fragment"),
        ("https://api.example.com/v1#sk-secret-0123456789", "holds a query or a fragment"),
        ("http://host:8000/v1?key=sk-secret#sk-secret", "holds a query or a fragment"),
        ("https://\uff41\uff50\uff49.example.com/v1", "its host holds characters other than ASCII"),  # full-width letters
    ],
)
def test_an_endpoint_url_with_credentials_or_a_bad_port_is_refused_in_one_line(cli, tmp_path, url, needle):
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.replace('backend = "vllm"', f'backend = "vllm"\nendpoints = {{ "gemma-3-270m" = ["{url}"] }}'))
    code, out, err = cli("run", str(config), "--out", str(tmp_path / "run"))
    assert code == 2 and needle in err and "sk-secret" not in out + err and "Traceback" not in err
    assert not (tmp_path / "run").exists()
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "gpt-4o.toml").write_text(hosted_card(url))
    from dualjudge.inference.cards import load_card

    with pytest.raises(DualjudgeError) as caught:
        load_card(tmp_path / "cards" / "gpt-4o.toml")
    assert needle in str(caught.value) and "sk-secret" not in str(caught.value)


def test_clarify_without_the_key_the_run_used_is_one_line_and_without_a_key_needs_none(tmp_path, monkeypatch):
    from dualjudge.studies.job import stored_config

    keyed = _config(
        tmp_path,
        CONFIG.replace(
            'backend = "vllm"',
            'backend = "vllm"\napi_key = "sk-real-key-42"\nendpoints = { "gemma-3-270m" = ["http://127.0.0.1:9/v1"] }',
        ),
    )
    open_ = _config(
        tmp_path, CONFIG.replace('backend = "vllm"', 'backend = "vllm"\nendpoints = { "gemma-3-270m" = ["http://127.0.0.1:9/v1"] }')
    )
    monkeypatch.delenv("DUALJUDGE_API_KEY", raising=False)
    for cfg, needs in ((keyed, True), (open_, False)):
        store = Store(tmp_path / f"{needs}.sqlite")
        try:
            store.set_meta("config", cfg.model_dump_json())
            assert "sk-real-key-42" not in (store.get_meta("config") or "")
            assert stored_config(store, tmp_path).engine.api_key.get_secret_value() == "EMPTY"  # export needs none
            if needs:
                with pytest.raises(DualjudgeError, match="set DUALJUDGE_API_KEY to it"):
                    stored_config(store, tmp_path, needs_key=True)
            else:
                assert stored_config(store, tmp_path, needs_key=True).engine.api_key.get_secret_value() == "EMPTY"
        finally:
            store.close()


# -- 9. the attached endpoints' key is never the masked text --------------------------------------------------
def test_a_stored_configuration_takes_the_endpoint_key_from_the_environment(tmp_path, monkeypatch):
    cfg = _config(tmp_path, CONFIG.replace('backend = "vllm"', 'backend = "vllm"\napi_key = "sk-real-key-42"'))
    store = Store(tmp_path / "results.sqlite")
    try:
        store.set_meta("config", cfg.model_dump_json())
        assert "sk-real-key-42" not in (store.get_meta("config") or "")
        monkeypatch.delenv("DUALJUDGE_API_KEY", raising=False)
        assert stored_config(store, tmp_path).engine.api_key.get_secret_value() == "EMPTY"
        monkeypatch.setenv("DUALJUDGE_API_KEY", "sk-from-env")
        assert stored_config(store, tmp_path).engine.api_key.get_secret_value() == "sk-from-env"
    finally:
        store.close()


def test_a_non_ascii_api_key_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("DJ_HOSTED_KEY", "sk-\u2019broken")
    with Provider() as api:
        with pytest.raises(DualjudgeError, match="DJ_HOSTED_KEY holds characters an API key cannot have"):
            run_job(_hosted_config(api, tmp_path), tmp_path / "run")


# -- 10 and 11. tables and options that used to give a traceback or pass silently ------------------------------
@pytest.fixture()
def table_csv(tmp_path) -> Path:
    frame = simulate(n_signs=4, items_per_sign=3, repeats=1, seed=5)
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda f: f.iloc[:0], "the table has no rows"),
        (lambda f: f.assign(run_id=""), "column run_id is blank"),
        (lambda f: f.assign(visibility=np.where(np.arange(len(f)) == 2, np.nan, f["visibility"])), "visibility must lie"),
        (lambda f: f.assign(repeat=0.5), "repeat must be a whole number"),
        (lambda f: f.assign(repeat=-1), "repeat must be a whole number"),
        (lambda f: f.assign(judge_variant="rubric:???"), "unknown judge_variant 'rubric:???'"),
        (lambda f: f.assign(overall_convention="median"), "unknown overall_convention 'median'"),
        (lambda f: f.rename(columns={"overall": " overall"}), "column ' overall' has spaces around its name"),
    ],
)
def test_tables_that_used_to_pass_silently_are_refused_in_one_line(cli, tmp_path, table_csv, change, needle):
    path = tmp_path / "bad.csv"
    change(pd.read_csv(table_csv)).to_csv(path, index=False)
    refused(cli, ["analyze", str(path), "--out", str(tmp_path / "a")], needle, [path, tmp_path / "a"])


def test_base_llm_lineage_on_a_table_without_those_columns_is_refused(cli, tmp_path, table_csv):
    path = tmp_path / "nobase.csv"
    pd.read_csv(table_csv).drop(columns=["judge_base_llm", "system_base_llm"]).to_csv(path, index=False)
    refused(
        cli,
        ["stats", "self-preference", str(path), "--lineage", "base_llm", "--resamples", "100"],
        "no judge_base_llm / system_base_llm columns",
        [path],
    )


@pytest.mark.parametrize(
    "rows, needle",
    [
        ([("a", "x", 1.0), ("a", "y", float("inf"))], "finite numeric labels"),
        ([("", "x", 1.0), ("a", "y", 2.0)], "item is blank"),
    ],
)
def test_label_tables_that_used_to_pass_silently(cli, tmp_path, rows, needle):
    path = tmp_path / "labels.csv"
    pd.DataFrame(rows, columns=["item", "annotator", "label"]).to_csv(path, index=False)
    refused(cli, ["stats", "alpha", str(path), "--level", "interval"], needle, [path])


def test_options_that_named_nothing_are_refused(cli, tmp_path):
    labels = tmp_path / "labels.csv"
    pd.DataFrame([("a", "x", 1), ("a", "llm", 1)], columns=["item", "annotator", "label"]).to_csv(labels, index=False)
    refused(cli, ["stats", "alt-test", str(labels), "--candidate", "llm", "--humans", ""], "--humans names no annotator", [labels])
    refused(cli, ["data", "build", "--signs", ",", "--out", str(tmp_path / "tb")], "--signs names nothing", [tmp_path / "tb"])
    config = tmp_path / "c.toml"
    config.write_text(CONFIG)
    refused(cli, ["plan", str(config), "--measured", str(tmp_path / "nowhere")], "not a run directory", [config])
    refused(cli, ["plan", str(config), "--measured", str(config)], "not a run directory", [config])
    config.write_text(CONFIG.replace('name = "t"', 'name = ".."'))
    refused(cli, ["run", str(config)], "run.name", [config, tmp_path])


# -- 12 and 13. nothing is written before a one-line error, and it comes at once ------------------------------
@pytest.mark.parametrize(
    "change, needle",
    [
        (('backend = "vllm"', 'backend = "vllm"\ndevices = [[99]]'), "not on this machine"),
        (("size = 64", 'size = 64\nimages = "no-such-art"'), "testbed.images"),
        (
            ('backend = "vllm"', 'backend = "vllm"\n[engine.endpoints]\n"gemma-3-270m" = ["localhost:8000"]'),
            "cannot be an endpoint: not an http(s) URL",
        ),
        (('backend = "vllm"', 'backend = "vllm"\nreplicas = "yes"'), "engine.replicas: Input should be a valid boolean"),
        (('backend = "vllm"', 'backend = "vllm"\nreplicas = 1'), "engine.replicas: Input should be a valid boolean"),
        (('backend = "vllm"', 'backend = "vllm"\nrequest_timeout_s = inf'), "request_timeout_s: Input should be a finite"),
        (
            ('backend = "vllm"', 'backend = "vllm"\n[engine.endpoints]\n"gemma-3-270m" = ["http://127.0.0.1:99999/v1"]'),
            "Port out of range",
        ),
    ],
)
def test_bad_settings_leave_no_run_directory_behind(cli, tmp_path, change, needle):
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.replace(*change))
    out = tmp_path / "run"
    refused(cli, ["run", str(config), "--out", str(out)], needle, [config])
    assert not out.exists()  # refused before anything is written


def test_an_output_that_is_a_file_is_refused_before_vllm_is_imported(cli, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(CONFIG)
    taken = tmp_path / "taken"
    taken.write_text("x")
    refused(cli, ["run", str(config), "--out", str(taken)], "is an existing file", [taken, config])


@pytest.fixture()
def a_run(tmp_path) -> Path:
    out = tmp_path / "run"
    run_job(_config(tmp_path), out, engines=ScriptedEngines(respond))
    return out


def test_view_on_a_truncated_table_is_one_line(cli, a_run):
    table = a_run / "verdicts.parquet"
    table.write_bytes(table.read_bytes()[:200])
    refused(cli, ["view", str(a_run)], "unreadable table", [table])


def test_view_on_a_table_without_judge_family_and_a_damaged_stored_config_still_writes_the_explorer(cli, a_run):
    table = a_run / "verdicts.parquet"
    pd.read_parquet(table).drop(columns=["judge_family"]).to_parquet(table)
    store = Store(a_run / "results.sqlite")
    try:
        store.set_meta("config", "{ damaged")
    finally:
        store.close()
    code, out, err = cli("view", str(a_run))
    assert code == 0 and "Traceback" not in err and "wrote" in out


def test_clarify_with_bad_options_touches_neither_the_lock_nor_the_rubrics(cli, a_run):
    before = snapshot(a_run)
    code, _, err = cli("rubric", "clarify", str(a_run), "--editor", "gemma-3-270m", "--k", "0")
    assert code == 2 and "--k must be" in err
    assert snapshot(a_run) == before and not (a_run / "rubrics").exists()


@pytest.mark.parametrize("case", ["unreachable", "bad_key", "no_key", "endpoint_down"])
def test_an_unreachable_api_or_a_refused_key_is_one_line_before_the_run_folder_exists(cli, tmp_path, monkeypatch, case):
    """A hosted card's API that does not answer, or refuses the key, a key not set, and an attached endpoint that
    does not answer: each stops a new run in one line, and no run folder is left behind."""
    monkeypatch.setenv("DJ_HOSTED_KEY", KEY)
    (tmp_path / "cards").mkdir()
    config = tmp_path / "c.toml"
    config.write_text(HOSTED_RUN)
    with Provider() as api:
        api.key = "sk-the-right-one" if case == "bad_key" else None
        url = "http://127.0.0.1:9/v1" if case == "unreachable" else api.url
        (tmp_path / "cards" / "gpt-4o.toml").write_text(hosted_card(url))
        if case == "no_key":
            monkeypatch.delenv("DJ_HOSTED_KEY")
        if case == "endpoint_down":
            down = 'endpoints = { "gemma-3-270m" = ["http://127.0.0.1:9/v1"] }'
            config.write_text(CONFIG.replace('backend = "vllm"', f'backend = "vllm"\n{down}'))
        # the endpoint case's local model may not be fetched here: that is the preflight's question, not this test's
        skip = ["--skip-preflight"] if case == "endpoint_down" else []
        code, out, err = cli("run", str(config), "--out", str(tmp_path / "run"), *skip)
    needle = {
        "unreachable": "is unreachable",
        "bad_key": "refused the API key (HTTP 401)",
        "no_key": "DJ_HOSTED_KEY is not set",
        "endpoint_down": "no endpoint of gemma-3-270m answers",
    }[case]
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in err, err
    assert KEY not in out + err
    assert not (tmp_path / "run").exists()
