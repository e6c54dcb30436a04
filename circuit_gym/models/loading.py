"""One loading path for every model: a checkpoint directory booted into a TransformerBridge.

A checkpoint directory holds ``config.json``, ``model.safetensors`` and tokenizer files.
Two kinds of directory exist:

- a ``transformers`` checkpoint (GPT-2 small, or any model transformer_lens supports),
  booted with ``TransformerBridge.boot_transformers``;
- a TransformerLens-native checkpoint (the embedded ``"toy"`` model, an attention-only
  transformer; its ``config.json`` says ``"architecture": "TransformerLensNative"``),
  booted through the same bridge builder that ``TransformerBridge.boot_native`` uses.

Either way the caller gets a ``TransformerBridge`` with the usual hook names
(``blocks.L.attn.hook_z`` ...) and ``forward(..., start_at_layer=L)``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch

from circuit_gym.embedded import EMBEDDED, EMBEDDED_PATHS
from circuit_gym.progress import library_bars

MODELS_DIR = Path(str(resources.files("circuit_gym") / "models"))
GPT2_ENV_VAR = "CIRCUIT_GYM_GPT2_PATH"
THREADS_ENV_VAR = "CIRCUIT_GYM_THREADS"
GPT2_REPO = "openai-community/gpt2"
_CHECKPOINT_FILES = ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                     "vocab.json", "merges.txt", "generation_config.json"]  # fmt: skip


class ModelNotAvailableError(RuntimeError):
    """The requested weights are not on this machine and cannot be downloaded."""


@dataclass(frozen=True)
class ModelInfo:
    """Where a loaded model came from; ``weights_hash`` keys every cached number."""

    name: str
    source: str
    weights_hash: str
    n_layers: int
    n_heads: int

    @property
    def n_heads_total(self) -> int:
        return self.n_layers * self.n_heads


def set_threads(threads: int | None = None) -> int:
    """Set torch's intra-op threads: argument, else ``$CIRCUIT_GYM_THREADS``, else 1.

    One thread is the default on purpose: the models here are small, environments run
    one per process, and on a 2-core machine with another busy process torch's default
    of 2 threads was measured 3-8x slower than 1.
    """
    if threads is None:
        threads = int(os.environ.get(THREADS_ENV_VAR, "1"))
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


def embedded_dir(name: str) -> Path:
    """The package directory of an embedded model."""
    if name not in EMBEDDED:
        raise ValueError(f"{name!r} is not an embedded model; embedded: {list(EMBEDDED)}")
    return MODELS_DIR / EMBEDDED_PATHS[name]


def model_device(model: torch.nn.Module) -> torch.device:
    """The device a model's parameters live on (inputs are moved there)."""
    return next(model.parameters()).device


def check_device(device: str | torch.device) -> torch.device:
    """A usable torch device, or a ValueError that says which are available here."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(
            f"device must be a torch device such as 'cpu', 'cuda', 'cuda:1' or 'mps', got {device!r}"
        ) from err
    available = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    if not available.get(dev.type, False):
        usable = [k for k, ok in available.items() if ok]
        raise ValueError(f"device {str(dev)!r} is not available on this machine; available: {usable}")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"device {str(dev)!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return dev


def weights_hash(model: torch.nn.Module) -> str:
    """SHA-256 over parameter names, shapes and values (order-independent of dict order)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        digest.update(name.encode())
        digest.update(str(tuple(t.shape)).encode())
        digest.update(t.to(torch.float32).numpy().tobytes())
    return digest.hexdigest()[:16]


def load_model(name: str = "toy", *, path: str | os.PathLike | None = None, device: str = "cpu",
               threads: int | None = None):  # fmt: skip
    """Load a model as a ``TransformerBridge``; its provenance is in ``model.circuit_gym_info``.

    Args:
        name: ``"toy"`` (the embedded default, no network), ``"gpt2"`` (GPT-2 small from
            ``path``, ``$CIRCUIT_GYM_GPT2_PATH``, the Hugging Face cache or the internet),
            or any other model name transformer_lens supports.
        path: a local checkpoint directory; overrides where the weights come from.
        device: torch device.
        threads: torch threads (see :func:`set_threads`).
    """
    set_threads(threads)
    device = str(check_device(device))
    if path is not None:
        directory, source = _check_dir(Path(path), name), str(path)
    elif name in EMBEDDED:
        directory, source = embedded_dir(name), "embedded"
    elif name == "gpt2":
        directory = _find_gpt2()
        source = str(directory)
    else:
        directory, source = None, "transformer_lens"

    # Building the modules draws random initial weights (then overwritten by the checkpoint's):
    # on a forked RNG, so loading a model never changes the caller's random stream.
    with torch.random.fork_rng(devices=[]), library_bars():  # no library bar in a log
        if directory is not None:
            bridge = _boot_directory(directory, name, device)
        else:
            bridge = _boot_by_name(name, device)
    bridge.eval()
    for p in bridge.parameters():  # the benchmark only reads the model
        p.requires_grad_(False)
    bridge.circuit_gym_info = ModelInfo(
        name=name,
        source=source,
        weights_hash=weights_hash(bridge),
        n_layers=int(bridge.cfg.n_layers),
        n_heads=int(bridge.cfg.n_heads),
    )
    return bridge


