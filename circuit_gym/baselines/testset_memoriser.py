"""The test-set memoriser: the attack a transfer board must expose (issue 35 item 5, first on zoo v1).

It recognises, from the observation alone, which task (and, in the per-model variant, which
public zoo member) an episode comes from, and ranks heads by the mean contrastive reward that
the *public* models' single-head tables give each head on that task. Both the recognition and
the tables are fitted on the public test split, on batches the board does not score (it scores
``benchmark.TRANSFER_SEEDS``; the fit refuses those). On the public held-out models it knows
the answers; on the private model, whose weights nobody outside has, it knows nothing, so the
gap between its public and private columns is what tuning to the public test set is worth.

Recognition is a nearest centroid. The episode's *signature* is built from the observation
columns a rule may use (``column_policy.rule_columns``): ``"mean"``, their mean over heads (10
numbers, issue 35's first attack), or ``"heads"``, every head's values (1,440 numbers). Distances
are in units of each signature dimension's spread over the fitting episodes. There is one centroid
per (public model, task), the mean signature of its fitting episodes, and a recognised episode
gets its task's head scores: the task's mean reward over every public model (``"pooled"``) or
the recognised model's own (``"per_model"``, the sharper attack).

    python scripts/fit_testset_memoriser.py      # writes docs/results/transfer/testset_memoriser*.json
    circuit-gym leaderboard score --policy circuit_gym.baselines.testset_memoriser:make_policy \\
        --checkpoint docs/results/transfer/testset_memoriser.json ...
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from circuit_gym.baselines.column_policy import rule_columns
from circuit_gym.envs.features import DEFAULT_FEATURES, FEATURE_SETS

KIND = "testset-memoriser"


SIGNATURES = ("mean", "heads")
HEAD_SCORES = ("pooled", "per_model")


def signature(observation: np.ndarray, columns: Sequence[int], kind: str = "mean") -> np.ndarray:
    """The episode's signature: the observation's ``columns``, averaged over heads (``"mean"``) or
    every head's in a row (``"heads"``)."""
    x = np.asarray(observation, dtype=np.float64)[:, list(columns)]
    if kind == "mean":
        return x.mean(axis=0)
    if kind == "heads":
        return x.ravel()
    raise ValueError(f"signature must be one of {SIGNATURES}, got {kind!r:.80}")


def fit_centroids(
    signatures: Sequence[np.ndarray], labels: Sequence[int], n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """(centroids ``[n_classes, d]``, scale ``[d]``): each class's mean signature, and the standard
    deviation of every signature per column (1 where a column never varies), the unit of distance."""
    x, y = np.asarray(signatures, dtype=np.float64), np.asarray(labels)
    missing = sorted(set(range(n_classes)) - set(y.tolist()))
    if missing:
        raise ValueError(f"classes {missing} have no fitting signature")
    spread = x.std(axis=0)
    scale = np.where(spread > 0, spread, 1.0)
    return np.stack([x[y == c].mean(axis=0) for c in range(n_classes)]), scale


def nearest_centroid(x: np.ndarray, centroids: np.ndarray, scale: np.ndarray) -> int:
    """The class whose centroid is nearest to ``x`` in units of ``scale`` (the lower index on a tie)."""
    return int(np.argmin((((np.asarray(x) - centroids) / scale) ** 2).sum(axis=1)))


def _finite(name: str, values, shape: tuple[int, ...] | None = None) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} has NaN or infinite values")
    return arr


