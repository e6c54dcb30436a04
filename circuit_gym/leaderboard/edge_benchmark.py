"""The edge track's versions: one row per version of the board, one scorer for every row.

An :class:`EdgeBenchmark` fixes what an edge-track result is comparable under: the transfer part
(the held-out tasks on the public held-out zoo members, and the maintainers' private model when
they pass it), the planted part (the planted generator's version, its kinds, the public seeds and
how many secret models the maintainers' seed file draws), and the edge-building environment every
episode is played in (candidates K, pass budget, alpha, ablation, batch). The scorer
(``circuit_gym/leaderboard/edge_scorer.py``) reads nothing else, so a new board version's edge
track is one more row of :data:`EDGE_BENCHMARKS` and one more row of the track table
(``circuit_gym/leaderboard/tracks.py``), not new code.

Episode counts are chosen for cost only (the references are scored on a shared 2-core machine:
an edge episode's setup, EAP and EAP-IG over 29,089 edges, costs 6-12 s, one edge CPR / CMD pair
~9 s), never on held-out results: one test batch per (held-out model, held-out task), two
public planted seeds per kind.

**Edge protocol 2** (issue 57; :data:`EDGE_PROTOCOL`, recorded in the definition): the
entry's own scores decide every edge the ranking metric reads (``circuit_gym/edges/
entry_ranking.py``), the metric weighs small circuits (``circuit_gym/edges/small_circuits.py``:
CPR / CMD on a log size axis), and every cell of the board holds at least
:data:`MIN_PUBLIC_EPISODES` public and :data:`MIN_PRIVATE_EPISODES` private episodes (a cell: the
transfer part or the planted part, public or private), so adjacent entries' paired differences
have intervals (``circuit_gym/edges/paired.py``). Protocol 1 (EAP-IG's order filled every edge
the entry did not rank) left the tree with the retired edge tracks (docs/archive.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from circuit_gym import benchmark as B
from circuit_gym.envs.edge_building import DEFAULT_CANDIDATES, EAP_IG_STEPS
from circuit_gym.models.planted.versions import kinds_of
from circuit_gym.track_envs import PLANTED_BATCH_INDEX, PLANTED_BATCH_SIZE, PLANTED_SPLIT

EDGE_PROTOCOL = 2  # the edge scorer's protocol (issue 57), recorded in every row's definition
# Episodes per cell (issue 57): the audited edge track's transfer CPR rested on 3 private and 6
# public episodes, and its intervals overlapped for every pair but random and the untrained PPO.
MIN_PUBLIC_EPISODES = 16
MIN_PRIVATE_EPISODES = 8


@dataclass(frozen=True)
class EdgeBenchmark:
    """One version of the edge track (a row of :data:`EDGE_BENCHMARKS`)."""

    version: str  # the board version it belongs to (tracks.BENCHMARKS)
    track: str  # its track's name on the board
    held_out_models: tuple[str, ...]
    tasks: tuple[str, ...]  # held-out tasks
    planted_generator: int
    seeds: tuple[int, ...] = (0,)  # test batches per (public held-out model, held-out task)
    private_seeds_used: int = 1  # batches per held-out task on the private model (the seed file's first)
    planted_public_seeds: tuple[int, ...] = (0, 1)
    planted_private_models: int = 10  # secret planted models per kind, drawn from the seed file's first seed
    candidates: int = DEFAULT_CANDIDATES  # K: the top-K |EAP-IG| edges an action may add
    budget: int = 32  # edges an episode may add (one LM pass each)
    alpha: float = 0.001  # the environment's cost per edge (reward only; no score uses it)
    ablation: str = B.TRANSFER_ABLATION
    batch_size: int = B.PROMPTS_PER_EPISODE
    planted_kinds: tuple[str, ...] | None = None  # None: every kind of the generator's version
    results_folder: str = "edges"  # its board results, under leaderboard/results/
    # the transfer benchmark its models, tasks and private model come from (None: ``version``)
    source: str | None = None

    @property
    def transfer_version(self) -> str:
        return self.source or self.version

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.planted_kinds if self.planted_kinds is not None else kinds_of(self.planted_generator)

    def definition(self) -> dict:
        """What the track's results are comparable under (checked against every result's provenance)."""
        return {
            "benchmark_version": f"circuit-gym-edges-{self.version}", "track": self.track,
            "held_out_models": list(self.held_out_models), "tasks": list(self.tasks), "split": B.SPLIT,
            "seeds": list(self.seeds), "private_seeds_used": self.private_seeds_used,
            "planted_generator": self.planted_generator, "planted_kinds": list(self.kinds),
            "planted_public_seeds": list(self.planted_public_seeds),
            "planted_private_models": self.planted_private_models, "planted_split": PLANTED_SPLIT,
            "planted_batch_size": PLANTED_BATCH_SIZE, "planted_batch_index": PLANTED_BATCH_INDEX,
            "candidates": self.candidates, "budget": self.budget, "alpha": self.alpha, "ablation": self.ablation,
            "prompts_per_episode": self.batch_size, "eap_ig_steps": EAP_IG_STEPS,
            "edge_protocol": EDGE_PROTOCOL, "transfer_source": self.transfer_version,
            "reference_proposed": f"the top {self.budget} candidates by the reference's signed score",
            "ranking": "the entry's candidates by its scores, then one fixed random order (no method's)",
            "ranking_metric": "cpr_log / cmd_log: CPR / CMD on log10(fraction), MIB's fractions of at most "
                              "5% and at most K edges", "min_public_episodes": MIN_PUBLIC_EPISODES,
            "min_private_episodes": MIN_PRIVATE_EPISODES,
        }  # fmt: skip

    @classmethod
    def of(cls, transfer: B.TransferBenchmark, track: str, **fields) -> EdgeBenchmark:
        """The edge row of transfer benchmark ``transfer``: its held-out models, held-out tasks and
        planted generator read from that row, not written again."""
        return cls(transfer.version, track, transfer.held_out_models, transfer.held_out_tasks,
                   transfer.planted_generator, **fields)  # fmt: skip

    def tasks_on(self, model: str) -> tuple[str, ...]:
        """The held-out tasks public ``model`` serves (its card's gate: a zoo member may not
        perform them all)."""
        return B.transfer_benchmark(self.transfer_version).tasks_of(model, self.tasks)

    def public_cells(self) -> dict[str, int]:
        """Public episodes per cell: the transfer part and the planted part."""
        transfer = sum(len(self.tasks_on(m)) for m in self.held_out_models) * len(self.seeds)
        return {"transfer": transfer, "planted": len(self.kinds) * len(self.planted_public_seeds)}

    def private_cells(self, served_tasks: int) -> dict[str, int]:
        """Private episodes per cell, with ``served_tasks`` held-out tasks on the private model."""
        return {"transfer": served_tasks * self.private_seeds_used,
                "planted": len(self.kinds) * self.planted_private_models}  # fmt: skip

    def public_episodes(self) -> int:
        return sum(self.public_cells().values())

    def episodes(self, private: bool) -> int:
        """Episodes a run plays: the public ones, and with the private part the secret planted models
        (and at most each private model's held-out tasks)."""
        models = B.transfer_benchmark(self.transfer_version).private_models
        hidden = (
            len(self.kinds) * self.planted_private_models + models * len(self.tasks) * self.private_seeds_used
        )
        return self.public_episodes() + (hidden if private else 0)


EDGES = "edges"  # the edge track's kind: a version's track is its transfer row's prefix + this
# Benchmark v8's row (issue 57's protocol 2): zoo v3's held-out members and v8's private models, on 3
# test batches per (model, served task), 3 public planted seeds per kind (18), 4 private batches per
# served task (>= 8 with 2 tasks): every cell at least MIN_PUBLIC_EPISODES / MIN_PRIVATE_EPISODES.
EDGE_BENCHMARKS: dict[str, EdgeBenchmark] = {
    "v8": EdgeBenchmark.of(
        B.transfer_benchmark("v8"), B.transfer_benchmark("v8").track(EDGES), seeds=(0, 1, 2), private_seeds_used=4,
        planted_public_seeds=(0, 1, 2), results_folder="v8/edges",
    ),
}  # fmt: skip
EDGE_TRACKS = tuple(b.track for b in EDGE_BENCHMARKS.values())


def edge_benchmark(track: str) -> EdgeBenchmark:
    """The row whose track is ``track``; ValueError naming the edge tracks otherwise."""
    for bench in EDGE_BENCHMARKS.values():
        if bench.track == track:
            return bench
    raise ValueError(f"edge track must be one of {list(EDGE_TRACKS)}, got {track!r}")
