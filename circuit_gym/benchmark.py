"""The benchmark definitions: every version's row (:data:`TRANSFER_BENCHMARKS`: its zoo, task split,
seeds and pinned settings; :data:`IN_FORCE` names the one the board ranks on) and the settings every
track shares (split, prompts per episode, ablation, lambda, the circuit-building environment's
budget and alpha, a submitted policy's limits).

It lives in the package, below both ``baselines/`` (which trains on the training tasks and
evaluates on the held-out ones) and ``leaderboard/`` (which scores on them), so neither imports
the other. Changing a row changes the numbers, so it is a new version (a new row); result files
scored under another definition are refused by the board. The reference entries are listed in the
reviewed manifest ``leaderboard/references.json`` (``circuit_gym/leaderboard/references.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from circuit_gym.embedded import (
    ZOO_HELD_OUT,
    ZOO_TRAIN,
    ZOO_V3_HELD_OUT,
    ZOO_V3_TRAIN,
    is_embedded,
)
from circuit_gym.env_ids import CIRCUIT_SUFFIX, env_id

# The one-model definition: held-out tasks on the embedded model ``toy`` (run F: copies any
# token), played by the one-model job (circuit_gym.baselines.run_all, scripts/reproduce_gpt2.py)
# and its studies (PPO seeds, leave-one-out); its board retired (docs/archive.md: its final
# tables, its version history). BENCHMARK_VERSION is the identity its studies' results record.
BENCHMARK_VERSION = "circuit-gym-heldout-v5"
MODEL = "toy"
# The board's kinds of play, spelled once (circuit_gym/leaderboard/tracks.py: the table of tracks):
# single head (rank the heads, best-of-k ablated) and circuit building (add heads until STOP).
SINGLE_HEAD = "single-head"
CIRCUIT = "circuit"
PLANTED = "planted"  # the Planted track: circuit building on generated models with known circuits
# Held-out tasks, chosen by circuit_gym.suite.choose_held_out among the tasks the inclusion
# gate admits on the test split (docs/suite/suite_toy_test.json: all eight), from the
# oracle-head histograms of the *train* split (docs/suite/suite_toy_train.json), so no test
# episode chose them. Why each one: its modal oracle head is not among the 5 heads most often
# oracle on the training tasks (1.2, 0.4, 0.1, 8.10, 1.4): brackets 1.3 (100% of train
# episodes), induction 1.5 (96%), successor 0.2 (100%). A policy that memorises the training
# tasks' heads cannot solve them. (tests/test_suite.py re-derives this choice from the
# committed reports.)
HELD_OUT_TASKS = ("brackets", "induction", "successor")
TRAIN_TASKS = ("agreement", "docstring", "greater_than", "ioi", "pronoun")
SPLIT = "test"
# Version of the CircuitDiscovery-*-Multi environment IDs the episodes are built with.
ENV_VERSION = "v4"
# Published evaluation seeds: batch indices of the test-split pool (batch i uses seed i).
EVAL_SEEDS = tuple(range(48))
KS = (1, 5)
ABLATION = "resample"  # the embedded model's default (circuit_gym.ablation.default_ablation)
LAM = 1.0
PROMPTS_PER_EPISODE = 8
# Limits for a submitted policy, which runs in a child process.
CALL_TIMEOUT_S = 20.0  # per rank_heads call; importing and building the policy gets 3x this
MEMORY_LIMIT_MB = 4096  # RLIMIT_DATA of the child: private writable (virtual) memory, not RSS


def multi_env_id(model: str = MODEL) -> str:
    """The Multi environment ID the benchmark's episodes are built with, for ``model``."""
    return env_id("Toy" if is_embedded(model) else "GPT2", "Multi", int(ENV_VERSION.removeprefix("v")))


