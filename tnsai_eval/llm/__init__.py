"""The only place that talks to models.

Everything else in tnsai-eval takes an ``LLMClient``: any object with
``chat(messages, **params) -> Completion``. The one client a caller holds per
model is a ``FrontClient`` (store, record mode, the model client, budgets and
listeners); whoever needs to know about calls subscribes to its ``CallEvent``s.
"""

from tnsai_eval._util.moved import moved_names
from tnsai_eval.llm._budget import CallBudget, only_budgets
from tnsai_eval.llm._default import default_llm
from tnsai_eval.llm._diagnose import Diagnosis, DiagnosisItem, diagnose
from tnsai_eval.llm._format import (
    ResponseFormatStyle,
    check_response_format,
    json_schema_format,
    unenforced_keywords,
)
from tnsai_eval.llm._front import (
    CachedLLM,
    CallEvent,
    CallListener,
    FrontClient,
    Subscription,
    ametered_call,
    current_case,
    current_sample,
    metered_call,
    observing,
    routing,
    running_case,
    sampling,
)
from tnsai_eval.llm._local import LocalLLM
from tnsai_eval.llm._model_path import SMOLLM2_NAME, smollm2_gguf_path
from tnsai_eval.llm._models import EMBEDDED_MODEL, ModelTable, NamedModel, embedded_model_name
from tnsai_eval.llm._openai import OpenAIClient
from tnsai_eval.llm._serve import LOCAL_SERVER_ALIAS, serve_local_model
from tnsai_eval.llm._store import (
    DEFAULT_CASSETTE,
    OTHER_MODEL_HINT,
    Recording,
    ResponseStore,
    StoredRequest,
)
from tnsai_eval.llm._types import (
    AsyncLLMClient,
    Completion,
    LLMClient,
    Message,
    MessagesInput,
    TokenLogprob,
    ToolCall,
    Usage,
    acall,
    call_tokens,
    call_usage,
    estimate_tokens,
    last_user_message,
    normalize_messages,
)
from tnsai_eval.llm._usage import PrunedCassette, PruneReport, new_run_id
from tnsai_eval.settings import RecordMode

__all__ = [
    "DEFAULT_CASSETTE",
    "EMBEDDED_MODEL",
    "LOCAL_SERVER_ALIAS",
    "OTHER_MODEL_HINT",
    "SMOLLM2_NAME",
    "AsyncLLMClient",
    "CachedLLM",
    "CallBudget",
    "CallEvent",
    "CallListener",
    "Completion",
    "Diagnosis",
    "DiagnosisItem",
    "FrontClient",
    "LLMClient",
    "LocalLLM",
    "Message",
    "MessagesInput",
    "ModelTable",
    "NamedModel",
    "OpenAIClient",
    "PruneReport",
    "PrunedCassette",
    "RecordMode",
    "Recording",
    "ResponseFormatStyle",
    "ResponseStore",
    "StoredRequest",
    "Subscription",
    "TokenLogprob",
    "ToolCall",
    "Usage",
    "acall",
    "ametered_call",
    "call_tokens",
    "call_usage",
    "check_response_format",
    "current_case",
    "current_sample",
    "default_llm",
    "diagnose",
    "embedded_model_name",
    "estimate_tokens",
    "json_schema_format",
    "last_user_message",
    "metered_call",
    "new_run_id",
    "normalize_messages",
    "observing",
    "only_budgets",
    "routing",
    "running_case",
    "sampling",
    "serve_local_model",
    "smollm2_gguf_path",
    "unenforced_keywords",
]

# The judge grades replies; it is not IO, so it moved to ``tnsai_eval.scoring``;
# its names still resolve here, with a DeprecationWarning.
__getattr__ = moved_names(
    __name__,
    "tnsai_eval.scoring",
    ("Judge", "JudgeCalibration", "JudgeMethod", "JudgeResult", "fit_threshold"),
)
