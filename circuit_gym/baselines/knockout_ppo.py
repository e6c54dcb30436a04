"""PPO (Tianshou 2.x) on the knock-out environments (issue 60 item 4): the learned agent of the
knock-out track, trained on public planted models only.

    OMP_NUM_THREADS=1 python -m circuit_gym.baselines.knockout_ppo --out runs/knockout_ppo --epochs 10
    (the same command again resumes; more ``--epochs`` extend the run)

An episode ablates up to ``steps`` heads of a planted model, cumulatively; after each ablation the
observation (attribution, by default alone: ``config.scores``; ablated flag, metric and margin left,
steps used) is recomputed on the ablated model (``circuit_gym.envs.knockout.KnockOutEnv``), the
episode's last one not (no decision follows it): the agent spends conditional attribution's passes. The reward is the metric drop a step
caused, so the return is the damage after ``steps`` ablations (gamma 1). What the agent can learn
that a static ranking cannot: a head that was silent while its primary worked (a backup) and is
loud once the primary is gone, and which loud heads to leave (a suppressor's ablation raises the
metric).

The network is the circuit-building PPO's :class:`~circuit_gym.baselines.circuit_ppo.CircuitScorer`
(a logit per head from its feature row and, through self-attention, every other head's; a STOP
logit), on the knock-out observation's columns, plus a learned multiple of the attribution column
(:class:`~circuit_gym.baselines.knockout_policy.PriorScorer`: it starts as conditional attribution). Training: the ``n_envs`` environments play the six
planted kinds in turn (environment ``i`` plays kind ``i % 6``) on :data:`TRAIN_SEEDS`, train split,
and with ``zoo_envs`` > 0 that many more play the zoo v3 training members (``zoo9``, ``zoo11``) on
their training tasks, train split (``--zoo-envs 2 --n-envs 8``): never a held-out model or task.

Checkpoint selection, on training-side seeds only: after every epoch the deterministic policy plays
one episode per kind on train-split batch 0 of each of :data:`SELECTION_SEEDS` (never trained on);
the score is the mean over kinds of the knock-out area relative to exact greedy knock-out's on the
same batch (``circuit_gym.circuits.knockout_scores.relative_area``: 1 = as fast as exact greedy).
With ``selection_trained`` the score also averages a seventh cell: the zoo v3 training members
(``zoo_models``) on the training tasks whose backup pair their card verifies
(:func:`trained_selection_jobs`), on the first train-split batch the training never draws (index
``zoo_pool_size``), against the pair their training recorded. Greedy's curves are computed once and
kept in the run's checkpoint. Neither seed list meets the board's public planted seeds (0-19) or the
secret ones (drawn from the maintainers' file when scoring, never read here), and no held-out
member or task is played.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
from torch import nn

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym.baselines import ppo_trainer
from circuit_gym.baselines.knockout_policy import KnockOutPPOConfig, KnockOutPPOPolicy, make_net
from circuit_gym.baselines.planted_ppo import SELECTION_SEEDS as PLANTED_SELECTION_SEEDS
from circuit_gym.baselines.planted_ppo import TRAIN_SEEDS
from circuit_gym.circuits.knockout_scores import relative_area, truth_scores
from circuit_gym.envs.knockout import N_COLUMNS, KnockOutEnv
from circuit_gym.envs.planted import TRUTH_KEY
from circuit_gym.envs.registration import PLANTED_GENERATOR_V1, planted_knockout_id
from circuit_gym.envs.wrappers import WithoutInfoKeys
from circuit_gym.models.planted.generator import truth_of
from circuit_gym.models.planted.versions import kinds_of
from circuit_gym.solvers.knockout import play_actions
from circuit_gym.tasks.planted import task_name

KINDS = kinds_of(PLANTED_GENERATOR_V1)  # the knock-out IDs' kinds, in the generator's order
SELECTION_SEEDS = PLANTED_SELECTION_SEEDS[:4]  # four held-back models per kind (greedy's curves cost most)
SELECTION_SPLIT, SELECTION_BATCH = "train", 0
INNER_CACHE = 8  # planted models each environment keeps built (rebuilding one costs seconds)


def make_env(
    config: KnockOutPPOConfig, kind: str, seeds: tuple[int, ...], split: str, pool_size: int
) -> gym.Env:
    """The kind's knock-out environment over ``seeds``."""
    return gym.make(planted_knockout_id(kind), seeds=seeds, inner_cache=min(INNER_CACHE, len(seeds)), split=split,
                    pool_size=pool_size, batch_size=config.batch_size_prompts, steps=config.steps,
                    device=config.device, scores=config.scores, observe_last=False)  # fmt: skip


