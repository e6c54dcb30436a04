"""The GPT-2 path on GPT-2's real tokenizer (vendored) and a random-weight GPT-2 checkpoint.

Expected token ids are GPT-2's published ones (not computed by this package); task checks
use independent references: the calendar module for successor, Python's own parser for
brackets, the text itself for agreement and greater-than.
"""

from __future__ import annotations

import ast
import calendar
import re

import numpy as np
import pytest
import torch

from circuit_gym.models.random_checkpoint import GPT2_VOCAB, gpt2_tokenizer
from circuit_gym.tasks import SPLITS, get_task, list_tasks
from circuit_gym.tasks.reference import REFERENCE_CHOICES, reference_batch


@pytest.fixture(scope="module")
def tok():
    return gpt2_tokenizer()


def test_vendored_tokenizer_gives_gpt2s_ids(tok):
    assert len(tok) == GPT2_VOCAB == 50257
    assert tok.encode(" Mary", add_special_tokens=False) == [5335]
    assert tok.encode(" John", add_special_tokens=False) == [1757]
    text = "When Mary and John went to the store"
    assert tok.encode(text, add_special_tokens=False) == [2215, 5335, 290, 1757, 1816, 284, 262, 3650]
    assert tok.convert_tokens_to_ids("<|endoftext|>") == 50256 == tok.bos_token_id
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text


@pytest.mark.parametrize("name", sorted(list_tasks()))
@pytest.mark.parametrize("split", SPLITS)
def test_every_task_builds_batches_on_gpt2s_tokenizer(tok, name, split):
    task = get_task(name)
    for seed in range(6):
        b = task.make_batch(tok, split, 8, np.random.default_rng([seed, 7]))
        assert (b.tokens[:, 0] == tok.bos_token_id).all()
        assert b.counterfactual is not None and b.counterfactual.shape == b.tokens.shape
        assert not torch.equal(b.counterfactual, b.tokens)
        assert int(b.tokens.max()) < GPT2_VOCAB


def _texts(tok, batch):
    return [tok.decode(row[1:]) for row in batch.tokens]


def test_successor_answers_follow_the_calendar(tok):
    days, months = list(calendar.day_name), list(calendar.month_name)[1:]
    numbers = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    for seed in range(20):
        b = get_task("successor").make_batch(tok, "eval", 8, np.random.default_rng(seed))
        for text, ans in zip(_texts(tok, b), b.answers[:, 0], strict=True):
            last = text.rstrip(",").split(", ")[-1].split()[-1]
            seq = next(s for s in (days, months, numbers) if last in s)
            assert tok.decode([int(ans)]).strip() == seq[(seq.index(last) + 1) % len(seq)]


def test_bracket_answers_are_what_pythons_parser_accepts(tok):
    """Prompt + answer + ')' is valid Python; prompt + a distractor + ')' is not."""
    for seed in range(10):
        b = get_task("brackets").make_batch(tok, "test", 8, np.random.default_rng(seed))
        for text, ans, dis in zip(_texts(tok, b), b.answers[:, 0], b.distractors[:, 0], strict=True):
            ast.parse(text + tok.decode([int(ans)]) + ")")
            for d in dis:
                with pytest.raises(SyntaxError):
                    ast.parse(text + tok.decode([int(d)]) + ")")


def test_agreement_answer_matches_the_subjects_number(tok):
    plural_verbs = {"are", "were"}
    for seed in range(10):
        b = get_task("agreement").make_batch(tok, "eval", 8, np.random.default_rng(seed))
        for text, ans, dis in zip(_texts(tok, b), b.answers[:, 0], b.distractors[:, 0, 0], strict=True):
            words = text.split()
            subject = words[[w.lower() for w in words].index("the") + 1]  # the noun after the first "the"
            verb, other = tok.decode([int(ans)]).strip(), tok.decode([int(dis)]).strip()
            attractor = text.split()[-1]
            assert (verb in plural_verbs) == subject.endswith("s"), text
            assert (other in plural_verbs) != subject.endswith("s")
            assert subject.endswith("s") != attractor.endswith("s"), "the attractor has the other number"


def test_greater_than_threshold_is_the_start_year_and_metric_matches_numpy(tok):
    task = get_task("greater_than")
    b = task.make_batch(tok, "test", 8, np.random.default_rng(0))
    for text, cf, ans in zip(_texts(tok, b), [tok.decode(r[1:]) for r in b.counterfactual], b.answers[:, 0],
                             strict=True):  # fmt: skip
        start = re.search(r"from (?:the year )?(\d\d)(\d\d) to", text)
        assert start and tok.decode([int(ans)]) == start.group(2)
        assert re.search(r"from (?:the year )?\d\d01 to", cf)
    # the metric against a plain numpy computation on random logits
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(8, 1, GPT2_VOCAB, generator=g) * 3
    got = task.score(logits, b).numpy()
    probs = torch.softmax(logits[:, 0].double(), -1).numpy()
    years = [tok.encode(f"{i:02d}", add_special_tokens=False)[0] for i in range(100)]
    for i, ans in enumerate(b.answers[:, 0].tolist()):
        yy = years.index(ans)
        above, rest = probs[i, years[yy + 1 :]].sum(), probs[i, years[: yy + 1]].sum()
        assert got[i] == pytest.approx(above - rest, abs=1e-5)


def test_pronoun_counterfactual_flips_the_answer(tok):
    from circuit_gym.tasks import fillers as F

    b = get_task("pronoun").make_batch(tok, "eval", 8, np.random.default_rng(3))
    for text, cf, ans in zip(_texts(tok, b), [tok.decode(r[1:]) for r in b.counterfactual], b.answers[:, 0],
                             strict=True):  # fmt: skip
        name = next(w.strip(",") for w in text.split() if w.strip(",") in F.FEMALE_NAMES + F.MALE_NAMES)
        cf_name = next(w.strip(",") for w in cf.split() if w.strip(",") in F.FEMALE_NAMES + F.MALE_NAMES)
        assert (name in F.FEMALE_NAMES) != (cf_name in F.FEMALE_NAMES)
        assert tok.decode([int(ans)]) == (" she" if name in F.FEMALE_NAMES else " he")


@pytest.mark.parametrize(
    "reference", [r for r in REFERENCE_CHOICES if "taskstyle" not in r or r == "prose+taskstyle"]
)
def test_reference_batches_fit_gpt2s_tokenization(random_gpt2_dir, reference):
    from circuit_gym.models import load_model

    model = load_model("gpt2", path=random_gpt2_dir)
    ref = reference_batch(model, reference)
    assert ref.tokens.shape == (32, 48)


def test_a_too_short_reference_names_the_way_out(random_gpt2_dir):
    from circuit_gym.models import load_model

    model = load_model("gpt2", path=random_gpt2_dir)
    with pytest.raises(ValueError, match="n_rows"):
        reference_batch(model, "prose", n_rows=10_000)
