"""Model loading: the embedded toy model, GPT-2 small, or any transformer_lens model."""

from circuit_gym.models.loading import (
    GPT2_ENV_VAR,
    ModelInfo,
    ModelNotAvailableError,
    load_model,
    set_threads,
    weights_hash,
)

__all__ = ["GPT2_ENV_VAR", "ModelInfo", "ModelNotAvailableError", "load_model", "set_threads", "weights_hash"]
