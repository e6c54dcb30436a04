"""Issue 34's PPO designs: each is a valid change of both tracks' configs, and the board keeps the
run with the best selection score whatever the held-out results say."""

from __future__ import annotations

import json

import pytest

from circuit_gym import benchmark as B
from circuit_gym.baselines import circuit_ppo, ppo
from circuit_gym.baselines.ppo_designs import DESIGNS, TRACKS, configure, run_name


def test_every_design_is_a_valid_config_of_both_tracks_and_has_its_own_folders():
    for design, fields in DESIGNS.items():
        for default in (ppo.PPOConfig(), circuit_ppo.CircuitPPOConfig()):
            if any(not hasattr(default, k) for k in fields if k != "epochs_factor"):
                with pytest.raises(ValueError, match="does not have"):  # refused, never dropped
                    configure(default, design)
                continue
            config = configure(default, design)
            assert config.epochs == default.epochs * fields.get("epochs_factor", 1)
            assert all(getattr(config, k) == v for k, v in fields.items() if k != "epochs_factor")
            assert default == type(default)()  # the default config is not changed in place
    assert configure(circuit_ppo.CircuitPPOConfig(), "causal_area").reward == "area"
    names = [run_name(t, d) for t in TRACKS for d in DESIGNS]
    assert len(set(names)) == len(names) and run_name("ppo", "reference") == "ppo"
    with pytest.raises(ValueError, match="design must be one of"):
        run_name("ppo", "held_out_best")


def test_the_kept_run_is_the_best_by_selection_score(tmp_path, monkeypatch):
    """The board's PPO entry of each track is the run with the best training-side selection score
    (``hard_circuits_report.chosen_ppo``, over ``training.json``): the held-out results do not enter
    the choice."""
    from circuit_gym.baselines import hard_circuits_report as R

    runs = {f"{run_name(track, design)}/seed{seed}": {"selection_score": base + 0.01 * seed}
            for track in TRACKS for design, base in (("causal", 0.6), ("causal_long", 0.5)) for seed in range(3)}  # fmt: skip
    folder = tmp_path / "docs" / "results" / B.transfer_benchmark(B.IN_FORCE).results_folder
    folder.mkdir(parents=True)
    (folder / "training.json").write_text(json.dumps({"runs": runs}))
    monkeypatch.setattr(R, "ROOT", tmp_path)
    chosen = R.chosen_ppo(B.IN_FORCE)
    assert {t: c["chosen"] for t, c in chosen.items()} == {
        "ppo": "ppo_causal/seed2",
        "circuit_ppo": "circuit_ppo_causal/seed2",
    }
    assert chosen["ppo"]["runs"] == {n: r["selection_score"] for n, r in runs.items() if n.startswith("ppo_")}
