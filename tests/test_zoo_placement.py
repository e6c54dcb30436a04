"""circuit_gym.reporting.zoo_placement: modal heads and top-5 overlap across the zoo's cards."""

import json
from pathlib import Path

from circuit_gym.reporting.zoo_placement import default_models, placement, placement_report

ROOT = Path(__file__).resolve().parents[1]


def _card(modal: dict[str, str], top: dict[str, list[str]]) -> dict:
    tasks = {t: {"included": True, "modal_head_name": h} for t, h in modal.items()}
    return {"suite": {"tasks": tasks}, "top_heads": {t: [(h, 1.0) for h in hs] for t, hs in top.items()}}


def test_placement_counts_distinct_modal_heads_overlap_and_deep_tasks():
    cards = {
        "a": _card({"ioi": "5.1", "copy": "0.3"}, {"ioi": ["5.1", "4.0", "1.1"]}),
        "b": _card({"ioi": "5.1"}, {"ioi": ["5.1", "4.0", "2.2"]}),
        "c": _card({"ioi": "4.2"}, {"ioi": ["0.0", "0.1", "0.2"]}),
    }
    report = placement(cards, deep_layer=4)
    assert report["tasks"]["ioi"]["distinct_modal_heads"] == 2
    # pairs (a, b): 2 shared, (a, c): 0, (b, c): 0
    assert report["tasks"]["ioi"]["mean_top5_overlap"] == round(2 / 3, 2)
    assert report["tasks"]["copy"]["mean_top5_overlap"] is None  # no model lists its top heads
    assert (
        report["models"]["a"]["deep_tasks"] == ["ioi"] and report["models"]["c"]["n_deep"] == 1
    )  # layer 4 counts as deep


def test_the_committed_report_is_what_the_committed_cards_give():
    committed = json.loads((ROOT / "docs/results/zoo_placement.json").read_text())
    models = list(committed["models"])
    assert models == default_models()  # the report covers what ships
    assert placement_report(models, committed["deep_layer"]) == committed
