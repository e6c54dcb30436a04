"""The attack suite: hostile policies (tests/hostile_policies.py), scored by the real scorer: the
benchmark in force's single-head and circuit tracks (``transfer_scorer``), made small
(tests/leaderboard_helpers.py: the 4 x 4 model, one held-out task, a stand-in private model).

Each attempt either fails with a clear failure record, or scores exactly what the honest
policy it falls back to scores, and leaves everything outside its temporary directory as
it was (the cache, leaderboard/results/, the repository's tests, the working directory).
Where the isolation is not available on this machine (see circuit_gym/leaderboard/isolation.py) the
suite is skipped, except in CI, where it must run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from pathlib import Path

import pytest
from hostile_policies import SUCCESS
from leaderboard_helpers import private_tiny, small_in_force
from sealed_records import assert_sealed, public_episodes_checkpoint

from circuit_gym import benchmark as B
from circuit_gym.leaderboard import sandbox
from circuit_gym.leaderboard.isolation import probe
from circuit_gym.leaderboard.probing import LEDGER_NAME
from circuit_gym.leaderboard.provenance import REPO_ROOT, canonical_json
from circuit_gym.leaderboard.transfer_scorer import score_transfer

RESULTS_DIR = REPO_ROOT / "leaderboard" / "results"
TESTS_DIR = Path(__file__).resolve().parent

if not probe().complete:
    if os.environ.get("CI"):
        raise RuntimeError(f"the sandbox's isolation is not available in CI: {probe().missing}")
    pytest.skip(f"isolation not available here: {probe().missing}", allow_module_level=True)


# Public episodes of the small benchmark on either track: 2 seeds of its one held-out task on its one model.
PUBLIC = 2


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """The tests' small benchmark (both tracks): 2 public seeds; the maintainers' seed file (2 seeds
    played) and a stand-in private model in a folder of their own."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        row = small_in_force(mp, cache, seeds=(0, 1), private_seeds=2, timeout_s=5.0)
        private = tmp_path_factory.mktemp("private")
        seeds = private / "private_seeds.txt"
        seeds.write_text("# maintainers only\n912345677\n887766551\n")
        secret = tmp_path_factory.mktemp("home") / "id_rsa"
        secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- not really\n")
        secret.chmod(0o600)
        yield {"cache": cache, "seeds": seeds, "model": private_tiny(private), "secret": secret, "row": row}


def score(bench, name: str, kind: str = B.SINGLE_HEAD, private: bool = False, **kwargs) -> dict:
    """The live scorer on the small benchmark's ``kind`` track; ``private``: with the maintainers'
    seed file and the private model."""
    if private:
        kwargs.update(private_seeds=bench["seeds"], private_model=bench["model"])
    return score_transfer(name, kind, **kwargs)


def _info(bench, tmp_path, **extra) -> Path:
    """What a determined attacker could know or guess, as the policy's checkpoint."""
    info = {
        "scorer_pid": os.getpid(),
        "marker": Path("/proc/self/cmdline").read_bytes().decode(errors="replace"),
        "seed_file": str(bench["seeds"]),
        "secret_file": str(bench["secret"]),
        "cache_dir": str(bench["cache"]),
        "results_dir": str(RESULTS_DIR),
        "cwd": os.getcwd(),
        "drop_name": f"zz_attack_{os.getpid()}_{tmp_path.name}.json",
        "env_markers": [str(bench["cache"]), str(bench["seeds"]), str(REPO_ROOT)],
        **extra,
    }
    path = tmp_path / "checkpoint.json"
    path.write_text(json.dumps(info))
    return path


def _state(*paths: Path) -> dict:
    """(size, mtime) of every file at or under ``paths``: what must not change."""
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*")))]
    return {
        str(f): (f.stat().st_size, f.stat().st_mtime_ns)
        for f in files
        if f.is_file() and "__pycache__" not in f.parts
    }


