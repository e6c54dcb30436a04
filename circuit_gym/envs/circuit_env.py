"""The single-agent circuit-discovery environment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from circuit_gym.ablation.contrastive import contrastive_reward
from circuit_gym.envs.arguments import (
    check_action,
    check_choice,
    check_count,
    check_step_order,
    check_weight,
    common_arguments,
    reset_choice,
    shared_docs,
)
from circuit_gym.envs.causal_features import episode_causal, single_head_columns, single_head_passes
from circuit_gym.envs.features import (
    ABLATED_COLUMN,
    DEFAULT_FEATURES,
    FEATURE_BOUND,
    FEATURE_SETS,
    N_FEATURES,
    N_STATIC,
)
from circuit_gym.envs.head_env import HeadEnv
from circuit_gym.envs.pool import EnvPools, Episode, shared_model
from circuit_gym.envs.render import render_grid
from circuit_gym.heads import head_name
from circuit_gym.tasks.reference import REFERENCE_CHOICES

# Fields computed from the oracle (exhaustive) tables, and the task name: HideOracleInfo removes
# them. "oracle_*", "top1_hit" and "per_head_reward" are of the current step (marginal table
# from the set already ablated); "clean_oracle_*" of the single-head table of the batch.
ORACLE_INFO_KEYS = (
    "task", "oracle_head", "oracle_reward", "oracle_recovery", "top1_hit", "per_head_reward",
    "clean_oracle_head", "clean_oracle_reward",
)  # fmt: skip


@shared_docs
class CircuitDiscoveryEnv(HeadEnv):
    """Find the attention heads whose ablation damages a task most, relative to ordinary text.

    ## Description
    Circuit discovery as a bandit / short-horizon control problem. Each episode draws one
    prompt batch of a task (the eight built-in ones, or any registered task) from a
    finite seeded pool. The agent ablates attention heads one at a time; an ablation stays
    in place for the rest of the episode. A good agent ablates the heads the task depends
    on (its circuit's bottlenecks) and not the heads every prediction depends on. The
    observation never names the task, so one policy can be scored on held-out tasks.

    ## Action Space
    ``Discrete(n_layers * n_heads)``: the flat head id ``layer * n_heads + head`` (144 actions
    on the embedded model and on GPT-2 small, the same ids; 16 on ``"tiny"``). Re-choosing an ablated head is allowed and
    is a no-op with reward 0; ``info["action_mask"]`` marks the heads still available
    (int8), and ``action_masks()`` returns the same as booleans (sb3-contrib's ``MaskablePPO`` reads it).
    An action is one integer (a Python or numpy integer); anything else is a ``TypeError``.

    ## Observation Space
    ``Box(-10, 10, (n_layers * n_heads, 12), float32)``: one row per head. Columns 0-9 are
    computed once per episode from the clean run on its prompts (attention to BOS, to the
    previous token, to earlier copies of the current token, to the induction stripe,
    attention entropy, the same at the final position, a copying score, output norm,
    depth); column 10 is 1 for heads already ablated, column 11 the fraction of the
    episode's steps taken. ``circuit_gym.envs.features`` documents each feature. No task
    identity, no answer labels. With ``features="prediction"`` the shape is
    ``(n_layers * n_heads, 15)``: columns 12-14 add each head's effect on the model's own
    top-1 minus top-2 logit at the final position (direct, and by attribution patching) and
    its general damage (nats on the reference batch); the model's own prediction, never the
    answer label. With ``features="causal"`` columns 12-14 are each head's attribution-patching
    and EAP-IG scores under the model's own top-1 vs top-2 margin at the metric positions (a
    task-free metric) and the steps left; ``info["feature_passes"]`` counts the passes they cost.

    ## Rewards
    The marginal contrastive reward of the step, ``R(S + a) - R(S)``, where ``S`` is the
    set already ablated and ``R(S) = task_damage(S) - lam * general_damage(S)``
    (``circuit_gym.ablation.contrastive_reward``):

    - ``task_damage``: the drop of the task metric, averaged over the batch, in the task's
      unit (``circuit_gym.tasks.get_task(name).unit``): logit difference for IOI (logit of
      the indirect object minus logit of the subject) and docstring (logit of the next
      parameter minus the mean logit of the documented ones); log-probability in nats for
      induction (mean log-prob of the repeated tokens);
    - ``general_damage``: the rise of next-token loss on a fixed reference batch, in nats.

    So the reward is in the task's unit, ``lam`` converting nats of general damage into it.
    Positive = the head matters more for the task than for text in general. The rewards of
    an episode add up to ``R`` of the final set. No reward shaping, no discount assumptions.

    ## Starting State
    ``reset`` picks the task uniformly from ``tasks`` unless ``options["task"]`` names one
    (any registered task), then a batch uniformly from the task's pool of ``pool_size``
    batches unless ``options["batch_index"]`` gives one; both draws use ``self.np_random``
    (seeded by ``reset(seed=...)``). Batch ``i`` of a pool is always the same prompts (seed
    ``i``). Nothing is ablated at the start.

    ## Episode End
    Terminated after ``episode_length`` steps (no-op steps count). Never truncated by the
    environment itself.
    {call_order}

    ## Arguments
    {common_arguments}
    | `episode_length` | steps (ablations) per episode, 1 to the number of heads | `1` |
    | `lam` | weight of general damage in the reward (task unit per nat) | `1.0` |
    | `ablation` | `"zero"`, `"mean"` or `"resample"`: what replaces a head's output | `"resample"` on embedded models, `"zero"` otherwise |
    | `batch_size` | prompts per batch | `8` |
    | `pool_size` | batches per task and split | `32` |
    | `cache` | reuse single-head tables from the disk cache and ablated-set results in memory | `True` |
    | `model_path` | directory of the model's weights | `None` (the loader's search) |
    | `reference` | the general-damage reference batch (`"stdlib+taskstyle"`, `"prose"`, ...) | `None` (the model's default) |
    | `render_mode` | `None`, `"ansi"` (one line of text) or `"rgb_array"` (the layer x head grid) | `None` |
    | `oracle_info` | compute the oracle fields of `info` (see Info) | `True` |
    | `device` | torch device of the model: `"cpu"`, `"cuda"`, `"cuda:1"`, `"mps"` | `"cpu"` |
    | `features` | observation columns: `"attention"` (12), `"prediction"` (15) or `"causal"` (15) | `"attention"` |

    ## Info
    Every ``reset`` and ``step``: ``action_mask`` (int8 per head, 1 = not yet ablated),
    ``task`` and ``batch_index``. Every ``step`` adds ``task_damage`` and ``general_damage``
    (of the whole ablated set) and, unless ``oracle_info=False``, the oracle fields. These are
    **of the current step**: the table is the marginal reward ``R(S + h) - R(S)`` of every
    head ``h`` not in ``S``, the set ablated before this step.

    - ``per_head_reward``: that table, float64 per head; NaN for heads already in ``S``
      (choosing one is a no-op with reward 0);
    - ``oracle_head`` / ``oracle_reward``: the best head of this step and its reward;
    - ``oracle_recovery``: this step's reward / ``oracle_reward`` (NaN when ``oracle_reward``
      is not positive; ``circuit_gym.evaluation.oracle_recovery``);
    - ``top1_hit``: the action is this step's ``oracle_head``;
    - ``clean_oracle_head`` / ``clean_oracle_reward``: the best single head of the batch
      (the single-head table, the same for every step).

    On the first step ``S`` is empty and the step's table is the single-head table, read from
    the cache (the fast path). From the second step on it costs one exact ablation per head
    not yet ablated (144 on the embedded model and GPT-2, 16 on "tiny"); results are memoised per set
    when ``cache=True``. ``HideOracleInfo`` removes the oracle fields and turns their
    computation off.

    ## Version History
    * Every version, without a version bump (bug fixes of Gymnasium's contract): ``step`` after the
      end of an episode raises ``ResetNeededError`` (it used to go on, returning new rewards with
      ``terminated=True``), so does ``step`` before ``reset`` (a ``RuntimeError`` as before); an
      action of the wrong type is a ``TypeError`` (it was a range message); ``episode_length`` and
      ``lam`` refuse ``True``; ``spec.max_episode_steps`` is set (the number of heads); ``action_masks()``.
    * v4: the embedded model ``"toy"`` is retrained (run F) so that its induction circuit copies
      any token, not only the third of the ids its training repeated; ``induction`` passes its
      inclusion gate. Run D's model stays embedded as ``"toy_d"`` behind the v2/v3 Toy IDs,
      which keep their behaviour. ``InductionSeen`` gets no v4 (on the new model it measures
      what ``Induction`` measures). Multi samples the training tasks every board has trained on
      since (agreement, docstring, greater-than, IOI, pronoun).
      GPT2 IDs: same behaviour as v2/v3 except Multi's task set.
    * v3: IDs for the ``induction_seen`` task (``InductionSeen``: induction over the token ids
      the embedded model was trained to copy; ``induction`` copies ids it never saw copied
      and fails its inclusion gate there); Multi samples the training tasks of leaderboard
      benchmark v4 (agreement, docstring, greater-than, pronoun, successor). Other IDs stay
      v2 with unchanged behaviour.
    * v2: the embedded model (``"toy"``, since v4 ``"toy_d"``) has GPT-2 small's head grid, 12 layers x 12 heads
      (144 actions; the 4 x 4 model of v0/v1 is kept as ``"tiny"``); every built-in task has
      an ID (induction, IOI, docstring, greater-than, successor, pronoun, agreement,
      brackets); Multi samples the training tasks of leaderboard benchmark v3. GPT2 IDs: new task IDs, same
      behaviour as v1 otherwise.
    * v1: resample ablation is the default on the embedded model (zero ablation also removed
      layer-0 heads' constant contribution, so they looked like bottlenecks); each IOI batch
      uses one name order (IO first or second); the duplicate-token and induction features are averaged over the query
      positions that have such a key.
    * v0: first release. Its behaviour cannot be reproduced; ``gymnasium.make`` refuses the v0
      IDs (``RefusedEnvError``, naming the newest version).
    """

    def __init__(self, model: str = "toy", tasks: str | Sequence[str] = ("ioi",), split: str = "train",
                 episode_length: int = 1, lam: float = 1.0, ablation: str | None = None, batch_size: int = 8,
                 pool_size: int = 32, cache: bool = True, model_path: str | None = None,
                 reference: str | None = None, render_mode: str | None = None,
                 oracle_info: bool = True, device: str = "cpu", features: str = DEFAULT_FEATURES) -> None:  # fmt: skip
        tasks, ablation = common_arguments(model, tasks, split, ablation, batch_size, pool_size, cache, oracle_info,
                                           render_mode, self.metadata["render_modes"])  # fmt: skip
        check_choice("features", features, tuple(FEATURE_SETS))
        if reference is not None:
            check_choice("reference", reference, REFERENCE_CHOICES)
        episode_length = check_count("episode_length", episode_length)
        lam = check_weight("lam", lam)

        self.model = shared_model(model, model_path, device)
        info = self.model.circuit_gym_info
        self.n_layers, self.n_heads, self.n_total = info.n_layers, info.n_heads, info.n_heads_total
        if episode_length > self.n_total:
            raise ValueError(
                f"episode_length must be <= {self.n_total} (the number of heads), got {episode_length}"
            )
        self.tasks, self.split, self.episode_length = tasks, split, int(episode_length)
        self.lam, self.ablation, self.cache = float(lam), ablation, cache
        self.batch_size, self.pool_size, self.reference = int(batch_size), int(pool_size), reference
        self.render_mode = render_mode
        # Public so that HideOracleInfo can switch the oracle fields' computation off.
        self.oracle_info = oracle_info
        self.features = features
        self.action_space = spaces.Discrete(self.n_total)
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, (self.n_total, len(FEATURE_SETS[features])), np.float32
        )
        # The pools this environment uses, held while it lives (freed with it).
        self._pools = EnvPools(self.model, self.split, self.batch_size, self.pool_size, self.reference,
                               self.ablation, self.lam, self.cache)  # fmt: skip
        self._episode: Episode | None = None
        self._over = False  # the episode ended: step() needs a reset() first
        self._task = tasks[0]
        self._ablated: set[int] = set()
        self._steps = 0
        self._set_reward = 0.0
        self._damages = (0.0, 0.0)
        self._last_action: int | None = None
        self._last_table: np.ndarray | None = None  # the last step's per-head table (for render)

    # ----------------------------------------------------------------- helpers
    def pool(self, task: str):
        """The episode pool of the task registered as ``task`` now, shared with every environment of
        the same settings (and with the circuit-building environment's, at ``lam=1`` and no reference)."""
        return self._pools.get(task)

    def _obs(self) -> np.ndarray:
        obs = np.empty(self.observation_space.shape, dtype=np.float32)
        obs[:, :N_STATIC] = self._episode.features
        obs[:, ABLATED_COLUMN] = 0.0
        obs[list(self._ablated), ABLATED_COLUMN] = 1.0
        obs[:, ABLATED_COLUMN + 1] = self._steps / self.episode_length
        if self.features == "prediction":
            obs[:, N_FEATURES:] = self._episode.prediction_features
        elif self.features == "causal":
            causal = episode_causal(self._episode)
            obs[:, N_FEATURES:] = single_head_columns(causal, self.episode_length - self._steps, self.n_total)
        return obs

    @property
    def episode(self) -> Episode:
        """The current prompt batch with its task, oracle table and scorer (evaluator access)."""
        if self._episode is None:
            raise RuntimeError("call reset() first")
        return self._episode

    def action_mask(self) -> np.ndarray:
        mask = np.ones(self.n_total, dtype=np.int8)
        mask[list(self._ablated)] = 0
        return mask

    def _base_info(self) -> dict[str, Any]:
        info = {"action_mask": self.action_mask(), "task": self._task, "batch_index": self._episode.index}
        if self.features == "causal":  # what the causal columns cost this episode
            info["feature_passes"] = single_head_passes(self.ablation)
        return info

    def single_head_rewards(self, heads: Sequence[int]) -> np.ndarray:
        """Marginal reward of ablating each head from the current state (0 for a head already
        ablated: choosing it is a no-op). Used by best-of-k planning."""
        out = []
        for h in heads:
            h = int(h)
            if h in self._ablated:
                out.append(0.0)
                continue
            td, gd = self._episode.damages(frozenset(self._ablated | {h}), self.cache)
            out.append(contrastive_reward(td, gd, self.lam) - self._set_reward)
        return np.asarray(out, dtype=np.float64)

    def marginal_rewards(self) -> np.ndarray:
        """This step's per-head table: ``R(S + h) - R(S)`` for each head ``h`` not in the ablated
        set ``S``, NaN for the heads in ``S``. With ``S`` empty it is the single-head table
        (cached); otherwise one exact ablation per head not in ``S`` (memoised with ``cache``)."""
        if self._episode is None:
            raise RuntimeError("call reset() first")
        if not self._ablated:
            return self._episode.table.reward
        table = np.full(self.n_total, np.nan)
        free = [h for h in range(self.n_total) if h not in self._ablated]
        table[free] = self.single_head_rewards(free)
        return table

    # -------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        task, index = reset_choice(self, options)
        self._task = task
        self._episode = self.pool(task).episode(int(index))
        self._ablated, self._steps, self._set_reward, self._over = set(), 0, 0.0, False
        self._damages = (0.0, 0.0)
        self._last_action, self._last_table = None, None
        return self._obs(), self._base_info()

    def step(self, action):
        check_step_order(self._episode is not None, self._over)
        head = check_action(action, self.n_total, f"a head id in [0, {self.n_total})")
        first = not self._ablated  # S empty: the step's table is the cached single-head table
        # The step's table comes from the state before the action (and, with cache=True,
        # memoises the damages of S + head that the reward below needs).
        table = self.marginal_rewards() if self.oracle_info else None
        if head in self._ablated:
            reward = 0.0  # a no-op; the damages of the set are unchanged
        else:
            self._ablated.add(head)
            self._damages = self._episode.damages(frozenset(self._ablated), self.cache)
            new_total = contrastive_reward(*self._damages, self.lam)
            reward, self._set_reward = new_total - self._set_reward, new_total
        self._steps += 1
        self._last_action, self._last_table = head, table
        td, gd = self._damages
        info = self._base_info()
        info["task_damage"], info["general_damage"] = td, gd
        if table is not None:
            oracle_head = int(np.argmax(table) if first else np.nanargmax(table))
            oracle_reward = float(table[oracle_head])
            if first:
                clean_head, clean_reward = oracle_head, oracle_reward
            else:
                clean = self._episode.table.reward
                clean_head = int(np.argmax(clean))
                clean_reward = float(clean[clean_head])
            info.update(
                oracle_head=oracle_head, oracle_reward=oracle_reward,
                oracle_recovery=oracle_recovery(reward, oracle_reward), top1_hit=head == oracle_head,
                per_head_reward=table.copy(), clean_oracle_head=clean_head, clean_oracle_reward=clean_reward,
            )  # fmt: skip
        terminated = self._over = self._steps >= self.episode_length
        return self._obs(), float(reward), terminated, False, info

    def _render_text(self) -> str:
        if self._episode is None:
            return "not reset"
        names = ", ".join(head_name(h, self.n_heads) for h in sorted(self._ablated)) or "none"
        return (
            f"task {self._task} batch {self._episode.index} step {self._steps}/{self.episode_length}: "
            f"ablated {names}, R={self._set_reward:.3f}"
        )

    def _render_rgb(self) -> np.ndarray:
        table = self._last_table
        if table is None and self._episode is not None and self.oracle_info and not self._ablated:
            table = self._episode.table.reward  # the first step's table, from the cache
        return render_grid(self.n_layers, self.n_heads, table, sorted(self._ablated), self._last_action,
                           self._steps / self.episode_length)  # fmt: skip


def oracle_recovery(reward: float, oracle_reward: float) -> float:
    # The one definition lives in circuit_gym.evaluation, which imports this package (and
    # scipy); import it on first use.
    from circuit_gym.evaluation import oracle_recovery as definition

    return definition(reward, oracle_reward)
