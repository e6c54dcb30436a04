"""Fill the sweep cache for whole episode pools, serially or as Ray tasks.

An environment's episode ``i`` of a pool is ``task.batch(model, split, batch_size, seed=i)``
and its oracle table is the cached single-head sweep of that batch. Precomputing the
pools up front turns every later ``reset``/``step`` into a cache read, which is how users
with many GPUs or nodes prepare GPT-2 or larger models:

    circuit-gym precompute --model gpt2 --tasks ioi docstring --splits train eval --pool-size 64
    circuit-gym precompute ... --workers 2      # local worker processes (one model each)
    circuit-gym precompute ... --ray            # one Ray task per sweep (pip install circuit-gym[ray])

With ``--workers N`` (local processes, ``concurrent.futures``) or ``--ray`` (Ray actors,
also across nodes) every worker loads the model once and returns the damages to the driver, which writes them into its own cache: the files are byte-for-byte what the
serial path writes, and workers on other nodes need no shared file system. The
general-damage sweep (one per model, reference and ablation) runs first, on the driver,
and is handed to the workers.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

import numpy as np

from circuit_gym.ablation.cache import SweepCache
from circuit_gym.ablation.contrastive import ContrastiveScorer
from circuit_gym.ablation.engine import check_ablation, default_ablation
from circuit_gym.ablation.tables import DAMAGE_FIELDS, general_damage, general_engine, sweep_key
from circuit_gym.models import load_model
from circuit_gym.tasks import SPLITS, get_task
from circuit_gym.tasks.reference import ReferenceBatch, reference_batch


@dataclass(frozen=True)
class Job:
    task: str
    split: str
    index: int


def damages_payload(model, job: Job, batch_size: int, reference: ReferenceBatch, ablation: str,
                    general: np.ndarray) -> tuple[dict, dict]:  # fmt: skip
    """(cache key, payload) of one pool episode's sweep, given the general damages."""
    task = get_task(job.task)
    batch = task.batch(model, job.split, batch_size, seed=job.index)
    scorer = ContrastiveScorer(model, task, batch, reference, ablation,
                               general_engine=general_engine(model, reference, ablation))  # fmt: skip
    table = scorer.sweep(general)
    payload = {k: v for k, v in table.to_dict().items() if k in DAMAGE_FIELDS}
    return sweep_key(model, task, batch, reference, ablation), payload


def plan(tasks: Sequence[str], splits: Sequence[str], pool_size: int) -> list[Job]:
    for t in tasks:
        get_task(t)  # a clear error for an unknown task before any work
    for s in splits:
        if s not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {s!r}")
    if pool_size < 1:
        raise ValueError(f"pool size must be >= 1, got {pool_size}")
    return [Job(t, s, i) for t in tasks for s in splits for i in range(pool_size)]


def precompute(model_name: str, tasks: Sequence[str], splits: Sequence[str], pool_size: int, *,
               model_path: str | None = None, batch_size: int = 8, ablation: str | None = None,
               reference: str | None = None, device: str = "cpu", threads: int | None = None,
               cache: SweepCache | None = None, use_ray: bool = False, ray_workers: int | None = None,
               workers: int = 1, progress: bool = True) -> dict:  # fmt: skip
    """Fill ``cache`` with the sweeps of the given pools; returns counts and timings.

    ``workers`` > 1 runs the sweeps in that many local processes (``use_ray`` on Ray instead).
    The defaults (``batch_size=8``, the model's default ablation and reference) are the
    environments' defaults, so the IDs read exactly these tables.
    """
    return precompute_jobs(model_name, plan(tasks, splits, pool_size), model_path=model_path, batch_size=batch_size,
                           ablation=ablation, reference=reference, device=device, threads=threads, cache=cache,
                           use_ray=use_ray, ray_workers=ray_workers, workers=workers, progress=progress)  # fmt: skip


