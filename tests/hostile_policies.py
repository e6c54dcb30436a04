"""Hostile policies for the attack suite (tests/test_attacks.py), one attempt each.

Each factory takes its "checkpoint": a JSON file the test writes with what a determined
attacker could know or guess (the scorer's pid, the private seed file's path, the cache
directory, a local port). The attempt is made at the first ``rank_heads`` call. If it
succeeds, the call raises ``AttackSucceeded`` with the evidence, so the result's failure
reason shows what leaked; if it fails, the policy ranks like an honest constant policy
(``honest``), so a defended scorer gives exactly the honest policy's scores.

Self-contained (numpy and the standard library only): the sandbox gives a policy its
own module file, not its neighbours.
"""

import contextlib
import ctypes
import gc
import json
import os
import pickle
import socket
import sys
import time
from pathlib import Path

import numpy as np

SUCCESS = "ATTACK SUCCEEDED"


class AttackSucceededError(RuntimeError):
    pass


def honest_ranking(n_heads: int) -> np.ndarray:
    """What every policy here returns when its attack failed: head ``n - 3`` first."""
    return -np.abs(np.arange(n_heads) - (n_heads - 3.0)) - 0.01 * np.arange(n_heads)


class _Attack:
    """Runs ``attempt(info)`` once; a truthy return is evidence that the attack worked."""

    def __init__(self, checkpoint, attempt):
        self.info = json.loads(Path(checkpoint).read_text()) if checkpoint else {}
        self.attempt = attempt
        self.done = False

    def _attempt_once(self):
        if not self.done:
            self.done = True
            evidence = self.attempt(self.info)
            if evidence:
                raise AttackSucceededError(f"{SUCCESS}: {str(evidence)[:300]}")

    def rank_heads(self, obs):
        self._attempt_once()
        return honest_ranking(obs.shape[0])


def _attack(attempt):
    def factory(checkpoint=None):
        return _Attack(checkpoint, attempt)

    factory.__name__ = attempt.__name__
    factory.attempt = attempt
    return factory


def _read(path, n=4096):
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError:
        return None


def _pids(info):
    """The scorer's pid (told), the parent's, and every pid this process can see."""
    pids = {info.get("scorer_pid"), os.getppid()}
    with contextlib.suppress(OSError):
        pids |= {int(p) for p in os.listdir("/proc") if p.isdigit()}
    return sorted(p for p in pids if p and p != os.getpid())


@_attack
def honest(info):
    return None


@_attack
def proc_cmdline(info):
    """Find the private seed file's path on a process's command line (the attack of issue 23)."""
    for pid in _pids(info):
        data = _read(f"/proc/{pid}/cmdline")
        if data and info["marker"].encode() in data:
            return f"pid {pid} cmdline names {info['marker']}"
    return None


@_attack
def proc_environ(info):
    """The scorer's environment names its cache directory and more."""
    for pid in _pids(info):
        data = _read(f"/proc/{pid}/environ", 1 << 16) or b""
        for marker in info["env_markers"]:
            if marker.encode() in data:
                return f"pid {pid} environ names {marker}"
    return None


@_attack
def proc_self_dotdot(info):
    """/proc/self/../<pid>: the same files by another path."""
    data = _read(f"/proc/self/../{info['scorer_pid']}/cmdline")
    return data if data and info["marker"].encode() in data else None


@_attack
def proc_fd(info):
    """The scorer's open files, through /proc/<pid>/fd."""
    base = f"/proc/{info['scorer_pid']}/fd"
    try:
        links = [os.readlink(f"{base}/{fd}") for fd in os.listdir(base)]
    except OSError:
        return None
    return f"scorer's fds: {links[:5]}"


@_attack
def proc_mem(info):
    """Read the scorer's memory: /proc/<pid>/maps, then /proc/<pid>/mem at a mapped address."""
    maps = _read(f"/proc/{info['scorer_pid']}/maps", 1 << 16)
    if not maps:
        return None
    start = int(maps.split(b"-", 1)[0], 16)
    try:
        with open(f"/proc/{info['scorer_pid']}/mem", "rb") as mem:
            mem.seek(start)
            return f"read {len(mem.read(64))} bytes of the scorer's memory"
    except OSError:
        return None


