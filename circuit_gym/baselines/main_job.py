"""The main job (``circuit-gym run``): the benchmark in force (``circuit_gym.benchmark.IN_FORCE``,
its transfer single-head track) on its public zoo, trained and scored in one command.

1. **References** (in a second process, while PPO trains): the white-box references greedy
   (attribution patching) and EAP-IG, the random policy and the test-set memoriser (its committed
   fit, where the repository holds it) play every public model (the training and the held-out
   zoo members) on every task each member serves (its card's gate), at the track's test-split batches (``Budget.seeds``); this computes
   the test split's oracle tables, cached on disk.
2. **PPO**: the training models loaded and their general damage swept (cached), then the reference recipe (``scripts/train_transfer_ppo.py``'s: the Zoo-Multi ID over the
   training models, train split of the training tasks, the kept ``causal`` design of
   :mod:`circuit_gym.baselines.ppo_designs`) with the job's budget (:data:`BUDGET`): fewer training
   batches and epochs than the committed runs, chosen on the training side only (see the budget's
   comment). Checkpoints are chosen on held-back train-split batches, as in every run.
3. **Fixed memoriser**: the oracle frequency of each head over the training pools just swept.
4. **PPO and the memoriser** play the same episodes (their tables now read from the cache).
5. **Tables**: ``results.json`` (every summary, the budget, wall and CPU seconds per stage),
   ``results.md``: the board's transfer table (:mod:`circuit_gym.reporting.transfer_tables`, the
   renderer the board uses) with its four public quadrants (the private model's column stays
   empty: only the maintainers hold that model) and a paragraph on reading it (what each quadrant
   means, why the test-set memoriser scores on public models only, why this PPO is not the
   board's), and ``results.png``: each quadrant's entries with their 95% intervals.

Each stage is a :func:`circuit_gym.progress.stage`: in a log, a line at least every 30 s while it
runs (the PPO stage trains without its own bars).

Each episode is played as the board's scorer plays it (``circuit_gym/leaderboard/single_head_play.py``):
the environment of ``circuit_gym.track_envs.board_env`` with the oracle hidden, the solver's
language-model passes counted inside its rank call plus what its observation cost, best-of-1 and
best-of-5 by the environment's own single-head rewards, recovery as a ratio of sums
(:func:`circuit_gym.evaluation.recovery_summary`). The leaderboard is not imported (the apps stay
apart); ``tests/test_main_job.py`` checks the job's table against the track's scorer.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import circuit_gym
from circuit_gym import benchmark as B
from circuit_gym.baselines.fixed_policy import FixedPolicy
from circuit_gym.baselines.ppo import PPOConfig, PPOPolicy, train
from circuit_gym.baselines.random_policy import RandomPolicy
from circuit_gym.baselines.transfer_envs import transfer_env
from circuit_gym.baselines.transfer_training import config_of, docs_dir
from circuit_gym.embedded import model_set
from circuit_gym.envs import HideOracleInfo
from circuit_gym.envs.features import DEFAULT_FEATURES
from circuit_gym.evaluation import episode_results, recovery_summary
from circuit_gym.passes import PassCounter, with_observation_passes
from circuit_gym.policy import check_scores
from circuit_gym.progress import stage as progress_stage
from circuit_gym.reporting.transfer_tables import (
    SHORT,
    number,
    rank_transfer_rows,
    transfer_markdown,
    transfer_row,
)
from circuit_gym.solvers.white_box import builtin
from circuit_gym.track_envs import board_env

BENCH = B.transfer_benchmark(B.IN_FORCE)  # the benchmark in force: the job moves with it
TRACK = BENCH.track(B.SINGLE_HEAD)
# The board's ppo entry is the single-head reference recipe's "causal" design.
DESIGN = "causal"
# The committed fit of the test-set memoriser (an attack entry; scripts/fit_testset_memoriser.py);
# a repository checkout holds it, an installed wheel does not (the entry is then left out).
TESTSET_MEMORISER = docs_dir(
    BENCH.version, Path(circuit_gym.__file__).resolve().parents[1] / "docs" / "results"
) / ("testset_memoriser_per_model.json")
WHITE_BOX = ("greedy", "eap_ig")  # the board's cheap white-box references of the single-head track


@dataclass(frozen=True)
class Budget:
    """How much the job trains and plays. Every field was chosen on the training side only (the
    training models' training tasks, train split), never on a held-out task, model or test batch."""

    pool_size: int  # PPO's training batches per (training model, training task)
    selection_episodes: int  # held-back train-split batches per cell for checkpoint selection
    epochs: int
    steps_per_epoch: int
    seeds: tuple[int, ...] = BENCH.seeds  # test-split batches per (public model, task)
    models: tuple[str, ...] = BENCH.public_models()  # the public models played
    tasks: tuple[str, ...] = BENCH.all_tasks()  # each model plays those its card's gate admits
    train_models: str = BENCH.train_set  # the model set PPO trains on
    train_tasks: str | None = None  # comma-separated; None: the ID's own (the training tasks)
    n_envs: int = 8
    steps_per_collect: int = 256
    extra: dict = field(default_factory=dict)  # other PPOConfig fields (a smoke run's)


# The committed causal runs (docs/results/transfer/ppo_causal/seed*/curve.json) reach a selection
# recovery of 0.81-0.84 after their first epoch of 2,048 steps and 0.84-0.86 at their best (epochs
# 2-8): one epoch keeps most of it. 16 training batches per cell instead of 48 (and 4 selection
# batches instead of 8) cut the oracle tables swept before training from 560 to 200; the board's
# 8 test batches per (model, task) are kept, so the table's public columns are the board's.
BUDGET = Budget(pool_size=16, selection_episodes=4, epochs=1, steps_per_epoch=2048)
# A smoke run of the whole pipeline (tests, ``--quick``): one model, two tasks, one batch each; the
# tasks that model serves (its card's gate: a member may not serve every task), one training, one held out.
_QUICK_MODEL = BENCH.train_models[0]
_QUICK_TRAIN = BENCH.tasks_of(_QUICK_MODEL, BENCH.train_tasks)[0]
QUICK = Budget(pool_size=2, selection_episodes=1, epochs=1, steps_per_epoch=32, seeds=(0,), models=(_QUICK_MODEL,),
               tasks=(_QUICK_TRAIN, BENCH.tasks_of(_QUICK_MODEL, BENCH.held_out_tasks)[0]),
               train_models=_QUICK_MODEL, train_tasks=_QUICK_TRAIN, n_envs=2, steps_per_collect=16,
               extra=dict(minibatch=16, repeat=1))  # fmt: skip


@dataclass
class Stages:
    """Wall and CPU seconds (this process's own, ``time.process_time``) of each stage."""

    seconds: dict[str, dict[str, float]] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        print(f"[{name}]", flush=True)
        try:
            with progress_stage(name):  # never silent for long in a log (issue 59)
                yield
        finally:
            self.seconds[name] = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}


