"""Circuit scores of every solver on the benchmark's held-out episodes: MIB's CPR and CMD at head level.

The single-head solvers (random, fixed, greedy attribution, PPO, a submitted policy) return
*preferences*: one score per head, higher = ablate first. Their order is the circuit they
propose (the top-k heads for every k). A preference's sign and size mean nothing on their own
(a policy's logits), so :func:`preference_ranking` keeps only the order: rank-transformed
scores are positive, and MIB's two ranking rules (signed for CPR, absolute for CMD) agree on
them. ACDC and EAP-IG (white-box: they read the task metric) return signed effects and are
scored under MIB's rules as they are.

Per episode one :class:`~circuit_gym.circuits.CircuitRunner` serves every solver (its clean and
counterfactual passes are made once); :func:`~circuit_gym.circuits.scores.batch_scores` runs a
ranking's curves and the random baseline's in stacked passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from circuit_gym.baselines.eap_ig import eap_ig_scores
from circuit_gym.circuits import CircuitRunner, Ranking
from circuit_gym.circuits.preferences import preference_ranking
from circuit_gym.circuits.scores import batch_scores, summarise_batches
from circuit_gym.progress import progress_iter
from circuit_gym.solvers.acdc import acdc

ObsRankFn = Callable[[np.ndarray, object], np.ndarray]  # (observation, env) -> preferences
WHITE_BOX = ("acdc", "eap_ig")


def white_box_ranking(name: str, runner: CircuitRunner) -> tuple[Ranking, int]:
    """ACDC's or EAP-IG's ranking of the runner's batch and the partial/backward passes it cost."""
    if name == "acdc":
        result = acdc(runner)
        return result.ranking, result.tries
    if name == "eap_ig":
        steps = 5
        scores = eap_ig_scores(runner, steps)
        return Ranking.from_array(scores, "eap_ig", runner.n_layers, runner.n_heads), 2 * steps
    raise ValueError(f"white-box solver must be one of {WHITE_BOX}, got {name!r}")


def ranking_circuit_scores(env, solvers: Mapping[str, ObsRankFn], tasks: Sequence[str], episodes: Sequence[int], *,
                  white_box: Sequence[str] = WHITE_BOX, n_random: int = 8, progress: bool = False) -> dict:  # fmt: skip
    """CPR / CMD per task and solver over ``episodes`` of ``env``'s pools (with intervals).

    ``env`` is a single-head CircuitDiscoveryEnv (wrapped or not); each solver sees the
    episode's observation only. Returns ``{task: {solver: summary}}`` (summaries as
    :func:`~circuit_gym.circuits.scores.summarise_batches` gives them, ``per_batch`` reduced to
    the per-episode areas) plus ``seconds`` and ``passes`` per solver.
    """
    base = env.unwrapped
    jobs = [(t, int(i)) for t in tasks for i in episodes]
    per: dict[tuple[str, str], list[dict]] = {}
    seconds: dict[str, float] = {}
    passes: dict[str, list[int]] = {}
    for task, index in progress_iter(jobs, "circuit scores", unit="episode", requested=progress):
        obs, _ = env.reset(options={"task": task, "batch_index": index})
        episode = base.episode
        runner = CircuitRunner.for_task(base.model, episode.pool.task, episode.batch, base.ablation)
        rankings = {}
        for name, rank in solvers.items():
            start = time.perf_counter()
            rankings[name] = preference_ranking(rank(obs, env), name, runner.n_layers, runner.n_heads)
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start
        for name in white_box:
            start = time.perf_counter()
            rankings[name], cost = white_box_ranking(name, runner)
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start
            passes.setdefault(name, []).append(cost)
        for name, ranking in rankings.items():
            per.setdefault((task, name), []).append(batch_scores(runner, ranking, n_random))
    out: dict = {"tasks": {}, "episodes": list(episodes), "n_random": n_random,
                 "ablation": base.ablation}  # fmt: skip
    for (task, name), batches in per.items():
        summary = summarise_batches(batches, name, task, base.ablation)
        summary["per_batch"] = [{"cpr": b["cpr"], "cmd": b["cmd"]} for b in batches]
        out["tasks"].setdefault(task, {})[name] = summary
    n_jobs = max(1, len(tasks) * len(episodes))
    out["ranking_seconds_per_episode"] = {k: v / n_jobs for k, v in seconds.items()}
    out["white_box_passes_per_episode"] = {k: float(np.mean(v)) for k, v in passes.items()}
    return out


def markdown(track: dict) -> str:
    """CPR and CMD per held-out task and solver, with 95% intervals over episodes."""
    lines = ["| task | solver | CPR (95% CI) | CMD (95% CI) | CPR / random | episodes |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for task, by_solver in track["tasks"].items():
        for solver, r in sorted(by_solver.items(), key=lambda kv: -kv[1]["cpr"]):
            (clo, chi), (dlo, dhi) = r["cpr_ci95"], r["cmd_ci95"]
            lines.append(
                f"| {task} | {solver} | {r['cpr']:.3f} [{clo:.3f}, {chi:.3f}] | {r['cmd']:.3f} "
                f"[{dlo:.3f}, {dhi:.3f}] | {r['cpr_normalised']:.2f} | {r['batches']} |"
            )
    return "\n".join(lines)
