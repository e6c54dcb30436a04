"""The causal observation (``features="causal"``): each column against an independent
computation, its pass counts against PassCounter, and its blindness to answer labels."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from circuit_gym.envs import CircuitDiscoveryEnv
from circuit_gym.envs import causal_features as cf
from circuit_gym.envs.circuit_building import N_CIRCUIT_FEATURES, CircuitBuildingEnv
from circuit_gym.envs.features import CAUSAL_FEATURE_NAMES, CIRCUIT_FEATURE_SETS, FEATURE_SETS, N_FEATURES
from circuit_gym.envs.pool import clear_caches
from circuit_gym.passes import PassCounter
from circuit_gym.tasks import base as task_base
from circuit_gym.tasks import get_task

TINY = dict(model="tiny", tasks="ioi", pool_size=4, batch_size=4, oracle_info=False)
COLUMN = {name: i for i, name in enumerate(CIRCUIT_FEATURE_SETS["causal"])}


def single(**kw) -> CircuitDiscoveryEnv:
    return CircuitDiscoveryEnv(**{**TINY, "features": "causal", **kw})


def building(**kw) -> CircuitBuildingEnv:
    return CircuitBuildingEnv(**{**TINY, "budget": 3, "features": "causal", **kw})


@pytest.fixture()
def fresh():
    """No model, pool, episode or causal memo left over from another test."""
    clear_caches()
    yield
    clear_caches()


# ------------------------------------------------------------ an independent computation
def head_outputs(model, tokens: torch.Tensor) -> list[torch.Tensor]:
    names = [f"blocks.{layer}.attn.hook_z" for layer in range(model.cfg.n_layers)]
    _, cache = model.run_with_cache(tokens, names_filter=lambda n: n in names)
    return [cache[n].detach() for n in names]


def margin_of(logits: torch.Tensor, positions: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Mean over prompts and positions of logit[first id] - logit[second id]."""
    at = logits[:, positions].float()
    first = at.gather(-1, ids[..., :1])[..., 0]
    second = at.gather(-1, ids[..., 1:])[..., 0]
    return (first - second).mean()


def reference(model, batch):
    """Attribution patching (the estimated change of the margin when each head is replaced) and
    5-step EAP-IG under the clean top-1 vs top-2 margin, written from scratch: gradients read
    with retain_grad (not added perturbations), one pass per step of alpha (not stacked),
    resample replacement from the counterfactual prompts."""
    n_layers = model.cfg.n_layers
    clean = head_outputs(model, batch.tokens)
    repl = head_outputs(model, batch.counterfactual)
    with torch.no_grad():
        logits = model(batch.tokens)
    ids = logits[:, batch.positions].topk(2, dim=-1).indices
    clean_margin = float(margin_of(logits, batch.positions, ids))

    def gradients(alpha: float) -> list[torch.Tensor]:
        """d margin / d (each layer's head outputs) with every head on the path
        repl + alpha (z - repl), z what it computes in that pass (alpha = 1: the clean run),
        read with retain_grad on the hook's output."""
        seen: list[torch.Tensor] = []

        def on_path(z, hook):
            layer = int(hook.name.split(".")[1])
            out = repl[layer] + alpha * (z - repl[layer])
            if not out.requires_grad:  # layer 0: nothing before it carries a gradient
                out.requires_grad_(True)
            out.retain_grad()
            seen.append(out)
            return out

        hooks = [(f"blocks.{layer}.attn.hook_z", on_path) for layer in range(n_layers)]
        with torch.enable_grad():
            margin_of(model.run_with_hooks(batch.tokens, fwd_hooks=hooks), batch.positions, ids).backward()
        model.zero_grad(set_to_none=True)
        return [t.grad for t in seen]

    def per_head(grads: list[torch.Tensor]) -> np.ndarray:
        return torch.cat(
            [(g * (c - r)).sum((0, 1, 3)) for g, c, r in zip(grads, clean, repl, strict=True)]
        ).numpy()

    attribution = -per_head(gradients(1.0))  # replacing z by repl changes the margin by grad . (repl - z)
    steps = [gradients(k / 5) for k in range(1, 6)]  # one pass per alpha, not stacked
    eap_ig = per_head([sum(g[layer] for g in steps) / 5 for layer in range(n_layers)])
    return attribution / clean_margin, eap_ig / clean_margin, ids, clean_margin


def circuit_margin(model, batch, heads: set[int], ids: torch.Tensor) -> float:
    """The margin with every head outside ``heads`` replaced by its counterfactual output."""
    n_heads = model.cfg.n_heads
    repl = head_outputs(model, batch.counterfactual)

    def patch(z, hook):
        layer = int(hook.name.split(".")[1])
        keep = torch.tensor([layer * n_heads + h in heads for h in range(n_heads)])[None, None, :, None]
        return torch.where(keep, z, repl[layer])

    hooks = [(f"blocks.{layer}.attn.hook_z", patch) for layer in range(model.cfg.n_layers)]
    with torch.no_grad():
        return float(margin_of(model.run_with_hooks(batch.tokens, fwd_hooks=hooks), batch.positions, ids))


