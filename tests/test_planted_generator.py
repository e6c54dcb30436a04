"""Generated planted models (``make_planted_model(seed, version=...)``) against their own ground truth.

Independent of the discovery code: heads are ablated by the ground truth's roles with plain
TransformerLens hooks written here (resample ablation: each ablated head's ``hook_z`` replaced by
its value on the counterfactual prompts), never with the package's ablation engine or circuit
runner, and the task metric is read through the public task API; nothing here ranks or searches
heads, except the ACDC test, which scores ACDC (the discovery code) against the truth. Edges are
patched by plain hooks too (:class:`EdgePatcher`: a sender's counterfactual output fed into one
receiver's q, k or v, recomputed here from the residual stream, or into the logits).

Generator version 2 (a retired board's models) keeps its tests and its documented defect (the
strict expected failures); version 3's tests follow them.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from circuit_gym.models.planted import KINDS, PLANTED_TASKS, generate, make_planted_model
from circuit_gym.models.planted.generator import truth_of
from circuit_gym.models.planted.layout import N_HEADS, N_LAYERS
from circuit_gym.models.planted.roles import CIRCUIT_ROLES, DECOY_COUNTS_V2, DECOY_COUNTS_V3, DECOY_OF
from circuit_gym.tasks.planted import KINDS_V3

N = N_LAYERS * N_HEADS
SEEDS = (0, 1)
MORE_SEEDS = tuple(range(2, 10))  # the slow tests'
# A generator defect found by the audit of issue 31 item 5 (the tests had covered seeds 0 and 1
# only): on some seeds the clean model fails a kind's task, its circuits interfering (seed 6:
# three previous-token heads of three circuits in layer 6 and the redundant reader in layer 3;
# induction's m(full) is -0.10, 31% of prompts answered). Clean accuracy below 90% on 16 test
# prompts: seeds 4 (suppression), 6 (induction, multi-hop, suppression), 12 (the same three),
# 14 (suppression) and 29 (one kind) of seeds 0-29. Public seeds 4, 6, 12 and 14 are on the board.
DEFECT = "generator defect: on this seed the clean model fails some of its tasks (circuits interfere)"
WEAK_SEEDS = (4, 6, 12, 14, 29)  # of seeds 0-29: a kind answered on fewer than 90% of prompts
BROKEN_SEEDS = (6,)  # of MORE_SEEDS: a kind whose m(full) is below 0.5 (the ablation checks cannot hold)
# Tolerances, in shares of the full model's metric m(full) (a logit difference):
DESTROYED = 0.2  # ablating the whole true circuit leaves at most this much
UNTOUCHED = 0.15  # ablating every other head (decoys and distractors included) moves it by at most this
REDUNDANT_ALONE = 0.15  # one redundant retriever ablated alone costs at most this
REDUNDANT_BOTH = 0.7  # both ablated cost at least this


@pytest.fixture(scope="module", params=SEEDS)
def planted(request):
    return make_planted_model(request.param)  # written to the session's cache directory (conftest)


class Ablator:
    """The task metric of one test batch with any head set resample-ablated, by plain hooks."""

    def __init__(self, planted, kind: str) -> None:
        self.model, self.task = planted.model, PLANTED_TASKS[kind]
        self.batch = self.task.batch(planted.model, "test", 16, seed=3)
        names = [f"blocks.{layer}.attn.hook_z" for layer in range(N_LAYERS)]
        with torch.no_grad():
            _, cache = self.model.run_with_cache(self.batch.counterfactual, names_filter=lambda n: n in names)
            self.counterfactual_z = [cache[name].clone() for name in names]
            self.full = self._score(self.model(self.batch.tokens))

    def _score(self, logits: torch.Tensor) -> float:
        return float(self.task.score(logits, self.batch).mean())

    @torch.no_grad()
    def metric(self, ablated) -> float:
        """``m`` with the heads ``ablated`` (flat ids) replaced by their counterfactual output."""
        by_layer: dict[int, list[int]] = {}
        for h in sorted(set(ablated)):
            by_layer.setdefault(h // N_HEADS, []).append(h % N_HEADS)
        hooks = []
        for layer, heads in by_layer.items():

            def replace(z, hook, layer=layer, heads=heads):
                z = z.clone()
                z[:, :, heads] = self.counterfactual_z[layer][:, :, heads]
                return z

            hooks.append((f"blocks.{layer}.attn.hook_z", replace))
        return self._score(self.model.run_with_hooks(self.batch.tokens, fwd_hooks=hooks))

    def keeping(self, heads) -> float:
        """``m`` with every head but ``heads`` ablated."""
        return self.metric(set(range(N)) - set(heads))


def test_generation_is_deterministic_per_seed_and_seeds_differ():
    (a, truth_a), (b, truth_b) = generate(5), generate(5)
    assert truth_a == truth_b and a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    other = truth_of(6)
    assert all(truth_a.circuit(k) != other.circuit(k) for k in KINDS)
    assert not torch.equal(a["layers.0.attn.q.weight"], generate(6)[0]["layers.0.attn.q.weight"])


def test_every_seed_places_every_role_once_in_an_order_its_circuit_can_run():
    layers_used = {kind: set() for kind in KINDS}
    for seed in range(300):
        truth = truth_of(seed)
        assert [r.head for r in truth.roles] == list(range(N))  # one role per head
        layer = {(r.group, r.role): r.layer for r in truth.roles if r.group in CIRCUIT_ROLES}
        for kind in KINDS:  # version 2's
            roles = CIRCUIT_ROLES[kind]
            assert len(truth.circuit(kind)) == len(roles)
            layers_used[kind] |= {layer[(kind, role)] for role in roles}
        assert layer[("induction", "previous_token")] < layer[("induction", "induction")]
        assert (layer[("multihop", "previous_token")] < layer[("multihop", "second_previous")]
                < layer[("multihop", "mover")])  # fmt: skip
        assert (
            max(layer[("redundant", "retriever_1")], layer[("redundant", "retriever_2")])
            < layer[("redundant", "reader")]
        )
        for role in ("mover", "suppressor"):
            assert layer[("suppression", "previous_token")] < layer[("suppression", role)]
        decoys = [r for r in truth.roles if r.group == "decoy"]
        assert len(decoys) == sum(DECOY_COUNTS_V2.values())
        for r in decoys:
            if r.role == "decoy_induction":  # reads the induction circuit's channel: must sit above it
                assert r.layer > layer[("induction", "previous_token")]
    assert all(used == set(range(N_LAYERS)) for used in layers_used.values())  # anywhere in the 12 layers


def _check_the_circuit_carries_the_task(planted, kind: str) -> None:
    ablator = Ablator(planted, kind)
    full = ablator.full
    assert full > 0.5, f"{kind}: the clean model's logit difference is only {full:.3f}"
    circuit = planted.truth.circuit(kind)
    unread = {r.head for r in planted.truth.roles if r.group == "decoy" and r.role != "decoy_copy"}
    decoys = {r.head for r in planted.truth.roles if r.group == "decoy"}
    m_without_circuit, m_without_others = ablator.metric(circuit), ablator.keeping(circuit)
    m_without_unread, m_without_decoys = ablator.metric(unread), ablator.metric(decoys)
    print(f"seed {planted.seed} {kind}: m(full) {full:.3f}, circuit ablated {m_without_circuit:.3f}, "
          f"only the circuit {m_without_others:.3f}, unread decoys ablated {m_without_unread:.3f}, "
          f"every decoy ablated {m_without_decoys:.3f}")  # fmt: skip
    assert m_without_circuit < DESTROYED * full
    assert abs(m_without_others - full) < UNTOUCHED * full
    assert abs(m_without_unread - full) < 0.02 * full  # these decoys write what LayerNorm removes
    assert abs(m_without_decoys - full) < UNTOUCHED * full


@pytest.mark.parametrize("kind", KINDS)
def test_the_model_does_its_tasks_and_only_the_true_circuit_carries_them(planted, kind):
    _check_the_circuit_carries_the_task(planted, kind)


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed",
    [pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=DEFECT)) if s in BROKEN_SEEDS else s
     for s in MORE_SEEDS],
)  # fmt: skip
def test_only_the_true_circuit_carries_the_task_on_more_seeds(seed):
    planted = make_planted_model(seed)
    for kind in KINDS:
        _check_the_circuit_carries_the_task(planted, kind)


def test_the_clean_models_answer_every_prompt(planted):
    for kind in KINDS:
        task = PLANTED_TASKS[kind]
        batch = task.batch(planted.model, "eval", 32, seed=1)
        accuracy = float(task.correct(planted.model(batch.tokens), batch).mean())
        assert accuracy >= 0.9, f"seed {planted.seed} {kind}: clean accuracy {accuracy:.2f}"


def _gate(planted, kinds) -> list[str]:
    """The gate a planted model passes on each of ``kinds``: accuracy >= 0.9 and mean metric > 0.5
    on a test batch; the failures, described (empty: it passes)."""
    failures = []
    for kind in kinds:
        task = PLANTED_TASKS[kind]
        batch = task.batch(planted.model, "test", 16, seed=3)
        with torch.no_grad():
            logits = planted.model(batch.tokens)
        accuracy, metric = float(task.correct(logits, batch).mean()), float(task.score(logits, batch).mean())
        if not (accuracy >= 0.9 and metric > 0.5):
            failures.append(f"seed {planted.seed} {kind}: accuracy {accuracy:.2f}, m {metric:.2f}")
    return failures


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed",
    [pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=DEFECT)) if s in WEAK_SEEDS else s
     for s in range(30)],
)  # fmt: skip
def test_the_clean_models_answer_on_more_seeds(seed):
    """Strict: a seed of :data:`WEAK_SEEDS` that starts passing (the defect fixed) fails here."""
    assert _gate(make_planted_model(seed), KINDS) == []


def test_a_redundant_pair_each_alone_small_both_together_large(planted):
    ablator = Ablator(planted, "redundant")
    (r1,), (r2,) = (
        planted.truth.heads_of("redundant", "retriever_1"),
        planted.truth.heads_of("redundant", "retriever_2"),
    )
    full = ablator.full
    one, two, both = (full - ablator.metric(heads) for heads in ({r1}, {r2}, {r1, r2}))
    assert one < REDUNDANT_ALONE * full and two < REDUNDANT_ALONE * full
    assert both > REDUNDANT_BOTH * full
    # what single-head ablation underestimates, the rest of the circuit does not hide
    (reader,) = planted.truth.heads_of("redundant", "reader")
    assert full - ablator.metric({reader}) > REDUNDANT_BOTH * full


def test_the_suppressor_lowers_the_metric_and_the_mover_carries_it(planted):
    ablator = Ablator(planted, "suppression")
    (mover,), (suppressor,) = (planted.truth.heads_of("suppression", r) for r in ("mover", "suppressor"))
    full = ablator.full
    assert ablator.metric({suppressor}) > 1.2 * full  # removing the head that suppresses the answer helps
    assert ablator.metric({mover}) < 0
    signs = {h["role"]: h["sign"] for h in planted.truth.to_json()["circuits"]["suppression"]}
    assert signs == {"previous_token": 1, "mover": 1, "suppressor": -1}


def test_bad_seeds_are_refused():
    for bad in (-1, 1.5, "3", True, None):
        with pytest.raises(ValueError, match="seed"):
            generate(bad)
    assert np.all(np.isfinite(generate(0)[0]["head.weight"].numpy()))


@pytest.mark.slow
def test_acdc_at_head_level_recovers_the_true_circuit_on_most_seeds(monkeypatch):
    """ACDC as the Planted track runs it (its head-level threshold sweep; its circuit: the heads
    kept at the track's alpha) on 5 seeds per kind outside the board's public ones, against the
    truth; precision and recall per kind are printed. It must find the whole induction and
    multi-hop circuits on at least 4 of 5 seeds, and on the redundant and suppression kinds every
    head but the one its design cannot see (a redundant retriever: removing one alone costs
    nothing; the suppressor: removing it raises the metric)."""
    from circuit_gym.leaderboard import planted_scorer as PS
    from circuit_gym.solvers.episodes import play_episode
    from circuit_gym.tasks.planted import task_name

    # generator version 2's kinds, as the Planted track's scorer plays them (a row of its own here:
    # the board's rows are the benchmark in force's, on generator 3)
    row = PS.PlantedBenchmark("generator-2", "generator-2-acdc", 2, KINDS)
    monkeypatch.setitem(PS.PLANTED_BENCHMARKS, row.track, row)
    seeds = tuple(range(100, 105))
    assert not set(seeds) & (set(row.public_seeds) | set(PS.planted_benchmark().public_seeds))
    envs = PS.make_planted_envs(seeds, row.track)
    solver, _ = PS.reference_solver("acdc", envs, row.track)
    for kind in KINDS:
        rows = [PS.episode_scores(kind, s, play_episode(envs[kind].unwrapped.inner_for(s), solver, task_name(kind),
                                                        PS.BATCH_INDEX), row.track) for s in seeds]  # fmt: skip
        precision, recall = (float(np.mean([r[m] for r in rows])) for m in ("precision", "recall"))
        print(f"ACDC {kind}: precision {precision:.2f}, recall {recall:.2f}, "
              f"recall per seed {[round(r['recall'], 2) for r in rows]}")  # fmt: skip
        size = len(CIRCUIT_ROLES[kind])
        needed = 1.0 if kind in ("induction", "multihop") else (size - 1) / size
        assert sum(r["recall"] >= needed - 1e-9 for r in rows) >= 4
        assert precision >= 0.5


# ----------------------------------------------------------------------------------------------
# Generator version 3: the defect fixed, two kinds more (self-repair, AND), edge truth.
V3 = 3
V3_SEED = 0  # the fast tests' representative seed (every kind)
# Every seed the board, the slow tests and the planted PPO use (docs/planted.md): public 0-19 (and
# 20-29), ACDC's 100-104, the PPO's training 1000-1031 and selection 2000-2007.
V3_GATE_SEEDS = (*range(30), *range(100, 105), *range(1000, 1032), *range(2000, 2008))
PRIMARY_ALONE = 0.35  # the self-repair primary ablated alone costs at most this (the backup repairs the rest)
BACKUP_ALONE = 0.15  # the backup ablated alone costs at most this (it is silent in the clean model)
BOTH = 0.8  # the primary and backup together, or either AND sender, cost at least this
EDGE_MATTERS = 0.25  # a truth edge patched moves the metric by at least this (in shares of m(full))
EDGE_SILENT = 0.1  # an edge not in the truth moves it by at most this
_EDGE = re.compile(r"(input|a(\d+)\.h(\d+))->(logits|a(\d+)\.h(\d+)<([qkv])>)")


@pytest.fixture(scope="module")
def planted_v3():
    return make_planted_model(V3_SEED, version=V3)


class EdgePatcher(Ablator):
    """The task metric with edges patched, by plain hooks written here: a sender's output on the
    counterfactual prompts replaces its output in one receiver's input only (that head's q, k or
    v recomputed from the residual stream through ``ln1``, or the input of the final LayerNorm)."""

    def __init__(self, planted, kind: str) -> None:
        super().__init__(planted, kind)
        names = {
            "hook_embed",
            "hook_pos_embed",
            *(f"blocks.{layer}.attn.hook_z" for layer in range(N_LAYERS)),
        }
        with torch.no_grad():
            _, cache = self.model.run_with_cache(self.batch.counterfactual, names_filter=lambda n: n in names)
            self.cf = {name: cache[name].clone() for name in names}
        attn = [self.model.blocks[layer].attn for layer in range(N_LAYERS)]
        self.w = {p: [getattr(a, f"W_{p.upper()}").detach() for a in attn] for p in "qkv"}
        self.b = {p: [getattr(a, f"b_{p.upper()}").detach() for a in attn] for p in "qkv"}
        self.w_o = [a.W_O.detach() for a in attn]
        self.eps = float(self.model.cfg.eps)

    def _output(self, sender: str, acts: dict) -> torch.Tensor:
        """The sender's contribution to the residual stream, from ``acts`` (hook name -> value)."""
        if sender == "input":
            return acts["hook_embed"] + acts["hook_pos_embed"]
        layer, head = (int(x) for x in sender[1:].split(".h"))
        return acts[f"blocks.{layer}.attn.hook_z"][:, :, head] @ self.w_o[layer][head]

    def _layer_norm(self, x: torch.Tensor) -> torch.Tensor:  # every planted LayerNorm has weight 1, bias 0
        x = x - x.mean(-1, keepdim=True)
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    @torch.no_grad()
    def patched(self, edges) -> float:
        """``m`` with every edge of ``edges`` (MIB names) patched."""
        live: dict[str, torch.Tensor] = {}
        into: dict[tuple, list[str]] = {}
        for edge in edges:
            match = _EDGE.fullmatch(edge)
            assert match, edge
            sender = match[1]
            receiver = ("logits",) if match[4] == "logits" else (int(match[5]), int(match[6]), match[7])
            into.setdefault(receiver, []).append(sender)

        def saver(name: str):  # keyed by the name hooked (the bridge reports its own name for aliases)
            def save(x, hook):
                live[name] = x
                return x

            return save

        def shifted(resid: torch.Tensor, senders: list[str]) -> torch.Tensor:
            return resid + sum(self._output(s, self.cf) - self._output(s, live) for s in senders)

        names = [
            "hook_embed",
            "hook_pos_embed",
            *(f"blocks.{layer}.attn.hook_z" for layer in range(N_LAYERS)),
        ]
        hooks = [(name, saver(name)) for name in names]
        for receiver, senders in into.items():
            if receiver == ("logits",):
                hooks.append(("ln_final.hook_in", lambda x, hook, s=senders: shifted(x, s)))
                continue
            layer, head, port = receiver
            hooks.append((f"blocks.{layer}.hook_resid_pre", saver(f"blocks.{layer}.hook_resid_pre")))

            def patch(x, hook, layer=layer, head=head, port=port, senders=senders):
                x = x.clone()
                resid = shifted(live[f"blocks.{layer}.hook_resid_pre"], senders)
                x[:, :, head] = (
                    self._layer_norm(resid) @ self.w[port][layer][head] + self.b[port][layer][head]
                )
                return x

            hooks.append((f"blocks.{layer}.attn.hook_{port}", patch))
        return self._score(self.model.run_with_hooks(self.batch.tokens, fwd_hooks=hooks))


