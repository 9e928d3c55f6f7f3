"""`ChatModel` over any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp).

Design choices, and why:

* The SDK's own retries are disabled (`max_retries=0`) and we run our own loop. The console must show
  every retry (`on_retry`) and end with one machine-readable `ModelError` (kind, attempts, HTTP status)
  for the trace; the SDK retries silently, with random jitter, and retries some 4xx (408/409) that we
  want to surface immediately.
* The response is parsed from the raw JSON body (`with_raw_response`), not from the SDK's typed
  models. Local servers routinely omit fields the OpenAI schema calls required (tool-call `id` or
  `type`, `usage`, `index`) or send `arguments` as an object; reading plain JSON defensively is the
  only way to accept all of them without depending on how the SDK happens to coerce bad data.
* Tool-call arguments go through `ToolCall.from_json_text`, so a malformed argument string becomes a
  call with `parse_error` set. The agent loop reports that back to the model; it is never an exception.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NoReturn, cast

import openai
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam

from core.llm.base import AssistantTurn, Message, ModelError, RetryListener, Usage, estimate_tokens
from core.tools import ToolCall

__all__ = ["OpenAIChatModel"]

SleepFn = Callable[[float], Awaitable[object]]

_NO_KEY = "not-needed"  # local servers ignore the key, but the SDK refuses to start without one


class _Retryable(Exception):
    """Internal: one failed attempt that may be retried, carrying the error and any server-set delay."""

    def __init__(self, error: ModelError, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


class OpenAIChatModel:
    """One `complete` call = one chat-completions request (plus retries), returned as an `AssistantTurn`."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        temperature: float = 0.0,
        extra_body: dict[str, Any] | None = None,
        on_retry: RetryListener | None = None,
        sleep: SleepFn = asyncio.sleep,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if backoff < 0 or max_backoff < 0:
            raise ValueError("backoff and max_backoff must be >= 0")
        self.name = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.temperature = temperature
        self.extra_body = dict(extra_body) if extra_body else None
        self.on_retry = on_retry
        self._sleep = sleep
        self._call_counter = 0  # source of deterministic ids for tool calls the server sent without one
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY") or _NO_KEY
        # base_url=None lets the SDK use OPENAI_BASE_URL, then api.openai.com.
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=0)

    # -- public API ------------------------------------------------------------------------------

    async def complete(self, messages: Sequence[Message],
                       tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """Send the conversation; retry transient failures; raise `ModelError` when it cannot succeed."""
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return await self._attempt(messages, tools, attempt)
            except _Retryable as failure:
                if attempt >= attempts:
                    raise failure.error from failure.__cause__
                delay = self._delay(attempt, failure.retry_after)
                if self.on_retry is not None:
                    self.on_retry(attempt, failure.error, delay)
                await self._sleep(delay)
        raise AssertionError("unreachable: the retry loop always returns or raises")  # pragma: no cover

    async def aclose(self) -> None:
        """Close the underlying HTTP connection pool."""
        await self._client.close()

    # -- one attempt -----------------------------------------------------------------------------

    async def _attempt(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]],
                       attempt: int) -> AssistantTurn:
        wire_messages = cast("list[ChatCompletionMessageParam]", [dict(m) for m in messages])
        try:
            if tools:
                raw = await self._client.chat.completions.with_raw_response.create(
                    model=self.name,
                    messages=wire_messages,
                    tools=cast("list[ChatCompletionToolUnionParam]", [dict(t) for t in tools]),
                    temperature=self.temperature,
                    extra_body=self.extra_body,
                )
            else:  # some servers reject an empty "tools" list, so the key is omitted entirely
                raw = await self._client.chat.completions.with_raw_response.create(
                    model=self.name,
                    messages=wire_messages,
                    temperature=self.temperature,
                    extra_body=self.extra_body,
                )
        # APITimeoutError subclasses APIConnectionError, so it must be caught first.
        except openai.APITimeoutError as exc:
            error = ModelError(f"request timed out after {self.timeout:g}s (attempt {attempt})",
                               kind="timeout", attempts=attempt)
            raise _Retryable(error) from exc
        except openai.APIConnectionError as exc:
            error = ModelError(f"cannot reach {self._endpoint()}: {_root_cause(exc)}",
                               kind="connection", attempts=attempt)
            raise _Retryable(error) from exc
        except openai.APIStatusError as exc:
            self._raise_status_error(exc, attempt)
        except openai.APIResponseValidationError as exc:
            raise ModelError(f"invalid response: {exc.message}", kind="bad_response", attempts=attempt,
                             status=exc.status_code) from exc
        http = raw.http_response
        return self._parse(http.content, messages, tools, attempt, http.status_code)

    def _raise_status_error(self, exc: openai.APIStatusError, attempt: int) -> NoReturn:
        """Classify a 4xx/5xx: 429 and 5xx are retryable, any other status fails at once."""
        status = exc.status_code
        detail = _server_message(exc)
        if status == 429:
            error = ModelError(f"rate limited (HTTP 429): {detail}", kind="rate_limited", attempts=attempt,
                               status=status)
            raise _Retryable(error, _retry_after(exc.response.headers)) from exc
        if status >= 500:
            error = ModelError(f"server error (HTTP {status}): {detail}", kind="server_error",
                               attempts=attempt, status=status)
            raise _Retryable(error, _retry_after(exc.response.headers)) from exc
        raise ModelError(f"HTTP {status} from {self._endpoint()}: {detail}", kind="http_error",
                         attempts=attempt, status=status) from exc

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff (no jitter: runs stay reproducible); a server's Retry-After wins, capped."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff)
        return min(self.backoff * (2.0 ** (attempt - 1)), self.max_backoff)

    def _endpoint(self) -> str:
        return str(self._client.base_url).rstrip("/")

    # -- response parsing ------------------------------------------------------------------------

    def _parse(self, content: bytes, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]],
               attempt: int, status: int) -> AssistantTurn:
        def bad(reason: str) -> ModelError:
            return ModelError(f"bad response from {self._endpoint()}: {reason}", kind="bad_response",
                              attempts=attempt, status=status)

        try:
            body = json.loads(content)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise bad(f"body is not JSON: {content[:200]!r}") from None
        if not isinstance(body, dict):
            raise bad(f"expected a JSON object, got {type(body).__name__}")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            error = body.get("error")  # some proxies report errors with status 200
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                raise bad(f"no choices; server said: {error['message']}")
            raise bad("no choices in response")
        choice: dict[str, Any] = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise bad("first choice has no message object")

        text = _content_text(message.get("content"))
        tool_calls = tuple(self._parse_tool_calls(message.get("tool_calls")))
        finish = choice.get("finish_reason")
        model = body.get("model")
        usage = _usage(body.get("usage"), messages, tools, text, tool_calls)
        return AssistantTurn(
            text=text,
            tool_calls=tool_calls,
            usage=usage,
            model=model if isinstance(model, str) and model else self.name,
            finish_reason=finish if isinstance(finish, str) else None,
        )

    def _parse_tool_calls(self, raw_calls: Any) -> list[ToolCall]:
        if not isinstance(raw_calls, list):
            return []
        calls: list[ToolCall] = []
        for raw in raw_calls:
            if not isinstance(raw, dict):
                continue
            function = raw.get("function")
            function = function if isinstance(function, dict) else {}
            name = function.get("name")
            arguments = function.get("arguments")
            if arguments is not None and not isinstance(arguments, str):
                # Ollama and some others send the arguments as a JSON object rather than a string.
                arguments = json.dumps(arguments, ensure_ascii=False)
            call_id = raw.get("id")
            if not isinstance(call_id, str) or not call_id:
                self._call_counter += 1
                call_id = f"call_{self._call_counter}"
            calls.append(ToolCall.from_json_text(call_id, name if isinstance(name, str) else "", arguments))
        return calls