class TestsetMemoriser:
    """Nearest-centroid recognition of the episode's class, then that class's head scores."""

    __test__ = False  # not a pytest test class despite its name

    def __init__(self, columns: Sequence[str], scale, classes: Sequence[dict], features: str = DEFAULT_FEATURES,
                 signature_kind: str = "mean") -> None:  # fmt: skip
        if signature_kind not in SIGNATURES:
            raise ValueError(f"signature must be one of {SIGNATURES}, got {signature_kind!r:.80}")
        if features not in FEATURE_SETS:
            raise ValueError(f"unknown feature set {features!r:.80}; known: {sorted(FEATURE_SETS)}")
        allowed = rule_columns(features)
        columns = [str(c) for c in columns]
        unknown = [c for c in columns if c not in allowed]
        if not columns or unknown or len(set(columns)) != len(columns):
            raise ValueError(f"signature columns must be distinct columns of {allowed}, got {columns!r:.200}")
        if not classes:
            raise ValueError("a memoriser needs at least one class")
        self.features, self.columns, self.signature = features, columns, signature_kind
        self.indices = [FEATURE_SETS[features].index(c) for c in columns]
        first = classes[0].get("head_scores") if isinstance(classes[0], dict) else None
        self.n_heads = len(first) if isinstance(first, list | tuple | np.ndarray) else 0
        d = len(columns) * (self.n_heads if signature_kind == "heads" else 1)
        self.scale = _finite("scale", scale, (d,))
        if (self.scale <= 0).any():
            raise ValueError("scale must be positive")
        self.centroids = np.stack(
            [_finite(f"class {i} centroid", c["centroid"], (d,)) for i, c in enumerate(classes)]
        )
        self.head_scores = [
            _finite(f"class {i} head_scores", c["head_scores"]) for i, c in enumerate(classes)
        ]
        if self.n_heads < 1 or any(s.shape != (self.n_heads,) for s in self.head_scores):
            raise ValueError(
                f"every class needs one score per head, of one length; got {[s.shape for s in self.head_scores]}"
            )
        self.labels = [(str(c["task"]), str(c.get("model", ""))) for c in classes]

    def recognise(self, observation: np.ndarray) -> tuple[str, str]:
        """(task, public model) of the centroid the observation's signature is nearest to."""
        return self.labels[self._class(observation)]

    def recognise_signature(self, x: np.ndarray) -> tuple[str, str]:
        """(task, model) of the class nearest to the signature ``x`` (:func:`signature`)."""
        return self.labels[
            nearest_centroid(_finite("signature", x, self.scale.shape), self.centroids, self.scale)
        ]

    def _class(self, observation: np.ndarray) -> int:
        obs = np.asarray(observation)
        width = len(FEATURE_SETS[self.features])
        if obs.shape != (self.n_heads, width):
            raise ValueError(f"memoriser was fitted on {self.features!r} observations of shape "
                             f"{(self.n_heads, width)}, got {obs.shape}")  # fmt: skip
        return nearest_centroid(signature(obs, self.indices, self.signature), self.centroids, self.scale)

    def rank_heads(self, observation: np.ndarray) -> np.ndarray:
        return self.head_scores[self._class(observation)].copy()

    def to_dict(self) -> dict:
        classes = [{"task": t, "model": m, "centroid": c.tolist(), "head_scores": s.tolist()}
                   for (t, m), c, s in zip(self.labels, self.centroids, self.head_scores, strict=True)]  # fmt: skip
        return {"kind": KIND, "features": self.features, "columns": self.columns, "signature": self.signature,
                "scale": self.scale.tolist(), "classes": classes}  # fmt: skip

    def save(self, path: str | Path, about: dict | None = None) -> None:
        Path(path).write_text(json.dumps({**self.to_dict(), **(about or {})}, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> TestsetMemoriser:
        record = json.loads(Path(path).read_text())
        if not isinstance(record, dict) or record.get("kind") != KIND:
            raise ValueError(f"{path} is not a {KIND} checkpoint (its 'kind' must be {KIND!r})")
        missing = {"features", "columns", "signature", "scale", "classes"} - record.keys()
        if missing:
            raise ValueError(f"{path} lacks {sorted(missing)}")
        if not isinstance(record["classes"], list) or not all(
            isinstance(c, dict) and {"task", "centroid", "head_scores"} <= c.keys() for c in record["classes"]
        ):
            raise ValueError(f"{path}: every class has 'task', 'centroid' and 'head_scores'")
        return cls(
            record["columns"], record["scale"], record["classes"], record["features"], record["signature"]
        )


def make_policy(checkpoint: str) -> TestsetMemoriser:
    """Factory for the leaderboard: ``--policy circuit_gym.baselines.testset_memoriser:make_policy --checkpoint FILE``."""
    return TestsetMemoriser.load(checkpoint)


# ---------------------------------------------------------------------------------------------
# Fitting: the public test split's unscored batches, every public model.
@dataclass(frozen=True)
class FitEpisode:
    model: str
    task: str
    batch_index: int
    columns: np.ndarray  # the observation's signature_columns(features), [heads, columns]
    reward: np.ndarray  # the episode's single-head contrastive reward, per head


def signature_columns(features: str = DEFAULT_FEATURES) -> list[str]:
    return rule_columns(features)


def collect(models: Sequence[str], tasks: Sequence[str], batches: Sequence[int], features: str = DEFAULT_FEATURES,
            make_env: Callable | None = None, tasks_of: Callable[[str], Sequence[str]] | None = None) -> list[FitEpisode]:  # fmt: skip
    """Observation columns and single-head reward table of every (model, task, batch) of the test
    split (``tasks_of(model)``: the tasks it serves, when not all of ``tasks``). Refuses the batches
    the board scores on the public models."""
    from circuit_gym import benchmark as B
    from circuit_gym.baselines.transfer_envs import transfer_env
    from circuit_gym.progress import progress_iter

    scored = sorted(set(batches) & set(B.TRANSFER_SEEDS))
    if scored:
        raise ValueError(
            f"batches {scored} are scored by the board (benchmark.TRANSFER_SEEDS); fit on others"
        )
    make_env = make_env or transfer_env
    indices = [FEATURE_SETS[features].index(c) for c in signature_columns(features)]
    out = []
    for model in models:
        gated = None if tasks_of is None else set(tasks_of(model))
        served = tuple(t for t in tasks if gated is None or t in gated)
        env = make_env(model, served, B.SPLIT, max(batches) + 1, features)
        for task, i in progress_iter(
            [(t, i) for t in served for i in batches], f"memoriser fit {model}", unit="episode"
        ):
            obs, _ = env.reset(options={"task": task, "batch_index": int(i)})
            reward = env.unwrapped.episode.table.reward.copy()
            out.append(FitEpisode(model, task, int(i), np.asarray(obs, dtype=np.float64)[:, indices], reward))
        env.close()
    return out


def _rounded(x: np.ndarray) -> np.ndarray:
    """7 significant digits (the observations are float32): a shorter checkpoint, and the policy
    in memory is the one its file loads."""
    return np.asarray([float(f"{v:.7g}") for v in np.ravel(x)]).reshape(np.shape(x))


def fit(episodes: Sequence[FitEpisode], head_scores: str = "pooled", signature_kind: str = "mean",
        features: str = DEFAULT_FEATURES) -> TestsetMemoriser:  # fmt: skip
    """The memoriser of these episodes: one centroid per (model, task); head scores per task, the
    mean reward of every episode of the task over all models (``"pooled"``), or per (model, task)
    (``"per_model"``)."""
    if head_scores not in HEAD_SCORES:
        raise ValueError(f"head_scores must be one of {HEAD_SCORES}, got {head_scores!r:.80}")
    if not episodes:
        raise ValueError("no fitting episodes")
    keys = sorted({(e.task, e.model) for e in episodes})
    label = {k: c for c, k in enumerate(keys)}
    signatures = [signature(e.columns, range(e.columns.shape[1]), signature_kind) for e in episodes]
    centroids, scale = fit_centroids(signatures, [label[(e.task, e.model)] for e in episodes], len(keys))

    def scores(task: str, model: str) -> np.ndarray:
        same = [
            e.reward for e in episodes if e.task == task and (head_scores == "pooled" or e.model == model)
        ]
        return _rounded(np.mean(same, axis=0))

    classes = [{"task": t, "model": m, "centroid": _rounded(centroids[c]), "head_scores": scores(t, m)}
               for c, (t, m) in enumerate(keys)]  # fmt: skip
    return TestsetMemoriser(signature_columns(features), _rounded(scale), classes, features, signature_kind)


def recognition_accuracy(memoriser: TestsetMemoriser, episodes: Sequence[FitEpisode]) -> dict:
    """How often ``memoriser`` recognises the task, and the model, of each episode."""
    found = [memoriser.recognise_signature(signature(e.columns, range(e.columns.shape[1]), memoriser.signature))
             for e in episodes]  # fmt: skip
    n = len(episodes)
    return {"task": sum(f[0] == e.task for f, e in zip(found, episodes, strict=True)) / n,
            "model": sum(f[1] == e.model for f, e in zip(found, episodes, strict=True)) / n, "episodes": n}  # fmt: skip