def _node(head: int) -> str:
    return f"a{head // N_HEADS}.h{head % N_HEADS}"


def _ends(edge: str) -> tuple[str, str]:
    """(sender node, receiver node) of an edge name."""
    match = _EDGE.fullmatch(edge)
    assert match, edge
    return match[1], match[4].split("<")[0]


def _edges_between(senders, receivers) -> set[str]:
    """Every edge of the graph from ``senders`` (flat ids or "input") into ``receivers`` (flat ids
    or "logits") that runs forwards (a head feeds only later layers)."""
    edges = set()
    for s in senders:
        for r in receivers:
            if r == "logits":
                edges.add(f"{'input' if s == 'input' else _node(s)}->logits")
            elif s == "input" or s // N_HEADS < r // N_HEADS:
                edges |= {f"{'input' if s == 'input' else _node(s)}->{_node(r)}<{p}>" for p in "qkv"}
    return edges


def test_v2_is_unchanged_by_the_version_registry():
    """Version 2 is the default and its models are what they were: the truth's JSON has no v3
    fields, the names and cache directories say v2 (a retired board was scored on them: docs/archive.md)."""
    (state, truth), (state_2, truth_2) = generate(3), generate(3, version=2)
    assert truth == truth_2 and all(torch.equal(state[k], state_2[k]) for k in state)
    assert truth.version == 2 and truth.kinds == KINDS
    assert set(truth.to_json()) == {"seed", "circuits", "decoys"}
    assert all(
        set(h) == {"head", "name", "role", "sign"} for c in truth.to_json()["circuits"].values() for h in c
    )
    assert state["layers.0.attn.q.weight"].shape == (N_HEADS * 24, 185)  # version 2's layout
    with pytest.raises(ValueError, match="version"):
        generate(3, version=1)