# The info keys whose shape changes within an episode (``ablated`` grows every step; the truth comes
# with the last step only): Tianshou's buffer stores every info key in arrays of one shape, and the
# trainer reads neither.
VARIABLE_INFO_KEYS = ("ablated", TRUTH_KEY)


def make_training_env(config: KnockOutPPOConfig, seed: int) -> gym.Env:
    """Training environment ``seed`` (the trainer numbers its environments ``seed + i``, so ``seed %
    (6 + zoo_envs)`` runs through every slot once per ``n_envs`` consecutive seeds): slot ``j < 6``
    plays planted kind ``j``, the others the zoo's training members (``config.zoo_env_id``)."""
    slot = seed % (len(KINDS) + config.zoo_envs)
    if slot >= len(KINDS):
        env = gym.make(config.zoo_env_id, model=config.zoo_models, split=config.split, pool_size=config.zoo_pool_size,
                       batch_size=config.batch_size_prompts, steps=config.steps, device=config.device,
                       scores=config.scores, observe_last=False)  # fmt: skip
        return WithoutInfoKeys(env, VARIABLE_INFO_KEYS)
    return WithoutInfoKeys(
        make_env(config, KINDS[slot], TRAIN_SEEDS, config.split, config.pool_size), VARIABLE_INFO_KEYS
    )


def selection_episode(env: gym.Env, kind: str, seed: int) -> KnockOutEnv:
    """The knock-out environment of selection model ``seed`` inside ``env`` (a kind's Planted
    environment over the selection seeds), reset on the selection batch."""
    inner = env.unwrapped.inner_for(seed)
    inner.reset(options={"task": task_name(kind), "batch_index": SELECTION_BATCH})
    return inner


def greedy_reference(
    config: KnockOutPPOConfig, envs: dict[str, gym.Env]
) -> dict[str, dict[str, list[float]]]:
    """Exact greedy knock-out's metric curve on each selection episode: ``{kind: {seed: curve}}``."""
    out: dict[str, dict[str, list[float]]] = {}
    for kind, env in envs.items():
        out[kind] = {}
        for seed in SELECTION_SEEDS:
            state = selection_episode(env, kind, seed).state
            out[kind][str(seed)] = [float(m) for m in state.greedy_curve(config.steps)[1]]
    return out


def trained_selection_jobs(config: KnockOutPPOConfig) -> tuple[tuple[str, str], ...]:
    """The trained selection episodes: (member, task) for each of ``config.zoo_models``' members and
    each task of ``config.zoo_env_id`` (the training tasks) whose backup pair the member's card verifies."""
    from circuit_gym.embedded import model_set
    from circuit_gym.envs.registration import entry
    from circuit_gym.models.cards import card_metrics
    from circuit_gym.models.trained_truth import verified_backup_tasks

    training_tasks = set(entry(config.zoo_env_id).tasks)
    return tuple((member, task) for member in model_set(config.zoo_models)
                 for task in verified_backup_tasks(card_metrics(member)) if task in training_tasks)  # fmt: skip


def trained_selection_envs(
    config: KnockOutPPOConfig, jobs: tuple[tuple[str, str], ...]
) -> dict[str, KnockOutEnv]:
    """Per member of the trained selection ``jobs``, its knock-out environment over its selection
    tasks (train split, pool up to the held-back batch ``zoo_pool_size``)."""
    members = dict.fromkeys(member for member, _ in jobs)
    return {member: KnockOutEnv(model=member, tasks=tuple(t for m, t in jobs if m == member),
                                split=SELECTION_SPLIT, pool_size=config.zoo_pool_size + 1,
                                batch_size=config.batch_size_prompts, steps=config.steps, device=config.device,
                                scores=config.scores, observe_last=False)
            for member in members}  # fmt: skip


