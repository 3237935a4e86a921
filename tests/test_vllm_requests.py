"""How requests are put on the wire for vLLM (the live server path is in test_engines.py)."""

import base64
import json

from dualjudge.inference.endpoint_engine import openai_messages, structured_outputs
from dualjudge.inference.types import Constraint, GenerationRequest, Image, Message, Sampling
from dualjudge.protocol import QualityVerdict, sign_type_pattern


def test_constraints_go_as_structured_outputs_never_guided_fields():
    json_req = GenerationRequest((Message("user", "x"),), Sampling(), QualityVerdict.constraint())
    regex_req = GenerationRequest((Message("user", "x"),), Sampling(), Constraint.regex(sign_type_pattern(10)))
    assert structured_outputs(json_req) == {"structured_outputs": {"json": QualityVerdict.constraint().schema}}
    assert structured_outputs(regex_req) == {"structured_outputs": {"regex": sign_type_pattern(10)}}
    assert structured_outputs(GenerationRequest((Message("user", "x"),), Sampling())) == {}
    for body in (structured_outputs(json_req), structured_outputs(regex_req)):
        assert "guided" not in json.dumps(body)


def test_images_travel_as_base64_png_data_urls_before_the_text():
    png = b"\x89PNG\r\n\x1a\nfake"
    req = GenerationRequest((Message("system", "sys"), Message("user", "look", Image.from_png(png))), Sampling())
    system, user = openai_messages(req)
    assert system == {"role": "system", "content": "sys"}
    image, text = user["content"]
    assert image["type"] == "image_url" and text == {"type": "text", "text": "look"}
    prefix = "data:image/png;base64,"
    assert image["image_url"]["url"].startswith(prefix)
    assert base64.b64decode(image["image_url"]["url"][len(prefix) :]) == png


def test_cache_key_covers_what_changes_the_answer():
    base = GenerationRequest(
        (Message("user", "x", Image.from_png(b"a")),),
        Sampling(temperature=0.7, max_tokens=100, seed=1),
        Constraint.regex("a"),
        ("p1",),
    )
    key = base.key("model@rev1")
    variants = [
        base.key("model@rev2"),
        GenerationRequest((Message("user", "y", Image.from_png(b"a")),), base.sampling, base.constraint, ("p1",)).key("model@rev1"),
        GenerationRequest((Message("user", "x", Image.from_png(b"b")),), base.sampling, base.constraint, ("p1",)).key("model@rev1"),
        GenerationRequest(base.messages, Sampling(temperature=0.7, max_tokens=100, seed=2), base.constraint, ("p1",)).key(
            "model@rev1"
        ),
        GenerationRequest(base.messages, base.sampling, Constraint.regex("b"), ("p1",)).key("model@rev1"),
        GenerationRequest(base.messages, base.sampling, base.constraint, ("p2",)).key("model@rev1"),
    ]
    assert key not in variants and len(set(variants)) == len(variants)
    assert key == GenerationRequest(base.messages, base.sampling, base.constraint, ("p1",)).key("model@rev1")
    assert not Sampling(temperature=0.7, max_tokens=100, seed=None).deterministic
    assert Sampling(temperature=0.7, max_tokens=100, seed=1).deterministic and Sampling().deterministic
