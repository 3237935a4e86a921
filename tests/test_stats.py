import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dualjudge.analysis.reliability.agreement import alpha_from_long
from dualjudge.analysis.reliability.alt_test import alt_test
from dualjudge.errors import DualjudgeError

VECTORS = Path(__file__).parent / "data" / "krippendorff_vectors.json"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "vectors" / "krippendorff.json"


def _long(data: list[list]) -> pd.DataFrame:
    rows = [
        {"item": f"u{u}", "annotator": f"c{c}", "label": v}
        for c, row in enumerate(data)
        for u, v in enumerate(row)
        if v is not None
    ]
    return pd.DataFrame(rows)


def _cases(path: Path):
    for v in json.loads(path.read_text())["vectors"]:
        for level, value in v["published"].items():
            yield v["id"], v["data"], level, value


@pytest.mark.parametrize("vid,data,level,published", list(_cases(VECTORS)))
def test_alpha_reproduces_published_values(vid, data, level, published):
    assert alpha_from_long(_long(data), level) == pytest.approx(published, abs=5e-4)


def test_alpha_reproduces_the_shared_vectors_when_present():
    if not SHARED.is_file():
        pytest.skip("../shared/vectors not on this machine")
    for vid, data, level, published in _cases(SHARED):
        assert alpha_from_long(_long(data), level) == pytest.approx(published, abs=5e-4), (vid, level)


def test_alpha_exact_fraction():
    data = json.loads(VECTORS.read_text())["vectors"][0]["data"]
    assert alpha_from_long(_long(data), "nominal") == pytest.approx(2 / 21, abs=1e-9)


def _alt_table(rows: list[tuple[str, str, str, str]], llm: list[str]) -> pd.DataFrame:
    out = []
    for i, (a, b, c, _) in enumerate(rows):
        for name, v in (("h1", a), ("h2", b), ("h3", c), ("llm", llm[i])):
            out.append({"item": f"i{i}", "annotator": name, "label": v})
    return pd.DataFrame(out)


def test_alt_test_hand_example_without_rejection():
    # h1 disagrees on item 2 only; h2 and h3 always tie with the LLM (see the docstring arithmetic)
    labels = [("A", "A", "A", ""), ("A", "B", "B", ""), ("B", "B", "A", ""), ("A", "A", "B", "")]
    res = alt_test(_alt_table(labels, ["A", "B", "A", "B"]), "llm", min_items=1)
    h1 = res.annotators[0]
    # d = W_h - W_f = [0, -1, 0, 0]: t = (-0.25 - 0.2) / (0.5 / 2) = -1.8 with 3 df
    assert h1.p_value == pytest.approx(stats.t.cdf(-1.8, 3), abs=1e-12)
    assert [a.p_value for a in res.annotators[1:]] == [None, None]  # d constant: never rejected
    assert res.omega == 0.0 and res.rho == 1.0 and res.passed is False


def test_alt_test_hand_example_with_rejection():
    # six items, each with exactly one human off the LLM-and-majority label
    labels = [
        ("B", "A", "A", ""),
        ("B", "A", "A", ""),
        ("A", "B", "A", ""),
        ("A", "B", "A", ""),
        ("A", "A", "B", ""),
        ("A", "A", "B", ""),
    ]
    res = alt_test(_alt_table(labels, ["A"] * 6), "llm", min_items=1)
    # for every annotator d = [-1, -1, 0, 0, 0, 0]: mean -1/3, sd sqrt(4/15), t = (-1/3 - 0.2)/(sd/sqrt 6)
    t = (-1 / 3 - 0.2) / (np.sqrt(4 / 15) / np.sqrt(6))
    p = stats.t.cdf(t, 5)
    assert all(a.p_value == pytest.approx(p) for a in res.annotators)
    # Benjamini-Yekutieli, m = 3: largest k with p_(k) <= k/3 * 0.05 / (1 + 1/2 + 1/3); p ~ 0.026 < 0.0273
    assert p < 0.05 / (1 + 1 / 2 + 1 / 3)
    assert res.omega == 1.0 and res.passed and res.rho == 1.0
    assert all(a.rejected for a in res.annotators)


def test_alt_test_errors():
    labels = [("A", "A", "A", "")] * 3
    table = _alt_table(labels, ["A"] * 3)
    with pytest.raises(DualjudgeError, match="candidate 'gpt'"):
        alt_test(table, "gpt")
    with pytest.raises(DualjudgeError, match="at least 30 items"):
        alt_test(table, "llm")
    dup = pd.concat([table, table.iloc[:1]])
    with pytest.raises(DualjudgeError, match="duplicate label"):
        alt_test(dup, "llm", min_items=1)


