"""One PPO recipe (Tianshou 2.x) for every environment: config base, builder, training loop, policy adapter.

The single-head (``circuit_gym/baselines/ppo.py``), circuit-building
(``circuit_gym/baselines/circuit_ppo.py``) and Planted (``circuit_gym/baselines/planted_ppo.py``)
PPO agents keep only what is their own: a network, a config (a :class:`PPOConfigBase` with their
defaults and their own fields) and a :class:`Recipe` (how to make their environments, build and
load their network, and score a checkpoint on held-back training batches). What they share lives
here:

- :class:`PPOConfigBase`: the fields every recipe has (environment, pools, the PPO schedule);
- :func:`warm_up_cells`: every training and selection batch of every (model, task) cell built once;
- :class:`MaskInObservation`: the action mask travels with the observation it belongs to
  (Tianshou stores a step's info with the *next* observation);
- :func:`build_algorithm`: a Tianshou ``PPO`` over a categorical actor from a network's
  masked logits and a critic from its state value;
- :func:`train`: the training loop (its environments wrapped in :class:`MaskInObservation`). After every epoch's test step the recipe's selection score
  (a held-back train-split measure, never a held-out one) is put on ``curve.json``; the best
  parameters go to ``policy.pt``; ``checkpoint.pt`` then holds the algorithm (network,
  optimiser, return normalisation), the curve and the best score, so a run started again with
  the same configuration and folder continues from its last finished epoch;
- :class:`PolicyAdapter`: a trained network behind the policy protocols the evaluator and the
  board call (``rank_heads``, ``act``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from circuit_gym.envs.features import DEFAULT_FEATURES
from circuit_gym.envs.model_draw import per_model
from circuit_gym.progress import progress_enabled, progress_iter

CHECKPOINT = "checkpoint.pt"
# Seeds of a resumed run's environments are offset by this times the epochs done, so a resumed
# run never repeats the first run's episodes.
RESUME_SEED_STRIDE = 7919


class MaskInObservation(gym.Wrapper):
    """Observation -> ``{"obs": observation, "mask": info["action_mask"]}`` at every reset
    and step, so the mask always travels with the observation it belongs to."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        n = env.action_space.n
        self.observation_space = gym.spaces.Dict(
            {"obs": env.observation_space, "mask": gym.spaces.Box(0, 1, (n,), np.int8)}
        )

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return {"obs": obs, "mask": info["action_mask"]}, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return {"obs": obs, "mask": info["action_mask"]}, reward, terminated, truncated, info


def as_tensor(obs) -> torch.Tensor:
    return torch.as_tensor(np.asarray(obs), dtype=torch.float32)


