"""circuit_gym: reinforcement-learning environments for finding circuits in transformers.

The agent's action is which attention head to ablate; the reward is contrastive: how
much the ablation damages a target task minus how much it damages ordinary next-token
prediction. Importing the package registers the Gymnasium IDs (``list_envs()``).
"""

from circuit_gym.models import ModelInfo, ModelNotAvailableError, load_model, set_threads

__version__ = "0.1.0"

__all__ = ["ModelInfo", "ModelNotAvailableError", "__version__", "load_model", "set_threads"]
