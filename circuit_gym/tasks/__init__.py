"""Tasks: seeded prompt generators with train/eval/test splits and a behaviour metric."""

# Importing these modules registers the built-in tasks.
from circuit_gym.tasks import brackets as _brackets  # noqa: F401
from circuit_gym.tasks import builtin as _builtin  # noqa: F401
from circuit_gym.tasks import language as _language  # noqa: F401
from circuit_gym.tasks import numeric as _numeric  # noqa: F401
from circuit_gym.tasks import recall as _recall  # noqa: F401
from circuit_gym.tasks.base import (
    PromptBatch,
    Task,
    answer_logprob,
    encode_prompts,
    get_task,
    list_tasks,
    logit_diff,
    register_task,
    single_token_ids,
)
from circuit_gym.tasks.fillers import SPLITS

__all__ = [
    "SPLITS", "PromptBatch", "Task", "answer_logprob", "encode_prompts", "get_task",
    "list_tasks", "logit_diff", "register_task", "single_token_ids",
]  # fmt: skip