Rank = Callable[[np.ndarray, gym.Env], np.ndarray]


@dataclass(frozen=True)
class Player:
    """An entry as the job plays it: its observation, ``rank(obs, env)`` and what runs before the
    counted call (a white-box solver's reading of the episode's state)."""

    name: str
    policy: str  # as the board's provenance names it
    rank: Rank
    features: str = DEFAULT_FEATURES
    prepare: Callable[[gym.Env], object] = lambda env: None


def white_box_player(name: str) -> Player:
    solver = builtin(name, B.SINGLE_HEAD)
    solver.reset()  # as the scorer does: no estimate kept from an earlier run
    return Player(name, f"builtin:{name}", lambda obs, env: solver.rank(env), prepare=solver.prepare)


def policy_player(name: str, policy, spec: str, features: str = DEFAULT_FEATURES) -> Player:
    return Player(name, spec, lambda obs, env: policy.rank_heads(obs), features)


def reference_players(seed: int) -> list[Player]:
    players = [white_box_player(n) for n in WHITE_BOX]
    players.append(
        policy_player("random", RandomPolicy(seed), "circuit_gym.baselines.random_policy:make_policy")
    )
    if TESTSET_MEMORISER.is_file():
        from circuit_gym.baselines.testset_memoriser import TestsetMemoriser

        memoriser = TestsetMemoriser.load(TESTSET_MEMORISER)
        players.append(policy_player("testset_memoriser", memoriser,
                                     "circuit_gym.baselines.testset_memoriser:make_policy", memoriser.features))  # fmt: skip
    return players


