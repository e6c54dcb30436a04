import numpy as np
import pytest
import torch

from circuit_gym.tasks import PromptBatch, Task, get_task, list_tasks, logit_diff, register_task
from circuit_gym.tasks import fillers as F
from circuit_gym.tasks.builtin import induction_token_pool, ordinary_token_pool, seen_token_pool
from circuit_gym.tasks.reference import REFERENCE_CHOICES, reference_batch


def test_builtin_tasks_registered():
    assert {"induction", "ioi", "docstring"} <= set(list_tasks())
    with pytest.raises(ValueError, match="unknown task"):
        get_task("no_such_task")


@pytest.mark.parametrize("name", ["induction", "ioi", "docstring"])
@pytest.mark.parametrize("split", ["train", "eval", "test"])
def test_batches_are_valid_and_seeded(tiny_model, name, split):
    task = get_task(name)
    a = task.batch(tiny_model, split, 6, seed=3)
    b = task.batch(tiny_model, split, 6, seed=3)
    c = task.batch(tiny_model, split, 6, seed=4)
    assert torch.equal(a.tokens, b.tokens) and not torch.equal(a.tokens, c.tokens)
    assert a.tokens.shape[0] == 6 and (a.tokens[:, 0] == tiny_model.tokenizer.bos_token_id).all()
    assert a.counterfactual is not None and a.counterfactual.shape == a.tokens.shape
    score = task.score(tiny_model(a.tokens), a)
    assert score.shape == (6,) and torch.isfinite(score).all()


def test_answers_are_the_right_fillers(tiny_model):
    tok = tiny_model.tokenizer
    ioi = get_task("ioi").batch(tiny_model, "train", 8, seed=0)
    for row, ans, dis in zip(ioi.tokens, ioi.answers[:, 0], ioi.distractors[:, 0, 0], strict=True):
        text = tok.decode(row[1:])
        io, s = tok.decode([int(ans)]).strip(), tok.decode([int(dis)]).strip()
        assert text.count(io) == 1 and text.count(s) == 2  # IO once, subject twice
    doc = get_task("docstring").batch(tiny_model, "train", 8, seed=0)
    for row, ans in zip(doc.tokens, doc.answers[:, 0], strict=True):
        text = tok.decode(row[1:])
        assert text.count(tok.decode([int(ans)])) == 1  # only in the signature
    ind = get_task("induction").batch(tiny_model, "train", 4, seed=0)
    L = (ind.tokens.shape[1] - 1) // 2
    assert torch.equal(ind.tokens[:, 1 : L + 1], ind.tokens[:, L + 1 :])
    assert torch.equal(ind.answers, ind.tokens[:, ind.positions + 1])


def test_ioi_batches_have_one_name_order_each(tiny_model):
    tok, orders = tiny_model.tokenizer, set()
    for seed in range(12):
        batch = get_task("ioi").batch(tiny_model, "eval", 6, seed=seed)
        io_first = set()
        for row, io, s in zip(batch.tokens, batch.answers[:, 0], batch.distractors[:, 0, 0], strict=True):
            text = tok.decode(row[1:])
            io_first.add(text.index(tok.decode([int(io)]).strip()) < text.index(tok.decode([int(s)]).strip()))
        assert len(io_first) == 1, "every prompt of a batch uses the same name order"
        (first,) = io_first
        assert (batch.template.index("{IO}") < batch.template.index("{S}")) == first  # shown in the template
        orders.add(first)
    assert orders == {True, False}, "both orders (ABBA and BABA) occur across batches"


def test_splits_use_disjoint_fillers_and_templates(tiny_model):
    pairs = {s: {frozenset(p) for p in F.ioi_name_pairs(s)} for s in F.SPLITS}
    triples = {s: set(F.docstring_param_triples(s)) for s in F.SPLITS}
    for s1, s2 in [("train", "eval"), ("train", "test"), ("eval", "test")]:
        assert not pairs[s1] & pairs[s2]
        assert not triples[s1] & triples[s2]
        assert not set(F.ioi_templates(s1)) & set(F.ioi_templates(s2))
        assert not set(F.docstring_templates(s1)) & set(F.docstring_templates(s2))
        pool1, pool2 = (set(induction_token_pool(tiny_model.tokenizer, s)) for s in (s1, s2))
        assert not pool1 & pool2
        seen1, seen2 = (set(seen_token_pool(tiny_model.tokenizer, s)) for s in (s1, s2))
        assert not seen1 & seen2
    # every single name, and every template part, still occurs in training
    assert {n for p in F.ioi_name_pairs("train") for n in p} == set(F.NAMES)
    train_ioi = " ".join(F.ioi_templates("train"))
    assert all(part in train_ioi for part in F.IOI_PLACES + F.IOI_THINGS)
    train_doc = " ".join(F.docstring_templates("train"))
    assert all(part in train_doc for part in F.DOCSTRING_DESCRIPTIONS + F.DOCSTRING_SUMMARIES)