@_attack
def ptrace_scorer(info):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    # PTRACE_SEIZE, unlike PTRACE_ATTACH, does not stop the scorer (a stopped scorer hangs the test)
    if libc.ptrace(0x4206, info["scorer_pid"], None, None) == 0:
        libc.ptrace(17, info["scorer_pid"], None, None)  # PTRACE_DETACH
        return "seized the scorer with ptrace"
    return None


@_attack
def signal_scorer(info):
    """Signal 0 only checks that a signal could be delivered (a real attacker would kill)."""
    try:
        os.kill(info["scorer_pid"], 0)
    except OSError:
        return None
    return f"could signal the scorer (pid {info['scorer_pid']})"


@_attack
def open_seed_file(info):
    data = _read(info["seed_file"])
    return data if data else None


@_attack
def symlink_to_seed_file(info):
    link = Path(os.environ.get("TMPDIR", "/tmp")) / "innocent"
    with contextlib.suppress(OSError):
        link.unlink()
    try:
        link.symlink_to(info["seed_file"])
    except OSError:
        return None
    data = _read(link)
    return data if data else None


@_attack
def read_other_users_secret(info):
    """A private file of the machine's owner (the test's stand-in for ~/.ssh), and /etc/shadow."""
    for path in (info["secret_file"], "/etc/shadow", str(Path.home() / ".ssh" / "id_rsa")):
        data = _read(path)
        if data and (path != info["secret_file"] or info["marker"].encode() in data):
            return f"read {path}"
    return None


@_attack
def read_cache(info):
    try:
        names = os.listdir(info["cache_dir"])
    except OSError:
        return None
    for name in names:
        if _read(os.path.join(info["cache_dir"], name)):
            return f"read cached table {name}"
    return f"listed the cache: {names[:3]}" if names else None


