"""The only place that talks to models.

Everything else in tnsai-eval takes an ``LLMClient``: any object with
``chat(messages, **params) -> Completion``.
"""

from tnsai_eval.llm._model_path import smollm2_gguf_path
from tnsai_eval.llm._types import (
    AsyncLLMClient,
    Completion,
    LLMClient,
    Message,
    MessagesInput,
    Usage,
    acall,
    estimate_tokens,
    last_user_message,
    normalize_messages,
)

__all__ = [
    "AsyncLLMClient",
    "Completion",
    "LLMClient",
    "Message",
    "MessagesInput",
    "Usage",
    "acall",
    "estimate_tokens",
    "last_user_message",
    "normalize_messages",
    "smollm2_gguf_path",
]
