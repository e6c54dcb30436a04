"""``make_planted_model(seed, version=...)``: a 12 x 12 model with circuits at seeded heads, and its truth.

The weights are written, not trained (:mod:`~circuit_gym.models.planted.roles` says what
each head does, :mod:`~circuit_gym.models.planted.placement` which head does it). On top
of the hand-written weights every matrix gets small Gaussian noise (the version's ``noise``), so that no
head is exactly silent and no two heads of one role are exactly equal; tokens outside the
synthetic vocabulary (the reference text is ordinary prose) get random embeddings. The
generator version (:mod:`~circuit_gym.models.planted.versions`: layout, gains, kinds, decoys,
noise) is an argument of every function here; a call that names none gets :data:`VERSION`.

The model is written as a TransformerLens-native checkpoint directory (config, safetensors,
the embedded model's tokenizer) under ``$CIRCUIT_GYM_CACHE/planted/v{version}/seed-{seed}``
and loaded through :func:`~circuit_gym.models.loading.load_model`, like every model; models
are cached by seed on disk and, :data:`MEMORY_CACHE` of them, in memory.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from circuit_gym.models.loading import load_model
from circuit_gym.models.planted import layout as L
from circuit_gym.models.planted.placement import GroundTruth, place_roles
from circuit_gym.models.planted.roles import head_weights
from circuit_gym.models.planted.versions import DEFAULT_VERSION, GeneratorVersion, generator
from circuit_gym.tasks.planted import TAGGED

VERSION = DEFAULT_VERSION  # the version a call that names none gets; see versions.py
MEMORY_CACHE = 8  # models kept loaded in memory (least recently used first out)
_SEED_SALT = 0x9C17  # keeps seed s's generator apart from other uses of default_rng(s)


@dataclass(frozen=True)
class PlantedModel:
    """A generated model (a ``TransformerBridge``), its ground truth and checkpoint directory."""

    seed: int
    model: object
    truth: GroundTruth
    path: Path

    @property
    def version(self) -> int:
        return self.truth.version


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= int(seed) < 2**63:
        raise ValueError(f"a planted model's seed must be an integer in [0, 2**63), got {seed!r}")
    return int(seed)


def _rng(seed: int, version: int) -> np.random.Generator:
    return np.random.default_rng([_SEED_SALT, version, seed])


def _place(seed: int, spec: GeneratorVersion, rng: np.random.Generator) -> GroundTruth:
    return place_roles(seed, rng, spec.kinds, spec.decoy_counts, spec.version)


def generate(seed: int, version: int = VERSION) -> tuple[dict[str, torch.Tensor], GroundTruth]:
    """The state dict (TransformerLens-native layout) and the ground truth of ``seed`` under
    generator ``version``."""
    seed, spec = check_seed(seed), generator(version)
    layout = spec.layout
    rng = _rng(seed, spec.version)
    truth = _place(seed, spec, rng)
    per_layer: list[list] = [[] for _ in range(L.N_LAYERS)]
    for r in truth.roles:
        per_layer[r.layer].append(head_weights(r.group, r.role, rng, layout, spec.gains))
    state = {**_embeddings(rng, spec), **_unembedding(rng, spec)}
    for layer, heads in enumerate(per_layer):
        prefix = f"layers.{layer}"
        state[f"{prefix}.ln1.weight"], state[f"{prefix}.ln1.bias"] = (
            np.ones(layout.d_model),
            np.zeros(layout.d_model),
        )
        for name in ("q", "k", "v"):
            w = np.concatenate([getattr(h, name) for h in heads], axis=0)
            state[f"{prefix}.attn.{name}.weight"] = w + _noise(rng, spec.noise, w.shape)
            state[f"{prefix}.attn.{name}.bias"] = np.zeros(w.shape[0], np.float32)
        state[f"{prefix}.attn.q.bias"] = np.concatenate([h.q_bias for h in heads])
        o = np.concatenate([h.o for h in heads], axis=1)
        state[f"{prefix}.attn.o.weight"] = o + _noise(rng, spec.noise, o.shape)
        state[f"{prefix}.attn.o.bias"] = np.zeros(layout.d_model)
    state["ln_out.weight"], state["ln_out.bias"] = np.ones(layout.d_model), np.zeros(layout.d_model)
    return {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in state.items()}, truth


def _noise(rng: np.random.Generator, std: float, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(std)


def _embeddings(rng: np.random.Generator, spec: GeneratorVersion) -> dict[str, np.ndarray]:
    layout, vocab = spec.layout, L.d_vocab()
    embed = _noise(rng, 1 / np.sqrt(layout.d_model), (vocab, layout.d_model))  # ordinary tokens: random
    ids = layout.symbol_token_ids()
    embed[list(ids)] = _noise(rng, spec.embed_noise, (len(ids), layout.d_model))
    for s, tid in enumerate(ids):
        embed[tid, layout.dim("TOK", s)] += 1.0
    for word in TAGGED:
        embed[ids[layout.symbol(word)], layout.dim("FLAG")] += 1.0
    pos = _noise(rng, 1 / np.sqrt(layout.d_model), (L.N_CTX, layout.d_model))
    pos[: L.N_POS] = _noise(rng, spec.embed_noise, (L.N_POS, layout.d_model))
    for p in range(L.N_POS):
        pos[p, layout.dim("POS", p)] += 1.0
    if layout.has("ANCHOR"):  # at every position, ordinary text's too
        pos[:, layout.dim("ANCHOR")] += spec.anchor
    return {"tok_embed.weight": embed, "pos.weight": pos}


def _unembedding(rng: np.random.Generator, spec: GeneratorVersion) -> dict[str, np.ndarray]:
    """Each word's logit reads its ``OUT`` dimension; other tokens (and BOS) read noise; no
    logit reads the anchor (its noise would be a large fixed offset per token)."""
    layout = spec.layout
    unembed = _noise(rng, spec.embed_noise, (L.d_vocab(), layout.d_model))
    for s, tid in enumerate(layout.symbol_token_ids()):
        if s > 0:
            unembed[tid, layout.dim("OUT", s)] += 1.0
    if layout.has("ANCHOR"):
        unembed[:, layout.dim("ANCHOR")] = 0.0
    return {"head.weight": unembed}


def cache_root() -> Path:
    """``planted/`` under the sweep cache's directory (``circuit_gym.ablation.cache.cache_dir``,
    which this layer may not import)."""
    return Path(os.environ.get("CIRCUIT_GYM_CACHE") or Path.home() / ".cache" / "circuit_gym") / "planted"


def model_name(seed: int, version: int = VERSION) -> str:
    return f"planted-v{generator(version).version}-{check_seed(seed)}"


def write_checkpoint(seed: int, directory: str | Path, version: int = VERSION) -> tuple[Path, GroundTruth]:
    """Write the checkpoint of ``seed`` (config, safetensors, tokenizer, ground truth) into ``directory``."""
    from safetensors.torch import save_file

    state, truth = generate(seed, version)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(generator(version).layout.config(), indent=1))
    save_file(state, str(directory / "model.safetensors"))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(L.tokenizer_dir() / name, directory / name)
    (directory / "ground_truth.json").write_text(json.dumps(truth.to_json(), indent=1))
    return directory, truth


_LOADED: OrderedDict[tuple[int, int, str], PlantedModel] = OrderedDict()


def truth_of(seed: int, version: int = VERSION) -> GroundTruth:
    """The ground truth of ``seed`` without generating its weights (the roles are drawn first)."""
    seed, spec = check_seed(seed), generator(version)
    return _place(seed, spec, _rng(seed, spec.version))


def planted_checkpoint(seed: int, version: int = VERSION) -> tuple[Path, GroundTruth]:
    """The checkpoint directory of ``seed`` in the disk cache (written on first use) and its truth."""
    seed = check_seed(seed)
    directory = cache_root() / f"v{generator(version).version}" / f"seed-{seed}"
    if (directory / "model.safetensors").is_file():
        return directory, truth_of(seed, version)
    tmp = directory.with_name(f"{directory.name}.tmp-{os.getpid()}")
    _, truth = write_checkpoint(seed, tmp, version)
    if directory.exists():  # another process wrote it meanwhile
        shutil.rmtree(tmp)
    else:
        tmp.replace(directory)
    return directory, truth


def make_planted_model(seed: int, *, version: int = VERSION, device: str = "cpu") -> PlantedModel:
    """The planted model of ``seed`` under generator ``version`` (generated, written and loaded
    on first use; then cached)."""
    seed, version = check_seed(seed), generator(version).version
    key = (version, seed, str(device))
    if key in _LOADED:
        _LOADED.move_to_end(key)
        return _LOADED[key]
    directory, truth = planted_checkpoint(seed, version)
    model = load_model(model_name(seed, version), path=directory, device=device)
    planted = PlantedModel(seed, model, truth, directory)
    _LOADED[key] = planted
    while len(_LOADED) > MEMORY_CACHE:
        _LOADED.popitem(last=False)
    return planted