@pytest.fixture(scope="module")
def honest(bench, tmp_path_factory):
    """The scores (public and private) of the policy every attack falls back to."""
    result = score(bench, "honest", private=True, policy_spec="hostile_policies:honest",
                   checkpoint=str(_info(bench, tmp_path_factory.mktemp("honest"))))  # fmt: skip
    assert result["status"] == "scored", result.get("failure")
    assert result["isolation"]["complete"], result["isolation"]
    return result


# Attempts on the private seeds: scored with them (the others without, to keep the suite fast).
SEED_ATTACKS = {"proc_cmdline", "open_seed_file", "symlink_to_seed_file", "inherited_descriptor",
                "circuit_proc_cmdline", "circuit_open_seed_file"}  # fmt: skip


def _run(bench, tmp_path, attack: str, kind: str = B.SINGLE_HEAD, scorer=None, **extra) -> dict:
    """``attack`` scored on the small benchmark's ``kind`` track (``scorer``: another track's
    scorer, without private material), with what an attacker knows as its checkpoint."""
    checkpoint = _info(bench, tmp_path, **extra)
    # (not all of tests/: other work in a shared checkout may change it meanwhile)
    watched = (bench["cache"], RESULTS_DIR, TESTS_DIR / "hostile_policies.py")
    before = _state(*watched)
    try:
        policy = dict(policy_spec=f"hostile_policies:{attack}", checkpoint=str(checkpoint))
        if scorer is None:
            result = score(bench, attack, kind, private=attack in SEED_ATTACKS, **policy)
        else:
            result = scorer(attack, **policy)
    finally:
        drop = json.loads(checkpoint.read_text())["drop_name"]
        leftovers = [p for p in (RESULTS_DIR / drop, TESTS_DIR / drop, Path.cwd() / drop) if p.exists()]
        for p in leftovers:
            p.unlink()
    assert not leftovers, f"{attack} wrote {leftovers}"
    assert _state(*watched) == before, f"{attack} changed files outside its temporary directory"
    assert SUCCESS not in json.dumps(result), result.get("failure")
    return result


def _same_as_honest(result: dict, honest: dict) -> None:
    assert result["status"] == "scored", result.get("failure")
    assert result["isolation"]["complete"], result["isolation"]
    assert canonical_json(result["scores"]) == canonical_json(honest["scores"])
    if result["name"] in SEED_ATTACKS:
        assert canonical_json(result["private"]) == canonical_json(honest["private"])


# Attempts that, defended, leave the policy ranking honestly: the scores must be the honest ones.
QUIET_ATTACKS = [
    "proc_cmdline", "proc_environ", "proc_self_dotdot", "proc_fd", "proc_mem", "ptrace_scorer",
    "signal_scorer", "open_seed_file", "symlink_to_seed_file", "read_other_users_secret", "read_cache",
    "write_results", "write_repo", "write_cwd", "environment_probe", "inherited_descriptor",
    "raise_memory_limit", "patch_the_scorers_checks",
]  # fmt: skip


@pytest.mark.parametrize("attack", QUIET_ATTACKS)
def test_a_failed_attack_scores_what_the_honest_policy_scores(bench, honest, tmp_path, monkeypatch, attack):
    if attack == "patch_the_scorers_checks":
        monkeypatch.setattr(sandbox, "PRELOAD", ("circuit_gym",))  # it patches circuit_gym's modules
    _same_as_honest(_run(bench, tmp_path, attack), honest)


def test_an_inherited_descriptor_of_the_seed_file_is_not_there(bench, honest, tmp_path):
    fd = os.open(bench["seeds"], os.O_RDONLY)  # the scorer holds the file open, inheritable
    os.set_inheritable(fd, True)
    try:
        result = _run(bench, tmp_path, "inherited_descriptor", marker="912345677")
    finally:
        os.close(fd)
    _same_as_honest(result, honest)


def test_no_connection_to_a_local_port(bench, honest, tmp_path):
    with (
        socket.create_server(("127.0.0.1", 0)) as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
    ):
        udp.bind(("127.0.0.1", 0))
        udp.settimeout(0.5)
        tcp.settimeout(0.5)
        ports = {"tcp_port": tcp.getsockname()[1], "udp_port": udp.getsockname()[1]}
        for attack in ("connect_local_tcp", "send_local_udp"):
            _same_as_honest(_run(bench, tmp_path, attack, **ports), honest)
        with pytest.raises(TimeoutError):
            tcp.accept()
        with pytest.raises(TimeoutError):
            udp.recvfrom(100)


