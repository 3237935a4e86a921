import re
import shutil

import pytest

from dualjudge.errors import DualjudgeError
from dualjudge.inference.types import Image, Sampling
from dualjudge.protocol.judges import build_judge_request
from dualjudge.protocol.probes import build_padding_request, build_pairwise_request
from dualjudge.protocol.prompts import load_prompt, prompt_hashes, prompts_dir
from dualjudge.protocol.systems import STEPS, Item, build_step_request
from dualjudge.protocol.vocabulary import SIGN_TYPES
from dualjudge.testbed.catalogue import default_catalogue

SIGN = default_catalogue().sign("670V30")
ITEM = Item.of_sign("670V30_v0.5_bottom_up", "670V30", "The picture shows a sign.", Image.from_png(b"\x89PNG fake"))
PLACEHOLDER = re.compile(r"\$\{?[A-Za-z_]")


def _all_requests():
    for strategy, steps in STEPS.items():
        for i in range(len(steps)):
            for modality in ("image", "text"):
                prev = ("vision notes", "symbol notes")[:i]
                yield (
                    f"{strategy}/{steps[i]}/{modality}",
                    build_step_request(
                        strategy,
                        i,
                        ITEM,
                        modality=modality,
                        sign_type_mode="constrained",
                        sampling=Sampling(temperature=0.7, max_tokens=512, seed=1),
                        previous=prev,
                    ),
                )
    for kind in ("quality", "equivalence"):
        yield f"judge/{kind}", build_judge_request(kind, SIGN, "A 30 mph limit.")
    yield "pairwise", build_pairwise_request(SIGN, "one", "two")
    yield "padding", build_padding_request("short answer\nSIGN_TYPE: maximum_speed")


@pytest.mark.parametrize("name,request_", list(_all_requests()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_prompt_renders_with_no_unfilled_placeholder(name, request_):
    for m in request_.messages:
        assert not PLACEHOLDER.search(m.text), (name, m.text)
        assert m.text.strip()
    assert len(request_.prompt_hashes) == 1 and len(request_.prompt_hashes[0]) == 64


def test_image_and_text_forms_differ_in_input():
    img = build_step_request("sa", 0, ITEM, modality="image", sign_type_mode="parsed", sampling=Sampling())
    txt = build_step_request("sa", 0, ITEM, modality="text", sign_type_mode="parsed", sampling=Sampling())
    assert img.messages[1].image is not None and "The picture shows a sign." not in img.messages[1].text
    assert txt.messages[1].image is None and "The picture shows a sign." in txt.messages[1].text


@pytest.mark.parametrize("strategy", list(STEPS))
@pytest.mark.parametrize("modality", ["image", "text"])
def test_final_system_prompts_list_all_categories_and_the_line(strategy, modality):
    last = len(STEPS[strategy]) - 1
    req = build_step_request(
        strategy, last, ITEM, modality=modality, sign_type_mode="parsed", sampling=Sampling(), previous=("v", "s")[:last]
    )
    system = req.messages[0].text
    assert all(f"- {cid}:" in system for cid in SIGN_TYPES)
    assert "SIGN_TYPE: <category>" in system


def test_judge_prompts_carry_gold_and_bands():
    q = build_judge_request("quality", SIGN, "resp")
    assert SIGN.description in q.messages[1].text and SIGN.caption in q.messages[1].text
    for band in ("9-10", "7-8", "5-6", "3-4", "1-2", "0:"):
        assert band in q.messages[0].text
    e = build_judge_request("equivalence", SIGN, "resp")
    assert "NOT enough" in e.messages[0].text
    assert q.constraint.kind == e.constraint.kind == "json"


def test_prompt_hashes_cover_every_file():
    hashes = prompt_hashes()
    assert len(hashes) == len(list(prompts_dir().glob("*.toml"))) == 24
    assert len(set(hashes.values())) == 24


def test_editing_a_prompt_changes_exactly_its_requests(tmp_path):
    d = tmp_path / "prompts"
    shutil.copytree(prompts_dir(), d)
    before = {n: load_prompt(n, d).sha256 for n in ("sa.text", "cot.text", "judge_quality")}
    path = d / "cot.text.toml"
    path.write_text(path.read_text().replace("four numbered steps", "four short numbered steps"))
    after = {n: load_prompt(n, d).sha256 for n in before}
    assert after["cot.text"] != before["cot.text"]
    assert after["sa.text"] == before["sa.text"] and after["judge_quality"] == before["judge_quality"]


@pytest.mark.parametrize(
    "content,needle",
    [
        (None, "prompt file not found"),
        ('name = "sa.text"\nvariables = []\nsystem = "x"\n', "missing user"),
        ('name = "sa.text"\nvariables = []\nsystem = "x"\nuser = "y"\nextra = 1\n', "unknown keys extra"),
        ('name = "sa.text"\nvariables = ["a"]\nsystem = "x"\nuser = "$b"\n', "do not match declared"),
        ('name = "other"\nvariables = []\nsystem = "x"\nuser = "y"\n', "does not match the file name"),
        ('name = "sa.text"\nvariables = []\nsystem = "x"\nuser = "cost $5"\n', "invalid placeholder"),
        ('name = "sa.text\n', "malformed prompt file"),
    ],
)
def test_missing_or_malformed_prompt_is_a_one_line_error(tmp_path, content, needle):
    if content is not None:
        (tmp_path / "sa.text.toml").write_text(content)
    with pytest.raises(DualjudgeError, match=re.escape(needle)) as info:
        load_prompt("sa.text", tmp_path)
    assert "\n" not in str(info.value)


def test_render_refuses_missing_values():
    with pytest.raises(DualjudgeError, match="missing values"):
        load_prompt("judge_quality").render(caption="c", description="d")
