"""Norms: obligations, prohibitions and permissions on an agent's actions.

Declare norms on an agent class with ``@norm`` (or build ``NormEntry`` records),
load them into a ``NormEngine`` and check actions against them. Conditions are
CEL expressions over a state mapping (``ConditionEvaluator``), or any text a
predicate of your own understands.

>>> from tnsai_eval.norms import NormEngine, NormType, norm
>>> @norm(type=NormType.PROHIBITION, action="delete_user",
...       condition="hasConsent == false", description="Never delete without consent")
... class SupportAgent:
...     actions = ["lookup_user", "delete_user"]
>>> engine = NormEngine.from_class(SupportAgent)
>>> print(engine.check_agent(SupportAgent(), state={"hasConsent": False}))
1 norm violation:
- action 'delete_user' is prohibited: Never delete without consent; \
its condition `hasConsent == false` holds with hasConsent=False
"""

from tnsai_eval.norms._conditions import ConditionEvaluator
from tnsai_eval.norms._decorator import declared_norms, norm
from tnsai_eval.norms._engine import NormEngine, Predicate
from tnsai_eval.norms._types import CheckResult, NormEntry, NormType, NormViolation

__all__ = [
    "CheckResult",
    "ConditionEvaluator",
    "NormEngine",
    "NormEntry",
    "NormType",
    "NormViolation",
    "Predicate",
    "declared_norms",
    "norm",
]
