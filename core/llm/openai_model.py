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

What real servers need (see the compatibility table in docs/models.md):

* `tool_choice` is sent explicitly, "auto" by default: llama-cpp-python's `chatml-function-calling` takes a
  missing `tool_choice` as "none" and drops the tools from the prompt. vLLM rejects an explicit "auto"
  unless started with `--enable-auto-tool-choice`, hence the setting (`omit` leaves the key out).
* Outgoing messages are normalised at the wire (`wire_messages`): `"content": null` becomes `""`
  (llama-cpp-python answers null with HTTP 500) and a tool call whose arguments were not a JSON object is
  echoed as `{}` (llama-server fails every later request of a conversation holding unparseable arguments).
  The parse error itself still reaches the model in that call's tool message.
* `max_tokens` is bounded by default: a small model left unbounded can generate until the context is full.
* A 5xx whose text says the request itself is invalid is not retried (it would recur identically, and
  llama-cpp-python does not cancel an abandoned request, so a retry only queues another full prompt). The
  prompt of every timed-out attempt is counted (estimated) in the usage, since the server still ran it.
* A failure is one line (`ModelError.message`); the server's full text is in `ModelError.detail`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn, cast

from core.llm.base import AssistantTurn, Message, ModelError, RetryListener, Usage, estimate_tokens
from core.llm.errors import describe_body, detail_text, request_is_invalid, summarize
from core.tools import ToolCall

if TYPE_CHECKING:  # the SDK itself is imported where a model is built: it costs ~1 s of the console's cold start
    import openai
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_TIMEOUT", "DEFAULT_TOOL_CHOICE", "TOOL_CHOICES", "OpenAIChatModel",
           "ToolChoice", "wire_messages"]

SleepFn = Callable[[float], Awaitable[object]]
# "auto" | "required" | "none" | "omit" (the key is left out), or a named function:
# {"type": "function", "function": {"name": ...}} (forces that tool; llama.cpp's servers, OpenAI, vLLM).
ToolChoice = str | Mapping[str, Any]

TOOL_CHOICES = ("auto", "required", "none", "omit")
DEFAULT_TOOL_CHOICE = "auto"  # accepted by OpenAI, llama.cpp's servers, Ollama and LM Studio
DEFAULT_MAX_TOKENS = 1024  # per model call; an agent turn is a short message or a few tool calls
DEFAULT_TIMEOUT = 120.0  # seconds per request: a cold first call on a CPU server took 17-113 s

_NO_KEY = "not-needed"  # local servers ignore the key, but the SDK refuses to start without one