def test_v3_places_every_role_of_six_kinds_in_an_order_its_circuit_can_run():
    layers_used = {kind: set() for kind in KINDS_V3}
    for seed in range(300):
        truth = truth_of(seed, version=V3)
        assert truth.kinds == KINDS_V3 and [r.head for r in truth.roles] == list(range(N))
        layer = {(r.group, r.role): r.layer for r in truth.roles if r.group in CIRCUIT_ROLES}
        for kind in KINDS_V3:
            layers_used[kind] |= {layer[(kind, role)] for role in CIRCUIT_ROLES[kind]}
        assert (
            layer[("self_repair", "previous_token")]
            < layer[("self_repair", "primary")]
            < layer[("self_repair", "backup")]
        )
        assert max(layer[("and", "sender_left")], layer[("and", "sender_right")]) < layer[("and", "receiver")]
        assert len([r for r in truth.roles if r.group == "decoy"]) == sum(DECOY_COUNTS_V3.values())
        assert truth.backups("self_repair") == set(truth.heads_of("self_repair", "backup"))
        assert all(not truth.backups(k) for k in KINDS_V3 if k != "self_repair")
    assert all(used == set(range(N_LAYERS)) for used in layers_used.values())


def test_v3_truth_states_edges_in_mib_names_between_its_circuit_nodes(planted_v3):
    truth = planted_v3.truth
    data = truth.to_json()
    for kind in KINDS_V3:
        nodes = {"input", "logits", *(_node(h) for h in truth.circuit(kind))}
        edges = truth.edges(kind)
        assert data["edges"][kind] == sorted(edges) and edges
        for edge in edges:
            match = _EDGE.fullmatch(edge)
            assert match and match[1] in nodes and match[4].split("<")[0] in nodes, edge
        assert any(e.endswith("->logits") for e in edges) and any(e.startswith("input->") for e in edges)
        assert truth.backup_edges(kind) <= edges
    (backup,) = truth.backups("self_repair")
    assert truth.backup_edges("self_repair") == {
        e for e in truth.edges("self_repair") if _node(backup) in _ends(e)
    }
    assert [h["backup"] for h in data["circuits"]["self_repair"]] == [
        r.role == "backup" for r in truth.roles if r.group == "self_repair"
    ]