def served(model: str, budget: Budget) -> tuple[str, ...]:
    """The budget's tasks that ``model`` serves on the board (its card's inclusion gate)."""
    return BENCH.tasks_of(model, budget.tasks)


def episode_env(model: str, budget: Budget, features: str) -> gym.Env:
    """The board's environment of one public model (oracle fields hidden), over the budget's tasks it serves."""
    env = board_env(
        B.SINGLE_HEAD,
        model,
        max(budget.seeds) + 1,
        tasks=served(model, budget),
        transfer=True,
        features=features,
    )
    return HideOracleInfo(env)


def play(player: Player, env: gym.Env, model: str, task: str, seed: int) -> dict:
    """One episode as the board's scorer plays it: best-of-k rewards and the counted passes."""
    base = env.unwrapped
    obs, info = env.reset(options={"task": task, "batch_index": int(seed)})
    player.prepare(env)
    with PassCounter(base.model) as counter:
        raw = player.rank(obs, env)
    scores = check_scores(raw, base.n_total)
    row = {"model": model, "task": task, "seed": int(seed), "oracle_head": base.episode.table.oracle_head,
           "oracle_reward": base.episode.table.oracle_reward,
           "lm_passes": with_observation_passes(counter.counts(), info)}  # fmt: skip
    for r in episode_results(env, scores, player.name, B.KS):
        row[f"head_k{r.k}"], row[f"reward_k{r.k}"] = r.head, r.reward
    return row


def play_all(
    players: Sequence[Player], budget: Budget, cpu: dict[str, float] | None = None
) -> dict[str, list[dict]]:
    """Every player on every (public model, task, seed) of the budget; rows per player. ``cpu``
    gets the CPU seconds spent building environments (loading models) and playing episodes."""
    rows: dict[str, list[dict]] = {p.name: [] for p in players}
    cpu = {} if cpu is None else cpu
    for model in budget.models:
        t = time.process_time()
        envs = {f: episode_env(model, budget, f) for f in sorted({p.features for p in players})}
        tasks = served(model, budget)
        for env in envs.values():  # what every episode of the model shares (its general-damage sweep)
            env.reset(options={"task": tasks[0], "batch_index": budget.seeds[0]})
        cpu["build"] = cpu.get("build", 0.0) + time.process_time() - t
        t = time.process_time()
        for task in tasks:
            for seed in budget.seeds:
                for p in players:
                    rows[p.name].append(play(p, envs[p.features], model, task, seed))
        cpu["play"] = cpu.get("play", 0.0) + time.process_time() - t
        for env in envs.values():
            env.close()
    return rows


def summary(rows: Sequence[dict]) -> dict:
    """Best-of-1 and best-of-5 recovery of a group of episodes (empty group: {})."""
    if not rows:
        return {}
    return {f"k{k}": recovery_summary([r[f"reward_k{k}"] for r in rows], [r["oracle_reward"] for r in rows],
                                      [r[f"head_k{k}"] == r["oracle_head"] for r in rows]) for k in B.KS}  # fmt: skip


def entry(player: Player, rows: Sequence[dict]) -> dict:
    """A result shaped as the board's (the fields its table reads): quadrants and passes."""
    quadrants = {
        q: summary([r for r in rows if BENCH.quadrant(r["task"], r["model"]) == q]) for q in B.QUADRANTS
    }
    compute = {f"{kind}_passes_per_episode": float(np.mean([r["lm_passes"][kind] for r in rows]))
               for kind in ("forward", "partial", "backward")}  # fmt: skip
    return {"name": player.name, "track": TRACK, "scores": {"quadrants": quadrants, "compute": compute},
            "provenance": {"policy": player.policy, "white_box": player.name in WHITE_BOX,
                           **({"features": player.features} if player.features != DEFAULT_FEATURES else {})},
            "board": {"check": "this run", "reference": True}, "episodes": list(rows)}  # fmt: skip