# ---------------------------------------------------------------------------------------------
# Circuit building (issue 22): a circuit-building policy (``circuit_gym.policy.CircuitBuilder``)
# plays CircuitDiscovery-*-Multi-Circuit-v0, adding heads from the empty circuit until STOP or
# the budget; scored by the CPR / CMD of the ranking its episodes build (heads in insertion order,
# then the rest by its rank_heads) and by forward passes per episode. The environment's settings,
# the same on every version's circuit-building tracks (a transfer benchmark's row holds its seeds).
CIRCUIT_ENV_VERSION = (
    0  # the circuit-building IDs' version it is played on (pinned: a new ID version is not this track)
)
CIRCUIT_START = "empty"
CIRCUIT_BUDGET = 16  # the env's defaults: at most 16 heads added, alpha faithfulness per head
CIRCUIT_ALPHA = 0.01
# Random rankings per episode for CPR / CMD's chance level (cpr_random, cmd_random), as
# baselines.circuit_solvers.circuit_track computes them (seeded by the batch seed).
CIRCUIT_N_RANDOM = 8


def circuit_env(model: str = MODEL) -> str:
    """The circuit-building ID the circuit track's episodes are built with, for ``model``."""
    return env_id("Toy" if is_embedded(model) else "GPT2", "Multi", CIRCUIT_ENV_VERSION, CIRCUIT_SUFFIX)


# ---------------------------------------------------------------------------------------------
# The transfer benchmarks (issue 35): models are held out, not only tasks. Every solver is scored
# in four quadrants, seen / unseen task x seen / unseen model, on a public zoo (one public recipe),
# and the board ranks on the held-out tasks of a *private* model trained by the same recipe with a
# secret seed (scripts/train_zoo.py --private-seed-file), whose weights are never committed: a
# policy that memorised the public models' head ids gains nothing there. The settings below were
# fixed for the first of them, on zoo v1 (retired: docs/archive.md), before its zoo was trained;
# every row keeps them unless it says otherwise.
# Zoo v1's version string and model split, which the studies on zoo v1 (robustness tasks, the
# column rule, the edge references, the memorisers' fits) still record and read.
TRANSFER_BENCHMARK_VERSION = "circuit-gym-transfer-v6"
# The model split rule (circuit_gym.embedded): zoo members with an odd index train, those with an
# even index are held out; fixed on the names before any agent was trained or scored on the zoo.
TRAIN_MODELS = ZOO_TRAIN  # zoo1, zoo3
HELD_OUT_MODELS = ZOO_HELD_OUT  # zoo2, zoo4
# The task split rule: the training tasks stay the one-model benchmark's; held out are its
# held-out tasks that the zoo performs (brackets, successor: induction fails every member's
# inclusion gate) and two tasks added before the zoo was trained (capital: factual recall,
# minimum: selection by comparison). Four mechanisms (code, sequences, knowledge, comparison), so
# that no one hand-picked copy feature solves them all (the one-model benchmark's three held-out
# tasks were all copy-like).
TRANSFER_TRAIN_TASKS = TRAIN_TASKS
TRANSFER_HELD_OUT_TASKS = ("brackets", "capital", "minimum", "successor")
# Test-split batches per (model, task) cell: 8 x 9 tasks x 4 public models = 288 episodes.
TRANSFER_SEEDS = tuple(range(8))
# The private model: the held-out tasks it performs, on the first 8 seeds of the maintainers' seed
# file (a file with fewer is refused before scoring).
TRANSFER_PRIVATE_SEEDS = 8
# Pinned, not looked up by model name: the private model is loaded from a directory, and the
# name-keyed defaults (circuit_gym.ablation.default_ablation, tasks.reference.default_reference)
# would give it another ablation and reference text than the zoo's.
TRANSFER_ABLATION = "resample"
TRANSFER_REFERENCE = "stdlib+taskstyle"
# The circuit track's cells are smaller: exact greedy search, its upper reference, costs ~2,000
# passes (8-20 s on one core) per episode, so 2 batches per (model, task): 72 public episodes,
# 16 per quadrant of held-out tasks, and the held-out tasks at 4 private seeds on the private model.
TRANSFER_CIRCUIT_SEEDS = tuple(range(2))
TRANSFER_CIRCUIT_PRIVATE_SEEDS = 4
QUADRANTS = ("seen_task_seen_model", "unseen_task_seen_model", "seen_task_unseen_model",
             "unseen_task_unseen_model")  # fmt: skip


