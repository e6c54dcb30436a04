"""Edge-circuit building as sequential decisions: add (or cut) candidate edges until STOP,
rewarded by faithfulness and size only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from circuit_gym.circuits import faithfulness
from circuit_gym.edges.attribution import eap_ig_ranking, eap_ranking
from circuit_gym.edges.circuit import EdgeCircuit
from circuit_gym.edges.graph import EdgeGraph
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ranking import EdgeRanking
from circuit_gym.envs.arguments import (
    check_action,
    check_choice,
    check_count,
    check_step_order,
    check_weight,
    common_arguments,
    reset_choice,
)
from circuit_gym.envs.features import FEATURE_BOUND
from circuit_gym.envs.memo import memoised
from circuit_gym.envs.pool import EnvPools, Episode, shared_model
from circuit_gym.envs.render import render_grid
from circuit_gym.graph_names import LOGITS, parse_node_name

EDGE_STARTS = ("empty", "candidates")
# MechRL's released agent chooses among the top 3,000 EAP-IG edges of GPT-2 (29k-32k edges). The
# default here is smaller: an observation row per candidate and an action per candidate make a
# PPO on 2 CPU cores train 6x faster at 512, and on the zoo's 12 x 12 models 512 candidates hold
# the edges MIB's sizes up to 1% keep (291 of 29,089).
DEFAULT_CANDIDATES = 512
MECHRL_CANDIDATES = 3000  # the candidate edges of MechRL's released agent (its code; shared/README.md)
EAP_IG_STEPS = 5  # the head level's and the board's EAP-IG setting
# Observation columns, one row per candidate edge (in candidate order: |EAP-IG| descending).
EDGE_COLUMNS = (
    "sender_depth",  # 0 for the input node, (L + 1) / (n_layers + 1) for a head of layer L
    "receiver_depth",  # (L + 1) / (n_layers + 1) for a head of layer L, 1 for the logits
    "port_q", "port_k", "port_v", "port_logits",  # one-hot receiving port
    "from_input",  # 1 if the sender is the input node (embeddings)
    "eap",  # EAP score / the largest |EAP| among the candidates
    "eap_ig",  # EAP-IG score / the largest |EAP-IG| among the candidates
    "member",  # 1 if the edge is in the current circuit
    "faithfulness",  # f(current circuit), the same in every row, clipped to the bound
    "size",  # circuit edges / candidates, the same in every row
    "budget_used",  # steps taken / budget, the same in every row
)  # fmt: skip
MEMBER = EDGE_COLUMNS.index("member")
FAITHFULNESS = EDGE_COLUMNS.index("faithfulness")
SIZE = EDGE_COLUMNS.index("size")
BUDGET_USED = EDGE_COLUMNS.index("budget_used")
PORT_COLUMN = {"q": 2, "k": 3, "v": 4, LOGITS: 5}


def setup_passes(ablation: str, steps: int = EAP_IG_STEPS) -> int:
    """LM passes of one batch an episode spends before its first decision: the clean and (with
    resample) counterfactual passes, EAP's forward and backward pass, EAP-IG's ``steps``
    interpolated forward and backward passes (counted per copy of the batch), and the empty
    circuit's pass (m(empty) of faithfulness)."""
    return 1 + (ablation == "resample") + 2 + 2 * steps + 1


@dataclass
class EdgeEpisode:
    """One prompt batch's edge patcher, attributions, candidates and memoised circuit metrics."""

    patcher: EdgePatcher
    eap: EdgeRanking
    eap_ig: EdgeRanking
    candidates: np.ndarray  # edge indices, |EAP-IG| descending
    empty_metric: float
    static: np.ndarray  # [K, len(EDGE_COLUMNS)] with the per-circuit columns zero
    memo: dict[frozenset[int], float] = field(default_factory=dict)

    @property
    def graph(self) -> EdgeGraph:
        return self.patcher.graph

    @property
    def full_metric(self) -> float:
        return self.patcher.full_metric

    def faithfulness(self, edges: frozenset[int]) -> float:
        """f of the circuit keeping ``edges`` (graph edge indices), memoised per circuit."""
        [metric] = memoised(
            self.memo, [edges], lambda todo: self.patcher.metric([EdgeCircuit(e, self.graph) for e in todo])
        )
        return float(faithfulness(metric, self.empty_metric, self.full_metric))


def edge_episode(episode: Episode, k: int) -> EdgeEpisode:
    """The edge state of a pool episode for ``k`` candidates, built once and kept with the episode."""
    return episode.derived(f"edges/{k}", lambda e: _build_edge_episode(e, k))


