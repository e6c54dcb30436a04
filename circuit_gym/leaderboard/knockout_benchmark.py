"""The knock-out track's versions (issue 60): one row per version of the board, read by its scorer.

A :class:`KnockOutBenchmark` fixes what a knock-out result is comparable under: the planted kinds,
public seeds and secret draw, the trained models with verified backups (public, and the private
zoo's), the environment's settings and the references every entry is paired with. The scorer
(``circuit_gym/leaderboard/knockout_scorer.py``) plays it; the track table
(``circuit_gym/leaderboard/tracks.py``) and the count of private models a scoring gives
(``private_models.required``) read it here, without the scorer's imports (as
``edge_benchmark.py`` holds the edge track's rows).
"""

from __future__ import annotations

from dataclasses import dataclass

from circuit_gym import benchmark as B
from circuit_gym.envs.knockout import DEFAULT_BATCH, DEFAULT_STEPS
from circuit_gym.envs.registration import planted_knockout_id
from circuit_gym.models.planted.versions import kinds_of
from circuit_gym.models.trained_truth import verified_backup_tasks
from circuit_gym.solvers.knockout import REFERENCES


@dataclass(frozen=True)
class KnockOutBenchmark:
    """One version of the knock-out track. Episode counts are chosen for cost only (exact greedy's
    curve, the score's denominator, costs 1-5 minutes an episode on a loaded 2-core machine), never
    on results."""

    version: str
    track: str
    generator: int = 3  # the planted generator's version
    public_seeds: tuple[int, ...] = (0, 1, 2)
    private_models: int = 8  # secret models per kind: the first of the ``planted_draw`` row's draw
    # the Planted row whose secret draw (salt) the secret models are (knockout_scorer checks its generator)
    planted_draw: str = "v8-planted"
    kinds: tuple[str, ...] | None = None  # None: every kind of the generator
    steps: int = DEFAULT_STEPS  # K
    split: str = "test"
    batch_index: int = 0
    batch_size: int = DEFAULT_BATCH
    ablation: str = "resample"
    versus: tuple[str, ...] = ("conditional_attribution",)  # references every entry is paired with
    results_folder: str = "v8/knockout"  # under leaderboard/results/
    # Trained models whose backups are known by training (zoo v3, issue 55): each public member's
    # tasks whose recorded pair its card verifies (``trained_tasks``), scored against its trained truth
    trained_models: tuple[str, ...] = ()
    # The transfer benchmark whose private models (benchmark.TransferBenchmark.private_models) the
    # private part also plays, each on the tasks its card verifies; None: secret planted models only
    private_zoo: str | None = None

    @property
    def private_trained_models(self) -> int:
        """How many private trained models a private scoring gives (0: none)."""
        return 0 if self.private_zoo is None else B.transfer_benchmark(self.private_zoo).private_models

    def __post_init__(self) -> None:
        unknown = sorted(set(self.kinds or ()) - set(kinds_of(self.generator)))
        if unknown or (self.kinds is not None and not self.kinds):
            raise ValueError(f"kinds must be some of {kinds_of(self.generator)}, got {self.kinds}")
        if sorted(set(self.versus) - set(REFERENCES)):
            raise ValueError(f"versus must name references of {sorted(REFERENCES)}, got {self.versus}")

    @property
    def kinds_played(self) -> tuple[str, ...]:
        return self.kinds if self.kinds is not None else kinds_of(self.generator)

    def trained_jobs(self) -> tuple[tuple[str, int], ...]:
        """The trained part's episodes: (task, index into ``trained_models``), member by member."""
        return tuple(
            (task, i) for i, member in enumerate(self.trained_models) for task in trained_tasks(member)
        )

    def definition(self) -> dict:
        """What the track's results are comparable under (checked against every result's provenance)."""
        return {
            "benchmark_version": f"circuit-gym-knockout-{self.version}", "track": self.track,
            "kinds": list(self.kinds_played), "env_ids": [planted_knockout_id(k) for k in self.kinds_played],
            "generator_version": self.generator, "public_seeds": list(self.public_seeds),
            "private_models": self.private_models, "private_draw": self.planted_draw, "split": self.split,
            "batch_index": self.batch_index, "batch_size": self.batch_size, "steps": self.steps,
            "ablation": self.ablation, "versus": list(self.versus),
            "score": "knock-out area over k = 1..K relative to exact greedy's on the same batch; truth scores "
                     "with backups and suppressors counted",
            **({"trained_models": {m: list(trained_tasks(m)) for m in self.trained_models}}
               if self.trained_models else {}),
            **({"private_trained_models": self.private_trained_models} if self.private_zoo else {}),
        }  # fmt: skip

    def episodes(self, private: bool) -> int:
        planted = len(self.kinds_played) * (len(self.public_seeds) + (self.private_models if private else 0))
        return planted + len(self.trained_jobs())


def trained_tasks(member: str) -> tuple[str, ...]:
    """The tasks of public zoo member ``member`` whose backup pair its card verifies
    (``trained_truth.verified_backup_tasks``; the pairs are also measured with plain hooks in
    ``tests/test_zoo_v3_backups.py``)."""
    from circuit_gym.models.cards import card_metrics

    return verified_backup_tasks(card_metrics(member))


# Benchmark v8's knock-out track: its secret planted models are v8's Planted track's draw (its own salt).
# Its trained part: zoo v3's held-out members in public, v8's two private models in private.
KNOCKOUT_V8 = KnockOutBenchmark("v8", "v8-knockout", planted_draw="v8-planted",
                                trained_models=B.transfer_benchmark("v8").held_out_models, private_zoo="v8")  # fmt: skip
KNOCKOUT_BENCHMARKS: dict[str, KnockOutBenchmark] = {KNOCKOUT_V8.track: KNOCKOUT_V8}


def knockout_benchmark(track: str) -> KnockOutBenchmark:
    """The row whose track is ``track``; ValueError naming the knock-out tracks otherwise."""
    if track not in KNOCKOUT_BENCHMARKS:
        raise ValueError(f"knock-out track must be one of {list(KNOCKOUT_BENCHMARKS)}, got {track!r}")
    return KNOCKOUT_BENCHMARKS[track]
