"""The edge track in force (circuit_gym/leaderboard/edge_scorer.py, its row in tracks.py): the attacks first
(a lookup table of the public test set, a forged result file), then the ranking rule, the
committed references and their MIB exports, the board section.

Slow (``@pytest.mark.slow``): the sandboxed scoring, and whatever loads the zoo's models to
verify a result. The scoring test shrinks the track (one planted kind, one public seed, one secret model, 64
candidates, no zoo model) so that it is one small run; what it checks does not depend on the size.
"""

from __future__ import annotations

import dataclasses
import json
import tarfile
from pathlib import Path

import pytest

from circuit_gym import benchmark as B
from circuit_gym.edges.graph import EdgeGraph
from circuit_gym.edges.mib_files import edge_circuit_from_mib
from circuit_gym.leaderboard import edge_benchmark as EB
from circuit_gym.leaderboard import edge_scorer, sandbox
from circuit_gym.leaderboard.edge_tables import edge_markdown, edge_row, mib_export, mib_path, rank_edge_rows
from circuit_gym.leaderboard.provenance import content_hash
from circuit_gym.leaderboard.references import load_manifest
from circuit_gym.leaderboard.tracks import TRACKS
from circuit_gym.leaderboard.verification import RefusedResultError, collect, verify

TESTS_DIR = Path(__file__).resolve().parent
VERSION = B.IN_FORCE
TRACK = EB.EDGE_BENCHMARKS[VERSION].track
MANIFEST = load_manifest()


def _committed(name: str) -> Path:
    return MANIFEST[TRACK][name].result_path()


# ------------------------------------------------------------------ attacks
@pytest.mark.slow
def test_a_lookup_table_of_the_public_test_set_scores_nothing_on_the_secret_models(monkeypatch, tmp_path):
    """The policy knows, for the public episode, which candidate rows are truth edges; the scorer
    counts its passes from the environment, and on a secret model it has nothing to look up."""
    from circuit_gym.envs.edge_building import setup_passes
    from circuit_gym.leaderboard.edge_scorer import planted_env, score_edges
    from circuit_gym.leaderboard.isolation import probe
    from circuit_gym.models.planted.generator import truth_of
    from circuit_gym.tasks.planted import task_name

    if not probe().complete:
        pytest.skip(f"isolation not available here: {probe().missing}")
    small = dataclasses.replace(EB.EDGE_BENCHMARKS[VERSION], held_out_models=(), planted_kinds=("induction",),
                                planted_public_seeds=(0,), planted_private_models=1, candidates=64, budget=8)  # fmt: skip
    monkeypatch.setitem(EB.EDGE_BENCHMARKS, VERSION, small)
    monkeypatch.setattr(sandbox, "PRELOAD", ())
    monkeypatch.syspath_prepend(str(TESTS_DIR))
    from edge_lookup_policy import fingerprint

    env = planted_env(small, "induction", (0,))
    inner = env.unwrapped.inner_for(0).unwrapped
    obs, info = inner.reset(options={"task": task_name("induction"), "batch_index": 0})
    truth = truth_of(0, small.planted_generator).edges("induction")
    rows = [i for i, name in enumerate(info["candidate_edges"]) if name in truth]
    assert rows, "no truth edge among the candidates: the attack would prove nothing"
    table = tmp_path / "table.json"
    table.write_text(json.dumps({fingerprint(obs): rows}))
    seeds = tmp_path / "private" / "seeds.json"
    seeds.parent.mkdir()
    seeds.write_text(json.dumps([987654]))

    result = score_edges("lookup", TRACK, policy_spec="edge_lookup_policy:lookup", checkpoint=str(table),
                         private_seeds=seeds)  # fmt: skip
    assert result["status"] == "scored", result.get("failure")
    (public,) = result["scores"]["episodes"]
    assert (public["precision"], public["recall"]) == (1.0, len(rows) / len(truth))  # the table worked
    secret = result["private"]["scores"]["planted"]["all"]
    assert (secret["precision"], secret["recall"]) == (0.0, 0.0)
    assert (
        "circuit_size" not in secret and "lm_passes" not in secret
    )  # the policy's to set: sealed (issue 58)
    # passes are the environment's: its setup, and one per edge added
    assert public["lm_passes"] == setup_passes(inner.ablation) + len(rows)
    env.close()