def _check_dir(directory: Path, name: str) -> Path:
    missing = [f for f in ("config.json", "model.safetensors") if not (directory / f).is_file()]
    if not directory.is_dir() or missing:
        raise ModelNotAvailableError(
            f"{directory} is not a checkpoint directory for {name!r}: missing "
            f"{', '.join(missing) if directory.is_dir() else 'the directory itself'}. "
            "Expected config.json, model.safetensors and tokenizer files "
            "(as written by transformers' save_pretrained)."
        )
    return directory


def _find_gpt2() -> Path:
    """GPT-2's checkpoint directory: $CIRCUIT_GYM_GPT2_PATH, else the HF cache or hub."""
    env_path = os.environ.get(GPT2_ENV_VAR)
    if env_path:
        return _check_dir(Path(env_path), "gpt2")
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    try:
        from huggingface_hub import snapshot_download

        # A short etag timeout: without a network the hub fails in well under a
        # second, instead of a minute of retries inside transformers.
        return Path(
            snapshot_download(
                GPT2_REPO, allow_patterns=_CHECKPOINT_FILES, etag_timeout=10, local_files_only=offline
            )  # fmt: skip
        )
    except Exception as err:  # any hub failure means the same thing to the user
        raise ModelNotAvailableError(
            "GPT-2 small weights are not available on this machine"
            f" ({'HF_HUB_OFFLINE is set and they are not cached' if offline else 'not cached, and the Hugging Face hub cannot be reached'}).\n"
            "Provide them in one of these ways:\n"
            f"  1. export {GPT2_ENV_VAR}=/path/to/gpt2   (a directory with config.json, "
            "model.safetensors and tokenizer files, e.g. from "
            "AutoModelForCausalLM.from_pretrained('gpt2').save_pretrained(dir) plus the tokenizer)\n"
            "  2. circuit_gym.load_model('gpt2', path='/path/to/gpt2')  or  --model-path on the CLI\n"
            f"  3. on a machine with internet: huggingface-cli download {GPT2_REPO}  (fills the cache)\n"
            "Everything in circuit_gym also runs offline on the embedded model: name 'toy'.\n"
            f"(underlying error: {type(err).__name__})"
        ) from None


def _boot_directory(directory: Path, name: str, device: str):
    config = json.loads((directory / "config.json").read_text())
    if config.get("architecture") == "TransformerLensNative":
        return _boot_native_directory(directory, config, name, device)
    from transformer_lens.model_bridge import TransformerBridge
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # Passing the model and the tokenizer explicitly keeps boot_transformers offline.
    hf_model = AutoModelForCausalLM.from_pretrained(str(directory))
    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    return TransformerBridge.boot_transformers(
        str(directory), hf_model=hf_model, tokenizer=tokenizer, device=device
    )


def _boot_native_directory(directory: Path, config: dict, name: str, device: str):
    from safetensors.torch import load_file
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.model_bridge.sources._bridge_builder import build_bridge_from_module
    from transformer_lens.model_bridge.sources.native.model import NativeModel
    from transformers import AutoTokenizer

    cfg = TransformerBridgeConfig.from_dict(dict(config))
    model = NativeModel(cfg)
    state = {k: v.to(torch.float32) for k, v in load_file(str(directory / "model.safetensors")).items()}
    model.load_state_dict(state, strict=True)
    model.to(device)
    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    return build_bridge_from_module(
        model, architecture="TransformerLensNative", tl_config=cfg, tokenizer=tokenizer,
        device=device, model_name=name,
    )  # fmt: skip


def _boot_by_name(name: str, device: str):
    from transformer_lens.model_bridge import TransformerBridge

    try:
        return TransformerBridge.boot_transformers(name, device=device)
    except Exception as err:
        raise ModelNotAvailableError(
            f"could not load model {name!r} through transformer_lens: {type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}\n"
            "Use 'toy' (embedded, offline), 'gpt2', or pass path= to a local checkpoint directory."
        ) from None
