"""judges.see_image: an image study's judges shown the image the system answered, in every verdict, stability pass
and pairwise comparison; refused in one line where there is no image or a judge cannot read one; counted by the plan;
off by default, with the fingerprint of the studies made before it."""

from __future__ import annotations

import pytest

from dualjudge.runs.estimate import estimate
from dualjudge.studies.job import run_job
from tests.helpers.runs import Recorder, config

IMAGE_STUDY = """
[run]
name = "seen"
seed = 5
[testbed]
signs = ["616", "670V30"]
visibilities = [1.0, 0.5]
modes = ["bottom_up"]
repeats = 1
modality = "image"
size = 64
[systems]
models = ["gemma-3-4b-it", "qwen2.5-vl-3b-instruct"]
strategies = ["sa"]
max_tokens = 96
[judges]
models = ["gemma-3-4b-it", "qwen2.5-vl-3b-instruct"]
kinds = ["quality", "pairwise"]
passes = 2
SEE
[probes]
order = false
padding = false
[engine]
backend = "vllm"
"""


class Watching(Recorder):
    """The scripted engines, keeping the image (its hash, or None) of every request by what it asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.images: dict[str, set[str | None]] = {}

    def _respond(self, request):  # type: ignore[no-untyped-def]
        c = request.constraint
        asked = c.schema["title"] if c is not None and c.kind == "json" else "answer"
        image = request.messages[-1].image
        self.images.setdefault(asked, set()).add(image.sha256 if image is not None else None)
        return super()._respond(request)


def test_judges_see_the_image_each_system_answered_in_every_judge_request(tmp_path):
    cfg = config(tmp_path, IMAGE_STUDY.replace("SEE", "see_image = true"))
    engines = Watching()
    plan = estimate(cfg, tmp_path / "run", engines=Watching())
    run_job(cfg, tmp_path / "run", engines=engines)
    shown = engines.images["answer"]
    assert len(shown) == 4 and None not in shown  # 2 signs x 2 visibilities, each its own image
    for asked in ("QualityVerdict", "ComparisonVerdict"):
        assert engines.images[asked] == shown, asked  # every judge request carries its answer's image, none another
    blind = Watching()
    off = config(tmp_path, IMAGE_STUDY.replace("SEE", ""))
    run_job(off, tmp_path / "blind", engines=blind)
    assert blind.images["QualityVerdict"] == {None} and blind.images["ComparisonVerdict"] == {None}
    planned = {(r.model, r.stage): r for r in plan.rows}
    unseen = {(r.model, r.stage): r for r in estimate(off, tmp_path / "blind2", engines=Watching()).rows}
    for stage in ("verdicts", "stability passes", "pairwise"):
        key = ("gemma-3-4b-it", stage)
        assert planned[key].images > 0 and unseen[key].images == 0, stage  # the plan counts what the judges see
        assert planned[key].prompt_tokens > unseen[key].prompt_tokens, stage


def test_the_setting_off_keeps_the_fingerprint_of_studies_made_before_it(tmp_path):
    off = config(tmp_path, IMAGE_STUDY.replace("SEE", ""))
    said = config(tmp_path, IMAGE_STUDY.replace("SEE", "see_image = false"))
    on = config(tmp_path, IMAGE_STUDY.replace("SEE", "see_image = true"))
    assert off.fingerprint() == said.fingerprint() != on.fingerprint()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('modality = "image"', 'modality = "text"'), "judges.see_image: the study's items are text"),
        (
            ('[judges]\nmodels = ["gemma-3-4b-it", "qwen2.5-vl-3b-instruct"]', '[judges]\nmodels = ["smollm2-135m-instruct"]'),
            "judges.see_image: smollm2-135m-instruct cannot read images",
        ),
    ],
)
def test_a_study_whose_judges_cannot_see_an_image_is_one_line(tmp_path, cli, change, message):
    study = tmp_path / "study.toml"
    study.write_text(IMAGE_STUDY.replace("SEE", "see_image = true").replace(*change))
    code, stdout, stderr = cli("plan", str(study))
    lines = [line for line in (stdout + stderr).splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and message in lines[0], lines
