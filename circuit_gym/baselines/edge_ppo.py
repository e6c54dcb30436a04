"""The reference edge PPO (issue 43 item 1): Tianshou PPO on the edge-building environment.

The agent builds an edge circuit on ``CircuitDiscovery-Zoo-Multi-Edges-v0`` over the zoo's
*training* models (``circuit_gym.embedded.ZOO_TRAIN``) and the benchmark's *training* tasks
(``circuit_gym.benchmark.TRANSFER_TRAIN_TASKS``), train split. This module holds only what is
the edge agent's own; the builder, the training loop (checkpoint selection, resume) and the
adapter base are ``circuit_gym/baselines/ppo_trainer.py``'s:

- :class:`EdgeScorer`: one shared MLP scores every candidate row (its 13 columns plus the pooled
  summary of all rows), a STOP logit and the state value come from the pooled summary. No
  candidate index enters, so permuting the candidate rows permutes the logits;
- :class:`EdgePPOConfig`: defaults that train on 2 CPU cores (128 candidates, budget 32, two
  training batches per (model, task) cell);
- :data:`RECIPE`: the environments and the checkpoint selection: after every epoch the
  deterministic policy plays train-split batches ``pool_size .. pool_size + selection_episodes - 1``
  of every (training model, training task) cell (held back: never trained on, never reported);
  the score is the mean over cells of the **small-circuit area** (:func:`small_circuit_area`) of
  those episodes' rankings: the mean faithfulness of the ranking's first 1, 2, ..., ``budget``
  edges, the circuits the agent itself builds. The curve shows EAP-IG's and the untrained
  network's area on the same batches beside it (computed once, kept on resume);
- :class:`EdgePPOPolicy`: a trained network that plays an episode and returns its edge ranking
  (the insertion order, then every other edge by signed EAP-IG): what the board scores.

    python scripts/train_edge_ppo.py --out runs/edge_ppo/seed0 --epochs 6
    python scripts/train_edge_ppo.py --out runs/edge_ppo/seed0 --epochs 10   # resumes, extends

A run selected under an earlier rule goes on under this one from a copy of its training state
(:func:`fork_run`): the network, optimiser and epoch count carry over, the selection starts afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym.baselines import ppo_trainer
from circuit_gym.baselines.ppo_trainer import PolicyAdapter, PPOConfigBase, cells, selection_indices
from circuit_gym.benchmark import TRANSFER_TRAIN_TASKS
from circuit_gym.edges.ranking import EdgeRanking
from circuit_gym.embedded import MODEL_SETS, ZOO_TRAIN
from circuit_gym.envs.edge_building import EDGE_COLUMNS, MEMBER, EdgeBuildingEnv
from circuit_gym.envs.model_draw import ModelDrawEnv

NETWORKS = ("edge_scorer",)
# Models a run may train and select on: the zoo's training members, and the untrained 4 x 4
# test model ("tiny", the tests' stand-in). Held-out members and the private model never.
TRAINING_MODELS = (*ZOO_TRAIN, "tiny")
STOP_BIAS = -3.0  # the STOP logit's initial bias (candidate logits start near 0)


@dataclass
class EdgePPOConfig(PPOConfigBase):
    NETWORKS: ClassVar[tuple[str, ...]] = NETWORKS

    env_id: str = "CircuitDiscovery-Zoo-Multi-Edges-v0"  # the benchmark's training tasks
    model: str | None = "zoo-train"  # a model set of circuit_gym.embedded.MODEL_SETS or one model
    # Two training batches per cell (10 cells: 2 models x 5 tasks): an episode's setup (EAP and
    # EAP-IG on a 12 x 12 model) costs ~11 s on a loaded core, and each batch is set up once.
    pool_size: int = 2
    selection_episodes: int = 1
    n_envs: int = 2
    epochs: int = 6
    steps_per_epoch: int = 256
    steps_per_collect: int = 64
    lr: float = 1e-3
    ent_coef: float = 0.01
    network: str = "edge_scorer"
    minibatch: int = 32
    candidates: int = 128  # K; every action a row, so K sets the network's and the episode's cost
    budget: int = 32  # edges added per episode at most (one LM pass each); the selection's sizes 1 .. budget
    # Training's cost per edge. 0, not the env's 0.001: as with the circuit PPO (docs/circuit_envs.md),
    # a cost makes STOP the untrained policy's best action before it finds the edges that raise f;
    # the selection score (the small-circuit area over sizes 1 .. budget) does not charge for size.
    alpha: float = 0.0
    gamma: float = 1.0  # finite episodes: the return is f of the final circuit

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.split != "train":
            raise ValueError(f"the edge PPO trains and selects on the train split only, got {self.split!r}")
        held = sorted(set(self.models()) - set(TRAINING_MODELS))
        if held:
            raise ValueError(f"the edge PPO trains on {list(TRAINING_MODELS)} only, got {held}")

    def models(self) -> tuple[str, ...]:
        """The models ``model`` names (a model set, or one model)."""
        name = self.model or "zoo-train"
        return MODEL_SETS.get(name, (name,))


class EdgeScorer(nn.Module):
    """Per candidate: ``h_i = phi(x_i)`` (a shared MLP over the 13 columns); pooled summary
    ``s = [mean_i h_i, max_i h_i]``; logit ``i = psi([h_i, s])`` (shared over candidates), STOP =
    ``stop(s)``, value = ``value(s)``. Mean and max are symmetric in the rows, so the candidate
    logits are permutation-equivariant and STOP and the value permutation-invariant."""

    def __init__(self, n_features: int = len(EDGE_COLUMNS), hidden: int = 64) -> None:
        super().__init__()
        self.embed = nn.Sequential(
            nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh()
        )
        self.score = nn.Sequential(nn.Linear(3 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.stop = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.value = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        # STOP starts unlikely. With a random bias the untrained argmax stopped at once half the time,
        # and PPO never moved it (seed 0's first run: every deterministic episode empty for 4 epochs,
        # the ranking EAP-IG's candidate order): with alpha 0 STOP earns nothing, is seldom sampled,
        # and so seldom learns that it earns nothing.
        nn.init.constant_(self.stop[-1].bias, STOP_BIAS)

    def _parts(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.embed(obs)  # [batch, K, hidden]
        return h, torch.cat([h.mean(-2), h.max(-2).values], dim=-1)

    def logits(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``[batch, K + 1]``: one logit per candidate, then STOP; masked actions get -1e9."""
        h, pooled = self._parts(obs)
        context = pooled[:, None, :].expand(-1, h.shape[1], -1)
        rows = self.score(torch.cat([h, context], dim=-1)).squeeze(-1)
        out = torch.cat([rows, self.stop(pooled)], dim=-1)
        return out if mask is None else out.masked_fill(mask == 0, -1e9)

    def state_value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.value(self._parts(obs)[1])


