"""Issue 34's robustness tasks (circuit_gym/tasks/robustness.py) and their script
(scripts/robustness_tasks.py): prompts checked by parsing their text, the tasks kept off every
benchmark list and out of the package's registry, and the script's recovery against a direct
reading of the oracle table."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from circuit_gym import benchmark as B
from circuit_gym.tasks import SPLITS, get_task
from circuit_gym.tasks import base as task_base
from circuit_gym.tasks import fillers as F
from circuit_gym.tasks.robustness import AGREEMENT_OPENINGS, PREAMBLES, PRONOUN_FRAMES, ROBUSTNESS_TASKS

ROOT = Path(__file__).resolve().parents[1]
PREAMBLE_TASKS = [n for n in ROBUSTNESS_TASKS if n.endswith("_preamble")]


@pytest.fixture(scope="module")
def zoo1():
    from circuit_gym.envs.pool import shared_model

    return shared_model("zoo1")


def _batches(model, name: str, seeds=range(4)):
    for split in SPLITS:
        for seed in seeds:
            yield split, ROBUSTNESS_TASKS[name].batch(model, split, 8, seed)


def _text(tok, row) -> str:
    return tok.decode(row[1:].tolist(), clean_up_tokenization_spaces=False)


def test_no_benchmark_list_and_no_default_registry_holds_them():
    lists = (B.TRAIN_TASKS, B.HELD_OUT_TASKS, B.TRANSFER_TRAIN_TASKS, B.TRANSFER_HELD_OUT_TASKS)
    assert len(ROBUSTNESS_TASKS) >= 3
    for name in ROBUSTNESS_TASKS:
        assert all(name not in tasks for tasks in lists)
        with pytest.raises(ValueError):
            B.quadrant(name, "zoo1")
    # A fresh process that imports the package (envs, benchmark, board) never registers them.
    code = ("import circuit_gym, circuit_gym.benchmark, circuit_gym.tasks as t; "
            "print(','.join(t.list_tasks()))")  # fmt: skip
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "ioi" in listed.split(",") and not set(listed.strip().split(",")) & set(ROBUSTNESS_TASKS)


@pytest.mark.parametrize("name", PREAMBLE_TASKS)
def test_preamble_prompts_are_the_base_prompts_after_one_preamble(zoo1, name):
    tok = zoo1.tokenizer
    base = get_task(name.removeprefix("robust_").removesuffix("_preamble"))
    for split, b in _batches(zoo1, name):
        texts = [_text(tok, row) for row in b.tokens]
        preambles = {next(p for p in PREAMBLES if t.startswith(p)) for t in texts}
        assert len(preambles) == 1  # one preamble per batch
        (pre,) = preambles
        n = len(tok.encode(pre, add_special_tokens=False))
        for row, cf, text in zip(b.tokens, b.counterfactual, texts, strict=True):
            # the joined text tokenises to exactly these tokens (the newline cuts the BPE)
            assert tok.encode(text, add_special_tokens=False) == row[1:].tolist()
            assert cf[1 : n + 1].tolist() == row[1 : n + 1].tolist() and not np.array_equal(cf, row)
            assert row[0] == tok.bos_token_id == cf[0]
        # the base tasks read the last position only: it moved with the preamble
        assert b.positions.tolist() == [b.tokens.shape[1] - 1]
        if base.metric is task_base.logit_diff:
            assert not (b.distractors == b.answers[..., None]).any()  # the answer is no distractor
        assert b.task == name and b.split == split


def test_ioi_preamble_answer_is_the_name_said_once(zoo1):
    tok = zoo1.tokenizer
    for _, b in _batches(zoo1, "robust_ioi_preamble"):
        for row, ans, dis in zip(b.tokens, b.answers[:, 0], b.distractors[:, 0, 0], strict=True):
            names = [w for w in re.findall(r"[A-Z][a-z]+", _text(tok, row)) if w in F.NAMES]
            counts = {w: names.count(w) for w in names}
            assert tok.decode([int(ans)]).strip() == next(w for w, c in counts.items() if c == 1)
            assert counts[tok.decode([int(dis)]).strip()] == 2


def test_docstring_four_answer_is_the_undocumented_fourth_parameter(zoo1):
    tok = zoo1.tokenizer
    triples: dict[str, set] = {s: set() for s in SPLITS}
    lengths = set()
    for split, b in _batches(zoo1, "robust_docstring_four", seeds=range(6)):
        lengths.add((split, b.tokens.shape[1]))
        for row, cf, ans, dis in zip(
            b.tokens, b.counterfactual, b.answers[:, 0], b.distractors[:, 0], strict=True
        ):
            text = _text(tok, row)
            params = re.search(r"def \w+\(self, (\w+), (\w+), (\w+), (\w+)\):", text).groups()
            documented = re.findall(r":param (\w+):", text)
            assert list(params[:3]) == documented and text.endswith(":param")
            assert tok.decode([int(ans)]) == " " + params[3]
            assert sorted(tok.decode([int(d)]) for d in dis) == sorted(" " + p for p in params[:3])
            cf_params = re.search(r"\(self, (\w+), (\w+), (\w+), (\w+)\)", _text(tok, cf)).groups()
            assert cf_params[3] != params[3] and not set(cf_params) & set(params)
            triples[split].add(params[:3])
    assert not triples["train"] & triples["test"] and not triples["train"] & triples["eval"]
    assert not triples["eval"] & triples["test"]


def _as_regex(frame: str) -> re.Pattern:
    """A frame's prompts: its text with every {FIELD} a word."""
    return re.compile(
        re.escape(frame).replace(r"\{N\}", r"\w+").replace(r"\{J\}", r"\w+").replace(r"\{P\}", r"\w+")
    )


