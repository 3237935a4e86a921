import json

import pandas as pd
import pytest

from dualjudge.analysis.reliability.annotations import import_annotations
from dualjudge.analysis.reliability.human import export_sample
from dualjudge.analysis.simulated.simulate import simulate
from dualjudge.errors import DualjudgeError
from dualjudge.report.build import analyze
from dualjudge.testbed.catalogue import default_catalogue


@pytest.fixture()
def run_dir(tmp_path):
    frame = simulate(n_signs=6, items_per_sign=28, repeats=1, seed=2)
    codes = default_catalogue().codes
    frame["sign_code"] = frame["sign_code"].map({f"S{i:02d}": codes[i] for i in range(6)})
    frame["response"] = "Answer for " + frame["item_id"] + " by " + frame["system_model"] + " " + frame["system"]
    frame.to_parquet(tmp_path / "verdicts.parquet")
    return tmp_path


def test_export_is_stratified_blinded_and_deterministic(run_dir, tmp_path):
    sample = export_sample(run_dir / "verdicts.parquet", tmp_path / "s.csv", n=49, seed=0)
    assert len(sample) == 49 and sample["sample_id"].is_unique
    for col in ("overall", "accuracy_judge", "equivalent_judge", "judge_model", "quality_status"):
        assert col not in sample.columns
    assert sample[["annotator", "accuracy", "completeness", "relevance", "equivalent"]].eq("").all().all()
    assert (sample["caption"] != "").all() and (sample["description"] != "").all()
    key = json.loads((run_dir / "human_sample.json").read_text())["samples"]
    strata = pd.Series([v["stratum"] for v in key.values()]).value_counts()
    assert strata["cell"] == 7 * 4  # one per visibility x system
    assert strata.get("type2", 0) > 0 and strata.get("agreed_good", 0) > 0
    again = export_sample(run_dir / "verdicts.parquet", tmp_path / "s2.csv", n=49, seed=0)
    pd.testing.assert_frame_equal(sample, again)


def _annotate(sample: pd.DataFrame, annotators=("ann1", "ann2")) -> pd.DataFrame:
    rows = []
    for k, a in enumerate(annotators):
        for i, r in sample.iterrows():
            score = (i * 3 + k) % 11
            rows.append(
                {
                    **r.to_dict(),
                    "annotator": a,
                    "accuracy": score,
                    "completeness": score,
                    "relevance": max(0, score - 1),
                    "equivalent": int(score > 6),
                }
            )
    return pd.DataFrame(rows)


def test_import_compares_humans_with_each_judge(run_dir, tmp_path):
    sample = export_sample(run_dir / "verdicts.parquet", tmp_path / "s.csv", n=30)
    ann = _annotate(sample)
    ann.to_csv(tmp_path / "a.csv", index=False)
    res = import_annotations(run_dir, tmp_path / "a.csv")
    assert res["n_samples"] == 30 and res["annotators"] == ["ann1", "ann2"]
    assert set(res["judges"]) == {"qwen-j", "google-j", "meta-j", "mistral-j"}
    j = res["judges"]["qwen-j"]
    assert set(j) >= {"overall", "accuracy", "completeness", "relevance", "equivalence", "overall_disagreement"}
    assert -1 <= j["overall"]["pearson"] <= 1 and -1 <= j["overall"]["spearman"] <= 1
    e = j["equivalence"]
    assert e["n"] == 30 and e["judge_yes_human_no"] + e["judge_no_human_yes"] == round(30 * (1 - e["raw_agreement"]))
    assert (run_dir / "human_check.json").is_file()


@pytest.mark.parametrize(
    "mutate,needle",
    [
        (lambda a: a.assign(sample_id=["H999"] + list(a["sample_id"][1:])), "unknown sample ids H999"),
        (lambda a: a.assign(accuracy=[11] + list(a["accuracy"][1:])), "accuracy must be an integer 0-10"),
        (lambda a: pd.concat([a, a.iloc[:1]]), "duplicate row for sample"),
        (lambda a: a.assign(equivalent=["maybe"] + list(a["equivalent"][1:])), "equivalent must be 0 or 1"),
        (lambda a: a.drop(columns=["relevance"]), "missing columns relevance"),
    ],
)
def test_import_validation_errors(run_dir, tmp_path, mutate, needle):
    sample = export_sample(run_dir / "verdicts.parquet", tmp_path / "s.csv", n=10)
    mutate(_annotate(sample, ("ann1",))).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(DualjudgeError, match=needle) as info:
        import_annotations(run_dir, tmp_path / "bad.csv")
    assert "\n" not in str(info.value)


def test_human_cli(cli, run_dir, tmp_path):
    code, out, _ = cli("human", "export", str(run_dir), "--out", str(tmp_path / "s.csv"), "--n", "12")
    assert code == 0 and "wrote 12 samples" in out
    _annotate(pd.read_csv(tmp_path / "s.csv", keep_default_na=False)).to_csv(tmp_path / "a.csv", index=False)
    code, out, _ = cli("human", "import", str(run_dir), str(tmp_path / "a.csv"))
    assert code == 0 and "Pearson" in out
    code, _, err = cli("human", "import", str(tmp_path / "elsewhere"), str(tmp_path / "a.csv"))
    assert code == 2 and "human export" in err


