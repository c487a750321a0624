"""Pre-flight compressors over the official SDKs (the ``llm-openai`` / ``llm-anthropic`` extras).

Membrane never makes a model client: you pass your own ``openai.AsyncOpenAI`` or
``anthropic.AsyncAnthropic`` (with your key, base URL, retries and timeouts), and get back a
:class:`~membrane.PreFlightAnalyst` for ``compile_async(compress_async=...)`` or
``compile_prompt_async(compress_async=...)``. The model is asked to shorten the oversized middle
to the target size, keeping the ``[Mem:N]`` tags of what it keeps.
"""

from __future__ import annotations

from typing import Any

from membrane import config
from membrane.errors import InvalidInputError
from membrane.prompt_text import PREFLIGHT_INSTRUCTION
from membrane.stages.preflight import PreFlightAnalyst

__all__ = ["anthropic_compressor", "openai_compressor"]


def _model_name(model: str | None, provider: str) -> str:
    name = model or config.preflight_analyst_model()
    prefix, _, rest = name.partition("/")
    if rest:
        if prefix != provider:
            raise InvalidInputError(
                f"the {provider} compressor cannot call {name!r}; pass model= (a {provider} "
                "model) or set PREFLIGHT_ANALYST_MODEL",
                field="model",
            )
        name = rest
    return name


def _prompt(raw_middle: str, target_tokens: int, user_message: str) -> tuple[str, str]:
    system = PREFLIGHT_INSTRUCTION.format(target=target_tokens)
    user = f"Question: {user_message}\n\nRetrieved memory:\n{raw_middle}"
    return system, user


class _OpenAICompressor:
    def __init__(self, client: Any, model: str) -> None:
        self._client, self.model = client, model

    async def compress_retrieved_memory(
        self, raw_middle: str, target_tokens: int, user_message: str
    ) -> str:
        system, user = _prompt(raw_middle, target_tokens, user_message)
        response = await self._client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            max_completion_tokens=target_tokens,
        )
        return str(response.choices[0].message.content or "")


class _AnthropicCompressor:
    def __init__(self, client: Any, model: str) -> None:
        self._client, self.model = client, model

    async def compress_retrieved_memory(
        self, raw_middle: str, target_tokens: int, user_message: str
    ) -> str:
        system, user = _prompt(raw_middle, target_tokens, user_message)
        response = await self._client.messages.create(
            model=self.model,
            max_tokens=target_tokens,
            system=system,
            messages=[{"role": "user", "content": user}],
        )
        return "".join(b.text for b in response.content if getattr(b, "type", "") == "text")


def openai_compressor(client: Any, model: str | None = None) -> PreFlightAnalyst:
    """A compressor calling Chat Completions through your ``openai.AsyncOpenAI`` client.

    ``model`` defaults to ``PREFLIGHT_ANALYST_MODEL`` (``openai/gpt-4o-mini``), prefix dropped.
    """
    return _OpenAICompressor(client, _model_name(model, "openai"))


def anthropic_compressor(client: Any, model: str | None = None) -> PreFlightAnalyst:
    """A compressor calling the Messages API through your ``anthropic.AsyncAnthropic`` client.

    ``model`` defaults to ``PREFLIGHT_ANALYST_MODEL`` when that names an ``anthropic/`` model.
    """
    return _AnthropicCompressor(client, _model_name(model, "anthropic"))