def test_head_scores_match_an_independent_attribution_and_eap_ig(fresh):
    env = single()
    obs, info = env.reset(options={"batch_index": 1})
    attribution, eap_ig, _, _ = reference(env.model, env.episode.batch)
    assert obs.shape == (16, len(FEATURE_SETS["causal"])) == (16, 15)
    np.testing.assert_allclose(obs[:, 12], -attribution, rtol=1e-3, atol=1e-4)  # positive = the margin drops
    np.testing.assert_allclose(obs[:, 13], eap_ig, rtol=1e-3, atol=1e-4)
    assert np.abs(obs[:, 12]).max() > 0.1  # not a column of zeros
    assert np.allclose(obs[:, 14], 1 / 16)  # one step left of one, over 16 heads
    obs, *_ = env.step(3)
    assert np.allclose(obs[:, 14], 0.0)


def test_circuit_state_columns_follow_the_circuit(fresh):
    env = building()
    obs, info = env.reset(options={"batch_index": 2})
    model, batch = env.model, env.state.episode.batch
    *_, ids, clean_margin = reference(model, batch)
    empty = circuit_margin(model, batch, set(), ids)
    assert obs.shape == (16, len(CIRCUIT_FEATURE_SETS["causal"])) == (16, 20)
    assert obs[:, N_CIRCUIT_FEATURES:].shape[1] == 7 and (obs[:, COLUMN["position"]] == 0).all()
    assert (obs[:, COLUMN["margin_faithfulness"]] == 0).all() and (
        obs[:, COLUMN["steps_left"]] == 3 / 16
    ).all()
    f_before, margin_before, heads = 0.0, 0.0, []
    for step, head in enumerate((int(np.argmax(obs[:, COLUMN["margin_attribution"]])), 7)):
        obs, _, _, _, info = env.step(head)
        heads.append(head)
        expected = (circuit_margin(model, batch, set(heads), ids) - empty) / (clean_margin - empty)
        assert obs[0, COLUMN["margin_faithfulness"]] == pytest.approx(expected, rel=1e-3, abs=1e-4)
        assert obs[0, COLUMN["margin_faithfulness_change"]] == pytest.approx(
            expected - margin_before, abs=1e-4
        )
        assert obs[0, COLUMN["faithfulness_change"]] == pytest.approx(
            info["faithfulness"] - f_before, abs=1e-6
        )
        assert obs[head, COLUMN["position"]] == pytest.approx((step + 1) / 3)
        assert obs[head, COLUMN["member"]] == 1 and obs[0, COLUMN["steps_left"]] == pytest.approx(
            (2 - step) / 16
        )
        f_before, margin_before = info["faithfulness"], expected
    assert np.count_nonzero(obs[:, COLUMN["position"]]) == 2
    obs, *_ = env.step(env.stop_action)  # STOP changes nothing
    assert obs[0, COLUMN["faithfulness_change"]] == 0 and obs[0, COLUMN["margin_faithfulness_change"]] == 0
    assert obs[0, COLUMN["margin_faithfulness"]] == pytest.approx(margin_before, abs=1e-4)


def test_from_full_removed_heads_get_positions_and_faithfulness_starts_at_one(fresh):
    env = building(start="full")
    obs, _ = env.reset(options={"batch_index": 0})
    assert (obs[:, COLUMN["margin_faithfulness"]] == 1).all()
    obs, *_ = env.step(5)
    assert obs[5, COLUMN["position"]] == pytest.approx(1 / 3) and obs[5, COLUMN["member"]] == 0


