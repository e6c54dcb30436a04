"""PPO (Tianshou 2.x) on the circuit-building Multi ID: one policy that builds circuits on any task.

The network is the single-head PPO's :class:`~circuit_gym.baselines.ppo.HeadScorer` (a logit per
head from its own feature row and, through self-attention, every other head's: no head index,
so it applies to tasks it never saw) plus one STOP logit from the pooled head embeddings.
Illegal actions are masked with the environment's ``info["action_mask"]``, carried next to the
observation by :class:`~circuit_gym.baselines.ppo.MaskInObservation`.

Checkpoints are chosen on the *training* tasks only: after every epoch the deterministic
policy builds circuits on train-split batches ``pool_size .. pool_size + selection_episodes - 1``
of each training task (held back: never trained on, never reported), and ``policy.pt`` keeps
the parameters with the best CPR there relative to exact greedy search's on the same batches
(per task, ratio of sums; then the mean over tasks; greedy = 1), computed once before training.

    python -m circuit_gym.baselines.circuit_ppo --out runs/circuit_ppo --epochs 6
    python -m circuit_gym.baselines.circuit_ppo --out runs/circuit_ppo --epochs 10   # resumes, extends
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from torch import nn

import circuit_gym  # noqa: F401  (registers the environment IDs)
from circuit_gym.baselines.circuit_solvers import GreedySearch, play_episode
from circuit_gym.baselines.ppo import HeadScorer, MaskInObservation, _as_tensor, _parse_bool
from circuit_gym.circuits import cpr, faithfulness_curve
from circuit_gym.envs.circuit_building import MEMBER_COLUMN, N_CIRCUIT_FEATURES, CircuitBuildingEnv
from circuit_gym.envs.circuit_registration import circuit_env_id
from circuit_gym.progress import progress_enabled, progress_iter

REWARDS = ("gain", "area")


class AreaReward(gym.Wrapper):
    """Reward = the exact faithfulness of the circuit after each step (``info["faithfulness"]``)
    minus the env's ``alpha`` per head added; 0 at STOP. An episode's return is then the area
    under its faithfulness-vs-size curve (CPR's shape), instead of f of the final circuit."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        base = self.env.unwrapped
        if int(action) == base.stop_action:
            return obs, 0.0, terminated, truncated, info
        return obs, float(info["faithfulness"]) - base.alpha, terminated, truncated, info


@dataclass
class CircuitPPOConfig:
    env_id: str = circuit_env_id("Toy", "Multi")  # the benchmark's training tasks, embedded model
    model: str | None = None  # None: the ID's model
    model_path: str | None = None
    device: str = "cpu"
    split: str = "train"
    pool_size: int = 16  # training batches per task: indices 0 .. pool_size - 1
    selection_episodes: int = 2  # held-back batches per task for checkpoint selection
    batch_size_prompts: int = 8
    budget: int = 16
    # Training's cost per head. 0, not the env's 0.01: with a cost, adding a random head pays
    # -alpha and STOP pays 0, so an untrained policy learns to STOP at once (seen in a 256-step
    # smoke run: every circuit empty) before it finds the few heads that raise faithfulness;
    # CPR, the selection score, does not charge for size.
    alpha: float = 0.0
    n_envs: int = 4
    epochs: int = 4
    steps_per_epoch: int = 512
    steps_per_collect: int = 128
    minibatch: int = 64
    repeat: int = 4
    lr: float = 1e-3
    ent_coef: float = 0.03
    gamma: float = 1.0  # finite episodes; the return is J(final) - J(empty)
    hidden: int = 64
    return_scaling: bool = True  # rewards are faithfulness changes, ~0.01-1
    seed: int = 0
    # Training reward: "gain" = the env's reward (change of faithfulness; with gamma 1 the return
    # is f of the final circuit); "area" = f(C_t) after every head added (AreaReward: the return
    # is the area under the episode's faithfulness curve, as CPR is, so early heads count more).
    reward: str = "gain"

    def __post_init__(self) -> None:
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {self.reward!r}")


class CircuitScorer(nn.Module):
    """A logit per head (:class:`HeadScorer`) and a STOP logit; the critic is HeadScorer's."""

    def __init__(self, n_features: int = N_CIRCUIT_FEATURES, hidden: int = 64) -> None:
        super().__init__()
        self.heads = HeadScorer(n_features=n_features, hidden=hidden)
        self.stop = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def logits(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``[batch, heads + 1]``: one logit per head, then STOP; masked actions get -1e9."""
        x = self.heads.embed(obs)
        pooled = torch.cat([x.mean(-2), x.max(-2).values], dim=-1)
        out = torch.cat([self.heads.logits(obs), self.stop(pooled)], dim=-1)
        return out if mask is None else out.masked_fill(mask == 0, -1e9)

    def state_value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.heads.state_value(obs)


def build_algorithm(config: CircuitPPOConfig, action_space: gym.Space, net: CircuitScorer):
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
            return self.net.logits(_as_tensor(obs.obs), _as_tensor(obs.mask)), state

    class Critic(ModuleWithVectorOutput):
        def __init__(self) -> None:
            super().__init__(1)
            self.net = net

        def forward(self, obs, state=None, info=None):
            return self.net.state_value(_as_tensor(obs.obs))

    policy = ProbabilisticActorPolicy(
        actor=Actor(), dist_fn=dist_fn_categorical_from_logits, action_space=action_space,
        deterministic_eval=True, action_scaling=False,
    )  # fmt: skip
    return PPO(
        policy=policy, critic=Critic(), optim=AdamOptimizerFactory(lr=config.lr), ent_coef=config.ent_coef,
        gamma=config.gamma, max_grad_norm=0.5, return_scaling=config.return_scaling,
    )  # fmt: skip


class CircuitPPOSolver:
    """A trained :class:`CircuitScorer` as a circuit-track solver (deterministic: the best legal action)."""

    name = "ppo"

    def __init__(self, net: CircuitScorer) -> None:
        self.net = net

    @classmethod
    def load(cls, directory: str | Path) -> CircuitPPOSolver:
        directory = Path(directory)
        config = CircuitPPOConfig(**json.loads((directory / "config.json").read_text()))
        state = torch.load(directory / "policy.pt", weights_only=True)
        net = CircuitScorer(n_features=state["heads.embed.0.weight"].shape[1], hidden=config.hidden)
        net.load_state_dict(state)
        return cls(net.eval())

    def begin(self, env: CircuitBuildingEnv) -> int:
        return 0  # it reads the observation only

    @torch.no_grad()
    def _logits(self, obs: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
        m = None if mask is None else _as_tensor(mask)[None]
        return self.net.logits(_as_tensor(obs)[None], m)[0].numpy().astype(np.float64)

    def act(self, env, obs, info) -> int:
        was = self.net.training
        self.net.eval()
        action = int(np.argmax(self._logits(obs, info["action_mask"])))
        self.net.train(was)
        return action

    def scores(self, env, obs, info) -> np.ndarray:
        """The head logits of the final state (heads outside the circuit order the rest of the ranking)."""
        was = self.net.training
        self.net.eval()
        logits = self._logits(obs, None)[: env.n_total]
        self.net.train(was)
        return np.where(obs[:, MEMBER_COLUMN] > 0.5, -np.inf, logits)


class CircuitPPOPolicy:
    """A trained :class:`CircuitScorer` behind the circuit-building policy protocol
    (:class:`circuit_gym.policy.CircuitBuilder`): it sees the observation and the legal actions only."""

    def __init__(self, net: CircuitScorer) -> None:
        self.solver = CircuitPPOSolver(net)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.argmax(self.solver._logits(observation, np.asarray(action_mask))))

    def rank_heads(self, observation: np.ndarray) -> np.ndarray:
        """Head logits; heads already in the circuit last (finite, as the protocol asks)."""
        logits = self.solver._logits(observation, None)[: observation.shape[0]]
        return np.where(observation[:, MEMBER_COLUMN] > 0.5, -1e6, np.maximum(logits, -1e5))


def load_policy(checkpoint: str) -> CircuitPPOPolicy:
    """Factory for ``circuit-gym leaderboard score --track circuit --policy
    circuit_gym.baselines.circuit_ppo:load_policy --checkpoint DIR``."""
    return CircuitPPOPolicy(CircuitPPOSolver.load(checkpoint).net)


def make_env(config: CircuitPPOConfig, pool_size: int | None = None, oracle_info: bool = False) -> gym.Env:
    """The configured environment; batch ``i`` is the same whatever ``pool_size``."""
    kwargs = dict(split=config.split, pool_size=pool_size or config.pool_size, budget=config.budget,
                  alpha=config.alpha, batch_size=config.batch_size_prompts, device=config.device,
                  oracle_info=oracle_info)  # fmt: skip
    if config.model:
        kwargs["model"] = config.model
    if config.model_path:
        kwargs["model_path"] = config.model_path
    return gym.make(config.env_id, **kwargs)


def selection_indices(config: CircuitPPOConfig) -> range:
    """The held-back train-split batches checkpoints are chosen on (never trained on, never reported)."""
    return range(config.pool_size, config.pool_size + config.selection_episodes)


def episode_cpr(env: gym.Env, solver, task: str, index: int) -> float:
    """CPR of the circuit ``solver`` builds on one batch (signed curve only: no random rankings)."""
    row = play_episode(env, solver, task, index)
    return cpr(faithfulness_curve(env.unwrapped.state.runner, row["ranking"]))


def greedy_reference(env: gym.Env, indices: range) -> dict[str, list[float]]:
    """Exact greedy search's CPR on each held-back batch of each task: the selection score's 1."""
    return {
        task: [episode_cpr(env, GreedySearch(), task, i) for i in indices] for task in env.unwrapped.tasks
    }


# What greedy search's selection reference depends on: the episodes and the env, not the learner.
REFERENCE_FIELDS = ("env_id", "model", "model_path", "device", "split", "pool_size", "selection_episodes",
                    "batch_size_prompts", "budget", "alpha")  # fmt: skip
REFERENCE_CACHE = "greedy_selection_reference.json"


def cached_greedy_reference(config: CircuitPPOConfig, env: gym.Env, cache: Path,
                            known: dict[str, list[float]] | None = None) -> dict[str, list[float]]:  # fmt: skip
    """:func:`greedy_reference` on the selection batches, read from ``cache`` when a run with the
    same episodes (``REFERENCE_FIELDS``) wrote it: every seed of a sweep shares it (greedy search
    is deterministic and its ~2,000 passes per batch are most of a short run's cost). ``known``:
    a resumed run's reference, written to the cache if it is not there."""
    key = {k: getattr(config, k) for k in REFERENCE_FIELDS}
    entries = json.loads(cache.read_text()) if cache.exists() else []
    for entry in entries:
        if entry["key"] == key:
            return entry["reference"]
    reference = known if known is not None else greedy_reference(env, selection_indices(config))
    cache.write_text(json.dumps([*entries, {"key": key, "reference": reference}], indent=1))
    return reference


def selection_cpr(
    net: CircuitScorer, env: gym.Env, indices: range, reference: dict[str, list[float]]
) -> dict:
    """The checkpoint-selection score: per task, the policy's CPR over greedy search's (ratio of
    sums over ``indices``), then the mean over tasks, so greedy = 1 on every task. Raw CPR can
    differ by an order of magnitude between tasks (faithfulness leaves [0, 1] where
    m(full) - m(empty) is small), and then its plain mean would mostly measure the task mix."""
    solver = CircuitPPOSolver(net)
    raw, relative = {}, {}
    for task in env.unwrapped.tasks:
        values = [episode_cpr(env, solver, task, i) for i in indices]
        raw[task] = float(np.mean(values))
        relative[task] = float(np.sum(values) / np.sum(reference[task]))
    return {"selection_score": float(np.mean(list(relative.values()))), "cpr_vs_greedy_per_task": relative,
            "cpr_per_task": raw, "greedy_cpr_per_task": {t: float(np.mean(v)) for t, v in reference.items()}}  # fmt: skip


def warm_up(config: CircuitPPOConfig, progress: bool | None = None) -> float:
    """Compute every training and selection batch's features and circuit runner once."""
    start = time.time()
    base = make_env(config, config.pool_size + config.selection_episodes).unwrapped
    for task in base.tasks:
        for i in progress_iter(
            range(base.pool_size), f"circuit runners ({task})", unit="batch", requested=progress
        ):
            base.reset(options={"task": task, "batch_index": i})
    return time.time() - start


CHECKPOINT = "checkpoint.pt"


def _load_checkpoint(config: CircuitPPOConfig, out: Path) -> dict | None:
    """The run's last epoch checkpoint if ``out`` holds one of the same configuration, else None;
    ValueError if ``out`` holds a run of another configuration (nothing is overwritten)."""
    path = out / CHECKPOINT
    if not path.exists():
        return None
    wanted = json.loads(json.dumps(asdict(config)))
    # a field added since the run started has its default there
    saved = {
        **json.loads(json.dumps(asdict(CircuitPPOConfig()))),
        **json.loads((out / "config.json").read_text()),
    }
    saved.pop("epochs"), wanted.pop("epochs")  # more epochs extend a run
    if saved != wanted:
        diff = sorted(k for k in saved.keys() | wanted.keys() if saved.get(k) != wanted.get(k))
        raise ValueError(f"{out} holds a run with another configuration ({', '.join(diff)}): "
                         "resume it with that configuration or train into another folder")  # fmt: skip
    return torch.load(path, weights_only=False)  # our own file: the optimiser and RunningMeanStd states


def train(config: CircuitPPOConfig, out: Path, progress: bool = True) -> dict:
    """Train PPO; writes ``policy.pt`` (best selection score, :func:`selection_cpr`), ``policy_last.pt``,
    ``config.json``, ``curve.json`` (per epoch: env steps, test return, selection score = CPR
    relative to greedy search, greedy at 1) and ``train_summary.json``.

    Resumable: after every epoch's selection test ``checkpoint.pt`` holds the algorithm (network,
    optimiser, return normalisation), the curve and the best score so far; calling ``train`` again
    with the same configuration and ``out`` continues from the last finished epoch (new episodes
    from there, so a resumed run is not bitwise the uninterrupted one). A finished run is left as is."""
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OnPolicyTrainerParams

    out.mkdir(parents=True, exist_ok=True)
    resumed = _load_checkpoint(config, out)
    if resumed is not None and resumed["epochs_done"] >= config.epochs:
        return json.loads((out / "train_summary.json").read_text())
    (out / "config.json").write_text(json.dumps(asdict(config), indent=1))
    warm_seconds = warm_up(config, progress)

    def env_fn(seed: int):
        def make() -> gym.Env:
            base = make_env(config)
            env = MaskInObservation(AreaReward(base) if config.reward == "area" else base)
            env.reset(seed=seed)
            return env

        return make

    epochs_done = resumed["epochs_done"] if resumed else 0
    # A resumed run's environments are seeded apart from the first run's (no repeated episodes).
    seed = config.seed + 7919 * epochs_done
    train_envs = DummyVectorEnv([env_fn(seed + i) for i in range(config.n_envs)])
    test_envs = DummyVectorEnv([env_fn(seed + 1000 + i) for i in range(config.n_envs)])
    train_envs.seed(seed)
    test_envs.seed(seed + 1000)
    probe = env_fn(0)()
    selection_env = make_env(config, config.pool_size + config.selection_episodes)
    reference = (
        resumed["reference"]
        if resumed
        else cached_greedy_reference(config, selection_env, out.parent / REFERENCE_CACHE)
    )
    torch.manual_seed(config.seed)  # after the environments: what ran before cannot change the network
    np.random.seed(config.seed)
    net = CircuitScorer(n_features=probe.observation_space["obs"].shape[-1], hidden=config.hidden)
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
        selection = selection_cpr(net, selection_env, selection_indices(config), reference)
        curve.append({"env_steps": env_steps, "test_return": mean, **selection})
        if selection["selection_score"] > state["best"]:
            state["best"] = selection["selection_score"]
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
        return selection["selection_score"]

    collector = Collector(algorithm, train_envs, VectorReplayBuffer(config.steps_per_collect, config.n_envs))
    test_collector = Collector(algorithm, test_envs)
    params = OnPolicyTrainerParams(
        training_collector=collector, test_collector=test_collector, max_epochs=config.epochs - epochs_done,
        epoch_num_steps=config.steps_per_epoch, collection_step_num_env_steps=config.steps_per_collect,
        batch_size=config.minibatch, update_step_num_repetitions=config.repeat,
        test_step_num_episodes=config.n_envs, show_progress=progress_enabled(progress), verbose=False,
        compute_score_fn=on_test,
    )  # fmt: skip
    start = time.time()
    algorithm.run_training(params)
    summary = {
        "warm_up_seconds": warm_seconds, "train_seconds": state["seconds"] + time.time() - start,
        "best_selection_score": state["best"], "selection_batch_indices": list(selection_indices(config)),
        "resumed_after_epochs": epochs_done or None,
    }  # fmt: skip
    torch.save(net.state_dict(), out / "policy_last.pt")
    (out / "train_summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("runs/circuit_ppo"))
    for name, value in asdict(CircuitPPOConfig()).items():
        kind = _parse_bool if isinstance(value, bool) else type(value) if value is not None else str
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=value)
    args = vars(parser.parse_args(argv))
    out = args.pop("out")
    print(train(CircuitPPOConfig(**args), out))


if __name__ == "__main__":
    main()
