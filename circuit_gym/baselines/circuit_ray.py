"""Exact greedy search with its candidate circuits fanned out over Ray actors (issue 22 item 2).

:class:`~circuit_gym.baselines.circuit_solvers.GreedySearch` runs, at each step, every
candidate circuit ``C + h`` (up to 144 on GPT-2's shape) in one stacked pass
(``env.candidate_gains()``). :class:`RayGreedySearch` is the same solver with that pass split
across ``workers`` Ray actors, the way ``circuit-gym precompute --ray`` splits sweeps: every
actor builds the same environment from the env's construction kwargs once (model, weights,
split, pool, batch size, ablation, ...), and on request runs ``m(C)`` of its share of the head
sets on the same ``(task, batch_index)``. The environment keeps its memo, its NaN layout and
its ``oracle_forward_passes`` count (``env.candidate_gains(metrics=...)``), so forward
passes are counted exactly as for ``GreedySearch``: one per candidate per state.

Same numbers, not just close ones: a stacked pass starts at the lowest layer any of its
circuits ablates, and a circuit replayed from a later layer can differ from the serial pass
in the last float32 bit. So the candidates are cut into the serial pass's own chunks, each
chunk is split across the actors, and a share that would start at a later layer than its
chunk carries one extra circuit of that chunk (computed, discarded, not counted) so that it
replays from the same layer. The result is bitwise the serial one (tested on the 4 x 4 model;
checked on GPT-2's shape by ``benchmarks/bench_greedy_ray.py``).

For the circuit track (``baselines.circuit_solvers.circuit_track``), one line::

    solvers = {**default_solvers(), "greedy_search_ray": ray_greedy_solver(workers=8)}

Ray is started with ``num_cpus=workers`` unless it is already running (``ray.init(address=...)``
first to use a cluster), and shut down at exit only if started here. Needs
``pip install 'circuit-gym[ray]'``.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable
from typing import Any

import numpy as np

from circuit_gym.baselines.circuit_solvers import GreedySearch
from circuit_gym.circuits import Circuit, CircuitRunner
from circuit_gym.envs.circuit_building import CircuitBuildingEnv

RAY_MISSING = "RayGreedySearch needs Ray: pip install 'circuit-gym[ray]'"


def env_kwargs(env: CircuitBuildingEnv) -> dict[str, Any]:
    """The construction kwargs of an environment made by ``gymnasium.make`` (its spec's, with
    the caller's overrides), from which a worker builds the same environment."""
    spec = env.unwrapped.spec
    if spec is None:
        raise ValueError("RayGreedySearch needs an environment made by gymnasium.make, or env_kwargs=")
    return dict(spec.kwargs)


def lowest_ablated_layer(heads: frozenset[int], n_layers: int, n_heads: int) -> int:
    """The layer a stacked pass of this circuit alone starts at (``n_layers`` if none is ablated)."""
    for h in range(n_layers * n_heads):
        if h not in heads:
            return h // n_heads
    return n_layers


def split_for_workers(head_sets: list[frozenset[int]], workers: int, per_pass: int, n_layers: int,
                      n_heads: int) -> list[list[tuple[list[int], list[frozenset[int]]]]]:  # fmt: skip
    """Per worker, its groups: ``(indices into head_sets, head sets to run in one pass)``.

    Mirrors :meth:`CircuitRunner.metric_rows`: circuits with every head (no pass) are left out
    of the chunks, the others are cut into chunks of ``per_pass`` in order; each chunk is split
    into ``workers`` contiguous parts. A part whose lowest ablated layer is above its chunk's
    carries the chunk's first circuit that starts at that layer, as an extra last set."""
    n = n_layers * n_heads
    groups: list[list[tuple[list[int], list[frozenset[int]]]]] = [[] for _ in range(workers)]
    full = [i for i, s in enumerate(head_sets) if len(s) >= n]
    if full:  # clean rows, no pass: any worker
        groups[0].append((full, [head_sets[i] for i in full]))
    partial = [i for i, s in enumerate(head_sets) if len(s) < n]
    for first in range(0, len(partial), per_pass):
        chunk = partial[first : first + per_pass]
        start = {i: lowest_ablated_layer(head_sets[i], n_layers, n_heads) for i in chunk}
        lowest = min(start.values())
        anchor = next(i for i in chunk if start[i] == lowest)
        for w, part in enumerate(np.array_split(np.array(chunk), workers)):
            part = part.tolist()
            if not part:
                continue
            sets = [head_sets[i] for i in part]
            if min(start[i] for i in part) > lowest:
                sets.append(head_sets[anchor])
            groups[(w + first // per_pass) % workers].append((part, sets))
    return groups


def runner_per_pass(runner: CircuitRunner) -> int:
    """Circuits per stacked pass of ``runner`` (the chunk size of :meth:`CircuitRunner.metric_rows`)."""
    from circuit_gym.ablation.engine import RESID_BUDGET

    tokens = runner.engine.ev.tokens
    return max(1, RESID_BUDGET // (tokens.numel() * int(runner.engine.model.cfg.d_model)))


class CandidateWorker:
    """A Ray actor: the environment built once from its kwargs (one torch thread), then ``m(C)``
    of head sets on any ``(task, batch_index)`` of its pools."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        import torch

        self.env = CircuitBuildingEnv(**kwargs)
        torch.set_num_threads(1)
        self._key: tuple[str, int] | None = None
        self._runner: CircuitRunner | None = None

    def runner(self, task: str, batch_index: int) -> CircuitRunner:
        """The runner of pool batch ``batch_index`` of ``task``: the one the environment's reset
        builds (:func:`~circuit_gym.envs.circuit_building.circuit_episode`: the task engine of
        the batch), without the observation features and the general-damage engine a reset
        also computes, which no candidate needs."""
        if self._key != (task, batch_index) or self._runner is None:
            from circuit_gym.ablation.engine import AblationEngine, Evaluation
            from circuit_gym.models.loading import model_device

            episode = self.env.pool(task).episode(batch_index)
            model = self.env.model
            evaluation = Evaluation.for_task(episode.pool.task, episode.batch, model_device(model))
            self._runner = CircuitRunner(AblationEngine(model, evaluation, self.env.ablation))
            self._key = (task, batch_index)
        return self._runner

    def metrics(self, task: str, batch_index: int, groups: list[list[frozenset[int]]]) -> list[np.ndarray]:
        """``m(C)`` of each group's head sets, each group in one stacked pass."""
        runner = self.runner(task, batch_index)
        return [runner.metric([Circuit(h, runner.n_layers, runner.n_heads) for h in g]) for g in groups]


class RayWorkers:
    """``workers`` :class:`CandidateWorker` actors on one environment's kwargs."""

    def __init__(self, workers: int, kwargs: dict[str, Any]) -> None:
        ray = _import_ray()
        self.workers, self.kwargs = workers, dict(kwargs)
        self.started_here = not ray.is_initialized()
        if self.started_here:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
            atexit.register(_shutdown_ray)
        device = str(self.kwargs.get("device", "cpu"))
        options = {"num_cpus": 1, "num_gpus": 1 if device.startswith("cuda") else 0}
        actor_cls = ray.remote(**options)(CandidateWorker)
        self.actors = [actor_cls.remote(self.kwargs) for _ in range(workers)]

    def evaluator(self, env: CircuitBuildingEnv) -> Callable[[list[frozenset[int]]], np.ndarray]:
        """``env.candidate_gains(metrics=...)``'s evaluator on the env's current batch."""
        import ray

        state = env.state
        task, index = env.task, int(state.episode.index)
        per_pass = runner_per_pass(state.runner)

        def evaluate(head_sets: list[frozenset[int]]) -> np.ndarray:
            groups = split_for_workers(head_sets, self.workers, per_pass, env.n_layers, env.n_heads)
            calls = [(g, a.metrics.remote(task, index, [sets for _, sets in g])) for a, g in zip(self.actors, groups, strict=True) if g]  # fmt: skip
            out = np.full(len(head_sets), np.nan)
            for g, ref in calls:
                for (indices, _), values in zip(g, ray.get(ref), strict=True):
                    out[indices] = values[: len(indices)]  # an extra anchor set is dropped
            return out

        return evaluate

    def close(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
        self.actors = []


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ValueError(RAY_MISSING) from None
    return ray


def _shutdown_ray() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()


class RayGreedySearch(GreedySearch):
    """:class:`GreedySearch` with each step's candidates split across ``workers`` Ray actors:
    the same circuits and the same gains, bit for bit.

    The actors start at the first :meth:`begin` (one model load each) and are kept while the
    env's kwargs stay the same; solvers given the same ``shared`` dict use the same actors
    (:func:`ray_greedy_solver`). ``env_kwargs``: for an environment not made by
    ``gymnasium.make``. :meth:`close` stops the actors, and shuts Ray down if it was started
    here (otherwise at exit)."""

    name = "greedy_search_ray"

    def __init__(self, workers: int = 2, *, shared: dict[str, RayWorkers] | None = None,
                 env_kwargs: dict[str, Any] | None = None) -> None:  # fmt: skip
        super().__init__()
        _import_ray()  # a clear error now, not at the first episode
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
        self.workers, self.env_kwargs = workers, env_kwargs
        self._shared: dict[str, RayWorkers] = {} if shared is None else shared

    @property
    def pool(self) -> RayWorkers | None:
        return self._shared.get("pool")

    def begin(self, env: CircuitBuildingEnv) -> int:
        kwargs = self.env_kwargs if self.env_kwargs is not None else env_kwargs(env)
        pool = self.pool
        if pool is None or pool.kwargs != kwargs or pool.workers != self.workers:
            if pool is not None:
                pool.close()
            self._shared["pool"] = RayWorkers(self.workers, kwargs)
        return super().begin(env)

    def act(self, env: CircuitBuildingEnv, obs: np.ndarray, info: dict) -> int:
        pool = self.pool
        if pool is None:
            raise RuntimeError("call begin() first")
        gains = env.candidate_gains(metrics=pool.evaluator(env))
        self._last = gains
        # GreedySearch.act's rule: the best head, if its gain beats alpha
        if not np.isfinite(gains).any():
            return env.stop_action
        head = int(np.nanargmax(gains))
        return head if gains[head] - env.alpha > 0 else env.stop_action

    def close(self) -> None:
        pool = self._shared.pop("pool", None)
        if pool is not None:
            pool.close()
            if pool.started_here:
                _shutdown_ray()


def ray_greedy_solver(workers: int) -> Callable[[], RayGreedySearch]:
    """A solver factory for :func:`~circuit_gym.baselines.circuit_solvers.circuit_track` whose
    solvers share one set of ``workers`` actors (the track makes a fresh solver per task)::

        solvers = {**default_solvers(), "greedy_search_ray": ray_greedy_solver(workers=8)}
    """
    _import_ray()
    shared: dict[str, RayWorkers] = {}
    return lambda: RayGreedySearch(workers, shared=shared)
