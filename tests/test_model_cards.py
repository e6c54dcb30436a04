"""Every number in an embedded model's card comes from the files that ship beside it: the
committed MODEL_CARD.md is what `scripts/model_card.py --render-only` writes (circuit_gym.models.cards) from
card_metrics.json and training_log.json (and the loaded weights' config). When a test here
fails after a card's measurements changed, run `python scripts/model_card.py --model NAME
--render-only` (or the full script, which measures again) and commit the card.
(`tiny`'s card was written by the script's predecessor and is kept as it was.)"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from circuit_gym.models import cards as card
from circuit_gym.models import load_model
from circuit_gym.models.loading import embedded_dir

ROOT = Path(__file__).resolve().parents[1]
CARDS = ("toy", "toy_d", "zoo1", "zoo2", "zoo3", "zoo4")


@pytest.mark.parametrize("name", CARDS)
def test_the_committed_card_is_rendered_from_its_files(name):
    directory = embedded_dir(name)
    rendered = card.render_from_files(load_model(name), directory)
    assert rendered == (directory / "MODEL_CARD.md").read_text(), (
        f"run: python scripts/model_card.py --model {name} --render-only"
    )


def test_a_changed_measurement_changes_the_card(tmp_path):
    """The behaviour table and run D's history move with card_metrics.json (toy_d's copying
    numbers also appear in toy's card, read from toy_d's files)."""
    directory = tmp_path / "toy_d"
    shutil.copytree(embedded_dir("toy_d"), directory)
    metrics = json.loads((directory / "card_metrics.json").read_text())
    metrics["behaviour"]["induction"]["accuracy"] = 0.25
    (directory / "card_metrics.json").write_text(json.dumps(metrics))
    rendered = card.render_from_files(load_model("toy_d"), directory)
    assert "| induction | copying | 0.250 |" in rendered
    assert "not the others (0.25)" in rendered


def test_run_d_numbers_in_the_history_are_its_files():
    """Independent check: toy's card quotes run D's copying and phase switch as toy_d's files hold them."""
    metrics = json.loads((embedded_dir("toy_d") / "card_metrics.json").read_text())["behaviour"]
    switch = json.loads((embedded_dir("toy_d") / "training_log.json").read_text())["phase_switch_step"]
    text = (embedded_dir("toy") / "MODEL_CARD.md").read_text()
    seen, unseen = metrics["induction_seen"]["accuracy"], metrics["induction"]["accuracy"]
    assert f"top-1 {seen:.2f} on those, {unseen:.2f} on the others" in text
    assert f"phase 2 began at step\n  {switch:,}" in text or f"phase 2 began at step {switch:,}" in text


def test_cards_of_other_weights_are_refused(tmp_path):
    directory = tmp_path / "toy"
    shutil.copytree(embedded_dir("toy"), directory)
    with pytest.raises(ValueError, match="measured other weights"):
        card.render_from_files(load_model("toy_d"), directory)


def test_history_of_runs_that_do_not_ship_is_dated():
    for text in (card.WHAT_WAS_TRIED_RUN_F, card.WHAT_WAS_TRIED_RUN_D):
        for paragraph in text.split("\n- "):
            if re.search(r"\b\d+(?:\.\d+)? ?(?:s|min)\b|\b\d,\d{3} (?:shallow )?steps", paragraph):
                assert re.search(r"\b20\d\d-\d\d-\d\d\b", paragraph), paragraph
