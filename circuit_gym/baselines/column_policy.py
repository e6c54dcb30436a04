"""Single-column policy: rank heads by one observation column, ``sign * obs[:, column]``.

No learning: a (column, sign) pair, a *rule* written ``+last_copy`` or ``-entropy``, is the whole
policy. Issue 35 item 6 put the fairly chosen rule on zoo v1's board as a reference entry (its
checkpoint: ``docs/results/transfer/column_policy.json``; that board retired, docs/archive.md):
the rule with the best pooled best-of-1 recovery on the **training tasks of the training models**
(eval split), chosen here by :func:`choose_fair_rule`, which refuses held-out tasks, held-out
models and the test split; its report beside the ceiling (the rule chosen on the held-out tasks
themselves, which no entry may use) is ``docs/results/feature_ceiling/zoo_v1.md``.

    circuit-gym leaderboard score --policy circuit_gym.baselines.column_policy:make_policy \\
        --checkpoint docs/results/transfer/column_policy.json ...

Best-of-k here reads the episode's single-head table (the same number ``best_of_k`` gets by
ablating the k heads from the clean state), so every rule is scored on one pass over the episodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from circuit_gym.envs.features import DEFAULT_FEATURES, FEATURE_SETS

# The env's episode state, the same for every head: no rule is built on them.
STATE_COLUMNS = ("ablated", "step_fraction")


def rule_columns(features: str) -> list[str]:
    """The columns of feature set ``features`` a rule may rank by (the state columns left out)."""
    return [name for name in FEATURE_SETS[features] if name not in STATE_COLUMNS]


def rule_name(column: str, sign: int) -> str:
    return f"{'+' if sign > 0 else '-'}{column}"


def parse_rule(rule: str, features: str = DEFAULT_FEATURES) -> tuple[str, int]:
    """``"+last_copy"`` -> ("last_copy", 1); ValueError for anything else than a sign and a rule column."""
    if not isinstance(rule, str) or len(rule) < 2 or rule[0] not in "+-":
        raise ValueError(f"a rule is '+column' or '-column', got {rule!r:.80}")
    column = rule[1:]
    if column not in rule_columns(features):
        raise ValueError(
            f"unknown column {column!r:.80} in rule; the {features!r} set has {rule_columns(features)}"
        )
    return column, 1 if rule[0] == "+" else -1


class ColumnPolicy:
    """Scores every head by ``sign`` times one column of the observation."""

    def __init__(self, column: str, sign: int, features: str = DEFAULT_FEATURES) -> None:
        if features not in FEATURE_SETS:
            raise ValueError(f"unknown feature set {features!r:.80}; known: {sorted(FEATURE_SETS)}")
        if isinstance(sign, bool) or not isinstance(sign, int) or sign not in (1, -1):
            raise ValueError(f"sign must be the integer 1 or -1, got {sign!r:.80}")
        self.column, self.sign = parse_rule(rule_name(str(column), sign), features)
        self.features = features
        self.index = FEATURE_SETS[features].index(self.column)

    @property
    def rule(self) -> str:
        return rule_name(self.column, self.sign)

    def rank_heads(self, observation: np.ndarray) -> np.ndarray:
        obs = np.asarray(observation)
        width = len(FEATURE_SETS[self.features])
        if obs.ndim != 2 or obs.shape[1] != width:
            raise ValueError(
                f"column policy reads {self.features!r} observations [heads, {width}], got {obs.shape}"
            )
        return self.sign * obs[:, self.index].astype(np.float64)

    def save(self, path: str | Path, about: dict | None = None) -> None:
        """The checkpoint: the rule and its feature set (``about``: how it was chosen, for readers)."""
        record = {"column": self.column, "sign": self.sign, "features": self.features, **(about or {})}
        Path(path).write_text(json.dumps(record, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> ColumnPolicy:
        record = json.loads(Path(path).read_text())
        if not isinstance(record, dict) or not {"column", "sign", "features"} <= record.keys():
            raise ValueError(f"{path}: a column-policy checkpoint has 'column', 'sign' and 'features'")
        return cls(record["column"], record["sign"], record["features"])


def make_policy(checkpoint: str) -> ColumnPolicy:
    """Factory for the leaderboard: ``--policy circuit_gym.baselines.column_policy:make_policy --checkpoint FILE``."""
    return ColumnPolicy.load(checkpoint)


# ---------------------------------------------------------------------------------------------
# Scoring every rule at once, and the fair choice.
def column_tables(env, tasks: Sequence[str], episodes: Iterable[int], columns: list[int]) -> dict:
    """Per (task, episode): the observation's ``columns`` and the single-head reward table."""
    from circuit_gym.progress import progress_iter

    out = {}
    for task, index in progress_iter([(t, i) for t in tasks for i in episodes], "episodes", unit="episode"):
        obs, _ = env.reset(options={"task": task, "batch_index": int(index)})
        out[(task, int(index))] = (np.asarray(obs)[:, columns], env.unwrapped.episode.table.reward.copy())
    return out


