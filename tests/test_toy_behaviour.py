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


def test_run_d_copies_the_ids_it_was_trained_to_copy_and_no_others():
    """toy_d (run D, kept for the v2/v3 IDs): induction over the copy pool (the induction_seen
    task, test split) but not over ids never repeated in training (induction)."""
    from circuit_gym.models.loading import load_model
    from circuit_gym.suite import task_metrics

    toy_d = load_model("toy_d")
    assert task_metrics(toy_d, "induction_seen", "test", n_batches=2)["accuracy"] >= 0.9
    assert task_metrics(toy_d, "induction", "test", n_batches=2)["accuracy"] < 0.1


def test_the_default_model_copies_random_tokens_from_the_whole_vocabulary():
    """What a new user checks first, written without the package's task code: random token ids
    drawn uniformly from the whole vocabulary (every non-special id), the sequence then repeated
    once. An induction circuit predicts the repeated half almost perfectly; a model without
    one stays near ln(vocab) there, as on the first half."""
    import torch

    from circuit_gym.models.loading import load_model

    toy = load_model("toy")
    vocab = int(toy.cfg.d_vocab)
    bos = int(toy.tokenizer.bos_token_id)
    special = set(toy.tokenizer.all_special_ids)
    ordinary = torch.tensor([i for i in range(vocab) if i not in special])
    g = torch.Generator().manual_seed(1234)
    length = 20
    seq = ordinary[torch.randint(0, len(ordinary), (32, length), generator=g)]
    tokens = torch.cat([torch.full((32, 1), bos), seq, seq], dim=1)
    with torch.no_grad():
        logp = torch.log_softmax(toy(tokens).float(), -1)[:, :-1].gather(-1, tokens[:, 1:, None])[..., 0]
    first = float(-logp[:, 1:length].mean())  # predicting tokens 2..L of the first copy
    repeated = float(-logp[:, length + 1 :].mean())  # tokens 2..L of the second copy
    assert first > 0.5 * np.log(vocab), (first, repeated)  # random tokens: nothing to predict
    assert repeated < 0.25 * first, (first, repeated)


def test_the_default_model_passes_the_induction_gate():
    from circuit_gym.models.loading import load_model
    from circuit_gym.suite import task_metrics

    assert task_metrics(load_model("toy"), "induction", "test", n_batches=2)["accuracy"] >= 0.9