def test_a_forged_cache_does_not_move_any_score(bench, honest, tmp_path):
    """The attack of issue 23: rewrite the cached tables (checksums recomputed) so that the
    honest ranking's first head becomes every episode's oracle; then the forger and a fresh
    honest scoring must both score what the honest policy scored before."""
    _same_as_honest(_run(bench, tmp_path, "forge_cache"), honest)
    again = score(
        bench, "honest", policy_spec="hostile_policies:honest", checkpoint=str(_info(bench, tmp_path))
    )
    assert canonical_json(again["scores"]) == canonical_json(honest["scores"])


def test_a_pickle_sent_to_the_scorer_runs_nothing(bench, tmp_path):
    marker = tmp_path / "ran_in_scorer.txt"
    result = _run(bench, tmp_path, "pickle_to_the_scorer", marker_file=str(marker))
    assert not marker.exists(), "code sent by the policy ran in the scorer's process"
    assert result["status"] == "failed" and result["failure"]["type"] == "PolicyFailureError"


def test_forking_is_refused(bench, honest, tmp_path):
    result = _run(bench, tmp_path, "fork_bomb", forks=40, allowed=0)
    _same_as_honest(result, honest)


def test_a_process_the_policy_starts_does_not_outlive_it(bench, tmp_path):
    result = _run(bench, tmp_path, "spawner")
    assert result["status"] == "failed"
    assert "spawn refused" in result["failure"]["reason"], result["failure"]


@pytest.mark.parametrize(
    "attack, reason",
    [
        ("exits_mid_call", r"exited \(code 3\) while ranking heads"),
        ("hangs_at_load", r"time limit of 6 s exceeded while loading the policy"),
        ("spins_forever", r"time limit of 2 s exceeded while ranking heads"),
        ("returns_a_string", r"scores are not numeric"),
        ("returns_huge", r"20000000 values, more than"),
        ("huge_frame", r"message of 4294967295 bytes, larger than the limit"),
    ],
)
def test_a_misbehaving_policy_gets_a_clear_failure(bench, tmp_path, monkeypatch, attack, reason):
    if attack in ("hangs_at_load", "spins_forever"):
        monkeypatch.setattr(B, "CALL_TIMEOUT_S", 2.0)  # these wait for the limit: keep it short
    result = _run(bench, tmp_path, attack)
    assert result["status"] == "failed" and "scores" not in result
    assert re.search(reason, result["failure"]["reason"]), result["failure"]


