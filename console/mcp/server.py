"""The MCP server of one domain: its agent tools, the session ledger and the policy, on the SDK's low-level
`Server` (the exact schemas and results are ours to write: nothing is derived from Python signatures).

What a client sees:
- tools: the domain's agent tools (`Domain.agent_tools()`: telecom's phone tools, the customer's own, are not
  offered), each with its description and JSON schema from its `ToolSpec`, annotated `readOnlyHint` (reads,
  and the generic tools, which change nothing) or `destructiveHint` (writes: they change the database and are
  gated); plus `log_message`, which puts a line of the conversation on the session's transcript;
- resources: `ledgeragent://ledger` (the session's ledger, as the gate sees it) and `ledgeragent://policy`;
- a prompt `policy`: the domain policy as our own agent is given it.

The requests that read or change the session (every `tools/call`, every resource read) are served in the
order they arrived (`McpSessions.in_turn`): a client that sends its calls without waiting for each answer gets
the verdicts, and the answers in the order, of one that waits. Listing tools or prompts changes nothing and
is answered at once. A session stopped by a full disk is the error DISK_FULL (`console.mcp.jsonrpc`), saying
whether anything was written; any other ended session is an invalid request saying why it ended.

A call of a tool no client is offered is a protocol error (INVALID_PARAMS) and touches no session. Every
other call runs through the session's agent loop, so arguments that fail the schema, non-finite numbers or
nesting too deep are refused by the executor as our own agent's would be (recorded, not executed, the reason
in an `isError` result the agent can act on).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from console.mcp.handshake import LEDGER_URI, POLICY_URI, instructions, server_name, server_title, version
from console.mcp.jsonrpc import DISK_FULL
from console.mcp.manager import McpSessions, client_label
from console.mcp.results import text_result, tool_result
from console.mcp.session import DiskFullStop, McpLiveSession, SessionGone
from core.agent import INSTRUCTIONS
from core.domain import Domain
from core.tools import Requestor, ToolKind, ToolSpec

MESSAGE_TOOL = "log_message"
MAX_MESSAGE = 10_000
ROLES = ("customer", "agent")

MESSAGE_SPEC = {
    "type": "object",
    "properties": {
        "role": {"type": "string", "enum": list(ROLES),
                 "description": "customer: what the customer said; agent: what you told the customer"},
        "text": {"type": "string", "maxLength": MAX_MESSAGE, "description": "the message, as said"},
    },
    "required": ["role", "text"],
    "additionalProperties": False,
}
MESSAGE_DESCRIPTION = ("Put one line of the conversation on the supervisor's transcript: what the customer said "
                       "(role customer) or what you told them (role agent). The gate reads the customer's lines as "
                       "evidence: the ids they state and their explicit yes to what you last described, which the "
                       "policy asks for before a change, so log both before the write. Not gated; changes no record.")


# Key of the client a request comes from (a transport's choice); raises MCPError when the request has none.
KeyOf = Callable[[ServerRequestContext[Any, Any]], str]


def tool_annotations(spec: ToolSpec) -> types.ToolAnnotations:
    if spec.kind is ToolKind.WRITE:
        return types.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    return types.ToolAnnotations(read_only_hint=True, open_world_hint=False)


def offered(domain: Domain) -> tuple[ToolSpec, ...]:
    """The tools a client may call: the agent's (never the customer's own device tools)."""
    return tuple(t for t in domain.agent_tools() if t.requestor is Requestor.ASSISTANT)


def tool_list(domain: Domain) -> list[types.Tool]:
    tools = [types.Tool(name=spec.name, description=spec.description, input_schema=dict(spec.parameters),
                        annotations=tool_annotations(spec)) for spec in offered(domain)]
    tools.append(types.Tool(name=MESSAGE_TOOL, description=MESSAGE_DESCRIPTION, input_schema=MESSAGE_SPEC,
                            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False)))
    return tools


def policy_text(domain: Domain) -> str:
    """The policy as our own agent reads it (its instructions, then the domain's policy)."""
    return f"{INSTRUCTIONS}\n\n{domain.policy}"


@dataclass(frozen=True)
class ServerOptions:
    ledger_in_results: bool = False
    discover: bool = True  # answer `server/discover` (the stateless 2026 era); False over HTTP, see `build_server`


def build_server(domain: Domain, sessions: McpSessions, key_of: KeyOf,
                 options: ServerOptions = ServerOptions()) -> Server[Any]:
    """The MCP server of `domain`, its sessions on `sessions`, each request's client told by `key_of`.

    `options.discover=False` refuses `server/discover` as an unknown method: a 2026-era client then falls back
    to the initialize handshake (the SDK's documented fallback), whose streamable-HTTP session is what keeps one
    client's calls in one ledger. The stateless era has no session to keep a ledger in."""
    if domain.tool(MESSAGE_TOOL) is not None:
        raise ValueError(f"domain {domain.name} has a tool named {MESSAGE_TOOL}: the message tool would hide it")
    tools = tool_list(domain)
    names = {spec.name for spec in offered(domain)}

    async def session_of(ctx: ServerRequestContext[Any, Any], key: str) -> McpLiveSession:
        params = ctx.session.client_params
        info = params.client_info if params is not None else None
        client = client_label(info.name if info else None, info.version if info else None)
        try:
            return await sessions.session(key, client)
        except SessionGone as gone:
            raise gone_error(gone) from None

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        name, arguments = params.name, params.arguments or {}
        key = key_of(ctx)
        async with sessions.in_turn(key):
            if name != MESSAGE_TOOL and name not in names:
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name[:100]}")
            live = await session_of(ctx, key)
            try:
                if name == MESSAGE_TOOL:
                    return _note(live, arguments)
                result = await live.call(name, arguments)
            except DiskFullStop as stop:
                await sessions.stopped(key, stop)
                raise gone_error(stop) from None
            except SessionGone as gone:
                raise gone_error(gone) from None
            return tool_result(result, live.agent.ledger if options.ledger_in_results else None)

    async def list_resources(ctx: ServerRequestContext[Any, Any],
                             params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=LEDGER_URI, name="ledger", mime_type="text/plain",
                           description="This session's ledger: every record a read returned, by canonical path, "
                                       "as the policy gate sees it (STALE: changed by a write since it was read)"),
            types.Resource(uri=POLICY_URI, name="policy", mime_type="text/markdown",
                           description=f"The {domain.title} policy the gate enforces"),
        ])

    async def read_resource(ctx: ServerRequestContext[Any, Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri == POLICY_URI:
            text, mime = policy_text(domain), "text/markdown"
        elif uri == LEDGER_URI:
            key = key_of(ctx)
            async with sessions.in_turn(key):
                live = await session_of(ctx, key)
                text, mime = live.agent.ledger.render(), "text/plain"
        else:
            raise MCPError(code=types.INVALID_PARAMS, message="Resource not found", data={"uri": uri[:200]})
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    async def list_prompts(ctx: ServerRequestContext[Any, Any],
                           params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(
            name="policy", description=f"The {domain.title} agent's instructions and policy")])

    async def get_prompt(ctx: ServerRequestContext[Any, Any],
                         params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != "policy":
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name[:100]}")
        return types.GetPromptResult(description=f"The {domain.title} policy", messages=[
            types.PromptMessage(role="user", content=types.TextContent(text=policy_text(domain)))])

    server: Server[Any] = Server(
        server_name(domain.name), version=version(), title=server_title(domain.title),
        instructions=instructions(domain.title),
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_read_resource=read_resource, on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    if not options.discover:
        server.add_request_handler("server/discover", types.RequestParams, _refuse_discover)
    return server


async def _refuse_discover(ctx: ServerRequestContext[Any, Any], params: types.RequestParams) -> types.EmptyResult:
    raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found",
                   data="this server keeps one ledger per client session: use the initialize handshake")


def _note(live: McpLiveSession, arguments: dict[str, Any]) -> types.CallToolResult:
    role, text = arguments.get("role"), arguments.get("text")
    if set(arguments) - {"role", "text"} or role not in ROLES or not isinstance(text, str) \
            or len(text) > MAX_MESSAGE:
        return text_result(f"Error: invalid arguments for {MESSAGE_TOOL}: give role (customer or agent) and text "
                           f"(at most {MAX_MESSAGE} characters)", error=True)
    live.note(str(role), text)
    return text_result("noted on the transcript", error=False)


def gone_error(gone: SessionGone) -> MCPError:
    """The MCP error of a call on a session that ended, could not start, or its disk stopped."""
    if gone.disk is not None:
        data = {"reason": gone.disk.reason, "path": str(gone.disk.path),
                "write_ran": isinstance(gone, DiskFullStop) and gone.ran}
        return MCPError(code=DISK_FULL, message=str(gone), data=data)
    return MCPError(code=types.INVALID_REQUEST, message=str(gone))