@dataclass(frozen=True)
class TransferBenchmark:
    """One version of the transfer benchmark: a row of :data:`TRANSFER_BENCHMARKS`.

    A version fixes the zoo (its training and held-out models), the task split, the seeds and the
    pinned settings; its tracks are named ``prefix + kind`` (``v8-single-head``) and its result
    files carry ``circuit-gym-transfer[-circuit]-{version}``. A new version is a row.
    """

    version: str
    prefix: str
    train_models: tuple[str, ...]
    held_out_models: tuple[str, ...]
    train_tasks: tuple[str, ...] = TRANSFER_TRAIN_TASKS
    held_out_tasks: tuple[str, ...] = TRANSFER_HELD_OUT_TASKS
    seeds: tuple[int, ...] = TRANSFER_SEEDS
    circuit_seeds: tuple[int, ...] = TRANSFER_CIRCUIT_SEEDS
    private_seeds: int = TRANSFER_PRIVATE_SEEDS
    circuit_private_seeds: int = TRANSFER_CIRCUIT_PRIVATE_SEEDS
    ablation: str = TRANSFER_ABLATION
    reference: str = TRANSFER_REFERENCE
    zoo_generation: str | None = None  # recorded since zoo v2 (zoo v1's files predate the key)
    planted_generator: int = 2  # the planted generator version of the version's Planted track
    train_set: str = "zoo-train"  # the MODEL_SETS name of train_models (what the Zoo-Multi IDs train over)
    # its folder under leaderboard/results/ (board results; circuit ones in circuit/) and under
    # docs/results/ (its trained agents and fitted entries)
    results_folder: str = "transfer"
    # How many private models its private column ranks on (issue 55: one makes the column swing;
    # v8 ranks on two). Each is played on the held-out tasks its card gates, at its seed file's first seeds.
    private_models: int = 1

    def track(self, kind: str) -> str:
        return f"{self.prefix}{kind}"

    def benchmark_version(self, kind: str) -> str:
        return f"circuit-gym-transfer{'-circuit' if kind == CIRCUIT else ''}-{self.version}"

    def public_models(self) -> tuple[str, ...]:
        return self.train_models + self.held_out_models

    def all_tasks(self) -> tuple[str, ...]:
        return self.train_tasks + self.held_out_tasks

    def tasks_of(self, model: str, among: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """The tasks of this version (or of ``among``, in its order) that public member ``model``
        serves: those its card's inclusion gate admits (on zoo v1 every member performs every task; a
        zoo v2 member with the knob may not). A model that is not embedded (a private model's
        directory) is taken to serve them all."""
        from circuit_gym.models.cards import gated_tasks  # the cards read the shipped files: only when asked

        gated = set(gated_tasks(model)) if is_embedded(model) else set(self.all_tasks())
        return tuple(t for t in (self.all_tasks() if among is None else among) if t in gated)

    def seeds_of(self, kind: str) -> tuple[int, ...]:
        return self.circuit_seeds if kind == CIRCUIT else self.seeds

    def n_private_seeds(self, kind: str) -> int:
        return self.circuit_private_seeds if kind == CIRCUIT else self.private_seeds

    def quadrant(self, task: str, model: str) -> str:
        """The quadrant of an episode of ``task`` on the public zoo member ``model``."""
        if task not in self.all_tasks():
            raise ValueError(f"task {task!r} is in no split of {self.benchmark_version(SINGLE_HEAD)}")
        if model not in self.public_models():
            raise ValueError(f"model {model!r} is in no split of {self.benchmark_version(SINGLE_HEAD)}")
        return f"{'seen' if task in self.train_tasks else 'unseen'}_task_{'seen' if model in self.train_models else 'unseen'}_model"

    def definition(self, kind: str = SINGLE_HEAD) -> dict:
        """A track's definition, recorded in (and checked against) its result files."""
        circuit = kind == CIRCUIT
        return {
            "benchmark_version": self.benchmark_version(kind), "track": self.track(kind),
            "train_models": list(self.train_models), "held_out_models": list(self.held_out_models),
            "tasks": list(self.held_out_tasks), "train_tasks": list(self.train_tasks), "split": SPLIT,
            "seeds": list(self.seeds_of(kind)), "private_seeds_used": self.n_private_seeds(kind),
            "ks": list(KS), "ablation": self.ablation, "prompts_per_episode": PROMPTS_PER_EPISODE,
            # the circuit track's reward is faithfulness: no general damage, so no reference text or lambda
            **({"start": CIRCUIT_START, "budget": CIRCUIT_BUDGET, "alpha": CIRCUIT_ALPHA, "n_random": CIRCUIT_N_RANDOM}
               if circuit else {"reference": self.reference, "lam": LAM}),
            **({"zoo_generation": self.zoo_generation} if self.zoo_generation else {}),
        }  # fmt: skip


# The benchmark the board ranks on: `leaderboard score`'s default track, the main job's (`circuit-gym
# run`), README's policy section. v8 (issue 60) since every track's references were scored on its
# two private models (zoo v3: backups made dormant by training); the versions before it are retired
# (docs/archive.md).
IN_FORCE = "v8"


TRANSFER_BENCHMARKS: dict[str, TransferBenchmark] = {
    # Benchmark v8 (issues 55 and 60): zoo v3, whose members were trained with dormant backups (a
    # backup silent while its primary works), split by zoo v1's odd/even rule (train zoo9, zoo11;
    # held out zoo10, zoo12), two private models of the same recipe, planted generator 3, and the
    # task split, seeds and settings fixed for zoo v1 before any zoo was trained. The retired
    # versions (docs/archive.md) differed from it in the models (and v8 adds its own edge protocol
    # and knock-out track: circuit_gym.leaderboard.tracks).
    "v8": TransferBenchmark(
        "v8",
        "v8-",
        ZOO_V3_TRAIN,
        ZOO_V3_HELD_OUT,
        zoo_generation="v3",
        planted_generator=3,
        train_set="zoo-v3-train",
        results_folder="v8",
        private_models=2,
    ),
}


def transfer_benchmark(version: str) -> TransferBenchmark:
    """The row ``version`` of :data:`TRANSFER_BENCHMARKS`; ValueError naming the versions otherwise."""
    if version not in TRANSFER_BENCHMARKS:
        raise ValueError(f"transfer benchmark must be one of {list(TRANSFER_BENCHMARKS)}, got {version!r}")
    return TRANSFER_BENCHMARKS[version]


def transfer_tracks() -> tuple[str, ...]:
    """Every version's single-head and circuit tracks (``v8-single-head``, ``v8-circuit``, ...)."""
    return tuple(
        bench.track(kind) for bench in TRANSFER_BENCHMARKS.values() for kind in (SINGLE_HEAD, CIRCUIT)
    )


def transfer_track(track: str) -> tuple[TransferBenchmark, str]:
    """The row and kind (single head or circuit) of any version's transfer track (``v8-circuit``,
    ``v8-single-head``); ValueError naming the transfer tracks otherwise."""
    for bench in TRANSFER_BENCHMARKS.values():
        for kind in (SINGLE_HEAD, CIRCUIT):
            if bench.track(kind) == track:
                return bench, kind
    raise ValueError(f"transfer track must be one of {list(transfer_tracks())}, got {track!r}")


def is_transfer_circuit(track: str) -> bool:
    """Whether ``track`` is a transfer benchmark's circuit-building track (any version's)."""
    return transfer_track(track)[1] == CIRCUIT


def quadrant(task: str, model: str, version: str = IN_FORCE) -> str:
    """The quadrant of an episode of ``task`` on the public zoo member ``model`` (benchmark ``version``)."""
    return transfer_benchmark(version).quadrant(task, model)


def transfer_definition(track: str = SINGLE_HEAD, version: str = IN_FORCE) -> dict:
    """A transfer track's definition (benchmark ``version``), recorded in (and checked against) its result files."""
    return transfer_benchmark(version).definition(track)