def _build_edge_episode(episode: Episode, k: int) -> EdgeEpisode:
    patcher = EdgePatcher(episode.task_engine)
    graph = patcher.graph
    eap, eap_ig = eap_ranking(patcher), eap_ig_ranking(patcher, EAP_IG_STEPS)
    # by |EAP-IG|: an edge whose patching raises the metric (a negative head's) matters as much
    candidates = eap_ig.order(absolute=True)[: min(k, graph.n_edges)].copy()
    empty = float(patcher.metric([EdgeCircuit.empty(graph)])[0])
    if not patcher.full_metric != empty:
        raise RuntimeError(
            f"task {episode.pool.task.name!r} batch {episode.index}: m(full) == m(empty) ({empty}); "
            "faithfulness is undefined on this batch"
        )
    return EdgeEpisode(
        patcher, eap, eap_ig, candidates, empty, _static_columns(graph, candidates, eap, eap_ig)
    )


def _static_columns(
    graph: EdgeGraph, candidates: np.ndarray, eap: EdgeRanking, eap_ig: EdgeRanking
) -> np.ndarray:
    rows = np.zeros((len(candidates), len(EDGE_COLUMNS)), dtype=np.float32)
    depth = graph.n_layers + 1
    for row, edge in enumerate(candidates):
        sender, receiver, port = graph.edges[int(edge)]
        _, sender_layer, _ = parse_node_name(graph.senders[sender])
        _, receiver_layer, _ = parse_node_name(receiver)
        rows[row, 0] = 0.0 if sender_layer is None else (sender_layer + 1) / depth
        rows[row, 1] = 1.0 if receiver == LOGITS else (receiver_layer + 1) / depth
        rows[row, PORT_COLUMN[port or LOGITS]] = 1.0
        rows[row, 6] = float(sender_layer is None)
    for column, ranking in ((7, eap), (8, eap_ig)):
        values = np.asarray(ranking.scores, dtype=np.float64)[candidates]
        scale = float(np.abs(values).max()) or 1.0
        rows[:, column] = values / scale
    return rows


