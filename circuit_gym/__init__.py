"""circuit_gym: reinforcement-learning environments for finding circuits in transformers.

The agent's action is which attention head to ablate; the reward is contrastive: how
much the ablation damages a target task minus how much it damages ordinary next-token
prediction. Importing the package registers the Gymnasium IDs (``list_envs()``).
"""

__version__ = "0.6.0"

from circuit_gym.envs.registration import list_envs, register_envs  # noqa: E402
from circuit_gym.models import ModelInfo, ModelNotAvailableError, load_model, set_threads  # noqa: E402

register_envs()

__all__ = ["ModelInfo", "ModelNotAvailableError", "__version__", "list_envs", "load_model", "set_threads"]