def test_recovery_scores_edges_with_the_head_formula(planted_v3):
    """Precision, recall and AUC take edge names as they take head ids (one formula): a ranking of
    the kind's candidate edges with the truth first scores 1, reversed 0, and heads renamed as
    strings score as the heads do."""
    from circuit_gym.models.planted.recovery import precision_recall, ranking_auc

    truth = planted_v3.truth
    edges = truth.edges("and")
    candidates = sorted(_edges_between(["input", *truth.circuit("and")], [*truth.circuit("and"), "logits"]))
    ranking = sorted(candidates, key=lambda e: e not in edges)
    assert ranking_auc(ranking, edges) == 1.0 and ranking_auc(ranking[::-1], edges) == 0.0
    assert precision_recall(sorted(edges)[:2] + ["input->a11.h0<q>"], edges) == (2 / 3, 2 / len(edges))
    heads = list(np.random.default_rng(0).permutation(N))
    circuit = truth.circuit("and")
    named = ranking_auc([_node(h) for h in heads], {_node(h) for h in circuit})
    assert named == ranking_auc(heads, circuit)


def test_edge_patching_every_receiver_of_a_head_equals_ablating_it(planted_v3):
    """The test's own edge patcher, checked: a head's counterfactual output fed into every later
    head's q, k and v and into the logits is resample ablation of that head (a bug in the
    recomputed LayerNorm or projections breaks it)."""
    patcher = EdgePatcher(planted_v3, "multihop")
    (head,) = planted_v3.truth.heads_of("multihop", "second_previous")
    everything = _edges_between([head], [*range(N), "logits"])
    assert patcher.patched(everything) == pytest.approx(patcher.metric({head}), abs=1e-3 * abs(patcher.full))
    assert patcher.patched(set()) == pytest.approx(patcher.full, abs=1e-4)


