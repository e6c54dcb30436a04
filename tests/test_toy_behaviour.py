"""The shipped embedded models really do their behaviours, on held-out data.

Everything here runs on the eval and test splits: templates and filler combinations
(name pairs, parameter triples, token subsets) the model never saw in training.
"""

import numpy as np
import pytest

from circuit_gym.models.behaviour import docstring_metrics, induction_metrics, ioi_metrics


@pytest.mark.parametrize("split", ["eval", "test"])
def test_induction(tiny_model, split):
    m = induction_metrics(tiny_model, split)
    assert m["loss_repeated_half"] < 0.5 * m["loss_first_half"]
    assert np.max(m["head_scores"]["induction"]) > 0.5


@pytest.mark.parametrize("split", ["eval", "test"])
def test_ioi(tiny_model, split):
    m = ioi_metrics(tiny_model, split)
    assert m["accuracy"] >= 0.9, m


@pytest.mark.parametrize("split", ["eval", "test"])
def test_docstring(tiny_model, split):
    m = docstring_metrics(tiny_model, split)
    # the model card reports 1.000 on both splits; allow a few misses, not a model at chance
    assert m["three_way_accuracy"] >= 0.95 and m["top1_accuracy"] >= 0.9, m


def test_the_144_head_model_copies_the_ids_it_was_trained_to_copy_and_no_others():
    """The model card's claim about the 12 x 12 model: induction over the copy pool (the
    induction_seen task, test split) but not over ids never repeated in training (induction)."""
    from circuit_gym.models.loading import load_model
    from circuit_gym.suite import task_metrics

    toy = load_model("toy")
    assert task_metrics(toy, "induction_seen", "test", n_batches=2)["accuracy"] >= 0.9
    assert task_metrics(toy, "induction", "test", n_batches=2)["accuracy"] < 0.1
