"""The report's figures, drawn with matplotlib's object API (no pyplot, no global backend): degradation
by visibility, each judge model's quality verdicts split by its equivalence verdicts, Type II rates by visibility, the heatmap
of calibrated residuals (judge x generator family), and the calibrated leaderboard."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dualjudge.analysis.shared.results import DegradationPoint, Interaction, JointCounts, Leaderboard, Type2AtVisibility

DPI = 110


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    return path


def degradation_figure(points: list[DegradationPoint], path: Path, title: str) -> Path:
    data = pd.DataFrame([p.model_dump() for p in points], columns=list(DegradationPoint.model_fields))
    modes = [m for m in ("random_block", "bottom_up") if m in set(data["mode"])] or sorted(set(data["mode"]))
    fig = Figure(figsize=(5.2 * max(1, len(modes)), 3.8))
    axes = fig.subplots(1, max(1, len(modes)), sharey=True, squeeze=False)
    control = data[data["mode"] == "none"]
    for ax, mode in zip(axes[0], modes):
        for system, g in data[data["mode"] == mode].groupby("system"):
            g = pd.concat([control[control["system"] == system], g]).sort_values("visibility")
            ax.errorbar(g["visibility"], g["mean"], yerr=1.96 * g["se"].fillna(0), marker="o", capsize=3, label=system)
        ax.set_title(f"{mode.replace('_', ' ')}")
        ax.set_xlabel("visibility")
        ax.invert_xaxis()
        ax.set_ylim(0, 10)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("mean overall (0-10), 95% CI")
    axes[0][-1].legend(title="system")
    fig.suptitle(title)
    return _save(fig, path)


def joint_figure(joint: JointCounts, path: Path, title: str) -> Path:
    fig = Figure(figsize=(5.6, 3.8))
    ax = fig.subplots()
    for counts, label, colour in ((joint.equivalent, "equivalent", "#2b8a3e"), (joint.not_equivalent, "not equivalent", "#c92a2a")):
        ax.hist(joint.bins[:-1], bins=joint.bins, weights=counts, alpha=0.6, label=label, color=colour)
    ax.axvline(7, color="k", ls="--", lw=0.8, label="> 7: not equivalent is Type II")
    ax.axvline(5, color="k", ls=":", lw=0.8, label="< 5: equivalent is Type I")
    ax.set_xlabel("overall (its quality verdict, 0-10)")
    ax.set_ylabel("answers")
    ax.legend(fontsize="small")
    ax.set_title(title)
    return _save(fig, path)


def type2_figure(by_visibility: dict[str, Type2AtVisibility], path: Path, title: str) -> Path:
    levels = sorted(by_visibility, key=float, reverse=True)
    marginal = [by_visibility[v].marginal_rate or 0.0 for v in levels]
    conditional = [by_visibility[v].conditional_rate or 0.0 for v in levels]
    x = np.arange(len(levels))
    fig = Figure(figsize=(5.6, 3.6))
    ax = fig.subplots()
    ax.bar(x - 0.2, marginal, 0.4, label="marginal (of all answers)")
    ax.bar(x + 0.2, conditional, 0.4, label="conditional (of answers > 7)")
    ax.set_xticks(x, levels)
    ax.set_xlabel("visibility")
    ax.set_ylabel("Type II rate")
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title(title)
    return _save(fig, path)


def heatmap_figure(matrices: Mapping[str, Interaction], path: Path, title: str) -> Path:
    """Calibrated residuals (judge x generator family, from the self-preference analysis), one panel per
    outcome, on a diverging scale centred at 0."""
    fig = Figure(figsize=(5.4 * len(matrices), 4))
    axes = fig.subplots(1, len(matrices), squeeze=False)
    for ax, (name, inter) in zip(axes[0], matrices.items()):
        m = np.array([[np.nan if c is None else c.estimate for c in row] for row in inter.residual], dtype=float)
        limit = float(np.nanmax(np.abs(m))) if np.isfinite(m).any() else 1.0
        im = ax.imshow(m, vmin=-limit, vmax=limit, cmap="RdBu_r")
        ax.set_xticks(range(len(inter.families)), inter.families, rotation=45, ha="right")
        ax.set_yticks(range(len(inter.judges)), inter.judges)
        ax.set_xlabel("generator family")
        ax.set_ylabel("judge")
        ax.set_title("overall (points)" if name == "overall" else "equivalent (probability)")
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                if np.isfinite(m[i, j]):
                    ax.text(j, i, f"{m[i, j]:+.2f}", ha="center", va="center", fontsize=8)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(title)
    return _save(fig, path)


FIGURE_ROWS = 40  # systems drawn in the leaderboard figure (the best; the report's table lists them all)


def leaderboard_figure(
    boards: Mapping[str, Leaderboard], path: Path, title: str, planted: Mapping[str, Mapping[str, float]] | None = None
) -> Path:
    """One panel per grouping: each system's calibrated score with its 95% interval (dots and bars), the
    naive mean (open circles) and, for simulated data, the planted score (crosses); best at the top."""
    shown = {name: [r for r in b.rows if r.estimate is not None][:FIGURE_ROWS] for name, b in boards.items()}
    fig = Figure(figsize=(5.4 * len(boards), 0.9 + 0.42 * max(len(rows) for rows in shown.values())))
    axes = fig.subplots(1, len(boards), squeeze=False)
    for ax, (name, board) in zip(axes[0], boards.items()):
        rows = shown[name][::-1]
        y = np.arange(len(rows))
        est = np.array([r.estimate for r in rows], dtype=float)
        low = np.array([r.ci_low if r.ci_low is not None else r.estimate for r in rows], dtype=float)
        high = np.array([r.ci_high if r.ci_high is not None else r.estimate for r in rows], dtype=float)
        ax.errorbar(
            est, y, xerr=np.vstack([est - low, high - est]), fmt="o", color="#1c7ed6", capsize=3, label="calibrated, 95% CI"
        )
        naive = {r.group: r.estimate for r in board.naive}
        ax.scatter(
            [naive.get(r.group, np.nan) for r in rows],
            y,
            facecolors="none",
            edgecolors="#e8590c",
            label="naive mean of all verdicts",
            zorder=3,
        )
        if planted and planted.get(name):
            ax.scatter(
                [planted[name].get(r.group, np.nan) for r in rows],
                y,
                marker="x",
                color="k",
                label="planted (simulated data)",
                zorder=4,
            )
        ax.set_yticks(y, [r.group for r in rows])
        ax.set_xlabel("points (0-10)" if board.unit == "points" else "probability")
        kind = {"system_model": "system model", "system": "strategy"}.get(name, name)
        scored = sum(r.estimate is not None for r in board.rows)
        ax.set_title(kind if scored == len(rows) else f"{kind}: the best {len(rows)} of {scored}")
        ax.grid(alpha=0.3, axis="x")
    axes[0][-1].legend(fontsize=8, loc="best")
    fig.suptitle(title)
    return _save(fig, path)