def score_rules(tables: dict, names: list[str], ks: Sequence[int] = (1, 5)) -> dict:
    """Pooled recovery of every (column, sign) rule at each k, over the given episodes; ``names[j]``
    names column ``j`` of the tables."""
    from circuit_gym.evaluation import recovery_summary

    rows: dict[str, dict] = {}
    for j, name in enumerate(names):
        for sign in (1, -1):
            rule = rule_name(name, sign)
            rows[rule] = {}
            for k in ks:
                rewards, oracles, hits = [], [], []
                for obs, reward in tables.values():
                    top = np.argsort(-sign * obs[:, j], kind="stable")[:k]
                    best = top[int(np.argmax(reward[top]))]
                    rewards.append(float(reward[best]))
                    oracles.append(float(reward.max()))
                    hits.append(bool(best == int(np.argmax(reward))))
                s = recovery_summary(rewards, oracles, hits)
                rows[rule][f"best_of_{k}"] = {"recovery": s["recovery"], "ci95": s["recovery_ci95"]}
    return rows


def best_rule(rules: dict) -> str:
    """The rule with the highest pooled best-of-1 recovery (the first in column order on a tie)."""
    return max(rules, key=lambda r: rules[r]["best_of_1"]["recovery"])


def model_tables(models: Sequence[str], tasks: Sequence[str], split: str, episodes: Sequence[int],
                 features: str = DEFAULT_FEATURES, make_env: Callable | None = None) -> dict:  # fmt: skip
    """:func:`column_tables` over several zoo members, keyed (model, task, episode)."""
    from circuit_gym.baselines.transfer_envs import transfer_env

    make_env = make_env or transfer_env
    names = rule_columns(features)
    columns = [FEATURE_SETS[features].index(n) for n in names]
    out = {}
    for model in models:
        env = make_env(model, tasks, split, max(episodes) + 1, features)
        out.update({(model, *key): v for key, v in column_tables(env, tasks, episodes, columns).items()})
        env.close()
    return out


def choose_fair_rule(models: Sequence[str] | None = None, tasks: Sequence[str] | None = None, split: str = "eval",
                     episodes: int = 16, features: str = DEFAULT_FEATURES,
                     make_env: Callable | None = None) -> tuple[str, dict]:  # fmt: skip
    """The fair rule and every rule's scores: chosen on the training tasks of the
    training models (default) on a non-test split. Held-out tasks, held-out models and the test
    split are refused, so nothing held out can move the choice."""
    from circuit_gym import benchmark as B

    models = tuple(models or B.TRAIN_MODELS)
    tasks = tuple(tasks or B.TRANSFER_TRAIN_TASKS)
    if split == B.SPLIT:
        raise ValueError(f"the fair rule is never chosen on the {B.SPLIT!r} split")
    if set(tasks) & set(B.TRANSFER_HELD_OUT_TASKS) or set(models) - set(B.TRAIN_MODELS):
        raise ValueError(
            f"the fair rule is chosen on training tasks of training models only, got {tasks} on {models}"
        )
    rules = score_rules(
        model_tables(models, tasks, split, range(episodes), features, make_env), rule_columns(features)
    )
    return best_rule(rules), rules
