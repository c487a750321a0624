"""The official SDKs' request types as strict validators: every key known, every shape checked.

The SDKs describe request bodies as TypedDicts, which ignore unknown keys and accept any
iterable lazily. Here each TypedDict (and each response model an input union admits) forbids
unknown keys, and each iterable is validated as a list, so a misspelt or misplaced key fails.
The non-streaming request types are used: the builders never set ``stream``.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import SchemaValidator


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        if node.get("type") == "generator":
            node["type"] = "list"
        # A model that types its extra fields (a JSON schema's free-form keys) keeps them.
        if node.get("type") in ("typed-dict", "model-fields") and "extras_schema" not in node:
            node["extra_behavior"] = "forbid"
        for value in node.values():
            _strict(value)
    elif isinstance(node, list):
        for value in node:
            _strict(value)
    return node


@cache
def strict_validator(request_type: Any) -> SchemaValidator:
    """A strict validator of ``request_type``, built once per type and process.

    Built early on purpose (see the end of this module): after a ``ChatAnthropic`` call has
    parsed a response, a new schema of anthropic's request TypedDicts accepts any cache ``ttl``
    string, so validators built later would let a wrong one through.
    """
    schema = copy.deepcopy(TypeAdapter(request_type).core_schema)
    return SchemaValidator(_strict(schema))


@cache
def openai_chat() -> SchemaValidator:
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    return strict_validator(CompletionCreateParamsNonStreaming)


@cache
def anthropic_messages() -> SchemaValidator:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    return strict_validator(MessageCreateParamsNonStreaming)


def check_bedrock_converse(request: dict[str, Any]) -> None:
    """Raise ``ValueError`` when botocore's Converse input shape refuses ``request``.

    botocore ships the service model, so this needs no network and no credentials.
    """
    from botocore.session import get_session
    from botocore.validate import ParamValidator

    operation = get_session().get_service_model("bedrock-runtime").operation_model("Converse")
    report = ParamValidator().validate(request, operation.input_shape)
    if report.has_errors():
        raise ValueError(report.generate_report())


def check_gemini_body(body: dict[str, Any]) -> None:
    """Validate a ``generateContent`` body part by part with google-genai's types.

    The SDK's models forbid unknown fields and accept the REST (camelCase) names.
    """
    from google.genai import types

    known = {"contents", "tools", "system_instruction", "generationConfig"}
    unknown = set(body) - known
    if unknown:
        raise ValueError(f"unknown generateContent fields: {sorted(unknown)}")
    for content in body["contents"]:
        types.Content.model_validate(content)
    for tool in body.get("tools", ()):
        types.Tool.model_validate(tool)
    if "system_instruction" in body:
        types.Content.model_validate(body["system_instruction"])
    if "generationConfig" in body:
        types.GenerationConfig.model_validate(body["generationConfig"])


def _build_early() -> None:
    """Build the request validators while the SDKs' types are as they were imported."""
    try:
        from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
        from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    except ImportError:  # a benchmark run without the SDKs
        return
    strict_validator(MessageCreateParamsNonStreaming)
    strict_validator(CompletionCreateParamsNonStreaming)


_build_early()