def edge_env(env: gym.Env) -> EdgeBuildingEnv:
    """The single-model edge environment behind ``env`` (a model-drawing one's current episode's)."""
    base = env.unwrapped
    if isinstance(base, ModelDrawEnv):
        base = base.current.unwrapped
    if not isinstance(base, EdgeBuildingEnv):
        raise TypeError(f"expected an edge-building environment, got {type(base).__name__}")
    return base


class EdgePPOPolicy(PolicyAdapter):
    """A trained :class:`EdgeScorer` as an edge-circuit builder: ``act(observation, action_mask)``
    (the best legal action), and :meth:`ranking`: one deterministic episode as an edge ranking."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__(net, MEMBER)

    def ranking(self, env: gym.Env, options: dict | None = None, seed: int | None = None) -> EdgeRanking:
        """Play one episode of ``env`` (reset with ``options``, e.g. ``{"task": ..., "batch_index":
        ...}``) to its end; the episode's edge ranking: the environment's (the edges added, in
        order, then every other edge by signed EAP-IG), named ``edge_ppo``."""
        obs, info = env.reset(seed=seed, options=options)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(self.act(obs, info["action_mask"]))
            done = terminated or truncated
        return replace(edge_env(env).ranking(), method="edge_ppo")


def load_policy(checkpoint: str) -> EdgePPOPolicy:
    """A trained run's chosen policy (``checkpoint``: its folder, holding config.json and policy.pt)."""
    return EdgePPOPolicy(ppo_trainer.load_network(RECIPE, checkpoint))