def score_references(budget: Budget, seed: int) -> dict:
    """Stage 1 (its own process): the references' entries, with the stage's wall and CPU seconds."""
    torch.set_num_threads(1)
    wall, cpu = time.perf_counter(), time.process_time()
    players = reference_players(seed)
    split: dict[str, float] = {}
    # The held-out models first: meanwhile PPO's process sweeps the training models' general damage
    # (cached on disk), which this process then reads instead of computing it a second time.
    rows = play_all(players, replace(budget, models=tuple(reversed(budget.models))), split)
    entries = {p.name: entry(p, rows[p.name]) for p in players}
    return {"entries": entries, "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
            "cpu_split": split}  # fmt: skip


def ppo_config(budget: Budget, seed: int, device: str = "cpu") -> PPOConfig:
    """The reference recipe (``causal`` design) with the budget's batches, epochs and steps."""
    base = config_of("ppo", seed, device, DESIGN, BENCH.version)
    return replace(base, model=budget.train_models, pool_size=budget.pool_size, selection_episodes=budget.selection_episodes,
                   epochs=budget.epochs, steps_per_epoch=budget.steps_per_epoch, tasks=budget.train_tasks,
                   n_envs=budget.n_envs, steps_per_collect=budget.steps_per_collect, **budget.extra)  # fmt: skip


def training_envs(config: PPOConfig, pool_size: int) -> list[gym.Env]:
    """The board's train-split environment of each training model, over the training tasks it serves
    (its card's gate, as the Zoo-Multi IDs PPO trains on serve them)."""
    tasks = tuple(config.tasks.split(",")) if config.tasks else BENCH.train_tasks
    return [transfer_env(m, BENCH.tasks_of(m, tasks), "train", pool_size) for m in model_set(config.model)]


def training_models(config: PPOConfig) -> None:
    """Load the training models and sweep their general damage once (cached), before PPO: what
    every training episode of a model shares, timed apart from the per-batch oracle tables."""
    for env in training_envs(config, 1):
        env.reset(options={"task": env.unwrapped.tasks[0], "batch_index": 0})


def fit_fixed(config: PPOConfig) -> FixedPolicy:
    """The fixed memoriser on PPO's training pools (train split of the training models' training
    tasks each serves; their tables are cached by PPO's warm-up)."""
    return FixedPolicy.fit_many(training_envs(config, config.pool_size), None, config.pool_size)