def test_bad_inputs_give_clear_errors(tiny_model):
    ioi = get_task("ioi")
    with pytest.raises(ValueError, match="split"):
        ioi.batch(tiny_model, "validation", 4, seed=0)
    with pytest.raises(ValueError, match="batch_size"):
        ioi.batch(tiny_model, "train", 0, seed=0)

    def multi_token_filler(tokenizer, split, batch_size, rng):
        from circuit_gym.tasks import single_token_ids

        single_token_ids(tokenizer, ["Supercalifragilistic"])

    with pytest.raises(ValueError, match="not single tokens"):
        Task("bad", multi_token_filler, logit_diff).batch(tiny_model, "train", 2, seed=0)

    def too_long(tokenizer, split, batch_size, rng):
        n = tiny_model.cfg.n_ctx + 5
        t = torch.ones((batch_size, n), dtype=torch.long)
        z = torch.zeros((batch_size, 1), dtype=torch.long)
        return PromptBatch("long", split, 0, "", t, torch.tensor([n - 1]), z, z[..., None])

    with pytest.raises(ValueError, match="context"):
        Task("long", too_long, logit_diff).batch(tiny_model, "train", 2, seed=0)


def test_user_task_defined_in_a_test(tiny_model):
    """A user-defined task: after 'A B C A B', predict 'C'. Registered without touching the package."""
    tok = tiny_model.tokenizer

    def make(tokenizer, split, batch_size, rng):
        from circuit_gym.tasks import encode_prompts, single_token_ids

        ids = single_token_ids(tokenizer, F.NAMES)
        names = np.array(F.NAMES)
        rows = [rng.choice(names, 3, replace=False) for _ in range(batch_size)]
        tokens = encode_prompts(tokenizer, [" {} {} {} {} {}".format(*r, *r[:2]) for r in rows], "repeat3")
        return PromptBatch(
            "repeat3", split, 0, "A B C A B", tokens, torch.tensor([tokens.shape[1] - 1]),
            torch.tensor([[ids[r[2]]] for r in rows]), torch.tensor([[[ids[r[0]]]] for r in rows]),
        )  # fmt: skip

    task = register_task(Task("repeat3_test", make, logit_diff), overwrite=True)
    assert get_task("repeat3_test") is task
    batch = task.batch(tiny_model, "eval", 5, seed=0)
    assert batch.tokens.shape == (5, 6) and tok.decode(batch.tokens[0, 1:2]).strip() in F.NAMES
    assert task.score(tiny_model(batch.tokens), batch).shape == (5,)
    with pytest.raises(ValueError, match="already registered"):
        register_task(task)


@pytest.mark.parametrize("name", REFERENCE_CHOICES)
def test_reference_batches_are_fixed(tiny_model, name):
    a, b = reference_batch(tiny_model, name), reference_batch(tiny_model, name)
    assert torch.equal(a.tokens, b.tokens) and a.fingerprint == b.fingerprint
    assert a.tokens.shape == (32, 48)
    with pytest.raises(ValueError):
        reference_batch(tiny_model, "wikipedia")


def test_induction_seen_copies_only_ids_the_training_script_repeats(tiny_model):
    """Every split of induction_seen draws from the train third of the ids, the only ids in
    run D's (toy_d's) repeated training sequences; induction's eval and test do not. The
    induction splits stay disjoint in what they test, and together with the train third they
    cover every ordinary id (what run F's repeats draw from)."""
    tok = tiny_model.tokenizer
    train_third = set(induction_token_pool(tok, "train"))
    special = set(tok.all_special_ids)
    for split in F.SPLITS:
        batch = get_task("induction_seen").batch(tiny_model, split, 4, seed=0)
        ids = set(batch.tokens[:, 1:].flatten().tolist())
        assert ids <= train_third and not ids & special
        assert len(seen_token_pool(tok, split)) > len(train_third) / 4  # thirds, roughly
    assert (
        not set(get_task("induction").batch(tiny_model, "test", 4, seed=0).tokens[:, 1:].flatten().tolist())
        & train_third
    )
    thirds = [set(induction_token_pool(tok, s)) for s in F.SPLITS]
    assert all(not (a & b) for i, a in enumerate(thirds) for b in thirds[i + 1 :])
    assert set().union(*thirds) == set(ordinary_token_pool(tok)) == set(range(len(tok))) - special