def make_env(config: EdgePPOConfig, pool_size: int | None = None) -> gym.Env:
    """The configured environment over ``config.models()`` and the ID's tasks (training tasks only);
    batch ``i`` is the same whatever ``pool_size``."""
    kwargs: dict[str, Any] = dict(split=config.split, pool_size=pool_size or config.pool_size,
                                  batch_size=config.batch_size_prompts, device=config.device,
                                  candidates=config.candidates, budget=config.budget, alpha=config.alpha)  # fmt: skip
    models = config.models()
    kwargs["model"] = models if "-Zoo-" in config.env_id else models[0]
    if config.model_path:
        kwargs["model_path"] = config.model_path
    env = gym.make(config.env_id, **kwargs)
    base: Any = env.unwrapped  # an EdgeBuildingEnv or a ZooEnv: both list their tasks
    outside = sorted(set(base.tasks) - set(TRANSFER_TRAIN_TASKS))
    if outside:
        env.close()
        raise ValueError(f"{config.env_id} serves tasks outside the training tasks: {outside}")
    return env


class TrainingBatches(gym.Wrapper):
    """Draw every episode's batch among the first ``n`` of the pool (the training batches): the
    training environment shares its pools, and so its episodes' EAP-IG setups, with the selection
    environment, whose larger pool also holds the held-back batches ``n ..``."""

    def __init__(self, env: gym.Env, n: int) -> None:
        super().__init__(env)
        self.n = n
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        options = {"batch_index": int(self._rng.integers(self.n)), **(options or {})}
        return self.env.reset(seed=seed, options=options)


def make_training_env(config: EdgePPOConfig, seed: int) -> gym.Env:
    return TrainingBatches(make_env(config, config.selection_pool), config.pool_size)


def small_circuit_area(faithfulness: Callable[[frozenset[int]], float], order: Sequence[int]) -> float:
    """The checkpoint-selection formula: the mean faithfulness of an order's first 1, 2, ..., n
    edges (``order`` holds n)::

        area = (1 / n) * sum_{k=1..n} f({order_1, ..., order_k})

    With n the budget it scores exactly the circuits an episode builds (its prefixes, memoised
    by the environment: no LM pass), each size weighted alike. Edge CPR is not the rule: its
    trapezoids over MIB's sizes give the circuits beyond the first 1/20 of the edges 0.95 of
    the axis, and those hold the episode's edges plus EAP-IG's order, so on seed 0's held-back
    batches it fell (1.403 -> 1.369) while the built circuit's f rose 0.00 -> 0.65."""
    if len(order) == 0:
        raise ValueError("the small-circuit area needs at least one edge")
    edges = [int(e) for e in order]
    return float(np.mean([faithfulness(frozenset(edges[:k])) for k in range(1, len(edges) + 1)]))


def ranking_area(faithfulness: Callable[[frozenset[int]], float], ranking: EdgeRanking, size: int) -> float:
    """The small-circuit area of ``ranking``'s first ``size`` edges (``faithfulness``: f of an
    edge set on one batch, e.g. an edge episode's memoised ``EdgeEpisode.faithfulness``)."""
    return small_circuit_area(faithfulness, ranking.order()[:size])


def cell_areas(
    env: gym.Env, indices: range, size: int, rank: Callable[[gym.Env, str, int], EdgeRanking]
) -> dict:
    """Per (model, task) cell of ``env``, the small-circuit area of ``rank(inner, task, i)`` on
    each held-back batch ``i``."""
    areas = {}
    for label, inner, task in cells(env):
        # rank() first: it resets the environment onto batch i, whose f the area then reads
        areas[label] = [_area_after(inner, rank(inner, task, i), size) for i in indices]
    return areas


def _area_after(inner: gym.Env, ranking: EdgeRanking, size: int) -> float:
    return ranking_area(edge_env(inner).state.faithfulness, ranking, size)


def policy_ranker(net: nn.Module) -> Callable[[gym.Env, str, int], EdgeRanking]:
    """The deterministic policy's episode on a batch, as a ranking."""
    policy = EdgePPOPolicy(net)
    return lambda inner, task, i: policy.ranking(inner, {"task": task, "batch_index": i})


def eap_ig_ranker(inner: gym.Env, task: str, i: int) -> EdgeRanking:
    """EAP-IG's own ranking of a batch (signed, as the environment's tail)."""
    inner.reset(options={"task": task, "batch_index": i})
    return edge_env(inner).state.eap_ig


def _cell_means(areas: dict[str, list[float]]) -> tuple[float, dict[str, float]]:
    per_cell = {label: float(np.mean(values)) for label, values in areas.items()}
    return float(np.mean(list(per_cell.values()))), per_cell