# --------------------------------------------------------------------------- passes
def test_reported_passes_are_what_the_model_ran(fresh):
    """``info["feature_passes"]`` is what PassCounter sees the causal columns add: the same
    fresh episode kind observed with and without them."""
    plain, causal = CircuitDiscoveryEnv(**TINY), single()
    plain.reset(options={"batch_index": 0})  # builds what every environment shares (the general engine)
    plain.episode.scorer  # noqa: B018  (the batch's engine: the plain env needs it for its rewards)
    with PassCounter(plain.model) as counter:
        plain.reset(options={"batch_index": 1})
    base = counter.counts()
    with PassCounter(causal.model) as counter:
        _, info = causal.reset(options={"batch_index": 2})
    added = {k: counter.counts()[k] - base[k] for k in base}
    assert added == info["feature_passes"] == cf.single_head_passes("resample")

    # a larger pool: new episodes, nothing of theirs computed yet
    plain_b, causal_b = CircuitBuildingEnv(**{**TINY, "budget": 3, "pool_size": 6}), building(pool_size=6)
    with PassCounter(plain_b.model) as counter:
        _, plain_info = plain_b.reset(options={"batch_index": 4})
    base = counter.counts()
    with PassCounter(causal_b.model) as counter:
        _, info = causal_b.reset(options={"batch_index": 5})
    added = {k: counter.counts()[k] - base[k] for k in base}
    assert added == info["feature_passes"]
    # the circuit track counts every pass, backward ones included
    assert info["forward_passes"] - plain_info["forward_passes"] == sum(added.values())
    with PassCounter(causal_b.model) as counter:
        _, _, _, _, after = causal_b.step(4)
    assert counter.counts() == {"forward": 0, "partial": 2, "backward": 0}  # the task's f and the margin's
    assert after["forward_passes"] - info["forward_passes"] == 2
    assert after["feature_passes"]["partial"] - info["feature_passes"]["partial"] == 1


def test_default_observations_are_unchanged():
    assert CircuitDiscoveryEnv(**TINY).observation_space.shape == (16, N_FEATURES)
    env = CircuitBuildingEnv(**{**TINY, "budget": 3})
    _, info = env.reset(options={"batch_index": 0})
    assert env.observation_space.shape == (16, N_CIRCUIT_FEATURES) and "feature_passes" not in info
    assert FEATURE_SETS["causal"][N_FEATURES:] == CAUSAL_FEATURE_NAMES
    with pytest.raises(ValueError, match="features"):
        CircuitBuildingEnv(**{**TINY, "features": "prediction"})


# ------------------------------------------------------------------ no answer labels
IOI = get_task("ioi")


def relabelled(transform):
    """The built-in IOI task with ``transform(batch)`` applied to every batch it makes."""
    ioi = IOI

    def make_batch(tokenizer, split, batch_size, rng):
        return transform(ioi.make_batch(tokenizer, split, batch_size, rng))

    return dataclasses.replace(ioi, make_batch=make_batch)


def other_labels(batch):
    """Answers and distractors replaced by unrelated tokens: prompts unchanged."""
    return dataclasses.replace(
        batch, answers=(batch.answers + 11) % 50, distractors=(batch.distractors + 29) % 50
    )


def swapped_labels(batch):
    assert batch.distractors.shape[-1] == 1
    return dataclasses.replace(batch, answers=batch.distractors[..., 0], distractors=batch.answers[..., None])


def observations(make_env, actions) -> list[np.ndarray]:
    clear_caches()
    env = make_env()
    obs, _ = env.reset(options={"batch_index": 1})
    out = [obs]
    for a in actions:
        obs, *_ = env.step(a)
        out.append(obs)
    return out


@pytest.mark.parametrize("transform", [other_labels, swapped_labels])
def test_single_head_observation_ignores_answer_labels(fresh, monkeypatch, transform):
    clean = observations(lambda: single(episode_length=2), [4, 9])
    monkeypatch.setitem(task_base._REGISTRY, "ioi", relabelled(transform))
    again = observations(lambda: single(episode_length=2), [4, 9])
    for a, b in zip(clean, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_circuit_observation_ignores_answer_labels(fresh, monkeypatch):
    """Every column but the task's own faithfulness (11) and its change (16) is the same with
    unrelated labels; with answer and distractor swapped (the metric negated) all of them are."""
    clean = observations(building, [4, 9, 16])
    monkeypatch.setitem(task_base._REGISTRY, "ioi", relabelled(other_labels))
    other = observations(building, [4, 9, 16])
    label_free = [i for i in range(20) if i not in (COLUMN["faithfulness"], COLUMN["faithfulness_change"])]
    for a, b in zip(clean, other, strict=True):
        np.testing.assert_array_equal(a[:, label_free], b[:, label_free])
    assert not np.array_equal(clean[1], other[1])  # the task's faithfulness did read the labels
    monkeypatch.setitem(task_base._REGISTRY, "ioi", relabelled(swapped_labels))
    for a, b in zip(clean, observations(building, [4, 9, 16]), strict=True):
        np.testing.assert_array_equal(a, b)


def test_causal_state_lives_with_its_episode_not_in_a_process_global_table(fresh):
    """Dropping the environment and the shared pools frees the causal state (a process-global memo
    keyed by id() kept every episode's state alive for good)."""
    import gc
    import weakref

    env = single()
    env.reset(options={"batch_index": 0})
    state = weakref.ref(cf.episode_causal(env.episode))
    assert state() is cf.episode_causal(env.episode)  # computed once per episode
    env.close()
    del env
    clear_caches()
    gc.collect()
    assert state() is None
