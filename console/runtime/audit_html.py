"""The audit report as one self-contained HTML page (`index.html`): inline CSS and SVG, no script, no network.

The page is the facts of `core.recorded.report.AuditReport` in the order a person auditing their agents reads
them: what was audited, the writes per model and domain, the charts, the explicit confirmations, then the
findings (the written-policy violations the benchmark rewarded first, each with its rule, policy sentence,
reason and the console command that opens it), the writes that could not be judged and why, and the problems
of the input. Every recorded text is escaped and its control characters made visible (`audit_escape`): a
recording is hostile input, and a customer's `<script>` must read as text. Long lists are cut at
`MAX_LISTED` rows, saying how many more `audit.json` holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from console.runtime.audit_charts import Bar, bar_chart, colour
from console.runtime.audit_escape import html_text as h
from core.recorded.audit import NOT_JUDGED
from core.recorded.report import KINDS, REFUSED, AuditReport, ModelTally, WriteFinding

MAX_LISTED = 500
Replay = Callable[[WriteFinding], str]

CSS = """
:root{color-scheme:light dark;--fg:#1d1d1f;--bg:#fff;--muted:#5f6368;--line:#d9dce1;--card:#f6f7f9;--code:#f0f1f4}
@media (prefers-color-scheme:dark){:root{--fg:#e8eaed;--bg:#17181b;--muted:#a0a4aa;--line:#3a3d42;--card:#202226;
--code:#26292e}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:1180px;margin:0 auto;padding:24px 28px 64px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:19px;margin:36px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px}
p.lede,p.note,.muted{color:var(--muted)}
table{border-collapse:collapse;width:100%;margin:8px 0 4px;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top;
overflow-wrap:break-word}
td.path{overflow-wrap:anywhere}
th{font-weight:600;white-space:nowrap}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.total td{font-weight:600;border-top:2px solid var(--line)}
tr.finding td{border-bottom:none;padding-bottom:2px}tr.open td{padding-top:0}
td:nth-child(1){min-width:220px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
code{background:var(--code);padding:1px 4px;border-radius:3px;overflow-wrap:anywhere}
pre{background:var(--code);padding:8px 10px;border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere;margin:6px 0}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 14px;min-width:150px}
.card b{display:block;font-size:22px}
.badge{display:inline-block;padding:0 7px;border-radius:9px;color:#fff;font-size:12px;font-weight:600;
white-space:nowrap}
.src{display:inline-block;padding:0 6px;border:1px solid var(--line);border-radius:9px;font-size:11px}
.src.house{border-style:dashed}
article.finding{border:1px solid var(--line);border-left:4px solid #ef8f00;border-radius:6px;padding:10px 14px;
margin:12px 0;background:var(--card)}
article.finding.BLOCK{border-left-color:#c62828}
article.finding header{font-weight:600}
blockquote{margin:4px 0 4px 0;padding:2px 10px;border-left:3px solid var(--line);color:var(--muted)}
.rule{margin:8px 0}
figure{margin:12px 0 20px}figcaption{color:var(--muted);font-size:13px;margin-bottom:4px}
.legend span{margin-right:14px}
"""


def badge(category: str) -> str:
    return f'<span class="badge" style="background:{colour(category)}">{h(category)}</span>'


def source_label(source: str) -> str:
    return f'<span class="src{" house" if source == "house rule" else ""}">{h(source)}</span>'


def call_text(finding: WriteFinding) -> str:
    """`name({arguments})` as JSON (the arguments as written when they were no JSON object)."""
    if finding.raw_arguments is not None:
        return f"{finding.name}({finding.raw_arguments})"
    try:
        shown = json.dumps(finding.arguments, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        shown = repr(dict(finding.arguments))
    return f"{finding.name}({shown})"


RECORDED_WORDS = {"ok": "ran in the recording", "error": "failed in the recording (the tool refused it)",
                  "not run": "not run in the recording", "no result": "no result recorded",
                  "unreadable": "ran in the recording (its result unreadable)", "database": "ran on the database"}


def recorded_words(finding: WriteFinding) -> str:
    return RECORDED_WORDS.get(finding.recorded, f"recorded: {finding.recorded}")


def kind_words(finding: WriteFinding) -> str:
    """Why the write was refused, beside its category where that adds something ("policy", "house rule",
    "crashed"); "" where the category says it already."""
    return "" if finding.kind == finding.category else finding.kind


def conversation_words(report: AuditReport, finding: WriteFinding) -> str:
    at = finding.at
    reward = "no reward recorded" if at.reward is None else f"reward {at.reward:g}"
    return f"{at.words()} · {reward}"


def file_of(report: AuditReport, finding: WriteFinding) -> str:
    return report.files[finding.at.file].path


def _cards(report: AuditReport) -> str:
    totals = report.totals()
    refused = sum(totals.get(k, 0) for k in REFUSED)
    cards = [("conversations", report.conversations), ("writes of the agents", report.writes),
             ("allowed", totals.get("ALLOW", 0)), ("refused", refused), (NOT_JUDGED, totals.get(NOT_JUDGED, 0)),
             ("rewarded, but a rule of the written policy broken", len(report.rewarded_violations())),
             ("problems of the input", len(report.problems))]
    return '<div class="cards">' + "".join(f'<div class="card"><b>{n}</b>{h(label)}</div>'
                                            for label, n in cards) + "</div>"


def _counts_row(label: Sequence[str], counts: dict[str, int], kinds: Sequence[str], css: str = "") -> str:
    cells = "".join(f"<td>{cell}</td>" for cell in label)
    numbers = "".join(f'<td class="n">{counts.get(k, 0)}</td>' for k in kinds)
    return f'<tr class="{css}">{cells}<td class="n">{sum(counts.get(k, 0) for k in kinds)}</td>{numbers}</tr>'


def _kinds(report: AuditReport) -> list[str]:
    """The categories to show: every standard one, and any other the audit named."""
    extra = sorted({k for g in report.groups.values() for k in g.writes if k not in KINDS})
    return [*KINDS, *extra]


def _groups(report: AuditReport) -> str:
    kinds = _kinds(report)
    head = ("<tr><th>model</th><th>domain</th><th class=n>conversations</th><th class=n>rewarded</th>"
            "<th class=n>writes</th>" + "".join(f"<th class=n>{badge(k)}</th>" for k in kinds) + "</tr>")
    rows = []
    for g in report.sorted_groups():
        rows.append(_counts_row([h(g.model), h(g.domain), f'<span style="float:right">{g.conversations}</span>',
                                 f'<span style="float:right">{g.rewarded}</span>'], dict(g.writes), kinds))
    rewarded = sum(g.rewarded for g in report.groups.values())
    rows.append(_counts_row(["total", "", f'<span style="float:right">{report.conversations}</span>',
                             f'<span style="float:right">{rewarded}</span>'], report.totals(), kinds, "total"))
    return f"<table>{head}{''.join(rows)}</table>"


def _charts(report: AuditReport) -> str:
    rules = report.rules_by_refusals()
    by_rule = bar_chart([Bar(r.id, {k: r.refusals.get(k, 0) for k in REFUSED},
                             "house rule" if r.source == "house rule" else "") for r in rules],
                        title="refused writes by rule", categories=REFUSED)
    by_model = bar_chart([Bar(m.model, dict(m.writes)) for m in report.sorted_models()],
                         title="writes per model", categories=_kinds(report))
    parts = []
    if by_rule:
        parts.append("<figure><figcaption>Refused writes by objecting rule (a write several rules object to "
                     f"counts under each)</figcaption>{by_rule}</figure>")
    else:
        parts.append('<p class="note">No write was refused.</p>')
    if by_model:
        parts.append(f"<figure><figcaption>Writes per model, by what the gate would have said</figcaption>"
                     f"{by_model}</figure>")
    return "".join(parts)


def _confirmation(report: AuditReport) -> str:
    domains = sorted(report.domains_with_confirmation)
    if not domains:
        return ('<p class="note">No domain audited here has an explicit-confirmation rule (a rule with the id '
                "<code>&lt;domain&gt;.explicit_confirmation</code>), so none is counted.</p>")
    rows = "".join(_confirmation_row(m) for m in report.sorted_models())
    return (f'<p class="note">Writes made without the customer\'s explicit confirmation of the action the agent '
            f"described (rules <code>{h(', '.join(d + '.explicit_confirmation' for d in domains))}</code>).</p>"
            "<table><tr><th>model</th><th class=n>writes that break it</th><th class=n>writes judged by it</th>"
            f"<th class=n>share</th></tr>{rows}</table>")


def _confirmation_row(m: ModelTally) -> str:
    share = f"{100 * m.confirmation / m.confirmation_judged:.0f} %" if m.confirmation_judged else "–"
    return (f'<tr><td>{h(m.model)}</td><td class="n">{m.confirmation}</td><td class="n">{m.confirmation_judged}'
            f'</td><td class="n">{share}</td></tr>')


def _finding(report: AuditReport, f: WriteFinding, replay: Replay) -> str:
    rules = []
    for r in f.rules:
        what = {"violation": "breaks it", "missing": "needs a read", "error": "crashed (the gate fails closed)"}
        rules.append(f'<div class="rule"><code>{h(r.id)}</code> {source_label(r.source)} '
                     f'<span class="muted">{h(what.get(r.status, r.status))}</span>'
                     f"<blockquote>{h(r.policy)}</blockquote>{h(r.reason)}</div>")
    return (f'<article class="finding {h(f.category)}"><header>{badge(f.category)} <code>{h(f.name)}</code> · '
            f"{h(conversation_words(report, f))} · {h(f.model)} · {h(f.domain)}</header>"
            f'<div class="muted">{h(file_of(report, f))} · {h(f.where)} · {h(recorded_words(f))}</div>'
            f"<pre>{h(call_text(f))}</pre>{''.join(rules)}"
            f'<div class="muted">open it in the console:</div><pre>{h(replay(f))}</pre></article>')


def _cut_note(total: int) -> str:
    return (f'<p class="note">{total - MAX_LISTED} more are in <code>audit.json</code>.</p>'
            if total > MAX_LISTED else "")


def _table(report: AuditReport, findings: list[WriteFinding], replay: Replay, *, reason: bool) -> str:
    """One finding per pair of rows: where it is, the call, the verdict with its rules (or why it was not
    judged); then, the width of the table, the command that opens it."""
    head = ("<tr><th>conversation</th><th>call</th><th>verdict</th>"
            + ("<th>why not judged</th>" if reason else "<th>rules</th>") + "</tr>")
    rows = []
    for f in findings[:MAX_LISTED]:
        detail = h(f.reason) if reason else "<br>".join(
            f"<code>{h(r.id)}</code> {source_label(r.source)}" for r in f.rules)
        rows.append(f'<tr class="finding"><td class="path">{h(file_of(report, f))}<br>'
                    f"{h(conversation_words(report, f))} · "
                    f"{h(f.model)} · {h(f.domain)}<br>"
                    f'<span class="muted">{h(f.where)} · {h(recorded_words(f))}</span></td>'
                    f"<td><code>{h(call_text(f), 600)}</code></td><td>{badge(f.category)}<br>"
                    f'<span class="muted">{h(kind_words(f))}</span></td><td>{detail}</td></tr>'
                    f'<tr class="open"><td colspan="4"><span class="muted">open it:</span> '
                    f"<code>{h(replay(f))}</code></td></tr>")
    return f"<table>{head}{''.join(rows)}</table>{_cut_note(len(findings))}"


def _files(report: AuditReport) -> str:
    rows = []
    for f in report.files:
        model = "" if f.model is None else f"{h(f.model)} <span class=muted>({h(f.model_source)})</span>"
        database = h(f.database) if f.database else (
            "" if f.unusable else '<span class="muted">none: the recorded results only</span>')
        state = h(f.unusable) if f.unusable else f"{f.conversations}"
        rows.append(f'<tr><td class="path">{h(f.path)}</td><td>{h(f.format or "")}</td><td>{h(f.domain or "")}'
                    f'</td><td>{model}</td><td class="path">{database}</td><td class="n">{state}</td>'
                    f'<td class="n">{f.problems}</td></tr>')
    return ("<table><tr><th>file</th><th>format</th><th>domain</th><th>model (named by)</th><th>database</th>"
            f"<th class=n>conversations</th><th class=n>problems</th></tr>{''.join(rows)}</table>")


def _not_judged(report: AuditReport, replay: Replay) -> str:
    findings = report.not_judged()
    if not findings:
        return '<p class="note">Every write of the agents was judged.</p>'
    reasons = "".join(f'<tr><td>{h(reason)}</td><td class="n">{n}</td></tr>'
                      for reason, n in report.not_judged_reasons())
    return (f"<table><tr><th>why</th><th class=n>writes</th></tr>{reasons}</table>"
            f"{_table(report, findings, replay, reason=True)}")


def _problems(report: AuditReport) -> str:
    if not report.problems:
        return '<p class="note">None: every file and line was read.</p>'
    items = "".join(f"<li><code>{h(p, 1000)}</code></li>" for p in report.problems[:MAX_LISTED])
    return f"<ol>{items}</ol>{_cut_note(len(report.problems))}"


def render_html(report: AuditReport, replay: Replay, *, title: str = "Audit of recorded conversations") -> str:
    """The whole page (see the module docstring)."""
    violations = report.rewarded_violations()
    others = report.other_refusals()
    listed = "".join(_finding(report, f, replay) for f in violations[:MAX_LISTED])
    sections = [
        f"<h1>{h(title)}</h1>",
        f'<p class="lede">{report.conversations} conversation(s) in {len(report.files)} file(s), '
        f"{len(report.models)} model(s), {len({g.domain for g in report.groups.values()})} domain(s). The verdicts "
        "are what the gate would have said: each write of the agent judged in the context the recording gave it, "
        "then applied as recorded. A benchmark's reward of 1 says it accepted the end state; it proves no write "
        "legal.</p>",
        _cards(report),
        "<h2>Writes per model and domain</h2>", _groups(report),
        '<p class="note">Refused: needs a read (the rules need a record nobody read), breaks a rule (a rule found '
        "a conflict in what was observed), BLOCK. Not judged: writes the audit could not judge, listed below with "
        "the reason.</p>",
        "<h2>Charts</h2>", _charts(report),
        "<h2>Explicit confirmation</h2>", _confirmation(report),
        f"<h2>Written-policy violations the benchmark rewarded ({len(violations)})</h2>",
        '<p class="note">Conversations with reward 1 in which a write that took effect breaks a rule citing the '
        "written policy: the benchmark accepted the end state, the policy forbids the write.</p>",
        listed or '<p class="note">None.</p>', _cut_note(len(violations)),
        f"<h2>Other refused writes ({len(others)})</h2>",
        '<p class="note">In conversations the benchmark did not reward (or that record no reward); in rewarded ones, '
        "writes refused only for a read, by a house rule or by a rule that crashed, and attempts the recorded tool "
        "refused too (failed in the recording).</p>",
        _table(report, others, replay, reason=False) if others else '<p class="note">None.</p>',
        f"<h2>Writes that could not be judged ({len(report.not_judged())})</h2>", _not_judged(report, replay),
        f"<h2>Problems of the input ({len(report.problems)})</h2>", _problems(report),
        "<h2>What was audited</h2>", _files(report),
    ]
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "img-src data:\">"
            f"<title>{h(title)}</title><style>{CSS}</style></head><body><main>"
            + "\n".join(sections) + "</main></body></html>\n")