class ScorerNet(Protocol):
    """What the trainer and the adapter need of a network: masked action logits
    ``[batch, actions]`` (masked actions at -1e9) and a state value ``[batch, 1]``."""

    def logits(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor: ...

    def state_value(self, obs: torch.Tensor) -> torch.Tensor: ...


@dataclass
class PPOConfigBase:
    """The fields every PPO recipe's config has; a recipe's config subclasses it with its own
    defaults (the fields without one here) and its own fields. ``gamma`` (the discount) is each
    recipe's: a field, or a property of other fields."""

    NETWORKS: ClassVar[tuple[str, ...]] = ()  # the recipe's network names; ``network`` is one of them

    env_id: str
    pool_size: int  # training batches per (model, task) cell: indices 0 .. pool_size - 1
    # Checkpoint selection: per cell, the train-split batches pool_size .. pool_size +
    # selection_episodes - 1, held back from training and never reported.
    selection_episodes: int
    n_envs: int
    epochs: int
    steps_per_epoch: int
    steps_per_collect: int
    lr: float
    ent_coef: float
    network: str
    model: str | None = None  # None: the ID's model
    model_path: str | None = None
    device: str = "cpu"  # of the language model; the small policy network trains on the CPU
    split: str = "train"
    features: str = DEFAULT_FEATURES  # the env's observation columns (``envs.features``)
    batch_size_prompts: int = 8
    minibatch: int = 64
    repeat: int = 4
    hidden: int = 64
    return_scaling: bool = True  # critic targets on a unit scale
    seed: int = 0

    def __post_init__(self) -> None:
        if self.network not in self.NETWORKS:
            raise ValueError(f"network must be one of {self.NETWORKS}, got {self.network!r}")

    @property
    def gamma(self) -> float:
        raise NotImplementedError(f"{type(self).__name__} gives its discount")

    @property
    def selection_pool(self) -> int:
        """The pool size whose batches include the held-back selection batches."""
        return self.pool_size + self.selection_episodes

    def env_kwargs(self, pool_size: int | None = None) -> dict[str, Any]:
        """The keywords of ``gym.make(self.env_id, ...)`` every recipe passes: split, pool (the
        training pool's by default; batch ``i`` is the same batch whatever the pool size), prompts
        per batch, device, observation, and the model where one is named."""
        kwargs: dict[str, Any] = dict(split=self.split, pool_size=pool_size or self.pool_size,
                                      batch_size=self.batch_size_prompts, device=self.device, features=self.features)  # fmt: skip
        if self.model:
            kwargs["model"] = self.model
        if self.model_path:
            kwargs["model_path"] = self.model_path
        return kwargs


def build_algorithm(config: PPOConfigBase, action_space: gym.Space, net: nn.Module):
    """Tianshou's PPO over ``net``: a categorical actor on ``net.logits(obs, mask)`` and a
    critic on ``net.state_value(obs)`` (one module, two heads); discount ``config.gamma``."""
    from tianshou.algorithm import PPO
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.utils.net.common import AbstractDiscreteActor, ModuleWithVectorOutput
    from tianshou.utils.net.discrete import dist_fn_categorical_from_logits

    n_actions = int(action_space.n)

    class Actor(AbstractDiscreteActor):
        def __init__(self) -> None:
            super().__init__(n_actions)
            self.net = net

        def get_preprocess_net(self) -> nn.Module:
            return nn.Identity()

        def forward(self, obs, state=None, info=None):
            return self.net.logits(as_tensor(obs.obs), as_tensor(obs.mask)), state

    class Critic(ModuleWithVectorOutput):
        def __init__(self) -> None:
            super().__init__(1)
            self.net = net

        def forward(self, obs, state=None, info=None):
            return self.net.state_value(as_tensor(obs.obs))

    policy = ProbabilisticActorPolicy(
        actor=Actor(), dist_fn=dist_fn_categorical_from_logits, action_space=action_space,
        deterministic_eval=True, action_scaling=False,
    )  # fmt: skip
    return PPO(
        policy=policy, critic=Critic(), optim=AdamOptimizerFactory(lr=config.lr), ent_coef=config.ent_coef,
        gamma=config.gamma, max_grad_norm=0.5, return_scaling=config.return_scaling,
    )  # fmt: skip


@dataclass(frozen=True)
class Recipe:
    """What the loop needs of one environment's PPO.

    - ``make_env(config, seed)``: training environment ``seed`` (the loop numbers its environments
      ``seed + i``), which the loop wraps in :class:`MaskInObservation` and resets with ``seed``;
    - ``make_net(config, n_features)``: a fresh network for observations of ``n_features`` columns;
    - ``n_features(config)``: the observation's column count under ``config`` (loading);
    - ``warm_up(config, progress)``: compute every training and selection batch once; seconds;
    - ``selection(config, out, reference)``: ``(score, reference)``: ``score(net)`` is a dict
      holding ``score_key`` (higher = better) and whatever the curve should show beside it;
      ``reference`` is anything the score needs that a resumed run must reuse (None if nothing);
    - ``tensorboard``: write TensorBoard logs under ``out/tensorboard``.
    """

    config_type: type[PPOConfigBase]
    score_key: str
    make_env: Callable[[Any, int], gym.Env]
    make_net: Callable[[Any, int], nn.Module]
    n_features: Callable[[Any], int]
    warm_up: Callable[[Any, bool | None], float]
    selection: Callable[[Any, Path, Any], tuple[Callable[[nn.Module], dict], Any]]
    tensorboard: bool = False


def cells(env: gym.Env) -> list[tuple[str, gym.Env, str]]:
    """Every (model, task) cell of ``env`` once, as ``(label, single-model env, task)``: the label
    is the task on a single-model environment, ``model/task`` on one that draws the model
    (``circuit_gym.envs.model_draw.per_model``). Warm-up and checkpoint selection visit these,
    so a model-draw environment's selection averages over its (model, task) cells."""
    return [(task if model is None else f"{model}/{task}", inner, task)
            for model, inner in per_model(env).items() for task in inner.unwrapped.tasks]  # fmt: skip


def selection_indices(config: PPOConfigBase) -> range:
    """The held-back train-split batches checkpoints are chosen on (never trained on, never reported)."""
    return range(config.pool_size, config.selection_pool)


def warm_up_cells(env: gym.Env, what: str, progress: bool | None = None,
                  visit: Callable[[gym.Env], object] | None = None) -> float:  # fmt: skip
    """Reset every batch of every (model, task) cell of ``env`` once (computing and caching what an
    episode needs), then ``visit(base_env)`` if given; seconds taken. ``what`` names the bar."""
    start = time.time()
    for label, inner, task in cells(env):
        base = inner.unwrapped
        for i in progress_iter(range(base.pool_size), f"{what} ({label})", unit="batch", requested=progress):
            base.reset(options={"task": task, "batch_index": i})
            if visit is not None:
                visit(base)
    return time.time() - start


def training_env(recipe: Recipe, config: PPOConfigBase, seed: int) -> gym.Env:
    """The recipe's training environment ``seed``, its mask carried in the observation, reset with ``seed``."""
    env = MaskInObservation(recipe.make_env(config, seed))
    env.reset(seed=seed)
    return env


def load_checkpoint(config, out: Path) -> dict | None:
    """The run's last epoch checkpoint if ``out`` holds one of the same configuration, else None;
    ValueError if ``out`` holds a run of another configuration (nothing is overwritten)."""
    path = out / CHECKPOINT
    if not path.exists():
        return None
    wanted = json.loads(json.dumps(asdict(config)))
    # a field added since the run started has its default there
    saved = {
        **json.loads(json.dumps(asdict(type(config)()))),
        **json.loads((out / "config.json").read_text()),
    }
    saved.pop("epochs"), wanted.pop("epochs")  # more epochs extend a run
    if saved != wanted:
        diff = sorted(k for k in saved.keys() | wanted.keys() if saved.get(k) != wanted.get(k))
        raise ValueError(f"{out} holds a run with another configuration ({', '.join(diff)}): "
                         "resume it with that configuration or train into another folder")  # fmt: skip
    return torch.load(path, weights_only=False)  # our own file: the optimiser and RunningMeanStd states


def train(config: PPOConfigBase, recipe: Recipe, out: Path, progress: bool | None = True) -> dict:
    """Train PPO; writes ``policy.pt`` (best selection score), ``policy_last.pt``, ``config.json``,
    ``curve.json`` (per epoch: env steps, test return, the selection score and its details),
    ``checkpoint.pt`` and ``train_summary.json`` to ``out``.

    Resumable: calling ``train`` again with the same configuration and ``out`` continues from the
    last finished epoch (new episodes from there, so a resumed run is not bitwise the
    uninterrupted one); more ``epochs`` extend a run. A finished run is left as it is."""
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OnPolicyTrainerParams

    out.mkdir(parents=True, exist_ok=True)
    resumed = load_checkpoint(config, out)
    if resumed is not None and resumed["epochs_done"] >= config.epochs:
        return json.loads((out / "train_summary.json").read_text())
    (out / "config.json").write_text(json.dumps(asdict(config), indent=1))
    warm_seconds = recipe.warm_up(config, progress)

    def env_fn(seed: int) -> Callable[[], gym.Env]:
        return lambda: training_env(recipe, config, seed)

    epochs_done = resumed["epochs_done"] if resumed else 0
    seed = config.seed + RESUME_SEED_STRIDE * epochs_done
    train_envs = DummyVectorEnv([env_fn(seed + i) for i in range(config.n_envs)])
    test_envs = DummyVectorEnv([env_fn(seed + 1000 + i) for i in range(config.n_envs)])
    train_envs.seed(seed)
    test_envs.seed(seed + 1000)
    probe = env_fn(0)()
    score, reference = recipe.selection(config, out, resumed["reference"] if resumed else None)
    # Seeded here, after the environments exist: what ran before in this process (a model
    # loaded or not, pools cached or not) cannot change the network or the sampled actions.
    torch.manual_seed(config.seed)
    np.random.seed(config.seed)
    net = recipe.make_net(config, probe.observation_space["obs"].shape[-1])
    algorithm = build_algorithm(config, probe.action_space, net)
    curve: list[dict] = []
    state = {"offset": 0, "best": -np.inf, "epochs_done": epochs_done, "seconds": 0.0}
    if resumed:
        algorithm.load_state_dict(resumed["algorithm"])
        if hasattr(algorithm, "ret_rms"):
            algorithm.ret_rms = resumed["ret_rms"]
        torch.set_rng_state(resumed["torch_rng"])
        curve = resumed["curve"]
        state.update(offset=resumed["env_steps"], best=resumed["best"], seconds=resumed["train_seconds"])

    def on_test(stats: CollectStats) -> float:
        env_steps = state["offset"] + collector.collect_step  # training steps so far (the trainer resets it)
        if resumed and curve and env_steps == curve[-1]["env_steps"]:
            return state["best"]  # the resumed parameters' test, already on the curve
        mean = float(stats.returns_stat.mean) if stats.returns_stat is not None else float("nan")
        selection = score(net)
        curve.append({"env_steps": env_steps, "test_return": mean, **selection})
        if selection[recipe.score_key] > state["best"]:
            state["best"] = selection[recipe.score_key]
            torch.save(net.state_dict(), out / "policy.pt")
        if len(curve) > 1:
            state["epochs_done"] += 1
        (out / "curve.json").write_text(json.dumps(curve, indent=1))
        checkpoint = {"algorithm": algorithm.state_dict(), "ret_rms": getattr(algorithm, "ret_rms", None),
                      "torch_rng": torch.get_rng_state(), "curve": curve, "env_steps": env_steps,
                      "best": state["best"], "epochs_done": state["epochs_done"], "reference": reference,
                      "train_seconds": state["seconds"] + time.time() - start}  # fmt: skip
        torch.save(checkpoint, out / (CHECKPOINT + ".tmp"))
        (out / (CHECKPOINT + ".tmp")).replace(out / CHECKPOINT)  # never a half-written checkpoint
        return selection[recipe.score_key]

    collector = Collector(algorithm, train_envs, VectorReplayBuffer(config.steps_per_collect, config.n_envs))
    test_collector = Collector(algorithm, test_envs)
    params = OnPolicyTrainerParams(
        training_collector=collector, test_collector=test_collector, max_epochs=config.epochs - epochs_done,
        epoch_num_steps=config.steps_per_epoch, collection_step_num_env_steps=config.steps_per_collect,
        batch_size=config.minibatch, update_step_num_repetitions=config.repeat,
        test_step_num_episodes=config.n_envs, show_progress=progress_enabled(progress), verbose=False,
        compute_score_fn=on_test, **_tensorboard(out, recipe.tensorboard and not resumed),
    )  # fmt: skip
    start = time.time()
    algorithm.run_training(params)
    summary = {
        "warm_up_seconds": warm_seconds, "train_seconds": state["seconds"] + time.time() - start,
        f"best_{recipe.score_key}": state["best"], "selection_batch_indices": list(selection_indices(config)),
        "resumed_after_epochs": epochs_done or None,
    }  # fmt: skip
    torch.save(net.state_dict(), out / "policy_last.pt")
    (out / "train_summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _tensorboard(out: Path, fresh: bool) -> dict:
    """The trainer's logger argument: TensorBoard logs in ``out/tensorboard`` for a fresh run
    (earlier event files there removed: they would show as a second, overlapping curve)."""
    if not fresh:
        return {}
    from tianshou.utils import TensorboardLogger
    from torch.utils.tensorboard import SummaryWriter

    for stale in (out / "tensorboard").glob("events.out.tfevents.*"):
        stale.unlink()
    writer = SummaryWriter(str(out / "tensorboard"))
    return {"logger": TensorboardLogger(writer, training_interval=64, update_interval=64)}


def load_network(recipe: Recipe, directory: str | Path, weights: str = "policy.pt") -> nn.Module:
    """The network a run in ``directory`` saved (its ``config.json`` and ``weights``)."""
    directory = Path(directory)
    config = recipe.config_type(**json.loads((directory / "config.json").read_text()))
    net = recipe.make_net(config, recipe.n_features(config))
    net.load_state_dict(torch.load(directory / weights, weights_only=True))
    return net.eval()


class PolicyAdapter:
    """A trained network behind the policy protocols: ``rank_heads(observation)`` (single-head
    and circuit track) and ``act(observation, action_mask)`` (circuit track). It reads the
    observation only; column ``taken_column`` marks heads already taken (ablated, or in the
    circuit), which rank last."""

    TAKEN_SCORE = -1e6  # heads already taken
    SCORE_FLOOR = -1e5  # every other head scores above them (the protocol wants finite scores)

    def __init__(self, net: nn.Module, taken_column: int) -> None:
        self.net, self.taken_column = net, taken_column

    @torch.no_grad()
    def logits(self, observation: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """The network's action logits for one observation (masked actions at -1e9), float64;
        computed in evaluation mode, the network's mode restored afterwards."""
        was = self.net.training
        self.net.eval()
        m = None if mask is None else as_tensor(mask)[None]
        out = self.net.logits(as_tensor(observation)[None], m)[0].numpy().astype(np.float64)
        self.net.train(was)
        return out

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.argmax(self.logits(observation, np.asarray(action_mask))))

    def rank_heads(self, observation: np.ndarray) -> np.ndarray:
        """Head logits (the first ``n_heads`` actions); heads already taken last."""
        logits = self.logits(observation)[: observation.shape[0]]
        taken = np.asarray(observation)[:, self.taken_column] > 0.5
        return np.where(taken, self.TAKEN_SCORE, np.maximum(logits, self.SCORE_FLOOR))


def _parse_bool(text: str) -> bool:
    if text.lower() not in ("true", "false", "1", "0"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text.lower() in ("true", "1")


def parse_config(config_type: type, default_out: str, argv: list[str] | None, description: str):
    """``(config, out)`` from the command line: one option per config field (``--pool-size``...)."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path(default_out))
    for name, value in asdict(config_type()).items():
        kind = _parse_bool if isinstance(value, bool) else type(value) if value is not None else str
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=value)
    args = vars(parser.parse_args(argv))
    out = args.pop("out")
    return config_type(**args), out


def main(recipe: Recipe, default_out: str, argv: list[str] | None, description: str) -> None:
    """A recipe's command line: its config from the options (:func:`parse_config`), trained into ``--out``."""
    config, out = parse_config(recipe.config_type, default_out, argv, description)
    print(train(config, recipe, out))