def test_pronoun_frames_answer_follows_the_name_in_a_new_frame(zoo1):
    tok = zoo1.tokenizer
    for _, b in _batches(zoo1, "robust_pronoun_frames"):
        for row, cf, ans, dis in zip(
            b.tokens, b.counterfactual, b.answers[:, 0], b.distractors[:, 0, 0], strict=True
        ):
            text, cf_text = _text(tok, row), _text(tok, cf)
            assert any(_as_regex(f).fullmatch(text) for f in PRONOUN_FRAMES)
            assert not any(
                _as_regex(f).fullmatch(text) for f in F.PRONOUN_FRAMES
            )  # a frame training never had
            name = next(w for w in re.findall(r"[A-Z][a-z]+", text) if w in F.FEMALE_NAMES + F.MALE_NAMES)
            cf_name = next(
                w for w in re.findall(r"[A-Z][a-z]+", cf_text) if w in F.FEMALE_NAMES + F.MALE_NAMES
            )
            she = name in F.FEMALE_NAMES
            assert tok.decode([int(ans)]) == (" she" if she else " he") != tok.decode([int(dis)])
            assert (cf_name in F.FEMALE_NAMES) != she  # the counterfactual flips the answer


def test_agreement_openings_verb_agrees_with_the_subject(zoo1):
    tok = zoo1.tokenizer
    for _, b in _batches(zoo1, "robust_agreement_openings"):
        for row, cf, ans, dis in zip(
            b.tokens, b.counterfactual, b.answers[:, 0], b.distractors[:, 0, 0], strict=True
        ):
            text = _text(tok, row)
            opening = next(o for o in AGREEMENT_OPENINGS if text.startswith(o + " "))
            subject = text.removeprefix(opening + " ").split()[0]
            plural = subject.endswith("s") and subject.removesuffix("s") in F.AGREEMENT_NOUNS
            singular, plural_verb = AGREEMENT_OPENINGS[opening]
            assert tok.decode([int(ans)]) == " " + (plural_verb if plural else singular)
            assert tok.decode([int(dis)]) == " " + (singular if plural else plural_verb)
            cf_subject = _text(tok, cf).removeprefix(opening + " ").split()[0]
            assert cf_subject.endswith("s") != subject.endswith("s")  # the counterfactual flips the number


def test_greater_than_frames_threshold_is_the_start_year(zoo1):
    tok = zoo1.tokenizer
    for _, b in _batches(zoo1, "robust_greater_than_frames"):
        for row, ans in zip(b.tokens, b.answers[:, 0], strict=True):
            m = re.fullmatch(r"The (\w+) of (\d\d)(\d\d) lasted to (\d\d)", _text(tok, row))
            assert m and m[2] == m[4] and tok.decode([int(ans)]) == m[3]


@pytest.mark.parametrize(
    "name", ["robust_pronoun_frames", "robust_agreement_openings", "robust_greater_than_frames"]
)
def test_reframed_splits_are_disjoint_fillings(zoo1, name):
    tok = zoo1.tokenizer
    seen: dict[str, set] = {s: set() for s in SPLITS}
    for split, b in _batches(zoo1, name, seeds=range(10)):
        seen[split] |= {_text(tok, row) for row in b.tokens}
    assert all(seen.values())
    assert (
        not seen["train"] & seen["test"]
        and not seen["train"] & seen["eval"]
        and not seen["eval"] & seen["test"]
    )


# ---------------------------------------------------------------------------------- the script
def _script():
    from circuit_gym.baselines import robustness

    return robustness


def test_script_recovery_matches_the_oracle_table_read_directly(zoo1, monkeypatch):
    from circuit_gym.ablation.tables import sweep_table
    from circuit_gym.baselines.fixed_policy import FixedPolicy
    from circuit_gym.tasks.reference import reference_batch

    script = _script()
    name = "robust_docstring_four"
    monkeypatch.setitem(task_base._REGISTRY, name, ROBUSTNESS_TASKS[name])  # registered for this test only
    fixed = FixedPolicy.load(script.FIXED)
    solvers = {script.FIXED_LABEL: [("fixed", "attention", lambda obs, _env: fixed.rank_heads(obs))]}
    row = script.score_cells({"zoo1": [name]}, solvers, episodes=1)[f"zoo1/{name}"][script.FIXED_LABEL]
    # independently: the batch and table built here with the transfer settings, the heads by hand
    task = ROBUSTNESS_TASKS[name]
    table = sweep_table(zoo1, task, task.batch(zoo1, "test", B.PROMPTS_PER_EPISODE, seed=0),
                        reference_batch(zoo1, B.TRANSFER_REFERENCE), ablation=B.TRANSFER_ABLATION, lam=B.LAM)  # fmt: skip
    reward, order = np.asarray(table.reward), np.argsort(-fixed.scores, kind="stable")
    oracle = reward.max()
    assert oracle > 0
    assert row["k1"]["mean"] == pytest.approx(reward[order[0]] / oracle, abs=1e-6)
    assert row["k5"]["mean"] == pytest.approx(reward[order[:5]].max() / oracle, abs=1e-6)
    targets = script.targets({"c": {"ppo_x": row, script.FIXED_LABEL: row}})
    assert targets["ppo_x"]["c"]["met"]  # equal counts as met