@pytest.mark.parametrize("kind", KINDS_V3)
def test_v3_the_model_does_its_tasks_and_only_the_true_circuit_carries_them(planted_v3, kind):
    _check_the_circuit_carries_the_task(planted_v3, kind)


def test_v3_fixes_the_v2_defect_on_its_worst_seed():
    """Seed 6 failed three kinds under version 2 (induction m(full) -0.10); under version 3 it
    passes the gate on all six."""
    assert _gate(make_planted_model(6, version=V3), KINDS_V3) == []


@pytest.mark.slow
def test_v3_every_seed_the_board_tests_and_ppo_use_passes_the_gate_on_every_kind():
    failures = [f for seed in V3_GATE_SEEDS for f in _gate(make_planted_model(seed, version=V3), KINDS_V3)]
    assert failures == []


def _pair_costs(planted, kind: str, roles: dict[str, str]) -> dict[str, float]:
    """The relative drop of ``kind``'s metric when the head of each of two roles (``roles``:
    name -> truth role, one head each) is ablated alone, and when both are ("both")."""
    ablator = Ablator(planted, kind)
    heads = {name: set(planted.truth.heads_of(kind, role)) for name, role in roles.items()}
    assert all(len(h) == 1 for h in heads.values()), heads
    heads["both"] = set().union(*heads.values())
    full = ablator.full
    cost = {name: (full - ablator.metric(h)) / full for name, h in heads.items()}
    print(f"seed {planted.seed} {kind}: m(full) {full:.3f}, costs {cost}")
    return cost