def test_stats_cli(cli, tmp_path):
    data = json.loads(VECTORS.read_text())["vectors"][2]["data"]
    path = tmp_path / "labels.csv"
    _long(data).to_csv(path, index=False)
    code, out, _ = cli("stats", "alpha", str(path), "--level", "ordinal", "--json")
    assert code == 0 and json.loads(out)["alpha"] == pytest.approx(0.815, abs=5e-4)
    code, out, _ = cli("stats", "alpha", str(path), "--level", "interval")
    assert code == 0 and "0.849" in out
    code, _, err = cli("stats", "alpha", str(path), "--level", "fuzzy")
    assert code == 2 and "'--level'" in err and "'fuzzy' is not one of" in err
    labels = [
        ("B", "A", "A", ""),
        ("B", "A", "A", ""),
        ("A", "B", "A", ""),
        ("A", "B", "A", ""),
        ("A", "A", "B", ""),
        ("A", "A", "B", ""),
    ]
    alt = tmp_path / "alt.csv"
    _alt_table(labels, ["A"] * 6).to_csv(alt, index=False)
    code, out, _ = cli("stats", "alt-test", str(alt), "--candidate", "llm", "--min-items", "1", "--json")
    res = json.loads(out)
    assert code == 0 and set(res) == {"omega", "rho", "passed", "annotators"}
    assert res["passed"] is True and res["annotators"][0]["annotator"] == "h1"
    assert set(res["annotators"][0]) == {"annotator", "n", "rho", "p_value", "rejected"}
    code, _, err = cli("stats", "alt-test", str(tmp_path / "none.csv"), "--candidate", "llm")
    assert code == 2


def test_alt_test_humans_option_leaves_other_llms_out():
    # the rejection example, plus a second LLM that always agrees with the candidate
    labels = [
        ("B", "A", "A", ""),
        ("B", "A", "A", ""),
        ("A", "B", "A", ""),
        ("A", "B", "A", ""),
        ("A", "A", "B", ""),
        ("A", "A", "B", ""),
    ]
    table = _alt_table(labels, ["A"] * 6)
    other = table[table["annotator"] == "llm"].assign(annotator="other_llm")
    both = pd.concat([table, other])
    named = alt_test(both, "llm", min_items=1, humans=["h1", "h2", "h3"])
    alone = alt_test(table, "llm", min_items=1)
    assert named.omega == alone.omega == 1.0 and [a.annotator for a in named.annotators] == ["h1", "h2", "h3"]
    unnamed = alt_test(both, "llm", min_items=1)  # the other LLM counts as a human and changes the verdict
    assert "other_llm" in [a.annotator for a in unnamed.annotators]
    with pytest.raises(DualjudgeError, match="at least three"):
        alt_test(both, "llm", min_items=1, humans=["h1", "h2"])
    with pytest.raises(DualjudgeError, match="not annotators"):
        alt_test(both, "llm", min_items=1, humans=["h1", "h2", "h9"])


def test_alt_test_wilcoxon_option():
    labels = [
        ("B", "A", "A", ""),
        ("B", "A", "A", ""),
        ("A", "B", "A", ""),
        ("A", "B", "A", ""),
        ("A", "A", "B", ""),
        ("A", "A", "B", ""),
    ]
    res = alt_test(_alt_table(labels, ["A"] * 6), "llm", min_items=1, test="wilcoxon")
    d = np.array([-1, -1, 0, 0, 0, 0], dtype=float)  # every annotator's W_h - W_f
    expected = stats.wilcoxon(d - 0.2, alternative="less", zero_method="zsplit").pvalue
    assert all(a.p_value == pytest.approx(expected) for a in res.annotators)


def test_label_table_keeps_none_and_na_as_labels(cli, tmp_path):
    rows = [
        {"item": i, "annotator": a, "label": ["None", "NA", "null"][(i + k) % 3]}
        for i in range(12)
        for k, a in enumerate(["x", "y", "z"])
    ]
    path = tmp_path / "labels.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    code, out, err = cli("stats", "alpha", str(path), "--level", "nominal", "--json")
    assert code == 0, err
    # three distinct labels, never missing: the same alpha as with A/B/C
    abc = pd.DataFrame(rows).replace({"None": "A", "NA": "B", "null": "C"})
    from dualjudge.analysis.reliability.agreement import alpha_from_long

    assert json.loads(out)["alpha"] == pytest.approx(alpha_from_long(abc, "nominal"))