def precompute_jobs(model_name: str, jobs: Sequence[Job], *, model_path: str | None = None, batch_size: int = 8,
                    ablation: str | None = None, reference: str | None = None, device: str = "cpu",
                    threads: int | None = None, cache: SweepCache | None = None, use_ray: bool = False,
                    ray_workers: int | None = None, workers: int = 1, progress: bool = True) -> dict:  # fmt: skip
    """:func:`precompute` for any list of pool episodes (e.g. several pools of different sizes)."""
    cache = cache or SweepCache()
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    ablation = check_ablation(ablation or default_ablation(model_name))
    t0 = time.perf_counter()
    model = load_model(model_name, path=model_path, device=device, threads=threads)
    ref = reference_batch(model, reference)
    general = general_damage(model, ref, ablation, cache, progress=progress)  # once, on the driver

    def cached(job: Job) -> bool:
        batch = get_task(job.task).batch(model, job.split, batch_size, seed=job.index)
        return cache.load(sweep_key(model, get_task(job.task), batch, ref, ablation)) is not None

    todo = [job for job in jobs if not cached(job)]  # skip what the cache already holds
    bar = _bar(len(todo), progress)
    if use_ray:
        results = _run_ray(todo, model_name, model_path, batch_size, reference, ablation, device, general,
                           ray_workers, bar, cache)  # fmt: skip
    elif workers > 1 and len(todo) > 1:
        results = _run_processes(todo, (model_name, model_path, device), (batch_size, reference, ablation, general),
                                 min(workers, len(todo)), bar, cache)  # fmt: skip
    else:
        results = 0
        for job in todo:
            # Checked again: another process may have swept it meanwhile (the main job sweeps
            # one list from both ends once PPO has finished).
            if not cached(job):
                cache.store(*damages_payload(model, job, batch_size, ref, ablation, general))
                results += 1
            bar.update(1)
    bar.close()
    return {"jobs": len(jobs), "computed": results, "cached_before": len(jobs) - len(todo),
            "seconds": round(time.perf_counter() - t0, 2), "cache": str(cache.directory)}  # fmt: skip


def _bar(total: int, progress: bool):
    from tqdm.auto import tqdm

    from circuit_gym.progress import progress_enabled

    # tqdm shows the ETA; off when not a terminal or switched off (circuit_gym.progress)
    return tqdm(total=total, desc="sweeps", unit="sweep", disable=not progress_enabled(progress))


def _run_ray(todo: list[Job], model_name: str, model_path: str | None, batch_size: int, reference: str | None,
             ablation: str, device: str, general: np.ndarray, workers: int | None, bar, cache: SweepCache) -> int:  # fmt: skip
    try:
        import ray
        from ray.util import ActorPool
    except ImportError:
        raise ValueError("--ray needs Ray: pip install 'circuit-gym[ray]'") from None
    if not todo:
        return 0
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        n = workers or max(1, int(ray.available_resources().get("CPU", 1)))
        options = {"num_cpus": 1, "num_gpus": 1 if device.startswith("cuda") else 0}
        actor_cls = ray.remote(**options)(SweepWorker)
        actors = [actor_cls.remote(model_name, model_path, device) for _ in range(min(n, len(todo)))]
        pool = ActorPool(actors)
        general_ref = ray.put(general)
        results = pool.map_unordered(
            lambda a, job: a.sweep.remote(job, batch_size, reference, ablation, general_ref), todo
        )
        done = 0
        for key, payload in results:
            cache.store(key, payload)  # the driver writes: same files as the serial path
            done += 1
            bar.update(1)
        return done
    finally:
        if started_here:
            ray.shutdown()


_PROCESS_WORKER: dict = {}


def _init_process_worker(model_name: str, model_path: str | None, device: str) -> None:
    _PROCESS_WORKER["worker"] = SweepWorker(model_name, model_path, device)


def _process_sweep(job: Job, batch_size: int, reference: str | None, ablation: str,
                   general: np.ndarray) -> tuple[dict, dict]:  # fmt: skip
    return _PROCESS_WORKER["worker"].sweep(job, batch_size, reference, ablation, general)


def _run_processes(
    todo: list[Job], model_args: tuple, sweep_args: tuple, workers: int, bar, cache: SweepCache
) -> int:
    """Sweeps in ``workers`` spawned processes, each with its own model (one thread); the
    driver writes every result, as on Ray."""
    context = multiprocessing.get_context("spawn")  # no fork of a process holding torch threads
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_init_process_worker,
                             initargs=model_args) as executor:  # fmt: skip
        futures = [executor.submit(_process_sweep, job, *sweep_args) for job in todo]
        for future in as_completed(futures):
            cache.store(*future.result())
            bar.update(1)
    return len(todo)


class SweepWorker:
    """A worker (a Ray actor or a local process): loads the model once (one thread), then
    computes sweeps on request."""

    def __init__(self, model_name: str, model_path: str | None, device: str) -> None:
        self.model = load_model(model_name, path=model_path, device=device, threads=1)
        self.references: dict[str | None, ReferenceBatch] = {}

    def sweep(self, job: Job, batch_size: int, reference: str | None, ablation: str,
              general: np.ndarray) -> tuple[dict, dict]:  # fmt: skip
        if reference not in self.references:  # tokenised once per worker, not per sweep
            self.references[reference] = reference_batch(self.model, reference)
        return damages_payload(self.model, job, batch_size, self.references[reference], ablation, general)