def test_the_paper_split_and_its_parameter(run_dir, tmp_path):
    export_sample(run_dir / "verdicts.parquet", tmp_path / "s.csv", n=49, seed=0)
    strata = pd.Series([v["stratum"] for v in json.loads((run_dir / "human_sample.json").read_text())["samples"].values()])
    assert strata.value_counts().to_dict() == {"cell": 28, "type2": 12, "agreed_good": 9}  # the paper's 49
    export_sample(run_dir / "verdicts.parquet", tmp_path / "s.csv", n=49, seed=0, type2=5, replace_key=True)
    strata = pd.Series([v["stratum"] for v in json.loads((run_dir / "human_sample.json").read_text())["samples"].values()])
    assert strata.value_counts().to_dict() == {"cell": 28, "type2": 5, "agreed_good": 16}


def test_agreed_good_includes_an_overall_of_exactly_seven():
    from dualjudge.analysis.reliability.human import select_sample
    from dualjudge.analysis.shared.table import validate

    frame = simulate(n_signs=2, items_per_sign=7, repeats=1, seed=4)
    frame["overall"], frame["equivalent"] = 5.0, False
    target = frame["item_id"].iloc[0], frame["system_model"].iloc[0], frame["system"].iloc[0]
    mask = (frame["item_id"] == target[0]) & (frame["system_model"] == target[1]) & (frame["system"] == target[2])
    frame.loc[mask, ["overall", "equivalent"]] = [7.0, True]  # every judge: exactly 7 and equivalent
    sample = select_sample(validate(frame), n=60, type2=0)
    agreed = sample[sample["stratum"] == "agreed_good"]
    assert len(agreed) == 1  # with "> 7" it would be none
    assert tuple(agreed[["item_id", "system_model", "system"]].iloc[0]) == target


def test_one_human_overall_score_against_the_judge_overall_and_each_sub_score(run_dir, tmp_path):
    sample = export_sample(run_dir / "verdicts.parquet", tmp_path / "s.csv", n=30)
    ann = sample.assign(
        annotator="ann1",
        human_overall=[(i * 7) % 11 for i in range(len(sample))],
        equivalent=[int(i % 3 == 0) for i in range(len(sample))],
    )
    ann.to_csv(tmp_path / "a.csv", index=False)  # sub-scores left empty: they are optional
    res = import_annotations(run_dir, tmp_path / "a.csv")
    j = res["judges"]["qwen-j"]
    for axis in ("overall", "accuracy", "completeness", "relevance"):
        assert set(j[axis]) >= {"pearson", "spearman", "kendall", "n"} and j[axis]["n"] == 30
    e = j["equivalence"]
    assert e["majority_baseline_agreement"] == pytest.approx(20 / 30)  # 10 of 30 said equivalent


def test_the_imported_human_check_appears_in_the_report(cli, run_dir, tmp_path):
    sample = export_sample(run_dir / "verdicts.parquet", tmp_path / "s.csv", n=30)
    _annotate(sample).to_csv(tmp_path / "a.csv", index=False)
    import_annotations(run_dir, tmp_path / "a.csv")
    code, _, err = cli("analyze", str(run_dir / "verdicts.parquet"), "--out", str(tmp_path / "out"), "--resamples", "100")
    assert code == 0, err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["human"]["n_samples"] == 30 and "qwen-j" in summary["human"]["judges"]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Human check" in report and "30 samples" in report and "majority baseline" in report


def test_human_labels_evaluate_every_judge_variant_added_after_the_import(run_dir, tmp_path):
    """Labels are imported once; a variant judged later (a rubric clarification's) is evaluated against
    them at the next analysis, and each variant's section has its own agreement with humans."""
    sample = export_sample(run_dir / "verdicts.parquet", tmp_path / "s.csv", n=30)
    _annotate(sample).to_csv(tmp_path / "a.csv", index=False)
    before = import_annotations(run_dir, tmp_path / "a.csv")
    assert before["by_variant"] == {}
    table = pd.read_parquet(run_dir / "verdicts.parquet")
    table["judge_variant"] = "holistic"
    rubric = table.assign(judge_variant="rubric", overall=10 - table["overall"])  # a rubric judge that reverses
    pd.concat([table, rubric]).to_parquet(run_dir / "verdicts.parquet")
    summary = analyze(run_dir / "verdicts.parquet", tmp_path / "out", n_resamples=100, figures=False)
    held = summary.human.judges["qwen-j"].overall.pearson
    assert held == pytest.approx(before["judges"]["qwen-j"]["overall"]["pearson"])
    assert summary.variants["rubric"].human.judges["qwen-j"].overall.pearson == pytest.approx(-held)
    rows = {(r.judge, r.variant): r for r in summary.designs.rows}
    assert rows[("qwen-j", "rubric")].human_r_overall == pytest.approx(-held)