class _Retryable(Exception):
    """Internal: one failed attempt that may be retried, carrying the error and any server-set delay.

    `wasted` is what the attempt cost the server although it produced nothing (see `complete`).
    """

    def __init__(self, error: ModelError, retry_after: float | None = None, wasted: Usage | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after
        self.wasted = wasted if wasted is not None else Usage()


def check_tool_choice(choice: ToolChoice) -> ToolChoice:
    """The choice itself, or ValueError naming the allowed values."""
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            raise ValueError(f"tool_choice must be one of {', '.join(TOOL_CHOICES)} (got {choice!r})")
        return choice
    function = choice.get("function")
    if choice.get("type") != "function" or not isinstance(function, Mapping) \
            or not isinstance(function.get("name"), str):
        raise ValueError('a named tool_choice must look like {"type": "function", "function": {"name": ...}}')
    return choice


class OpenAIChatModel:
    """One `complete` call = one chat-completions request (plus retries), returned as an `AssistantTurn`."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        temperature: float = 0.0,
        tool_choice: ToolChoice = DEFAULT_TOOL_CHOICE,
        max_tokens: int | None = DEFAULT_MAX_TOKENS,
        extra_body: Mapping[str, Any] | None = None,
        on_retry: RetryListener | None = None,
        sleep: SleepFn = asyncio.sleep,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if backoff < 0 or max_backoff < 0:
            raise ValueError("backoff and max_backoff must be >= 0")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError("timeout must be a positive number of seconds")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError("max_tokens must be >= 1 (or None to send no limit)")
        self.name = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.temperature = temperature
        self.tool_choice = check_tool_choice(tool_choice)
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body) if extra_body else None
        self.on_retry = on_retry
        self._sleep = sleep
        self._call_counter = 0  # source of deterministic ids for tool calls the server sent without one
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY") or _NO_KEY
        import openai  # deferred: see the import block

        # base_url=None lets the SDK use OPENAI_BASE_URL, then api.openai.com.
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=0)

    # -- public API ------------------------------------------------------------------------------

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]], *,
                       tool_choice: ToolChoice | None = None) -> AssistantTurn:
        """Send the conversation; retry transient failures; raise `ModelError` when it cannot succeed.

        `tool_choice` overrides the model's setting for this one call (e.g. to force a named tool). The
        returned usage includes the estimated prompt of every attempt that timed out before this one; a
        raised `ModelError` carries that cost in its `usage`.
        """
        choice = self.tool_choice if tool_choice is None else check_tool_choice(tool_choice)
        attempts = self.max_retries + 1
        wasted = Usage()
        for attempt in range(1, attempts + 1):
            try:
                turn = await self._attempt(messages, tools, attempt, choice)
            except _Retryable as failure:
                wasted = wasted + failure.wasted
                if attempt >= attempts:
                    failure.error.usage = wasted
                    raise failure.error from failure.__cause__
                delay = self._delay(attempt, failure.retry_after)
                if self.on_retry is not None:
                    self.on_retry(attempt, failure.error, delay)
                await self._sleep(delay)
            except ModelError as error:
                error.usage = wasted
                raise
            else:
                return turn if wasted.total == 0 else replace(turn, usage=turn.usage + wasted)
        raise AssertionError("unreachable: the retry loop always returns or raises")  # pragma: no cover

    async def aclose(self) -> None:
        """Close the underlying HTTP connection pool."""
        await self._client.close()

    # -- one attempt -----------------------------------------------------------------------------

    def request_extras(self, tools: Sequence[Mapping[str, Any]], choice: ToolChoice) -> dict[str, Any]:
        """The body keys beyond model/messages/tools/temperature: max_tokens, tool_choice, then the extra body
        (`--model-args`), which wins over both."""
        extras: dict[str, Any] = {}
        if self.max_tokens is not None:
            extras["max_tokens"] = self.max_tokens
        if tools and choice != "omit":  # tool_choice without tools is an error on OpenAI and vLLM
            extras["tool_choice"] = dict(choice) if isinstance(choice, Mapping) else choice
        extras.update(self.extra_body or {})
        return extras

    async def _attempt(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]],
                       attempt: int, choice: ToolChoice) -> AssistantTurn:
        import openai  # already loaded by __init__; the name is needed for the except clauses

        wire = cast("list[ChatCompletionMessageParam]", wire_messages(messages))
        extras = self.request_extras(tools, choice)
        try:
            if tools:
                raw = await self._client.chat.completions.with_raw_response.create(
                    model=self.name,
                    messages=wire,
                    tools=cast("list[ChatCompletionToolUnionParam]", [dict(t) for t in tools]),
                    temperature=self.temperature,
                    extra_body=extras,
                )
            else:  # some servers reject an empty "tools" list, so the key is omitted entirely
                raw = await self._client.chat.completions.with_raw_response.create(
                    model=self.name,
                    messages=wire,
                    temperature=self.temperature,
                    extra_body=extras,
                )
        # APITimeoutError subclasses APIConnectionError, so it must be caught first.
        except openai.APITimeoutError as exc:
            error = ModelError(f"request timed out after {self.timeout:g}s (attempt {attempt})",
                               kind="timeout", attempts=attempt)
            # The server got the request and (llama.cpp) keeps working on it: its prompt was processed.
            wasted = Usage(estimate_tokens(_prompt_text(messages, tools)), 0, estimated=True)
            raise _Retryable(error, wasted=wasted) from exc
        except openai.APIConnectionError as exc:
            error = ModelError(f"cannot reach {self._endpoint()}: {_root_cause(exc)}",
                               kind="connection", attempts=attempt)
            raise _Retryable(error) from exc
        except openai.APIStatusError as exc:
            self._raise_status_error(exc, attempt)
        except openai.APIResponseValidationError as exc:
            raise ModelError(f"invalid response: {summarize(exc.message)}", kind="bad_response", attempts=attempt,
                             status=exc.status_code, detail=detail_text(exc.response.text)) from exc
        http = raw.http_response
        return self._parse(http.content, http.headers.get("content-type", ""), messages, tools, attempt,
                           http.status_code)

    def _raise_status_error(self, exc: openai.APIStatusError, attempt: int) -> NoReturn:
        """Classify a 4xx/5xx: 429 and 5xx are retryable, unless the server says the request itself is
        invalid (it would fail again identically); any other status fails at once."""
        status = exc.status_code
        said = _server_message(exc)
        line = summarize(said) or f"HTTP {status} with no message"
        # The server's own text, unescaped (a JSON body's "\n" become line breaks); else the raw body.
        detail = detail_text(said if said.strip() and said != exc.message else _body_text(exc))
        if status == 429:
            error = ModelError(f"rate limited (HTTP 429): {line}", kind="rate_limited", attempts=attempt,
                               status=status, detail=detail)
            raise _Retryable(error, _retry_after(exc.response.headers)) from exc
        if status >= 500 and request_is_invalid(said, *_error_labels(exc)):
            raise ModelError(f"HTTP {status}, the server rejected the request (not retried): {line}",
                             kind="invalid_request", attempts=attempt, status=status, detail=detail) from exc
        if status >= 500:
            error = ModelError(f"server error (HTTP {status}): {line}", kind="server_error",
                               attempts=attempt, status=status, detail=detail)
            raise _Retryable(error, _retry_after(exc.response.headers)) from exc
        raise ModelError(f"HTTP {status} from {self._endpoint()}: {line}", kind="http_error",
                         attempts=attempt, status=status, detail=detail) from exc

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff (no jitter: runs stay reproducible); a server's Retry-After wins, capped."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff)
        return min(self.backoff * (2.0 ** (attempt - 1)), self.max_backoff)

    def _endpoint(self) -> str:
        return str(self._client.base_url).rstrip("/")

    # -- response parsing ------------------------------------------------------------------------

    def _parse(self, content: bytes, content_type: str, messages: Sequence[Message],
               tools: Sequence[Mapping[str, Any]], attempt: int, status: int) -> AssistantTurn:
        """The body as a turn, or one `bad_response` error: nothing of an unusable answer is executed."""
        detail = detail_text(content.decode("utf-8", errors="replace"))

        def bad(reason: str) -> ModelError:
            return ModelError(f"bad response from {self._endpoint()} (HTTP {status}): {reason}",
                              kind="bad_response", attempts=attempt, status=status, detail=detail)

        try:
            body = json.loads(content, parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError):
            raise bad(describe_body(content, content_type)) from None
        if not isinstance(body, dict):
            raise bad(f"expected a JSON object, got {type(body).__name__}")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            error = body.get("error")  # some proxies report errors with status 200
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                raise bad(f"no choices; the server said: {summarize(error['message'])}")
            raise bad("no choices in the response")
        choice: dict[str, Any] = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise bad("the first choice has no message object")

        text = _content_text(message.get("content"))
        try:
            tool_calls = tuple(self._parse_tool_calls(message.get("tool_calls"), _history_call_ids(messages)))
        except _RepeatedId as repeated:
            raise bad(f"{repeated}; nothing was executed") from None
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

    def _parse_tool_calls(self, raw_calls: Any, used: set[str]) -> list[ToolCall]:
        """The turn's calls. A server-sent id must be new (within the turn and the conversation so far): the
        chat API pairs each tool message with its call by id, so a repeat would make the history ambiguous.
        A missing id gets a deterministic one that is not in use."""
        if not isinstance(raw_calls, list):
            return []
        calls: list[ToolCall] = []
        seen = set(used)
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
            if isinstance(call_id, str) and call_id:
                if call_id in seen:
                    where = "an earlier call's id" if call_id in used else "another call's id in the same turn"
                    raise _RepeatedId(f"tool call id {call_id!r} repeats {where}")
            else:
                self._call_counter += 1
                while f"call_{self._call_counter}" in seen:
                    self._call_counter += 1
                call_id = f"call_{self._call_counter}"
            seen.add(call_id)
            calls.append(ToolCall.from_json_text(call_id, name if isinstance(name, str) else "", arguments))
        return calls


# -- helpers -------------------------------------------------------------------------------------


class _RepeatedId(Exception):
    """Internal: a tool call id the server sent twice."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity: strict JSON only


def wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as sent: `null` content as "", and every tool call's arguments a JSON object text.

    The history keeps what the model really said (the trace and console show it); only the copy put on the
    wire is normalised, because servers validate it: llama-cpp-python rejects `"content": null` (HTTP 500,
    "Input should be a valid string") and llama-server rejects a conversation holding tool-call arguments it
    cannot parse, on every later request. A call whose arguments did not parse is echoed as `{}`; the tool
    message answering it carries the parse error, so the model still learns what went wrong.
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        copy = dict(message)
        if copy.get("content") is None:
            copy["content"] = ""
        calls = copy.get("tool_calls")
        if isinstance(calls, list | tuple):
            copy["tool_calls"] = [_wire_call(call) for call in calls]
        wire.append(copy)
    return wire


def _wire_call(call: Any) -> Any:
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        return call
    function = dict(call["function"])
    arguments = function.get("arguments")
    if isinstance(arguments, Mapping):
        function["arguments"] = json.dumps(arguments, ensure_ascii=False)
    else:
        try:
            parsed = json.loads(arguments, parse_constant=_reject_constant) if isinstance(arguments, str) else None
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            function["arguments"] = "{}"
    return {**call, "function": function}


def _history_call_ids(messages: Sequence[Message]) -> set[str]:
    ids: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                ids.add(call["id"])
    return ids


def _body_text(exc: openai.APIStatusError) -> str:
    try:
        return exc.response.text
    except Exception:  # a streamed or closed response: fall back to what the SDK kept
        return exc.message


def _error_labels(exc: openai.APIStatusError) -> tuple[str, ...]:
    """The error's `type` and `code` strings (e.g. "invalid_request_error", "context_length_exceeded")."""
    body = exc.body
    if not isinstance(body, dict):
        return ()
    return tuple(str(body[key]) for key in ("type", "code") if isinstance(body.get(key), str | int))


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
    """Message content as text: a string, or the text parts of a content-part list.

    Empty or whitespace-only content becomes None: it says nothing, and shown to the customer it would be a
    blank message (small models often answer a tool-call turn with "\n").
    """
    if isinstance(content, list):
        content = "".join(part["text"] for part in content
                          if isinstance(part, dict) and part.get("type") == "text"
                          and isinstance(part.get("text"), str))
    if isinstance(content, str) and content.strip():
        return content
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
