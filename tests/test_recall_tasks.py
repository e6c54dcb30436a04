"""The recall and comparison tasks (capital, minimum), checked on GPT-2's tokenizer by
parsing the prompts' text, independently of the task code."""

from __future__ import annotations

import re

import numpy as np
import pytest

from circuit_gym.models.random_checkpoint import gpt2_tokenizer
from circuit_gym.tasks import SPLITS, get_task
from circuit_gym.tasks import fillers as F

# A few facts written out here, not taken from the package's table.
KNOWN = {"France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Egypt": "Cairo", "Norway": "Oslo",
         "Poland": "Warsaw", "Korea": "Seoul", "Iran": "Tehran"}  # fmt: skip


@pytest.fixture(scope="module")
def tok():
    return gpt2_tokenizer()


def _text(tok, row) -> str:
    return tok.decode(row[1:])


def test_minimum_answer_is_the_smallest_number_in_the_prompt(tok):
    for split in SPLITS:
        for seed in range(5):
            b = get_task("minimum").make_batch(tok, split, 8, np.random.default_rng(seed))
            for row, cf, ans, dis in zip(b.tokens, b.counterfactual, b.answers[:, 0], b.distractors[:, 0],
                                         strict=True):  # fmt: skip
                numbers = [int(n) for n in re.findall(r"\d+", _text(tok, row))]
                assert len(numbers) == 3 and len(set(numbers)) == 3
                assert int(tok.decode([int(ans)])) == min(numbers)
                assert sorted(int(tok.decode([int(d)])) for d in dis) == sorted(numbers)[1:]
                cf_numbers = [int(n) for n in re.findall(r"\d+", _text(tok, cf))]
                assert min(cf_numbers) != min(numbers)  # the counterfactual moves the answer


def test_minimum_splits_are_disjoint_combinations(tok):
    seen: dict[str, set] = {s: set() for s in SPLITS}
    for split in SPLITS:
        for seed in range(20):
            b = get_task("minimum").make_batch(tok, split, 8, np.random.default_rng(seed))
            seen[split] |= {_text(tok, row) for row in b.tokens}
    assert (
        not seen["train"] & seen["test"]
        and not seen["train"] & seen["eval"]
        and not seen["eval"] & seen["test"]
    )


def test_capital_answers_match_known_facts_and_the_counterfactual_flips(tok):
    checked = 0
    for split in SPLITS:
        for seed in range(10):
            b = get_task("capital").make_batch(tok, split, 8, np.random.default_rng(seed))
            for row, cf, ans, dis in zip(b.tokens, b.counterfactual, b.answers[:, 0], b.distractors[:, 0, 0],
                                         strict=True):  # fmt: skip
                text, cf_text = _text(tok, row), _text(tok, cf)
                country = next(c for c in F.CAPITALS if f" {c}" in text)
                cf_country = next(c for c in F.CAPITALS if f" {c}" in cf_text)
                assert country != cf_country
                if country in KNOWN:
                    assert tok.decode([int(ans)]).strip() == KNOWN[country]
                    checked += 1
                if cf_country in KNOWN:
                    assert tok.decode([int(dis)]).strip() == KNOWN[cf_country]
    assert checked > 20


def test_capital_splits_use_unseen_frame_country_combinations():
    items = {s: set(F.capital_items(s)) for s in SPLITS}
    assert all(items.values())
    assert not items["train"] & items["test"] and not items["train"] & items["eval"]
    # every country is in the training split in some frame: a fact cannot be recalled unread
    assert {c for _, c in items["train"]} == set(F.CAPITALS)


def test_the_embedded_toy_tokenizer_cannot_express_them():
    """The toy tokenizer predates these tasks: a clear error (its gate excludes them), not a wrong batch."""
    from transformers import AutoTokenizer

    from circuit_gym.models.loading import embedded_dir

    toy = AutoTokenizer.from_pretrained(str(embedded_dir("toy")))
    for name in ("capital", "minimum"):
        with pytest.raises(ValueError, match="not single tokens"):
            get_task(name).make_batch(toy, "test", 4, np.random.default_rng(0))
