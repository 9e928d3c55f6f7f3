"""Finding what the user named: a domain, a scenario, the domain of a file of tool calls or of a recording.

Shared by the command line, the screens (the open-trace dialog audits a recording) and the web server's option
checks; each refuses with one `CliError` line that says what is available.
"""

from __future__ import annotations

from pathlib import Path

from console.runtime.errors import CliError
from core.domain import Domain
from core.recorded.model import INTERNAL_TOOLS, Recording
from core.scenario import Scenario, ScenarioError, list_scenarios, load_scenario
from domains.registry import DOMAINS, UnknownDomain, load_domain

DEMO_SCENARIO = "refund-to-original-payment"  # what `ledgeragent` alone opens (retail)


def _domain(name: str) -> Domain:
    try:
        return load_domain(name)
    except UnknownDomain as exc:
        raise CliError(str(exc.args[0])) from exc


def infer_domain(names: set[str]) -> Domain:
    """The one domain whose tools include every tool the trajectory calls; a clear error otherwise."""
    if not names:
        raise CliError("cannot tell the domain: the file holds no valid tool call; pass --domain")
    matches = [d for d in (load_domain(n) for n in DOMAINS) if names <= {t.name for t in d.tools}]
    if len(matches) != 1:
        which = "no domain has" if not matches else f"{', '.join(d.name for d in matches)} all have"
        raise CliError(f"cannot tell the domain: {which} the tools this file calls; pass --domain")
    return matches[0]


def _scenario(domain: Domain, name: str) -> Scenario:
    available = list_scenarios(domain.scenarios_dir)
    path = Path(name)
    if path.suffix == ".json" and path.exists():
        chosen = path
    elif name in available:
        chosen = available[name]
    else:
        raise CliError(f"unknown scenario {name!r} for {domain.name}; available: {', '.join(available) or 'none'}")
    try:
        scenario = load_scenario(chosen)
    except ScenarioError as exc:
        raise CliError(str(exc)) from exc
    if scenario.domain != domain.name:
        raise CliError(f"scenario {scenario.name!r} is for domain {scenario.domain!r}, not {domain.name!r}")
    return scenario


def first_scenario(domain: Domain) -> str | None:
    """The scenario a domain opens with when none is named: the retail demo, else its first in name order."""
    available = list(list_scenarios(domain.scenarios_dir))
    if DEMO_SCENARIO in available:
        return DEMO_SCENARIO
    return available[0] if available else None


def recording_domain(recording: Recording, named: str | None) -> Domain:
    """`--domain`, else the domain the file names, else the one domain whose tools the file calls. A file naming
    another domain than `--domain` is refused: its tools would all be unknown."""
    if named is not None:
        if recording.domain is not None and recording.domain != named:
            raise CliError(f"{recording.source} is a recording of the {recording.domain} domain, not {named}")
        return _domain(named)
    if recording.domain is not None:
        return _domain(recording.domain)
    return infer_domain(recording.tool_names() - INTERNAL_TOOLS)  # a recorded agent's `think` names no domain