def test_memory_the_data_limit_does_not_count_is_limited_too(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(B, "MEMORY_LIMIT_MB", 600)
    result = _run(bench, tmp_path, "shared_memory_hog", megabytes=2048)
    assert result["status"] == "failed" and "memory" in result["failure"]["reason"], result.get("failure")


def _processes_naming(text: str) -> list[int]:
    """Host pids whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_a_process_the_policy_spawns_dies_with_it_even_without_the_process_limit(tmp_path, monkeypatch):
    """With the seccomp filter off, the policy can fork a grandchild that leaves its process
    group; the PID namespace still ends it with the sandbox."""
    import dataclasses

    import numpy as np

    from circuit_gym.leaderboard import sandbox

    full = probe()
    monkeypatch.setattr(sandbox, "probe", lambda: dataclasses.replace(
        full, limits=False, missing=("process limit (seccomp filter): off for this test",)))  # fmt: skip
    checkpoint = tmp_path / f"spawner_{os.getpid()}.json"
    checkpoint.write_text("{}")
    with sandbox.SandboxedPolicy("hostile_policies:spawner_quiet", str(checkpoint), timeout_s=30) as policy:
        policy.rank_heads(np.zeros((16, 12), dtype=np.float32))
        inside = _processes_naming(checkpoint.name)
        assert len(inside) >= 3, inside  # bwrap, the policy and its grandchild (all name the checkpoint)
    time_left = 50
    while _processes_naming(checkpoint.name) and time_left:
        time_left -= 1
        __import__("time").sleep(0.1)
    assert not _processes_naming(checkpoint.name)


def test_rescoring_judges_an_entry_by_its_numbers_not_its_source_bytes(bench, tmp_path, monkeypatch):
    """Edited after scoring, a policy package whose numbers stay is rescored (its source hash is
    provenance only, issue 30); one whose numbers move is refused."""
    from circuit_gym.leaderboard.board import RefusedResultError, rescore_matches
    from circuit_gym.leaderboard.scoring import write_result

    package = tmp_path / "team_policy"
    package.mkdir()
    source = (TESTS_DIR / "hostile_policies.py").read_text()
    (package / "__init__.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    checkpoint = _info(bench, tmp_path)
    result = score(bench, "team", policy_spec="team_policy:honest", checkpoint=str(checkpoint))
    assert result["status"] == "scored", result.get("failure")
    path = write_result(result, tmp_path / "team.json")
    assert rescore_matches(path, result) == "rescored"
    (package / "__init__.py").write_text(source + "\n# edited after scoring: same numbers, other files\n")
    assert rescore_matches(path, result) == "rescored"
    # the same module answering like another policy: other numbers
    swapped = "\n_first = honest_ranking\n\n\ndef honest_ranking(n_heads):  # swapped after scoring\n    return -_first(n_heads)\n"
    (package / "__init__.py").write_text(source + swapped)
    with pytest.raises(RefusedResultError, match="gives different scores"):
        rescore_matches(path, result)


def test_without_namespaces_scoring_runs_for_trusted_policies_and_says_so(bench, tmp_path, monkeypatch):
    """Degrading visibly: where bwrap is missing the policy still runs (rlimits, filter, clean
    environment), the result records what was missing, the board marks the entry, and
    private-seed scoring (which requires isolation by default) refuses."""
    import dataclasses

    from circuit_gym.leaderboard import scoring
    from circuit_gym.leaderboard.isolation import IsolationUnavailableError
    from circuit_gym.leaderboard.transfer_tables import transfer_markdown, transfer_row

    partial = dataclasses.replace(
        probe(), mechanism="setrlimit + seccomp", filesystem=False, processes=False, network=False, bwrap=None,
        missing=("namespaces: no bwrap (removed by this test)",),
    )  # fmt: skip
    monkeypatch.setattr(sandbox, "probe", lambda: partial)
    monkeypatch.setattr(scoring, "probe", lambda: partial)
    result = score(
        bench, "trusted", policy_spec="hostile_policies:honest", checkpoint=str(_info(bench, tmp_path))
    )
    assert result["status"] == "scored", result.get("failure")
    assert result["isolation"] == {"complete": False, "mechanism": "setrlimit + seccomp", "filesystem": False,
                                   "processes": False, "network": False, "environment": True, "limits": True,
                                   "missing": ["namespaces: no bwrap (removed by this test)"]}  # fmt: skip
    with pytest.raises(IsolationUnavailableError, match="no bwrap"):
        score(bench, "private", private=True, policy_spec="hostile_policies:honest")
    with pytest.raises(IsolationUnavailableError, match="no bwrap"):
        score(bench, "required", policy_spec="hostile_policies:honest", require_isolation=True)
    row = transfer_row({**result, "board": {"check": "hash-checked", "reference": None}})
    table = transfer_markdown([row], result["track"])
    assert "| trusted | hash-checked (not isolated) |" in table and "no bwrap (removed by this test)" in table


# ------------------------------------------------------------------ the circuit track
@pytest.fixture(scope="module")
def circuit_honest(bench, tmp_path_factory):
    result = score(bench, "circuit_honest", B.CIRCUIT, private=True, policy_spec="hostile_policies:circuit_honest",
                   checkpoint=str(_info(bench, tmp_path_factory.mktemp("circuit_honest"))))  # fmt: skip
    assert result["status"] == "scored", result.get("failure")
    assert result["track"] == bench["row"].track(B.CIRCUIT)
    assert result["isolation"]["complete"], result["isolation"]
    assert [e["order"] for e in result["scores"]["episodes"]] == [[13, 12], [13, 12]]  # 2 heads, then STOP
    return result


@pytest.mark.parametrize(
    "attack",
    ["circuit_open_seed_file", "circuit_proc_cmdline", "circuit_write_repo", "circuit_write_results",
     "circuit_read_cache", "circuit_numpy_int_action"],
)  # fmt: skip
def test_a_failed_attack_on_the_circuit_track_scores_what_the_honest_builder_scores(
    bench, circuit_honest, tmp_path, attack
):
    result = _run(bench, tmp_path, attack, B.CIRCUIT)
    assert result["status"] == "scored", result.get("failure")
    assert result["isolation"]["complete"], result["isolation"]
    assert canonical_json(result["scores"]) == canonical_json(circuit_honest["scores"])
    if attack in SEED_ATTACKS:
        assert canonical_json(result["private"]) == canonical_json(circuit_honest["private"])


@pytest.mark.parametrize(
    "attack, reason",
    [
        ("circuit_masked_head", r"InvalidActionError|action 13 is masked"),
        ("circuit_float_action", r"action must be an integer, got float: 13.0"),
        ("circuit_bool_action", r"action must be an integer, got bool: True"),
        ("circuit_array_action", r"act returned ndarray \(array\(\[13\]\)\), not an integer"),
        ("circuit_scalar_array_action", r"act returned ndarray \(array\(13\)\), not an integer"),
        ("circuit_string_action", r"act returned str \('13'\), not an integer"),
        ("circuit_negative_action", r"action -1 is outside 0 \.\. 16"),
        ("circuit_huge_action", r"action 1000000000 is outside 0 \.\. 16"),
        ("circuit_giant_action", r"outside the int64 range"),
        ("circuit_nan_action", r"action must be an integer, got float: nan"),
        ("circuit_raises", r"act raised:.*no action today"),
        ("circuit_sleeps", r"time limit of 2 s exceeded while choosing an action"),
        ("circuit_no_act", r"has no act\(observation, action_mask\) method"),
    ],
)
def test_an_illegal_action_fails_the_circuit_entry_clearly(bench, tmp_path, monkeypatch, attack, reason):
    if attack == "circuit_sleeps":
        monkeypatch.setattr(B, "CALL_TIMEOUT_S", 2.0)  # it waits for the limit: keep it short
    result = _run(bench, tmp_path, attack, B.CIRCUIT)
    assert result["status"] == "failed" and "scores" not in result, result.get("scores", {}).get("quadrants")
    assert result["track"] == bench["row"].track(B.CIRCUIT)
    assert re.search(reason, result["failure"]["reason"], re.S), result["failure"]


def test_stop_at_once_is_legal_and_scores_its_rank_heads_order(bench, tmp_path, tiny_model):
    """An empty circuit: the episode's ranking is rank_heads' order alone, scored as any other."""
    from hostile_policies import honest_ranking

    from circuit_gym.baselines.circuit_solvers import episode_ranking
    from circuit_gym.circuits import batch_scores
    from circuit_gym.track_envs import board_env

    result = _run(bench, tmp_path, "circuit_stops_at_once", B.CIRCUIT)
    assert result["status"] == "scored", result.get("failure")
    env = board_env(B.CIRCUIT, "tiny", PUBLIC, transfer=bench["row"], cache=False)
    for episode in result["scores"]["episodes"]:
        assert episode["order"] == [] and episode["circuit_size"] == 0 and episode["faithfulness"] == 0
        env.reset(options={"task": episode["task"], "batch_index": episode["seed"]})
        base = env.unwrapped
        ranking = episode_ranking([], honest_ranking(base.n_total), base.n_layers, base.n_heads, "x")
        areas = batch_scores(base.state.runner, ranking, n_random=B.CIRCUIT_N_RANDOM, seed=episode["seed"])
        assert episode["cpr"] == pytest.approx(areas["cpr"], abs=1e-9)
        assert episode["forward_passes"] == 4  # the environment's setup passes; no head added


# ------------------------------------------------------------------ issue 44: sealed scoring, round two
def test_a_namespace_package_named_like_the_cache_folder_is_refused(bench, honest, tmp_path, monkeypatch):
    """Issue 44's attack: ``cache.nscheat`` with no ``__init__.py``, scored from a folder that
    holds the oracle cache as ``cache/``: a namespace package spanning both folders would show the
    policy the cached damage tables. It is refused before anything runs, saying what to submit."""
    work, submission = tmp_path / "work", tmp_path / "submission"
    shutil.copytree(bench["cache"], work / "cache")  # the scorer's working directory holds the cache
    assert any(p.is_file() for p in (work / "cache").rglob("*")), "the honest scoring wrote no cache tables"
    (submission / "cache").mkdir(parents=True)
    shutil.copy(TESTS_DIR / "hostile_policies.py", submission / "cache" / "nscheat.py")
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(submission))
    monkeypatch.syspath_prepend(str(work))  # as the CLI does
    with pytest.raises(sandbox.NamespacePackageError, match=r"namespace package.*__init__\.py"):
        result = score(
            bench,
            "nscheat",
            policy_spec="cache.nscheat:package_snoop",
            checkpoint=str(_info(bench, tmp_path)),
        )
        pytest.fail(f"scored, status {result['status']}: {result.get('failure')}")  # what it saw, if it saw


def test_a_regular_package_named_like_the_cache_folder_sees_only_itself(bench, honest, tmp_path, monkeypatch):
    """The accepted form of the same submission (``cache/__init__.py``): the sandbox binds that
    folder alone, the working directory's ``cache/`` stays out of sight, and the policy scores
    what its honest twin scores."""
    work, submission = tmp_path / "work", tmp_path / "submission"
    shutil.copytree(bench["cache"], work / "cache")
    (submission / "cache").mkdir(parents=True)
    shutil.copy(TESTS_DIR / "hostile_policies.py", submission / "cache" / "__init__.py")
    shutil.copy(TESTS_DIR / "hostile_policies.py", submission / "cache" / "nscheat.py")
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(submission))
    monkeypatch.syspath_prepend(str(work))
    assert sandbox.policy_location("cache.nscheat:package_snoop") == (submission / "cache", submission)
    result = score(
        bench, "nscheat", policy_spec="cache.nscheat:package_snoop", checkpoint=str(_info(bench, tmp_path))
    )
    assert SUCCESS not in json.dumps(result), result.get("failure")
    _same_as_honest(result, honest)


def test_the_working_directory_is_no_import_root_but_for_the_policys_own_package(tmp_path, monkeypatch):
    work, submission = tmp_path / "work", tmp_path / "submission"
    (work / "cache").mkdir(parents=True)
    submission.mkdir()
    shutil.copy(TESTS_DIR / "hostile_policies.py", submission / "elsewhere.py")
    shutil.copy(TESTS_DIR / "hostile_policies.py", work / "here.py")
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(submission))
    monkeypatch.syspath_prepend(str(work))
    assert str(work) not in sandbox.child_sys_path("elsewhere:honest")
    assert str(submission) in sandbox.child_sys_path("elsewhere:honest")
    assert str(work) in sandbox.child_sys_path("here:honest")  # its own import root stays
    assert sandbox.readable_paths("here:honest", None)[-1] == work / "here.py"  # the file, not the folder


@pytest.mark.parametrize(
    "attack, check", [("leaks_in_message", "raised"), ("leaks_in_scores_shape", "scores")]
)
def test_a_failure_in_the_private_part_carries_no_policy_text(bench, tmp_path, attack, check):
    """Issue 44's second attack: fail in the first private episode with what it saw there in the
    exception's message, its output, or a value the scorer's check quotes."""
    result = score(bench, attack, private=True, policy_spec=f"hostile_policies:{attack}",
                   checkpoint=public_episodes_checkpoint(tmp_path, PUBLIC))  # fmt: skip
    assert_sealed(result, PUBLIC, check)
    ledger = bench["seeds"].parent / LEDGER_NAME  # counted, beside the seed file (issue 44 item 3)
    assert attack in [json.loads(line)["submitter"] for line in ledger.read_text().splitlines()]
    assert result["probing"]["submitter_scorings"] >= 1


def test_a_failure_in_the_public_part_keeps_its_message(bench, tmp_path):
    """Only the private part is sealed: a policy failing on public episodes is told why."""
    result = score(bench, "leaks", policy_spec="hostile_policies:leaks_in_message",
                   checkpoint=public_episodes_checkpoint(tmp_path, 1))  # fmt: skip
    assert result["status"] == "failed" and "PRIVATE-OBS" in result["failure"]["reason"]
    assert "check" not in result["failure"]


@pytest.mark.parametrize("attack, check", [("leaks_in_message", "raised"), ("leaks_in_action", "action")])
def test_a_failure_in_the_private_part_of_the_circuit_track_carries_no_policy_text(
    bench, tmp_path, attack, check
):
    result = score(bench, attack, B.CIRCUIT, private=True, policy_spec=f"hostile_policies:{attack}",
                   checkpoint=public_episodes_checkpoint(tmp_path, PUBLIC))  # fmt: skip
    assert result["track"] == bench["row"].track(B.CIRCUIT)
    assert_sealed(result, PUBLIC, check)


def test_the_policys_own_computing_is_recorded_and_capped(bench, honest, tmp_path, monkeypatch):
    """Issue 44's third attack: a policy computing on its own (no LM pass of the board's count)
    shows in the result's CPU record, and past the documented limit per call it fails."""
    monkeypatch.setattr(B, "CALL_TIMEOUT_S", 120.0)  # CPU seconds, not wall time, are the point here
    checkpoint = tmp_path / "burn.json"
    checkpoint.write_text(json.dumps({"seconds": 0.3}))
    result = score(bench, "burner", policy_spec="hostile_policies:burns_cpu", checkpoint=str(checkpoint))
    assert result["status"] == "scored", result.get("failure")
    cpu = result["diagnostics"]["policy_cpu"]
    assert cpu["measured"] and cpu["calls"] == PUBLIC, cpu
    assert cpu["per_call_max_s"] >= 0.25 and cpu["calls_s"] >= 0.25 * PUBLIC, cpu
    assert cpu["limit_per_call_s"] == sandbox.CALL_CPU_LIMIT_S
    assert result["scores"]["compute"] == honest["scores"]["compute"]  # the board's passes: the same
    monkeypatch.setattr(sandbox, "CALL_CPU_LIMIT_S", 0.2)
    capped = score(bench, "burner", policy_spec="hostile_policies:burns_cpu", checkpoint=str(checkpoint))
    assert capped["status"] == "failed", capped.get("scores")
    assert re.search(
        r"CPU time limit of 0.2 s per call exceeded while ranking heads", capped["failure"]["reason"]
    )


def test_computing_between_calls_is_charged_to_the_next_call(tmp_path, monkeypatch):
    """A thread computing while the scorer works is charged too: CPU time from one answer to the
    next. (Waits of growing length: on a loaded machine the thread gets a share of a core only.)"""
    import time

    import numpy as np

    monkeypatch.setattr(sandbox, "PRELOAD", ())
    monkeypatch.setattr(sandbox, "CALL_CPU_LIMIT_S", 0.3)
    obs = np.zeros((16, 12), dtype=np.float32)
    with (
        sandbox.SandboxedPolicy("hostile_policies:burns_cpu_between_calls", timeout_s=30) as policy,
        pytest.raises(sandbox.PolicyFailureError, match="CPU time limit of 0.3 s per call") as err,
    ):
        for wait in (0.5, 1, 2, 4, 8, 16):
            time.sleep(wait)  # the scorer at work; the policy's thread spins meanwhile
            policy.rank_heads(obs)  # answers at once: a call-only count would charge ~0
    assert err.value.check == "cpu"