@pytest.mark.slow  # verification loads the held-out zoo models
def test_a_forged_result_file_is_refused(tmp_path):
    good = json.loads(_committed("random").read_text())
    forged = json.loads(json.dumps(good))
    forged["scores"]["transfer"]["all"]["cpr"] = 2.0  # a better number, the hash left as it was
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    with pytest.raises(RefusedResultError, match="content hash mismatch"):
        verify(tmp_path / "forged.json")
    forged["content_hash"] = content_hash(forged)  # re-sealed: the name is the reference's, the numbers not
    (tmp_path / "random.json").write_text(json.dumps(forged))
    entries, refused, _ = collect([tmp_path / "random.json"])
    assert not entries and "reserved" in refused[0]
    other = {**good, "name": "mine", "provenance": {**good["provenance"], "budget": 512}}
    other["content_hash"] = content_hash(other)  # re-sealed under another definition
    (tmp_path / "other.json").write_text(json.dumps(other))
    with pytest.raises(RefusedResultError, match="different benchmark"):
        verify(tmp_path / "other.json")
    moved = {
        **good,
        "name": "mine",
        "provenance": {
            **good["provenance"],
            "weights_hashes": {good["provenance"]["held_out_models"][0]: "0" * 64},
        },
    }
    moved["content_hash"] = content_hash(moved)  # scored (it says) on other held-out weights
    (tmp_path / "moved.json").write_text(json.dumps(moved))
    with pytest.raises(RefusedResultError, match="other weights"):
        verify(tmp_path / "moved.json")


# ------------------------------------------------------------------ the committed references
@pytest.mark.slow  # verification loads the held-out zoo models
def test_the_track_is_a_row_with_every_edge_reference_and_the_edge_ppo_committed():
    from circuit_gym.leaderboard.paths import RESULTS_DIR

    row = TRACKS[TRACK]
    assert row.private_model and row.results_dir == RESULTS_DIR / EB.EDGE_BENCHMARKS[VERSION].results_folder
    # protocol 2 (issue 57): ACDC over every candidate, the constant and sign-reversed controls; greedy
    # (EAP-IG's top 10 reordered) is no protocol-2 edge method
    protocol_2 = {"acdc_eap_ig", "constant", "eap", "eap_ig", "eap_ig_reversed", "gim", "random"}
    assert set(row.builtins()) == protocol_2
    committed = set(MANIFEST[TRACK])
    assert {"eap", "eap_ig", "random", "edge_ppo_untrained"} <= committed
    for name in committed:
        result = verify(_committed(name))
        assert result["provenance"]["track"] == TRACK and result["status"] == "scored"
        episodes = result["scores"]["episodes"]
        assert len(episodes) == EB.EDGE_BENCHMARKS[VERSION].public_episodes()
        assert all(r["lm_passes"] >= 0 and len(r["circuit"]) == r["circuit_size"] for r in episodes)


@pytest.mark.slow  # 16 MIB files of 29,089 edges each
@pytest.mark.parametrize("name", ["random", "edge_ppo_untrained"])
def test_each_entrys_mib_export_holds_its_circuits(name):
    path = _committed(name)
    result = json.loads(path.read_text())
    archive = mib_path(path)
    assert archive.read_bytes() == mib_export(result)  # beside the result, and a function of it
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        assert len(members) == len(result["scores"]["episodes"])
        for row, member in zip(result["scores"]["episodes"], members, strict=True):
            data = json.loads(tar.extractfile(member).read())
            graph = EdgeGraph(
                data["cfg"]["n_layers"], data["cfg"]["n_heads"], not data["cfg"].get("attn_only")
            )
            circuit, _ = edge_circuit_from_mib(data, graph)
            assert sorted(circuit.names()) == sorted(row["circuit"])
            assert len(data["edges"]) == graph.n_edges == 29_089  # every edge, as MIB writes them


def test_the_board_section_ranks_the_entries_and_shows_no_private_model_as_a_dash():
    """The private model's edge CPR ranks; an entry without it (here a copy of a reference whose
    private part is dropped) comes after every entry that has it, with a dash in that column."""
    entries = []
    for name in MANIFEST[TRACK]:
        entry = json.loads(_committed(name).read_text())
        entry["board"] = {"check": "hash-checked", "reference": name}
        entries.append(entry)
    public_only = {k: v for k, v in entries[0].items() if k != "private"}
    public_only.update(name="public_only", board={"check": "hash-checked", "reference": None})
    rows = rank_edge_rows([edge_row(e) for e in [public_only, *entries]])
    private = [r["private_cpr"] for r in rows]
    assert None not in private[:-1] and private[:-1] == sorted(private[:-1], reverse=True)
    assert rows[-1]["name"] == "public_only" and private[-1] is None
    text = edge_markdown(rows, TRACK)
    table = [line for line in text.splitlines() if line.startswith("| ") and "entry" not in line]
    assert len(table) == len(rows)
    assert [line.split("|")[4].strip() == "-" for line in table] == [False] * len(entries) + [True]


