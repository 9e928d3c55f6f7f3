"""The audit report as Markdown (`report.md`): the same facts as `index.html`, in the same order, for a pull
request, an issue or a terminal. Every recorded text is escaped (`md_text`, `md_code`): no recorded `<tag>`,
link or table bar takes effect when the page is rendered."""

from __future__ import annotations

from collections.abc import Sequence

from console.runtime.audit_escape import md_code, md_text
from console.runtime.audit_html import (
    MAX_LISTED,
    Replay,
    call_text,
    conversation_words,
    file_of,
    kind_words,
    recorded_words,
)
from core.recorded.audit import NOT_JUDGED
from core.recorded.report import KINDS, REFUSED, AuditReport, WriteFinding


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(head: Sequence[str], rows: Sequence[Sequence[object]], numeric_from: int) -> list[str]:
    align = ["---" if i < numeric_from else "---:" for i in range(len(head))]
    return [_row(head), _row(align), *(_row(r) for r in rows), ""]


def _cut(total: int) -> list[str]:
    return [f"{total - MAX_LISTED} more are in `audit.json`.", ""] if total > MAX_LISTED else []


def _groups(report: AuditReport) -> list[str]:
    kinds = list(KINDS)
    rows: list[list[object]] = [[md_text(g.model), md_text(g.domain), g.conversations, g.rewarded,
                                 sum(g.writes.values()), *(g.writes.get(k, 0) for k in kinds)]
                                for g in report.sorted_groups()]
    totals = report.totals()
    rows.append(["**total**", "", report.conversations, sum(g.rewarded for g in report.groups.values()),
                 report.writes, *(totals.get(k, 0) for k in kinds)])
    return _table(["model", "domain", "conversations", "rewarded", "writes", *kinds], rows, 2)


def _finding(report: AuditReport, f: WriteFinding, replay: Replay) -> list[str]:
    lines = [f"### {md_text(f.category)}: {md_text(f.name)} · {md_text(conversation_words(report, f))}", "",
             f"- file: {md_text(file_of(report, f))} ({md_text(f.where)}), model {md_text(f.model)}, domain "
             f"{md_text(f.domain)}, {md_text(recorded_words(f))}",
             f"- call: {md_code(call_text(f))}"]
    for r in f.rules:
        lines.append(f"- rule {md_code(r.id)} ({md_text(r.source)}, {md_text(r.status)}): {md_text(r.reason)}")
        lines.append(f"  > {md_text(r.policy)}")
    lines += [f"- open it: {md_code(replay(f))}", ""]
    return lines


def _listing(report: AuditReport, findings: list[WriteFinding], replay: Replay, *, reason: bool) -> list[str]:
    rows = [[f"{md_text(file_of(report, f))} · {md_text(conversation_words(report, f))} ({md_text(f.where)}; "
             f"{md_text(recorded_words(f))})",
             f"{md_text(f.model)} · {md_text(f.domain)}", md_text(call_text(f), 600),
             f"{md_text(f.category)}" + (f" ({md_text(kind_words(f))})" if kind_words(f) else ""),
             md_text(f.reason) if reason else ", ".join(f"{md_text(r.id)} ({md_text(r.source)})" for r in f.rules),
             md_text(replay(f))]
            for f in findings[:MAX_LISTED]]
    return [*_table(["conversation", "model · domain", "call", "verdict", "why not judged" if reason else "rules",
                     "open it"], rows, 6), *_cut(len(findings))]


def render_markdown(report: AuditReport, replay: Replay, *, title: str = "Audit of recorded conversations") -> str:
    totals = report.totals()
    violations = report.rewarded_violations()
    others = report.other_refusals()
    not_judged = report.not_judged()
    refused = sum(totals.get(k, 0) for k in REFUSED)
    lines = [f"# {md_text(title)}", "",
             f"{report.conversations} conversation(s) in {len(report.files)} file(s), {len(report.models)} model(s). "
             f"{report.writes} writes of the agents: {totals.get('ALLOW', 0)} allowed, {refused} refused, "
             f"{totals.get(NOT_JUDGED, 0)} not judged; {len(violations)} break a rule of the written policy in a "
             f"conversation the benchmark rewarded; {len(report.problems)} problem(s) of the input. The verdicts "
             "are what the gate would have said, each write judged in the context the recording gave it.", "",
             "## Writes per model and domain", "", *_groups(report)]
    lines += ["## Refused writes by rule", ""]
    rules = report.rules_by_refusals()
    lines += _table(["rule", "source", "refused", *REFUSED],
                    [[md_code(r.id), md_text(r.source), sum(r.refusals.values()), *(r.refusals.get(k, 0)
                                                                                    for k in REFUSED)]
                     for r in rules], 2) if rules else ["No write was refused.", ""]
    lines += ["## Explicit confirmation", ""]
    if report.domains_with_confirmation:
        lines += _table(["model", "writes that break it", "writes judged by it"],
                        [[md_text(m.model), m.confirmation, m.confirmation_judged] for m in report.sorted_models()], 1)
    else:
        lines += ["No domain audited here has an explicit-confirmation rule (`<domain>.explicit_confirmation`).", ""]
    lines += [f"## Written-policy violations the benchmark rewarded ({len(violations)})", ""]
    for f in violations[:MAX_LISTED]:
        lines += _finding(report, f, replay)
    lines += _cut(len(violations)) if violations else ["None.", ""]
    lines += [f"## Other refused writes ({len(others)})", ""]
    lines += _listing(report, others, replay, reason=False) if others else ["None.", ""]
    lines += [f"## Writes that could not be judged ({len(not_judged)})", ""]
    if not_judged:
        lines += _table(["why", "writes"], [[md_text(reason), n] for reason, n in report.not_judged_reasons()], 1)
        lines += _listing(report, not_judged, replay, reason=True)
    else:
        lines += ["Every write of the agents was judged.", ""]
    lines += [f"## Problems of the input ({len(report.problems)})", ""]
    lines += [f"1. {md_text(p, 1000)}" for p in report.problems[:MAX_LISTED]] or ["None."]
    lines += ["", *_cut(len(report.problems)), "## What was audited", ""]
    lines += _table(["file", "format", "domain", "model (named by)", "database", "conversations", "problems"],
                    [[md_text(f.path), md_text(f.format or ""), md_text(f.domain or ""),
                      "" if f.model is None else f"{md_text(f.model)} ({md_text(f.model_source)})",
                      md_text(f.database or ("" if f.unusable else "none: the recorded results only")),
                      md_text(f.unusable) if f.unusable else f.conversations, f.problems] for f in report.files], 5)
    return "\n".join(lines).rstrip() + "\n"
