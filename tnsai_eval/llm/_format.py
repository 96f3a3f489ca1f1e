"""``response_format``: the OpenAI shape callers use, and what each backend needs instead.

Callers always pass OpenAI's shape::

    {"type": "json_object"}
    {"type": "json_schema", "json_schema": {"name": "person", "schema": {...}}}

llama-cpp-python 0.3.x understands only ``{"type": "json_object", "schema":
{...}}``: in process it silently ignores the ``json_schema`` shape, and its
server answers it with HTTP 500. So the shape is checked once here and
translated where it is sent (``LocalLLM`` compiles the schema to a grammar;
``OpenAIClient(response_format_style="llama.cpp")`` rewrites it on the wire).

llama.cpp's schema-to-grammar converter enforces types, ``properties``,
``required``, ``enum``/``const``, ``items`` and string lengths and patterns,
but not, for example, ``minimum``/``maximum``: ``unenforced_keywords`` names
those so that the caller can say what the grammar does not guarantee.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal, TypeAlias

from tnsai_eval.errors import ConfigError

__all__ = [
    "GRAMMAR_LIMITS",
    "ResponseFormatStyle",
    "check_response_format",
    "grammar_schema_key",
    "json_schema_format",
    "response_format_schema",
    "schema_key",
    "to_llama_cpp",
    "unenforced_keywords",
]

ResponseFormatStyle: TypeAlias = Literal["openai", "llama.cpp"]

# Keywords llama.cpp's converter turns into grammar rules, and keywords that
# only annotate; anything else in a schema is accepted but not enforced.
_ENFORCED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
    }
)
_ANNOTATIONS = frozenset(
    {"title", "description", "$schema", "$id", "$comment", "default", "examples", "strict"}
)
# Keywords whose value is a schema, a list of schemas or a map of schemas.
_SUBSCHEMA = frozenset({"items", "additionalProperties"})
_SUBSCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SUBSCHEMA_MAPS = frozenset({"properties", "$defs", "definitions"})


def check_response_format(value: object) -> dict[str, Any]:
    """``value`` as a checked OpenAI-shaped ``response_format`` dict.

    Raises ``ConfigError`` naming what is wrong, before any call is made.

    >>> check_response_format({"type": "json_object"})
    {'type': 'json_object'}
    >>> nameless = {"type": "json_schema", "json_schema": {"schema": {}}}
    >>> check_response_format(nameless)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    tnsai_eval.errors.ConfigError: response_format json_schema needs a 'name' ...
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"response_format must be a mapping, got {type(value).__name__}")
    kind = value.get("type")
    if kind == "json_object":
        # llama.cpp's own shape is accepted too: it is what the server speaks.
        schema = value.get("schema")
        if schema is not None and not isinstance(schema, Mapping):
            raise ConfigError(f"response_format schema must be a JSON object, got {schema!r}")
        return dict(value)
    if kind == "json_schema":
        spec = value.get("json_schema")
        if not isinstance(spec, Mapping):
            raise ConfigError(
                "response_format of type 'json_schema' needs a 'json_schema' object "
                f"with 'name' and 'schema', got {spec!r}"
            )
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(
                f"response_format json_schema needs a 'name' (a non-empty str), got {dict(spec)!r}"
            )
        if not isinstance(spec.get("schema"), Mapping):
            raise ConfigError(
                f"response_format json_schema {name!r} needs a 'schema' object, "
                f"got {spec.get('schema')!r}"
            )
        return {"type": "json_schema", "json_schema": dict(spec)}
    if kind == "text":
        return {"type": "text"}
    raise ConfigError(
        f"response_format type must be 'json_object', 'json_schema' or 'text', got {kind!r}"
    )