def run(out: Path, budget: Budget = BUDGET, seed: int = 0, device: str = "cpu") -> dict:
    """The main job (module docstring); writes ``results.json`` and ``results.md`` to ``out``."""
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    stages = Stages()
    config = ppo_config(budget, seed, device)
    n_episodes = sum(len(served(m, budget)) for m in budget.models) * len(budget.seeds)
    print(f"benchmark {BENCH.version} ({TRACK}), public models {list(budget.models)}: {n_episodes} episodes per entry; "
          f"PPO {config.epochs} x {config.steps_per_epoch} steps on {config.model}", flush=True)  # fmt: skip
    # In its own process, not a thread: loading models there would draw from this process's torch
    # RNG while PPO trains, and PPO would no longer be reproducible from its seed.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as background:
        references = background.submit(score_references, budget, seed)
        with stages.stage("2a training models: loaded, general-damage sweeps"):
            training_models(config)
        with stages.stage("2b PPO: warm-up and training"):
            ppo_summary = train(config, out / "ppo", progress=False)
        with stages.stage("3 fixed memoriser"):
            fixed = fit_fixed(config)
            fixed.save(out / "fixed_policy.json")
        with stages.stage("wait for the references"):
            done = references.result()
    stages.seconds["1 references (second process)"] = {
        "wall": done["wall"],
        "cpu": done["cpu"],
        **done["cpu_split"],
    }
    split: dict[str, float] = {}
    with stages.stage("4 PPO and the fixed memoriser play"):
        players = [policy_player("ppo", PPOPolicy.load(out / "ppo"), "circuit_gym.baselines.ppo:load_policy",
                                 config.features),
                   policy_player("fixed", fixed, "circuit_gym.baselines.fixed_policy:make_policy")]  # fmt: skip
        rows = play_all(players, budget, split)
        entries = {**done["entries"], **{p.name: entry(p, rows[p.name]) for p in players}}
    with stages.stage("5 tables"):
        table = results_markdown(entries, budget, config)
        quadrant_plot(entries, out / "results.png")
        report = {
            "benchmark": BENCH.definition(B.SINGLE_HEAD), "budget": asdict(budget), "seed": seed,
            "ppo": {"config": asdict(config), **ppo_summary}, "entries": entries,
            "version": circuit_gym.__version__, "machine": {"python": platform.python_version(),
                                                            "torch": torch.__version__, "cpus": os.cpu_count()},
        }  # fmt: skip
    report["stages"] = stages.seconds
    report["stages"]["4 PPO and the fixed memoriser play"].update(split)
    report["wall_seconds"] = time.perf_counter() - start
    (out / "results.json").write_text(json.dumps(report, indent=1))
    (out / "results.md").write_text(
        f"{table}\n\n![each quadrant's entries](results.png)\n\nWall time {report['wall_seconds']:.0f} s.\n"
    )
    print(table)
    print(f"done in {report['wall_seconds']:.0f} s -> {out}")
    return report


# The board's committed result files of the benchmark in force (a repository checkout holds them; an
# installed wheel does not, and the comparison with the board is then left out of results.md).
BOARD_RESULTS = (
    Path(circuit_gym.__file__).resolve().parents[1] / "leaderboard" / "results" / BENCH.results_folder
)
QUADRANT_MEANING = {
    "seen_task_seen_model": "a training task on a training model: what the policy was trained on (its test-split "
    "batches, never trained on)",
    "unseen_task_seen_model": "a held-out task on a training model: it tells a policy that reads what heads do from one "
    "that remembers which heads the training tasks used",
    "seen_task_unseen_model": "a training task on a held-out zoo model: the same circuits at other heads",
    "unseen_task_unseen_model": "a held-out task on a held-out model: the public analogue of the board's ranking "
    "column (the private model)",
}


def board_recovery(name: str, quadrant: str = "unseen_task_unseen_model") -> float | None:
    """The committed board's best-of-1 recovery of entry ``name`` in ``quadrant`` (None without the file)."""
    path = BOARD_RESULTS / f"{name}.json"
    if not path.is_file():
        return None
    value = ((json.loads(path.read_text()).get("scores") or {}).get("quadrants") or {}).get(quadrant) or {}
    return (value.get("k1") or {}).get("recovery")