# -- helpers -------------------------------------------------------------------------------------


def _server_message(exc: openai.APIStatusError) -> str:
    """The server's own error text rather than the SDK's generic "Error code: N".

    Shapes seen: OpenAI/llama.cpp {"error": {"message"}}, vLLM {"message"}, Ollama {"error": str}; the
    SDK has already unwrapped the "error" key into `exc.body` when present.
    """
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
        error = body.get("error")
        if isinstance(error, str) and error:
            return error
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return exc.message


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds requested by `retry-after-ms` / `Retry-After` (seconds or HTTP date); None if absent or bad."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return value
    header = headers.get("retry-after")
    if header is None:
        return None
    try:
        value = float(header)
    except ValueError:
        parsed = email.utils.parsedate_tz(header)
        if parsed is None:
            return None
        return float(email.utils.mktime_tz(parsed) - time.time())
    return value if math.isfinite(value) else None


def _root_cause(exc: BaseException) -> str:
    """The innermost exception's text (e.g. "[Errno 111] Connection refused"), not the SDK's generic one."""
    inner: BaseException = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    return str(inner) or type(inner).__name__


def _content_text(content: Any) -> str | None:
    """Message content as text: a string, or the text parts of a content-part list; "" becomes None."""
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):
        parts = [part["text"] for part in content
                 if isinstance(part, dict) and part.get("type") == "text"
                 and isinstance(part.get("text"), str)]
        return "".join(parts) or None
    return None


def _token_count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _usage(raw: Any, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]], text: str | None,
           tool_calls: Sequence[ToolCall]) -> Usage:
    """Usage as reported; whatever half the server left out is counted locally and marked estimated."""
    reported = raw if isinstance(raw, dict) else {}
    prompt = _token_count(reported.get("prompt_tokens"))
    completion = _token_count(reported.get("completion_tokens"))
    if prompt is not None and completion is not None:
        return Usage(prompt, completion)
    if prompt is None:
        prompt = estimate_tokens(_prompt_text(messages, tools))
    if completion is None:
        pieces = [text or ""] + [f"{call.name} {call.arguments_json()}" for call in tool_calls]
        completion = estimate_tokens("\n".join(pieces))
    return Usage(prompt, completion, estimated=True)


def _prompt_text(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> str:
    """The text a server would tokenize: message contents, earlier tool calls, and the tool schemas."""
    pieces: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            pieces.append(content)
        else:
            pieces.append(_content_text(content) or "")
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping):
                function = call.get("function")
                if isinstance(function, Mapping):
                    pieces.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    if tools:
        pieces.append(json.dumps(list(tools), sort_keys=True, ensure_ascii=False, default=str))
    return "\n".join(pieces)