@pytest.mark.slow
def test_the_private_model_is_scored_on_the_tasks_its_card_serves_and_ranks_the_board(monkeypatch, tmp_path):
    """A stand-in private model (a copy of a public member: what matters is that it is scored as the
    private model, from its directory, without disk cache), on a stand-in of the edge row that ranks
    on one private model (tests/test_two_private_models.py plays the real row's two): its record
    keeps the one model's fields at the top level."""
    import shutil

    from circuit_gym.leaderboard import edge_scorer as ES
    from circuit_gym.leaderboard.edge_scorer import score_edges
    from circuit_gym.models.loading import embedded_dir

    small = dataclasses.replace(EB.EDGE_BENCHMARKS[VERSION], held_out_models=(), planted_kinds=("induction",),
                                planted_public_seeds=(0,), planted_private_models=1, candidates=64, budget=8,
                                private_seeds_used=1)  # fmt: skip
    monkeypatch.setitem(EB.EDGE_BENCHMARKS, VERSION, small)
    one_model = dataclasses.replace(B.transfer_benchmark(VERSION), private_models=1)
    monkeypatch.setitem(B.TRANSFER_BENCHMARKS, VERSION, one_model)
    monkeypatch.setattr(ES, "MIN_PRIVATE_EPISODES", 1)  # the floor of 8 a cell: one batch here
    model = tmp_path / "private" / "model"
    shutil.copytree(embedded_dir(one_model.train_models[0]), model)
    seeds = tmp_path / "private" / "seeds.json"
    seeds.write_text(json.dumps([3, 7]))
    served = json.loads((model / "card_metrics.json").read_text())["suite"]["included"]
    result = score_edges("eap", small.track, builtin="eap", private_seeds=seeds, private_model=model)
    assert result["status"] == "scored", result.get("failure")
    private = result["private"]
    assert private["tasks"] == [t for t in small.tasks if t in served] and private["n_seeds"] == 1
    assert private["scores"]["transfer"]["all"]["episodes"] == len(private["tasks"])
    # counts, the seed file's hash and the weights' hash: never a seed
    assert set(private) == {"seed_file_sha256", "n_models", "n_seeds", "tasks", "weights_hash", "scores"}
    entry = {**result, "board": {"check": "hash-checked", "reference": None}}
    row = edge_row(entry)
    assert row["private_cpr"] == private["scores"]["transfer"]["all"]["cpr_log"] is not None


def test_every_edge_row_reads_its_transfer_row_and_plays_only_gated_tasks():
    """An edge row's models, tasks and planted generator are its transfer row's; a held-out member
    is played only on the tasks its card's inclusion gate admits (zoo12 performs three of the
    four)."""
    from circuit_gym.leaderboard.edge_benchmark import EDGE_BENCHMARKS
    from circuit_gym.leaderboard.edge_scorer import transfer_jobs
    from circuit_gym.models.cards import card_metrics

    for version, edge in EDGE_BENCHMARKS.items():
        transfer = B.transfer_benchmark(version)
        assert (edge.held_out_models, edge.tasks, edge.planted_generator) == (
            transfer.held_out_models,
            transfer.held_out_tasks,
            transfer.planted_generator,
        )
        played = [(m, t) for m, jobs in transfer_jobs(edge).items() for t, _ in jobs]
        gated = {m: set(card_metrics(m)["suite"]["included"]) for m in edge.held_out_models}
        assert played and all(t in gated[m] for m, t in played)
        # and every gated held-out task is played: nothing left out
        assert {(m, t) for m in edge.held_out_models for t in edge.tasks if t in gated[m]} == set(played)
    edge = EDGE_BENCHMARKS[VERSION]
    pairs = {(m, t) for m, jobs in transfer_jobs(edge).items() for t, _ in jobs}
    assert len(pairs) < len(edge.held_out_models) * len(edge.tasks)


def test_the_agents_target_compares_it_with_the_best_reference_of_no_more_passes():
    from circuit_gym.leaderboard.edge_tables import agent_target

    def row(name, auc, cpr, passes, reference=True):
        return {"name": name, "reference": reference, "secret": (None, None, auc),
                "private_cpr": cpr, "planted_passes": passes, "transfer_passes": passes}  # fmt: skip

    rows = [row("edge_ppo", 0.70, 1.10, 40), row("eap", 0.60, 1.00, 2), row("eap_ig", 0.75, 1.05, 12),
            row("greedy", 0.99, 1.50, 45),  # more passes than the agent: not a rival
            row("someone", 0.99, 1.60, 0, reference=False)]  # a submission, not a reference  # fmt: skip
    t = agent_target(rows)
    assert t["secret_auc"]["best_reference"] == "eap_ig" and t["secret_auc"]["met"] is False
    assert t["private_cpr"]["best_reference"] == "eap_ig" and t["private_cpr"]["met"] is True
    rows[0] = {**rows[0], "private_cpr": None}  # not scored on the private model: no target there
    assert set(agent_target(rows)) == {"secret_auc"}


@pytest.mark.parametrize("env_id", [edge_scorer.EDGE_ENV_ID, edge_scorer.PLANTED_EDGE_ENV_ID])
def test_the_scorer_makes_the_newest_version_of_its_env_ids(env_id):
    """An outdated ID makes gymnasium warn in every scoring log; the scorer passes every argument
    that differs between versions, so the newest ID scores the same."""
    from gymnasium.envs.registration import find_highest_version, parse_env_id

    import circuit_gym  # noqa: F401  (registers the IDs)

    namespace, name, version = parse_env_id(env_id)
    newest = find_highest_version(namespace, name)
    assert version == newest, f"{env_id}: the registry has v{newest}"