def explanation(rows: Sequence[dict], config: PPOConfig | None) -> str:
    """What results.md's table means: the quadrants, the memoriser's column, this PPO against the board's."""
    lines = ["## Reading the table", ""]
    lines += [f"- **{SHORT[q]}**: {QUADRANT_MEANING[q]}." for q in B.QUADRANTS]
    by_name = {r["name"]: r for r in rows}
    memo = by_name.get("testset_memoriser")
    if memo is not None:
        lines += ["", (
            "The **test-set memoriser** looks each episode's best heads up in a table fitted on the public "
            "models' test split, the batches played here, so it scores high on every public column "
            f"({number(memo.get('unseen_task_unseen_model_k1'))} on the unseen-unseen one) without reading the "
            "observation. The board ranks on a private model nobody outside holds, where no such table exists"
            + (f": there the memoriser scores {number(board_private('testset_memoriser'))}" if board_private(
                "testset_memoriser") is not None else "")
            + ". It is here to show what the public columns alone would reward."
        )]  # fmt: skip
    if config is not None:
        board = config_of("ppo", config.seed, config.device, DESIGN, BENCH.version)
        ppo, random = by_name.get("ppo"), by_name.get("random")
        theirs = {n: board_recovery(n) for n in ("ppo", "random")}
        compare = ""
        if ppo is not None and theirs["ppo"] is not None:
            compare = (f" On the unseen-task-unseen-model column this run's PPO scores "
                       f"{number(ppo.get('unseen_task_unseen_model_k1'))}, the board's {number(theirs['ppo'])}.")  # fmt: skip
        if random is not None and theirs["random"] is not None:
            compare += (f" Random is a draw of its own seed: {number(random.get('unseen_task_unseen_model_k1'))} "
                        f"here, {number(theirs['random'])} on the board; both are chance.")  # fmt: skip
        lines += ["", (
            f"**This PPO is not the board's.** The job trains a smaller budget: {config.pool_size} training "
            f"batches per (model, task), {config.selection_episodes} for checkpoint selection, {config.epochs} "
            f"epoch(s) of {config.steps_per_epoch:,} steps ({config.epochs * config.steps_per_epoch:,} steps), "
            f"against the reference recipe's {board.pool_size}, {board.selection_episodes} and {board.epochs} "
            f"epoch(s) of {board.steps_per_epoch:,} ({board.epochs * board.steps_per_epoch:,} steps), with which "
            "the board's ppo entry was trained (scripts/train_transfer_ppo.py). Its numbers are a quick "
            f"reproduction, not the reference.{compare}"
        )]  # fmt: skip
    return "\n".join(lines)


def board_private(name: str) -> float | None:
    """The committed board's private best-of-1 recovery of ``name`` (None without the file)."""
    path = BOARD_RESULTS / f"{name}.json"
    if not path.is_file():
        return None
    private = ((json.loads(path.read_text()).get("private") or {}).get("scores") or {}).get("overall") or {}
    return (private.get("k1") or {}).get("recovery")


def quadrant_plot(entries: dict[str, dict], path: Path) -> Path:
    """``results.png``: one panel per quadrant, each entry's best-of-1 recovery with its 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = rank_transfer_rows([transfer_row(e) for e in entries.values()])
    names = [r["name"] for r in rows]
    fig, axes = plt.subplots(1, len(B.QUADRANTS), figsize=(4 * len(B.QUADRANTS), 0.45 * len(names) + 1.6),
                             sharey=True, squeeze=False)  # fmt: skip
    for ax, q in zip(axes[0], B.QUADRANTS, strict=True):
        for y, r in enumerate(rows):
            value, ci = r.get(f"{q}_k1"), r.get(f"{q}_k1_ci")
            if value is None:
                continue
            err = None
            if ci is not None and len(ci) == 2 and all(c is not None and np.isfinite(c) for c in ci):
                err = [[max(0.0, value - ci[0])], [max(0.0, ci[1] - value)]]
            ax.errorbar([value], [y], xerr=err, fmt="o", color="tab:red" if r.get("white_box") else "tab:blue",
                        capsize=3)  # fmt: skip
        ax.axvline(0.0, color="grey", lw=0.8)
        ax.set_title(SHORT[q], fontsize=10)
        ax.set_xlabel("best-of-1 recovery (95% CI)")
        ax.set_yticks(range(len(names)), names)
    axes[0][0].invert_yaxis()  # shared: the best-ranked entry on top
    fig.suptitle(f"{BENCH.benchmark_version(B.SINGLE_HEAD)}: public quadrants (red: white-box references)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def results_markdown(entries: dict[str, dict], budget: Budget, config: PPOConfig | None = None) -> str:
    """The board's transfer table of the job's entries, with what was played and how to read it
    (``config``: the job's PPO config, compared with the board's recipe)."""
    rows = rank_transfer_rows([transfer_row(e) for e in entries.values()])
    return (
        f"# circuit_gym main job: {BENCH.benchmark_version(B.SINGLE_HEAD)}, public quadrants\n\n"
        f"Played here: models {', '.join(budget.models)}; tasks {', '.join(budget.tasks)}; test batches "
        f"{', '.join(map(str, budget.seeds))}. The private model's column is the maintainers' (empty here).\n\n"
        f"{transfer_markdown(rows, TRACK)}\n\n{explanation(rows, config)}"
    )
