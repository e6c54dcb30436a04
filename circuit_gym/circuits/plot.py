"""Faithfulness-curve figure: one line per solver, the random baseline dashed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from circuit_gym.plots import _pyplot, _save


def faithfulness_figure(results: Mapping[str, dict], path: str | Path, title: str = "") -> Path:
    """Plot ``results[solver]["curve"]`` (as :func:`~circuit_gym.circuits.scores.circuit_scores`
    returns it) for every solver against the fraction of heads kept (log axis for
    readability; the areas are on the linear axis), with 95% bands where there are any and
    the first solver's random baseline. Returns the path written (PNG or PDF by suffix)."""
    if not results:
        raise ValueError("no solver results to plot")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for solver, result in results.items():
        curve = result["curve"]
        label = f"{solver} (CPR {result['cpr']:.2f}, CMD {result['cmd']:.2f})" if "cpr" in result else solver
        line = ax.plot(curve["fractions"], curve["faithfulness"], marker="o", ms=3, label=label)[0]
        band = curve.get("faithfulness_ci95")
        if band and all(v == v for v in band[0]):  # NaN bands (one batch) are not drawn
            ax.fill_between(curve["fractions"], band[0], band[1], color=line.get_color(), alpha=0.15)
    first = next(iter(results.values()))["curve"]
    if "random_faithfulness" in first:
        ax.plot(
            first["fractions"], first["random_faithfulness"], ls="--", color="grey", label="random ranking"
        )
    ax.axhline(1.0, color="black", lw=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("fraction of heads in the circuit")
    ax.set_ylabel("faithfulness f(C)")
    ax.set_title(title or "faithfulness curves")
    ax.legend(fontsize=7)
    return _save(fig, path)