def selection_reference(config: EdgePPOConfig, env: gym.Env, indices: range) -> dict:
    """What the curve shows beside the score, computed once per run: EAP-IG's areas and the
    untrained network's (the one :func:`ppo_trainer.train` starts from: same seed, same shape)."""
    torch.manual_seed(config.seed)  # the trainer seeds again before it builds its network
    untrained = make_net(config, len(EDGE_COLUMNS))
    return {"eap_ig": cell_areas(env, indices, config.budget, eap_ig_ranker),
            "untrained": cell_areas(env, indices, config.budget, policy_ranker(untrained))}  # fmt: skip


def selection_area(net: nn.Module, env: gym.Env, indices: range, size: int, reference: dict) -> dict:
    """The checkpoint-selection score: the mean over (model, task) cells of the mean
    small-circuit area (first ``size`` edges) of the deterministic policy's episodes on the
    held-back batches; EAP-IG's and the untrained network's beside it, and what the episodes built."""
    built, sizes = [], []

    def rank(inner: gym.Env, task: str, i: int) -> EdgeRanking:
        ranking = policy_ranker(net)(inner, task, i)
        base = edge_env(inner)
        built.append(base.state.faithfulness(frozenset(base.order)))  # memoised: no pass
        sizes.append(len(base.order))
        return ranking

    score, per_cell = _cell_means(cell_areas(env, indices, size, rank))
    return {"selection_score": score, "eap_ig_area": _cell_means(reference["eap_ig"])[0],
            "untrained_area": _cell_means(reference["untrained"])[0],
            "built_faithfulness": float(np.mean(built)), "built_edges": float(np.mean(sizes)),
            "area_per_cell": per_cell, "eap_ig_area_per_cell": _cell_means(reference["eap_ig"])[1]}  # fmt: skip


def warm_up(config: EdgePPOConfig, progress: bool | None = None) -> float:
    """Set up every training and selection batch's edge episode (EAP, EAP-IG, candidates) once."""
    return ppo_trainer.warm_up_cells(make_env(config, config.selection_pool), "edge episodes", progress)


def selection(config: EdgePPOConfig, out: Path, reference: dict | None) -> tuple:
    """The checkpoint-selection score (:func:`selection_area`) and its reference (a resumed
    run's, else :func:`selection_reference` now)."""
    env = make_env(config, config.selection_pool)
    indices = selection_indices(config)
    if reference is None:
        reference = selection_reference(config, env, indices)
    return (lambda net: selection_area(net, env, indices, config.budget, reference)), reference


def make_net(config: EdgePPOConfig, n_features: int) -> nn.Module:
    return EdgeScorer(n_features=n_features, hidden=config.hidden)


RECIPE = ppo_trainer.Recipe(
    config_type=EdgePPOConfig, score_key="selection_score", make_env=make_training_env, make_net=make_net,
    n_features=lambda config: len(EDGE_COLUMNS), warm_up=warm_up, selection=selection,
)  # fmt: skip


def train(config: EdgePPOConfig, out: Path, progress: bool | None = True) -> dict:
    """Train (``ppo_trainer.train``): ``policy.pt`` (best selection score), ``policy_last.pt``,
    ``config.json``, ``curve.json`` (per epoch: env steps, test return, the small-circuit area on
    the held-back batches, EAP-IG's and the untrained network's on the same), ``checkpoint.pt``,
    ``train_summary.json``.
    The same call again continues from the last finished epoch; more ``epochs`` extend the run."""
    return ppo_trainer.train(config, RECIPE, out, progress)


def fork_run(source: Path, out: Path) -> None:
    """Start ``out`` from ``source``'s last finished epoch with its selection afresh: the same
    configuration, network, optimiser, return normalisation, epoch count and environment seeds
    (so :func:`train` on ``out`` resumes), but no curve, no best score and no reference. Use it
    when the selection rule changed: the scores on ``source``'s curve are another rule's."""
    if (out / ppo_trainer.CHECKPOINT).exists():
        raise FileExistsError(f"{out} already holds a run")
    checkpoint = torch.load(source / ppo_trainer.CHECKPOINT, weights_only=False)  # our own file
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text((source / "config.json").read_text())
    fresh = {**checkpoint, "curve": [], "best": -np.inf, "reference": None}
    torch.save(fresh, out / ppo_trainer.CHECKPOINT)


def main(argv: list[str] | None = None) -> None:
    ppo_trainer.main(RECIPE, "runs/edge_ppo/seed0", argv, __doc__)