def _check_self_repair(planted) -> None:
    cost = _pair_costs(planted, "self_repair", {"primary": "primary", "backup": "backup"})
    assert abs(cost["backup"]) < BACKUP_ALONE  # silent while the primary works
    assert 0 < cost["primary"] < PRIMARY_ALONE  # the backup repairs most of it
    assert cost["both"] > BOTH  # and nothing repairs both


def _check_and(planted) -> None:
    cost = _pair_costs(planted, "and", {"left": "sender_left", "right": "sender_right"})
    assert cost["left"] > BOTH and cost["right"] > BOTH and cost["both"] > BOTH
    # not additive: the single costs add up to about twice the joint one
    assert cost["left"] + cost["right"] > 1.5 * cost["both"]


def test_v3_self_repair_the_backup_acts_only_when_the_primary_is_ablated(planted_v3):
    _check_self_repair(planted_v3)


def test_v3_and_either_sender_alone_removes_the_behaviour(planted_v3):
    _check_and(planted_v3)


def _check_edges(planted, kind: str, senders, receivers) -> None:
    """Every truth edge matters (the redundant retrievers' with their twin's, and a retriever's
    output edge alone is silent; the backup's alone or once the primary's output edges are
    patched); every other edge from ``senders`` into ``receivers`` moves the metric by at most
    :data:`EDGE_SILENT`."""
    truth = planted.truth
    patcher = EdgePatcher(planted, kind)
    full = patcher.full

    def moves(edges) -> float:
        return abs(patcher.patched(edges) - full) / full

    edges, backup_edges = truth.edges(kind), truth.backup_edges(kind)
    retrievers = [
        _node(h)
        for h in truth.heads_of("redundant", "retriever_1") + truth.heads_of("redundant", "retriever_2")
    ]
    primaries = {_node(h) for h in truth.heads_of(kind, "primary")}
    primary_out = {e for e in edges if _ends(e)[0] in primaries}
    for edge in sorted(edges):
        if kind == "redundant" and set(_ends(edge)) & set(retrievers):
            (mine,) = set(_ends(edge)) & set(retrievers)
            twin = retrievers[1 - retrievers.index(mine)]
            sender, receiver = _ends(edge)
            pair = {
                edge,
                edge.replace(f"{mine}->", f"{twin}->")
                if sender == mine
                else edge.replace(f">{mine}<", f">{twin}<"),
            }
            assert len(pair) == 2 and pair <= edges, pair
            assert moves(pair) > EDGE_MATTERS, pair
            if sender == mine:  # its counterfactual letter is not in the prompt: the twin carries the answer
                assert moves({edge}) < EDGE_SILENT, edge
            # (a patched input edge makes the retriever fetch a letter of the prompt, which the reader
            # then finds too: that can matter alone, so it is not asked to be silent)
        elif edge in backup_edges:
            on_top = abs(patcher.patched(primary_out | {edge}) - patcher.patched(primary_out)) / full
            assert max(moves({edge}), on_top) > EDGE_MATTERS, edge
        else:
            assert moves({edge}) > EDGE_MATTERS, edge
    others = _edges_between(senders, receivers) - edges
    silent = {edge: moves({edge}) for edge in sorted(others)}
    loud = {e: round(v, 3) for e, v in silent.items() if v >= EDGE_SILENT}
    print(f"seed {planted.seed} {kind}: {len(edges)} truth edges matter; {len(others)} others, max move "
          f"{max(silent.values()):.3f}")  # fmt: skip
    assert not loud, loud


