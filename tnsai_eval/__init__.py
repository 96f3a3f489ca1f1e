"""tnsai-eval: an evaluation harness for LLM prompts and agents.

The public API is what ``__all__`` lists; everything else is private.
"""

from tnsai_eval.errors import (
    BadResponseError,
    ClientRequestError,
    ConditionError,
    ConfigError,
    DatasetError,
    LLMConnectionError,
    LLMError,
    LLMTimeoutError,
    LocalModelUnavailable,
    RateLimitError,
    ReplayMissError,
    ServerError,
    TnsaiError,
)
from tnsai_eval.llm import Completion, LLMClient, Message, Usage

__version__ = "0.1.0"

__all__ = [
    "BadResponseError",
    "ClientRequestError",
    "Completion",
    "ConditionError",
    "ConfigError",
    "DatasetError",
    "LLMClient",
    "LLMConnectionError",
    "LLMError",
    "LLMTimeoutError",
    "LocalModelUnavailable",
    "Message",
    "RateLimitError",
    "ReplayMissError",
    "ServerError",
    "TnsaiError",
    "Usage",
    "__version__",
]