@_attack
def forge_cache(info):
    """The attack of issue 23: rewrite every cached table so that head ``target`` becomes the
    oracle, with a recomputed checksum. Success is judged by the scores (the test)."""
    import hashlib

    def canonical(obj):
        return json.dumps(obj, sort_keys=True, separators=(",", ":"))

    forged = 0
    with contextlib.suppress(OSError):
        for name in os.listdir(info["cache_dir"]):
            path = os.path.join(info["cache_dir"], name)
            try:
                entry = json.loads(Path(path).read_text())
                damage = entry["payload"]["task_damage"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            target = len(damage) - 3
            damage[:] = [10.0 if h == target else -10.0 for h in range(len(damage))]
            entry["checksum"] = hashlib.sha256(canonical(entry["payload"]).encode()).hexdigest()
            try:
                Path(path).write_text(canonical(entry))
                forged += 1
            except OSError:
                pass
    return None  # judged by the scores: the honest ranking puts ``target`` first


@_attack
def write_results(info):
    path = Path(info["results_dir"]) / info["drop_name"]
    try:
        path.write_text('{"name": "forged"}')
    except OSError:
        return None
    return f"wrote {path}"


@_attack
def write_repo(info):
    """Write next to its own module (the repository), and rewrite its own file (so the files
    hashed at scoring are not the files that ran)."""
    here = Path(__file__)
    for path in (here.with_name(info["drop_name"]), here):
        try:
            with open(path, "a") as fh:
                fh.write("")
            return f"opened {path} for writing"
        except OSError:
            pass
    return None


@_attack
def write_cwd(info):
    try:
        Path(info["cwd"], info["drop_name"]).write_text("x")
    except OSError:
        return None
    return f"wrote into the scorer's working directory {info['cwd']}"


@_attack
def connect_local_tcp(info):
    try:
        with socket.create_connection(("127.0.0.1", info["tcp_port"]), timeout=2) as s:
            s.sendall(b"hello from the policy")
    except OSError:
        return None
    return f"connected to 127.0.0.1:{info['tcp_port']}"


@_attack
def send_local_udp(info):
    """UDP needs no connection: the test checks whether the datagram arrived."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"hello from the policy", ("127.0.0.1", info["udp_port"]))
    return None


@_attack
def environment_probe(info):
    text = json.dumps(dict(os.environ))
    for marker in info["env_markers"]:
        if marker in text:
            return f"the environment names {marker}"
    return None


@_attack
def inherited_descriptor(info):
    """Read every open descriptor but the standard ones, looking for the seed file's bytes."""
    for fd in range(3, 1024):
        with contextlib.suppress(OSError):
            os.lseek(fd, 0, os.SEEK_SET)
        try:
            data = os.pread(fd, 4096, 0)
        except OSError:
            continue
        if info["marker"].encode() in data:
            return f"fd {fd} holds the seed file"
    return None


@_attack
def fork_bomb(info):
    """Bounded: at most ``info['forks']`` children, each exits after 20 s."""
    pids = []
    for _ in range(info["forks"]):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(20)
            os._exit(0)
        pids.append(pid)
    if len(pids) > info["allowed"]:
        return f"forked {len(pids)} processes"
    return None


@_attack
def raise_memory_limit(info):
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_DATA, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        return None
    return "raised its own RLIMIT_DATA to unlimited"


@_attack
def pickle_to_the_scorer(info):
    """Send the scorer a pickle that runs code when unpickled: the child's end of the pipe is
    an object in this process. Success is judged by the test (a marker file appears)."""

    class Payload:
        def __reduce__(self):
            return (Path(info["marker_file"]).write_text, ("code ran in the scorer",))

    blob = pickle.dumps(("ok", Payload()))
    from multiprocessing.connection import Connection

    for obj in gc.get_objects():
        if isinstance(obj, Connection):
            with contextlib.suppress(OSError):
                obj.send_bytes(blob)
    for fd in range(3, 1024):  # a raw pipe or socket: try the bytes on every descriptor
        with contextlib.suppress(OSError):
            os.write(fd, len(blob).to_bytes(4, "big") + blob)
    return None


def patch_the_scorers_checks(checkpoint=None):
    """``sys.modules`` tricks at load: patch the checks, the summary and the child's own
    bootstrap (its reply and its limits) in this process, then rank honestly."""
    import circuit_gym.evaluation as ev
    import circuit_gym.policy as pol

    boot = sys.modules["__main__"]  # the child's bootstrap (circuit_gym/leaderboard/policy_child.py)
    pol.check_scores = lambda scores, n, *a, **k: np.asarray(scores, dtype=float)
    ev.recovery_summary = lambda *a, **k: {"recovery": 1.0}
    boot.MAX_REPLY_BYTES = boot.MAX_SCORES = 1 << 40
    boot.limit_memory = lambda *a: None
    return _Attack(checkpoint, lambda info: None)


def shared_memory_hog(checkpoint=None):
    """Takes memory that RLIMIT_DATA does not count: a shared anonymous mapping, touched."""
    import mmap

    info = json.loads(Path(checkpoint).read_text())

    class Hog:
        def rank_heads(self, obs):
            size = info["megabytes"] << 20
            block = mmap.mmap(-1, size, flags=mmap.MAP_SHARED)
            for i in range(0, size, 4096):
                block[i] = 1
            return honest_ranking(obs.shape[0])

    return Hog()


def returns_a_string(checkpoint=None):
    return _Fn(lambda obs: "first head please")


def returns_huge(checkpoint=None):
    return _Fn(lambda obs: np.zeros(20_000_000))


def huge_frame(checkpoint=None):
    """Writes a frame header announcing 4 GiB on every descriptor that may be its socket."""

    def rank(obs):
        for fd in range(3, 1024):
            with contextlib.suppress(OSError):
                os.write(fd, (2**32 - 1).to_bytes(4, "big"))
        time.sleep(60)

    return _Fn(rank)


def exits_mid_call(checkpoint=None):
    return _Fn(lambda obs: os._exit(3))


def hangs_at_load(checkpoint=None):
    time.sleep(3600)


def spins_forever(checkpoint=None):
    def rank(obs):
        while True:
            pass

    return _Fn(rank)


def spawner(checkpoint=None):
    """Starts a long-lived grandchild at load; the first call reports its pid (as a failure)."""
    try:
        pid = os.fork()
    except OSError as err:
        refused = f"spawn refused: {err}"
        return _Fn(lambda obs: _raise(refused))
    if pid == 0:
        os.setsid()  # its own session: not in the policy's process group
        time.sleep(60)
        os._exit(0)
    return _Fn(lambda obs: _raise(f"spawned pid {pid}"))


def _raise(message):
    raise RuntimeError(message)


class _Fn:
    def __init__(self, fn):
        self.rank_heads = fn


def spawner_quiet(checkpoint=None):
    """Starts a grandchild in its own session (out of the policy's process group) that would
    outlive the policy, then ranks honestly; a refused fork is not an error here."""
    with contextlib.suppress(OSError):
        if os.fork() == 0:
            os.setsid()
            time.sleep(120)
            os._exit(0)
    return _Fn(lambda obs: honest_ranking(obs.shape[0]))


# ---------------------------------------------------------------------------------------------
# The circuit-building tracks (circuit_gym/leaderboard/circuit_play.py): circuit-building policies, with
# act(observation, action_mask) besides rank_heads. The honest one adds the two heads it ranks
# highest, then says STOP; the attacks above run at its first call (act, not rank_heads).
HONEST_CIRCUIT_SIZE = 2


def honest_action(obs, mask):
    n = obs.shape[0]
    mask = np.asarray(mask)
    if n - int(mask[:n].sum()) >= HONEST_CIRCUIT_SIZE:  # (from empty: masked heads are in the circuit)
        return n  # STOP
    free = np.flatnonzero(mask[:n])
    return int(free[np.argmax(honest_ranking(n)[free])])


class _CircuitAttack(_Attack):
    def act(self, obs, mask):
        self._attempt_once()
        return honest_action(obs, mask)


def _circuit(factory):
    """The circuit-track version of an attack of this module."""

    def circuit_factory(checkpoint=None):
        return _CircuitAttack(checkpoint, factory.attempt)

    circuit_factory.__name__ = f"circuit_{factory.__name__}"
    return circuit_factory


circuit_honest = _circuit(honest)
circuit_open_seed_file = _circuit(open_seed_file)
circuit_proc_cmdline = _circuit(proc_cmdline)
circuit_write_repo = _circuit(write_repo)
circuit_write_results = _circuit(write_results)
circuit_read_cache = _circuit(read_cache)


class _Builder:
    def __init__(self, act):
        self.act = act

    def rank_heads(self, obs):
        return honest_ranking(obs.shape[0])


def _first_head(obs, mask):
    """The honest first head, every step: from the second step on it is in the circuit (masked)."""
    return int(np.argmax(honest_ranking(obs.shape[0])))


def circuit_masked_head(checkpoint=None):
    return _Builder(_first_head)


def circuit_float_action(checkpoint=None):
    return _Builder(lambda obs, mask: float(honest_action(obs, mask)))


def circuit_bool_action(checkpoint=None):
    """True is 1 to a lax check (Python's bool is an int): head 1, a legal head."""
    return _Builder(lambda obs, mask: True)


def circuit_array_action(checkpoint=None):
    return _Builder(lambda obs, mask: np.array([honest_action(obs, mask)]))


def circuit_scalar_array_action(checkpoint=None):
    """A 0-d array: int() would take it; it is not an integer."""
    return _Builder(lambda obs, mask: np.array(honest_action(obs, mask)))


def circuit_string_action(checkpoint=None):
    return _Builder(lambda obs, mask: str(honest_action(obs, mask)))


def circuit_negative_action(checkpoint=None):
    """-1: the last action (STOP) to Python's indexing."""
    return _Builder(lambda obs, mask: -1)


def circuit_huge_action(checkpoint=None):
    return _Builder(lambda obs, mask: 10**9)


def circuit_giant_action(checkpoint=None):
    """More digits than JSON's encoder will write."""
    return _Builder(lambda obs, mask: 10**5000)


def circuit_nan_action(checkpoint=None):
    return _Builder(lambda obs, mask: float("nan"))


def circuit_numpy_int_action(checkpoint=None):
    """Honest, as a NumPy integer: legal."""
    return _Builder(lambda obs, mask: np.int64(honest_action(obs, mask)))


def circuit_raises(checkpoint=None):
    return _Builder(lambda obs, mask: _raise("no action today"))


def circuit_sleeps(checkpoint=None):
    return _Builder(lambda obs, mask: time.sleep(3600))


def circuit_stops_at_once(checkpoint=None):
    """STOP at the first step (legal): the episode's ranking is its rank_heads order only."""
    return _Builder(lambda obs, mask: obs.shape[0])


def circuit_no_act(checkpoint=None):
    return _Fn(lambda obs: honest_ranking(obs.shape[0]))


# ---------------------------------------------------------------------------------------------
# Issue 44: what a policy could carry out of the private part, and what it computes itself.
# The leakers count their episodes (rank_heads calls; the checkpoint says how many are public)
# and, in the first private episode, put a summary of what they saw into a channel: an
# exception's message, their output, a value the scorer's checks quote. The summary is marked
# PRIVATE-OBS so that a test finds it in any record; their public part's output says PUBLIC-LOG.
PRIVATE_MARK, PUBLIC_MARK = "PRIVATE-OBS", "PUBLIC-LOG"
# Numbers the checks would quote: 50,000 + a head (under the child's cap of 65,536 scores).
LEAK_BASE = 50_000
LEAK_NUMBER = r"\b50[01]\d\d\b"


def obs_summary(obs) -> str:
    """The top-4 heads of each of the first 5 observation columns: what a memoriser needs."""
    obs = np.asarray(obs)
    return ";".join(",".join(map(str, np.argsort(-obs[:, c])[:4])) for c in range(min(5, obs.shape[1])))


class _Leaker:
    """Honest until the private part; there it leaks through ``channel(obs)``."""

    def __init__(self, checkpoint, channel):
        self.public = json.loads(Path(checkpoint).read_text())["public_episodes"] if checkpoint else 0
        self.channel, self.episodes, self.last_obs = channel, 0, None

    def _private(self) -> bool:
        return self.episodes >= self.public

    def rank_heads(self, obs):
        private = self._private()
        print(f"{PRIVATE_MARK if private else PUBLIC_MARK} {obs_summary(obs)}", flush=True)
        self.episodes += 1
        if private:
            return self.channel(obs)
        return honest_ranking(obs.shape[0])

    def act(self, obs, mask):
        if self._private() and self.channel is _illegal_action:
            print(f"{PRIVATE_MARK} {obs_summary(obs)}", flush=True)
            return _illegal_action(obs)
        return honest_action(obs, mask)


def _raises_summary(obs):
    raise RuntimeError(f"{PRIVATE_MARK} {obs_summary(obs)}")


def _summary_in_shape(obs):
    """Scores of a length that spells the first column's top head (the scores check quotes it)."""
    return np.zeros(LEAK_BASE + int(np.argmax(np.asarray(obs)[:, 0])))


def _illegal_action(obs):
    """An action number that spells the first column's top head (the action check quotes it)."""
    return LEAK_BASE + int(np.argmax(np.asarray(obs)[:, 0]))


def leaks_in_message(checkpoint=None):
    return _Leaker(checkpoint, _raises_summary)


def leaks_in_scores_shape(checkpoint=None):
    return _Leaker(checkpoint, _summary_in_shape)


def leaks_in_action(checkpoint=None):
    return _Leaker(checkpoint, _illegal_action)


def package_snoop(checkpoint=None):
    """A policy in a package (``cache.nscheat:package_snoop``, issue 44's attack): whatever else the
    folders of its package hold (the oracle cache's damage tables, when its package is a namespace
    spanning the scorer's ``cache/``) is evidence."""

    def attempt(info):
        package = sys.modules[__name__].__spec__.parent
        if not package:
            return None
        found = []
        for folder in getattr(sys.modules[package], "__path__", []):
            for root, _, files in os.walk(folder):
                found += [os.path.join(root, f) for f in files if not f.endswith((".py", ".pyc"))]
        return f"{len(found)} files beside the policy: {found[:3]}" if found else None

    return _Attack(checkpoint, attempt)


def burns_cpu(checkpoint=None):
    """Computes for ``seconds`` of CPU in every call (its own model passes, say), then ranks honestly."""
    seconds = json.loads(Path(checkpoint).read_text())["seconds"] if checkpoint else 0.5

    def rank(obs):
        start = time.process_time()
        while time.process_time() - start < seconds:
            pass
        return honest_ranking(obs.shape[0])

    return _Fn(rank)


def burns_cpu_between_calls(checkpoint=None):
    """Answers at once, but a thread it starts at load computes all the time."""
    import threading

    def spin():
        while True:
            pass

    threading.Thread(target=spin, daemon=True).start()
    return _Fn(lambda obs: honest_ranking(obs.shape[0]))


# ---------------------------------------------------------------------------------------------
# Issue 58 (item 3): own compute on the package's models. The attacker knows the benchmark's public
# settings (its checkpoint says them) and the package's layout; it computes, inside the sandbox, what
# the scorer computes outside it. Defended, it finds no model and plays honestly (tests/
# test_attacks_own_compute.py compares it with its honest twin). These import circuit_gym, which the
# sandbox shows every policy; nothing here runs unless its attack works.
WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin", ".ckpt")


@_attack
def read_packaged_weights(info):
    """Open the package's weight files by their paths (no circuit_gym code involved)."""
    found = []
    for root, _, files in os.walk(info["package_dir"]):
        found += [os.path.join(root, f) for f in files if f.endswith(WEIGHT_SUFFIXES)]
    readable = [f for f in found if _read(f, 16)]
    return f"read {len(readable)} weight files, e.g. {readable[:2]}" if readable else None


class _PlanBuilder:
    """Adds the heads ``plan(episode)`` names, in order, then STOP, and ranks them first; where
    ``plan`` raises (the attack found nothing to compute on), it is the honest builder."""

    def __init__(self, checkpoint, plan):
        self.info = json.loads(Path(checkpoint).read_text()) if checkpoint else {}
        self.plan, self.episode, self.heads = plan, 0, None

    def act(self, obs, mask):
        n = obs.shape[0]
        if self.heads is None:  # the episode's first step
            try:
                self.heads = [int(h) for h in self.plan(self.info, self.episode)]
            except Exception:
                self.heads = []
        if not self.heads:
            return honest_action(obs, mask)
        todo = [h for h in self.heads if mask[h]]
        return todo[0] if todo else n

    def rank_heads(self, obs):
        scores = honest_ranking(obs.shape[0])
        for i, h in enumerate(self.heads or []):
            scores[h] = 100.0 - i
        self.episode, self.heads = self.episode + 1, None
        return scores


def _greedy_on_own_copy(info, episode):
    """The package's exact greedy search on the track's public model, loaded in the sandbox, over
    the episode the scorer plays next (the circuit track's public episodes, in order)."""
    from circuit_gym import benchmark as B
    from circuit_gym.solvers.episodes import play_episode
    from circuit_gym.solvers.white_box import GreedySearch
    from circuit_gym.track_envs import board_env

    task, seed = info["episodes"][episode]
    env = board_env(B.CIRCUIT, info["model"], seed + 1, cache=False, budget=info["budget"])
    return play_episode(env, GreedySearch(), task, seed)["order"]


def _planted_truth(info, episode):
    """The planted generator's truth for the public seed the scorer plays next (kind by kind, seed
    by seed): the circuit itself, no search needed."""
    from circuit_gym.models.planted.generator import truth_of

    kind, seed = info["episodes"][episode]
    return sorted(truth_of(seed, info["generator"]).circuit(kind))


def circuit_greedy_on_own_copy(checkpoint=None):
    return _PlanBuilder(checkpoint, _greedy_on_own_copy)


def planted_truth_from_the_generator(checkpoint=None):
    return _PlanBuilder(checkpoint, _planted_truth)