def _circuit_nodes(truth, kind: str):
    circuit = sorted(truth.circuit(kind))
    own_decoys = [
        r.head for r in truth.roles if r.group == "decoy" and DECOY_OF.get(r.role, ("",))[0] == kind
    ]
    return ["input", *circuit, *own_decoys], [*circuit, "logits"]


@pytest.mark.parametrize("kind", KINDS_V3)
def test_v3_every_truth_edge_matters_and_no_other_edge_between_circuit_nodes_does(planted_v3, kind):
    senders, receivers = _circuit_nodes(planted_v3.truth, kind)
    _check_edges(planted_v3, kind, senders, receivers)


@pytest.mark.slow
@pytest.mark.parametrize("seed", MORE_SEEDS)
def test_v3_ablation_checks_on_more_seeds(seed):
    planted = make_planted_model(seed, version=V3)
    for kind in KINDS_V3:
        _check_the_circuit_carries_the_task(planted, kind)
    _check_self_repair(planted)
    _check_and(planted)


@pytest.mark.slow
@pytest.mark.parametrize("seed", (1, 2, 3))
def test_v3_edges_from_every_decoy_and_other_circuit_carry_nothing(seed):
    planted = make_planted_model(seed, version=V3)
    truth = planted.truth
    decoys = [r.head for r in truth.roles if r.group == "decoy"]
    for kind in KINDS_V3:
        others = [h for k in KINDS_V3 if k != kind for h in truth.circuit(k)]
        senders = ["input", *sorted(truth.circuit(kind)), *decoys, *others]
        _check_edges(planted, kind, senders, [*sorted(truth.circuit(kind)), "logits"])