class EdgeBuildingEnv(gym.Env):
    """Build a circuit edge by edge: which few connections between heads carry the task?

    ## Description
    The edge level of :class:`~circuit_gym.envs.circuit_building.CircuitBuildingEnv`, as MIB's
    circuit track, ACDC, EAP-IG and MechRL's released agent count circuits. A model's **edges**
    run from every node's output (the ``input`` embeddings, every head ``a{L}.h{H}``) to every
    later receiving **port** (a head's query, key or value input, or the ``logits``):
    29,089 on the 12 x 12 attention-only models (``circuit_gym.edges.graph``). A circuit is a set
    of edges; every edge outside it carries its sender's counterfactual output into its receiver
    (exact edge patching, ``circuit_gym.edges.patching``). Its quality is MIB's faithfulness::

        f(C) = (m(C) - m(empty)) / (m(full) - m(empty))

    with ``m`` the task metric averaged over the batch (0: every edge patched, 1: the model).

    Each episode draws one prompt batch of a task (the seeded pools of the other environments),
    scores every edge with EAP and EAP-IG (inputs variant, 5 steps) and offers the ``candidates``
    edges of largest |EAP-IG| as actions, as MechRL's agent acts on the top EAP-IG edges. Edges
    that are not candidates are always patched. The observation never names the task.

    ## Action Space
    ``Discrete(candidates + 1)``: action ``i < candidates`` adds candidate ``i`` (cuts it, with
    ``start="candidates"``); the last action is STOP. ``info["action_mask"]`` marks the legal
    actions (candidates not yet added, or still present, while the budget lasts; STOP always);
    ``action_masks()`` returns it as booleans (sb3-contrib's ``MaskablePPO``). A masked action is a
    no-op with reward 0 that still uses a step of the budget.

    ## Observation Space
    ``Box(-10, 10, (candidates, 13), float32)``: one row per candidate edge, in candidate order
    (|EAP-IG| descending). Columns (:data:`EDGE_COLUMNS`): the sender's and receiver's depth, the
    receiving port (one-hot q, k, v, logits), whether the sender is the input, the EAP and EAP-IG
    scores (each divided by its largest magnitude among the candidates), membership, then the
    circuit's faithfulness, its size as a share of the candidates and the share of the budget used
    (the same in every row).

    ## Rewards
    The change of ``J(C) = f(C) - alpha * |C|`` (faithfulness units; ``alpha`` per edge): adding
    an edge gives ``f(C + e) - f(C) - alpha``, cutting one ``f(C - e) - f(C) + alpha``; STOP and
    no-ops give 0. The rewards of an episode add up to ``J(final) - J(start)``. No other signal:
    no oracle, no task identity.

    ## Starting State
    ``reset`` picks the task uniformly from ``tasks`` unless ``options["task"]`` names one, then a
    batch uniformly from its pool unless ``options["batch_index"]`` gives one, with
    ``self.np_random``. The circuit is empty (``start="empty"``) or every candidate
    (``start="candidates"``, MechRL's start: actions cut).

    ## Episode End
    Terminated at STOP, after ``budget`` steps (each changes at most one edge and costs one LM pass
    of the batch: the budget is a pass budget), or when no candidate is left to change.

    ## Arguments
    ``gymnasium.make(id, **kwargs)``; bad values raise ``ValueError`` naming the argument.

    | argument | meaning | default |
    |---|---|---|
    | `model` | an attention-only model: `"toy"`, `"tiny"`, a zoo member, or a planted model (its ID) | set by the ID |
    | `tasks` | task name or names sampled at reset | set by the ID |
    | `split` | `"train"`, `"eval"` or `"test"` | `"train"` |
    | `candidates` | K, the top-K edges by |EAP-IG| an action may change (MechRL: 3,000) | `512` |
    | `start` | `"empty"` (actions add) or `"candidates"` (actions cut) | `"empty"` |
    | `alpha` | cost per edge, faithfulness units per edge, >= 0 | `0.001` |
    | `budget` | most steps (LM passes after the setup) per episode | `64` |
    | `ablation` | `"zero"`, `"mean"` or `"resample"` | `"resample"` on embedded models |
    | `batch_size`, `pool_size`, `cache`, `model_path`, `device` | as the other environments | `8`, `32`, `True`, `None`, `"cpu"` |

    ## Info
    ``faithfulness``, ``circuit_size`` (edges), ``action_mask``, ``task``, ``batch_index``,
    ``forward_passes`` (LM passes of the batch so far: :func:`setup_passes` at reset, one per step
    that changes the circuit) and, at reset, ``candidate_edges`` (the candidates' MIB names).

    ## Version History
    * v0: first release (issue 43).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, model: str = "toy", tasks: str | Sequence[str] = ("ioi",), split: str = "train",
                 candidates: int = DEFAULT_CANDIDATES, start: str = "empty", alpha: float = 0.001,
                 budget: int = 64, ablation: str | None = None, batch_size: int = 8, pool_size: int = 32,
                 cache: bool = True, model_path: str | None = None, render_mode: str | None = None,
                 device: str = "cpu", oracle_info: bool = False) -> None:  # fmt: skip
        # oracle_info is accepted (the model-drawing envs pass their settings on) and has no table here
        tasks, ablation = common_arguments(model, tasks, split, ablation, batch_size, pool_size, cache, oracle_info,
                                           render_mode, self.metadata["render_modes"])  # fmt: skip
        check_choice("start", start, EDGE_STARTS)
        self.k = check_count("candidates", candidates)
        self.budget = check_count("budget", budget)
        self.alpha = check_weight("alpha", alpha, "faithfulness per edge")
        self.model = shared_model(model, model_path, device)
        self.graph = EdgeGraph.of_model(self.model)
        self.k = min(self.k, self.graph.n_edges)
        self.budget = min(self.budget, self.k)  # from empty, no episode changes more edges than K
        self.tasks, self.split, self.start, self.ablation = tasks, split, start, ablation
        self.batch_size, self.pool_size, self.cache = int(batch_size), int(pool_size), cache
        self.render_mode = render_mode
        self.stop_action = self.k
        self.action_space = spaces.Discrete(self.k + 1)
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, (self.k, len(EDGE_COLUMNS)), np.float32
        )
        self._pools = EnvPools(self.model, split, int(batch_size), int(pool_size), None, ablation, 1.0, cache)
        self._state: EdgeEpisode | None = None
        self._index = 0
        self._task = tasks[0]
        self._in: np.ndarray = np.zeros(self.k, dtype=bool)  # candidate rows in the circuit
        self._order: list[int] = []
        self._steps, self._passes, self._f = 0, 0, 0.0
        self._over = False

    # ----------------------------------------------------------------- state
    @property
    def state(self) -> EdgeEpisode:
        if self._state is None:
            raise RuntimeError("call reset() first")
        return self._state

    def _adding(self) -> bool:
        return self.start == "empty"

    def _edges(self, rows: np.ndarray) -> frozenset[int]:
        return frozenset(self.state.candidates[rows].tolist())

    @property
    def circuit(self) -> EdgeCircuit:
        """The current circuit (graph edge indices)."""
        return EdgeCircuit(self._edges(self._in), self.graph)

    @property
    def order(self) -> list[int]:
        """Graph edge indices changed so far, in order."""
        return [int(self.state.candidates[row]) for row in self._order]

    def ranking(self) -> EdgeRanking:
        """The episode as a ranking of every edge (higher = more important): the edges added, in
        order, then every other edge by its signed EAP-IG score (a candidate the agent left out is
        not lifted: a negative one belongs below the edges that help). From ``start="candidates"``
        the cut edges come last, the first cut lowest."""
        scores = np.asarray(self.state.eap_ig.scores, dtype=np.float64)
        span = float(np.abs(scores).max()) + 1.0
        ranked = scores.copy()
        changed = self.order
        for place, edge in enumerate(changed):
            lift = 2 * span + (len(changed) - place)
            ranked[edge] = lift if self._adding() else -lift
        return EdgeRanking.from_array(ranked, "edge_building", self.graph, {"forward": self._passes})

    def action_mask(self) -> np.ndarray:
        mask = np.zeros(self.k + 1, dtype=np.int8)
        if self._steps < self.budget:
            mask[: self.k] = ~self._in if self._adding() else self._in
        mask[self.stop_action] = 1
        return mask

    def action_masks(self) -> np.ndarray:
        return self.action_mask().astype(bool)

    def _obs(self) -> np.ndarray:
        obs = self.state.static.copy()
        obs[:, MEMBER] = self._in
        obs[:, FAITHFULNESS] = np.clip(self._f, -FEATURE_BOUND, FEATURE_BOUND)
        obs[:, SIZE] = self._in.sum() / self.k
        obs[:, BUDGET_USED] = self._steps / self.budget
        return obs

    def _info(self) -> dict[str, Any]:
        return {
            "faithfulness": float(self._f), "circuit_size": int(self._in.sum()), "action_mask": self.action_mask(),
            "task": self._task, "batch_index": self._index, "forward_passes": self._passes,
        }  # fmt: skip

    # -------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        task, index = reset_choice(self, options)
        self._task, self._index = task, int(index)
        self._state = edge_episode(self._pools.get(task).episode(self._index), self.k)
        self._in = np.full(self.k, not self._adding())
        self._f = 0.0 if self._adding() else self._state.faithfulness(self._edges(self._in))
        self._order, self._steps, self._over = [], 0, False
        self._passes = setup_passes(self.ablation) + (0 if self._adding() else 1)
        info = self._info()
        info["candidate_edges"] = [self.graph.names[int(e)] for e in self._state.candidates]
        return self._obs(), info

    def step(self, action):
        check_step_order(self._state is not None, self._over)
        action = check_action(action, self.k + 1, f"in [0, {self.k}] (candidate, or {self.k} = STOP)")
        reward, terminated = 0.0, False
        if action == self.stop_action:
            terminated = True
        else:
            legal = bool(self.action_mask()[action])
            self._steps += 1
            if legal:
                new = self._in.copy()
                new[action] = self._adding()
                f = self.state.faithfulness(self._edges(new))
                sign = 1.0 if self._adding() else -1.0
                reward = (f - self._f) - sign * self.alpha
                self._in, self._f = new, f
                self._order.append(int(action))
                self._passes += 1
            remaining = (~self._in if self._adding() else self._in).any()
            terminated = self._steps >= self.budget or not remaining
        self._over = terminated
        return self._obs(), float(reward), terminated, False, self._info()

    def head_weights(self) -> np.ndarray:
        """Per head: the EAP-IG score of the circuit's edges that reach or leave it (signed sum);
        what ``render_mode="rgb_array"`` colours."""
        weights = np.zeros(self.graph.n_layers * self.graph.n_heads)
        scores = self.state.eap_ig.scores
        for edge in self.circuit.edges:
            sender, receiver, _ = self.graph.edges[edge]
            for node in (self.graph.senders[sender], receiver):
                kind, layer, head = parse_node_name(node)
                if kind == "head":
                    weights[layer * self.graph.n_heads + head] += scores[edge]
        return weights

    def render(self) -> str | np.ndarray | None:
        if self.render_mode == "rgb_array":
            return self._render_rgb()
        if self.render_mode != "ansi":
            return None
        if self._state is None:
            return "not reset"
        last = ", ".join(self.graph.names[e] for e in self.order[-3:]) or "none"
        verb = "added" if self._adding() else "cut"
        return (f"task {self._task} batch {self._index} step {self._steps}/{self.budget}: {verb} ... {last}; "
                f"{int(self._in.sum())} edges, f={self._f:.3f}")  # fmt: skip

    def _render_rgb(self) -> np.ndarray:
        """The head grid of ``circuit_gym.envs.render``: fill = :meth:`head_weights` (red: the
        circuit's edges at this head raise the metric), cross = no circuit edge touches the head,
        outline = the receiving head of the last edge changed, bar = budget used."""
        n_heads = self.graph.n_heads
        if self._state is None:
            return render_grid(self.graph.n_layers, n_heads, None, range(self.graph.n_layers * n_heads))
        weights = self.head_weights()
        last = None
        if self._order:
            _, receiver, _ = self.graph.edges[self.order[-1]]
            kind, layer, head = parse_node_name(receiver)
            last = layer * n_heads + head if kind == "head" else None
        untouched = np.flatnonzero(weights == 0).tolist()
        return render_grid(self.graph.n_layers, n_heads, weights, untouched, last, self._steps / self.budget)