def trained_selection_state(env: KnockOutEnv, config: KnockOutPPOConfig, task: str):
    """``env`` reset on the held-back batch of ``task``; its episode state."""
    env.reset(options={"task": task, "batch_index": config.zoo_pool_size})
    return env.state


def selection(config: KnockOutPPOConfig, out: Path, reference: dict | None) -> tuple:
    """The checkpoint-selection score (module docstring) and greedy's curves (the reference)."""
    from circuit_gym.models.loading import embedded_dir
    from circuit_gym.models.trained_truth import trained_truth

    envs = {
        kind: make_env(config, kind, SELECTION_SEEDS, SELECTION_SPLIT, SELECTION_BATCH + 1) for kind in KINDS
    }
    if reference is None:
        reference = greedy_reference(config, envs)
    jobs = trained_selection_jobs(config) if config.selection_trained else ()  # read once: the cards
    trained = trained_selection_envs(config, jobs)
    truths = {member: trained_truth(embedded_dir(member), member) for member in trained}
    if trained and TRAINED not in reference:  # a run resumed with the option on: its curves once
        reference = {**reference, TRAINED: {
            f"{m}/{t}": [float(x) for x in trained_selection_state(trained[m], config, t).greedy_curve(config.steps)[1]]
            for m, t in jobs}}  # fmt: skip

    def score(net: nn.Module) -> dict:
        policy = KnockOutPPOPolicy(net)
        per_kind: dict[str, dict[str, float]] = {}
        for kind, env in envs.items():
            rows = []
            for seed in SELECTION_SEEDS:
                inner = selection_episode(env, kind, seed)
                played = play_actions(inner, task_name(kind), SELECTION_BATCH, policy.act)
                truth = truth_of(seed, PLANTED_GENERATOR_V1)
                rows.append({"relative_area": relative_area(played.metrics, reference[kind][str(seed)],
                                                            played.clean, config.steps),
                             **truth_scores(played.order, truth.circuit(kind), truth.backups(kind), inner.n_total)})  # fmt: skip
            per_kind[kind] = _cell(rows)
        if trained:
            rows = []
            for member, task in jobs:
                env = trained[member]
                played = play_actions(env, task, config.zoo_pool_size, policy.act)
                truth = truths[member]
                rows.append({"relative_area": relative_area(played.metrics, reference[TRAINED][f"{member}/{task}"],
                                                            played.clean, config.steps),
                             **truth_scores(played.order, truth.circuit(task), truth.backups(task), env.n_total)})  # fmt: skip
            per_kind[TRAINED] = _cell(rows)
        value = float(np.mean([m["relative_area"] for m in per_kind.values()]))
        return {"selection_score": value, "selection_per_kind": per_kind}

    return score, reference


TRAINED = "trained"  # the selection's cell of the trained members (and its greedy curves' key)


def _cell(rows: list[dict]) -> dict[str, float]:
    """Means of a selection cell's episode scores (a kind without backups has NaN backup recall on
    every model: NaN, not a warning)."""
    return {m: float(np.nanmean([r[m] for r in rows])) if any(np.isfinite(r[m]) for r in rows) else float("nan")
            for m in rows[0]}  # fmt: skip


RECIPE = ppo_trainer.Recipe(
    config_type=KnockOutPPOConfig,
    score_key="selection_score",
    make_env=make_training_env,
    make_net=make_net,
    n_features=lambda config: N_COLUMNS,
    warm_up=lambda config, progress: 0.0,
    selection=selection,
)  # fmt: skip  (episodes are built on first use)


def train(config: KnockOutPPOConfig, out: Path, progress: bool | None = True) -> dict:
    """Train (``ppo_trainer.train``): ``policy.pt`` (best selection score), ``curve.json``,
    ``checkpoint.pt`` ... in ``out``; resumable."""
    return ppo_trainer.train(config, RECIPE, out, progress)


def main(argv: list[str] | None = None) -> None:
    ppo_trainer.main(RECIPE, "runs/knockout_ppo", argv, __doc__)


if __name__ == "__main__":
    main()
