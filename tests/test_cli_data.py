from PIL import Image


def test_build_and_sheet(cli, tmp_path):
    out = tmp_path / "tb"
    code, stdout, _ = cli("data", "build", "--out", str(out), "--size", "64", "--signs", "616,670V30", "--visibilities", "1.0,0.3")
    assert code == 0
    assert "wrote 6 variants of 2 signs" in stdout
    assert (out / "variants.parquet").is_file()
    code, stdout, _ = cli("data", "sheet", "--testbed", str(out), "--out", str(tmp_path / "s.png"))
    assert code == 0
    with Image.open(tmp_path / "s.png") as img:
        assert img.width > 3 * 64 and img.height > 2 * 64


def test_user_errors_exit_2_with_one_line(cli, tmp_path):
    for args, needle in [
        (("data", "build", "--out", str(tmp_path / "a"), "--signs", "123X"), "unknown sign code '123X'"),
        (("data", "build", "--out", str(tmp_path / "a"), "--visibilities", "high"), "--visibilities takes numbers"),
        (("data", "build", "--out", str(tmp_path / "a"), "--images", str(tmp_path / "none")), "artwork folder not found"),
        (("data", "sheet", "--testbed", str(tmp_path / "missing")), "run `dualjudge data build` first"),
    ]:
        code, _, err = cli(*args)
        assert code == 2, args
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err
        assert "Traceback" not in err


def test_usage_errors_are_not_exit_0(cli):
    code, _, _ = cli("data", "build", "--size", "abc")
    assert code == 2
    code, _, _ = cli("no-such-command")
    assert code == 2