def response_format_schema(response_format: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a checked ``response_format`` asks for (``None``: any JSON or text)."""
    if response_format.get("type") == "json_schema":
        return dict(response_format["json_schema"]["schema"])
    schema = response_format.get("schema")
    return dict(schema) if isinstance(schema, Mapping) else None


def json_schema_format(schema: Mapping[str, Any], name: str = "reply") -> dict[str, Any]:
    """The OpenAI-shaped ``response_format`` asking for JSON that matches ``schema``.

    >>> json_schema_format({"type": "object"}, "person")
    {'type': 'json_schema', 'json_schema': {'name': 'person', 'schema': {'type': 'object'}}}
    """
    return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}


def to_llama_cpp(response_format: Mapping[str, Any]) -> dict[str, Any] | None:
    """A checked ``response_format`` in llama.cpp's shape (``None`` for plain text).

    >>> to_llama_cpp(json_schema_format({"type": "integer"}))
    {'type': 'json_object', 'schema': {'type': 'integer'}}
    """
    if response_format.get("type") == "text":
        return None
    schema = response_format_schema(response_format)
    return {"type": "json_object"} if schema is None else {"type": "json_object", "schema": schema}


def unenforced_keywords(schema: Mapping[str, Any]) -> list[str]:
    """The keywords of ``schema`` (at any depth) that llama.cpp's grammar does not enforce.

    >>> unenforced_keywords({"type": "object", "properties": {
    ...     "age": {"type": "integer", "minimum": 0}, "name": {"type": "string"}}})
    ['minimum']
    """
    found: set[str] = set()
    stack: list[object] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            found.update(str(k) for k in node if k not in _ENFORCED and k not in _ANNOTATIONS)
            stack.extend(child for _, child, _ in _subschemas(node, "$"))
    return sorted(found)


def _subschemas(node: Mapping[str, Any], path: str) -> Iterator[tuple[str, object, str]]:
    """(keyword, subschema, its path) of each schema ``node`` holds directly."""
    for key, value in node.items():
        if key in _SUBSCHEMA:
            yield key, value, f"{path}.{key}"
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            yield from ((key, v, f"{path}.{key}[{i}]") for i, v in enumerate(value))
        elif key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            yield from ((key, v, f"{path}.{key}.{name}") for name, v in value.items())


def schema_key(schema: Mapping[str, Any]) -> str:
    """The text of ``schema`` that a grammar is compiled from and cached by.

    Keys keep their order: llama.cpp's grammar makes the model write an
    object's properties in the order the schema lists them, and a model
    fills a form better in the order its author chose (answer before reason,
    say) than in alphabetical order. So two schemas that differ only in that
    order are two grammars.
    """
    return json.dumps(schema, ensure_ascii=False)


#: What a schema compiled to a llama.cpp grammar may ask for. The converter
#: writes a length or count bound n as n copies of a rule and a regex's
#: ``x{n}`` as n copies of ``x`` (``minLength: 1e8`` built a 500 MB grammar),
#: names properties in time quadratic in their number, and recurses once per
#: level: beyond these, a schema is refused before anything is compiled.
GRAMMAR_LIMITS: Mapping[str, int] = {
    "bound": 1_000,  # minLength, maxLength, minItems, maxItems, regex {n,m}
    "depth": 32,  # nested subschemas
    "properties": 256,  # properties over the whole schema
    "schema_chars": 65_536,  # the schema's JSON text
    "grammar_chars": 1_000_000,  # the compiled grammar's text
}
_BOUND_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems")
# A regex repetition {n}, {n,} or {n,m}: its numbers, however many digits.
_REPEAT = re.compile(r"\{(\d+)(?:,(\d*))?\}")


def grammar_schema_key(schema: Mapping[str, Any]) -> str:
    """``schema_key(schema)``, once ``schema`` is checked against ``GRAMMAR_LIMITS``.

    ``ConfigError`` names the first part past a limit. The walk uses no
    recursion and comes before the schema is serialized, so a schema nested
    thousands deep is refused, never a ``RecursionError``.

    >>> grammar_schema_key({"type": "string", "maxLength": 10**8})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    tnsai_eval.errors.ConfigError: response_format schema: $.maxLength is 100000000; ...
    """
    limits = GRAMMAR_LIMITS
    properties = 0
    stack: list[tuple[object, str, int]] = [(schema, "$", 0)]
    while stack:
        node, path, depth = stack.pop()
        if not isinstance(node, Mapping):
            continue
        if depth > limits["depth"]:
            raise ConfigError(
                f"response_format schema: {path} is nested {depth} levels deep; a grammar "
                f"holds at most {limits['depth']}"
            )
        for keyword in _BOUND_KEYWORDS:
            value = node.get(keyword)
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if not value <= limits["bound"]:  # NaN too
                raise ConfigError(
                    f"response_format schema: {path}.{keyword} is {value!r}; a grammar "
                    f"writes each repetition out, so at most {limits['bound']}"
                )
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            for match in _REPEAT.finditer(pattern):
                for number in match.groups():
                    if number and (len(number) > 6 or int(number) > limits["bound"]):
                        raise ConfigError(
                            f"response_format schema: {path}.pattern repeats "
                            f"{match.group(0)!r}; a grammar writes each repetition out, so "
                            f"at most {limits['bound']}"
                        )
        for key, child, child_path in _subschemas(node, path):
            if key == "properties":
                properties += 1
                if properties > limits["properties"]:
                    raise ConfigError(
                        f"response_format schema: more than {limits['properties']} properties; "
                        "a grammar names each, in time that grows with the square of their number"
                    )
            stack.append((child, child_path, depth + 1))
    text = schema_key(schema)
    if len(text) > limits["schema_chars"]:
        raise ConfigError(
            f"response_format schema: {len(text)} characters of JSON; a grammar is compiled "
            f"from at most {limits['schema_chars']}"
        )
    return text
