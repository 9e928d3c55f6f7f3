"""Ledger pane: the ledger as a Tree by canonical path, updated in place so expansion and cursor survive.

Group nodes are path prefixes (`orders`, `users`); leaves are entries. New and changed entries flash,
stale ones are marked, and the evidence of a selected verdict can be highlighted. Selecting an entry
shows its full record and provenance below the tree.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from console.tui.theme import INFO, palette_of
from core.ledger import LedgerEntry, LedgerReader
from core.strict_json import inert, inert_json

FLASH_SECONDS = 1.5
BIG_GROUP = 50  # groups with more entries than this start folded: the tree then stays cheap to rebuild


VALUE_LINES = 4  # a long value wraps over at most this many lines under its key; selecting it shows it all
RELABEL_CHUNK = 100  # labels fitted to a new width per frame after a resize (the entries on view come first)


def summarize(value: Any) -> str:
    """What a tree line says about an entry's value: a record's status, name, email or route, a count of
    fields or items, or a scalar as JSON. Never cut here: the tree wraps it under the key when it is long."""
    if isinstance(value, dict):
        if isinstance(value.get("confirmed"), bool):  # the customer's yes or not (conversation.confirmation)
            return f"confirmed: {'yes' if value['confirmed'] else 'no'}"
        for key in ("status", "name", "email", "origin"):
            if value.get(key) is not None:
                shown = value[key]
                if isinstance(shown, dict):
                    shown = " ".join(str(v) for v in shown.values())
                if key == "origin" and value.get("destination"):
                    shown = f"{shown} → {value['destination']}"
                return inert(f"{key}: {shown}")  # the ledger holds what tools returned: untrusted
        return inert(f"{{{len(value)} fields}}")
    if isinstance(value, list):
        return f"[{len(value)} items]"
    return inert(json.dumps(value, ensure_ascii=False))


class LedgerTree(Tree[str]):
    """Tree whose node data is the full path for leaves and the prefix for groups."""

    # Space is the console's Start/Pause wherever the focus is, not Tree's "toggle node" (enter still toggles).
    BINDINGS = [Binding("space", "app.start_or_pause", "Start/Pause")]

    def __init__(self) -> None:
        super().__init__("ledger", id="ledger-tree")
        self.show_root = False
        self.guide_depth = 2
        self.nodes_by_path: dict[str, TreeNode[str]] = {}
        self.shown_versions: dict[str, int] = {}  # entry version each leaf label was drawn from
        self._sorted_children: dict[str, list[str]] = {}  # group prefix -> child names, kept sorted
        self._auto_expanded: set[str] = set()  # groups still open only because we opened them
        self.flashing: set[str] = set()
        self.highlighted: set[str] = set()
        self.reader: LedgerReader | None = None
        self.wrap_width = 0  # the line width labels were fitted to (0: not laid out yet, nothing wrapped)
        self._to_relabel: list[str] = []  # entries still to fit to the width of the last resize

    def _group(self, prefix: str) -> TreeNode[str]:
        if prefix in self.nodes_by_path:
            return self.nodes_by_path[prefix]
        parent_prefix, _, name = prefix.rpartition(".")
        parent = self.root if not parent_prefix else self._group(parent_prefix)
        node = parent.add(Text(inert(name)), data=prefix, expand=True, before=self._position(parent_prefix, name))
        self._auto_expanded.add(prefix)
        self.nodes_by_path[prefix] = node
        return node

    def _position(self, parent_prefix: str, name: str) -> int | None:
        """Where `name` goes among its siblings (binary search: groups can hold thousands of entries)."""
        names = self._sorted_children.setdefault(parent_prefix, [])
        index = bisect.bisect_left(names, name)
        names.insert(index, name)
        return None if index == len(names) - 1 else index

    def _forget(self, path: str) -> None:
        parent_prefix, _, name = path.rpartition(".")
        names = self._sorted_children.get(parent_prefix, [])
        index = bisect.bisect_left(names, name)
        if index < len(names) and names[index] == name:
            names.pop(index)

    def label_for(self, entry: LedgerEntry) -> Text:
        """Markers (evidence, new, stale) come first, then the key and what its value says: one line."""
        label = self._head(entry)
        label.append(f"  {summarize(entry.value)}", style="dim" if entry.is_stale else "")
        return self._marked(entry, label)

    def _head(self, entry: LedgerEntry) -> Text:
        key = entry.path.rpartition(".")[2]
        label = Text()
        path = entry.path
        if path in self.highlighted or path in self.flashing or entry.is_stale:  # the theme only when marked
            colours = palette_of(self)
            if path in self.highlighted:
                label.append("◆ ", colours.text(INFO, "bold"))
            if path in self.flashing:
                label.append("new ", colours.text("success", "bold"))
            if entry.is_stale:
                label.append("stale ", colours.text("warning", "italic"))
        label.append(inert(key), style="bold")
        return label

    def _marked(self, entry: LedgerEntry, line: Text) -> Text:
        path = entry.path
        if path not in self.flashing and path not in self.highlighted:
            return line
        colours = palette_of(self)
        if path in self.flashing:
            line.stylize(f"reverse {colours.color('success')}")
        if path in self.highlighted:
            line.stylize(f"bold {colours.variables['foreground']} on {colours.variables['primary-muted']}")
        return line

    def lines_for(self, entry: LedgerEntry) -> tuple[Text, list[Text]]:
        """The entry's line, and the lines its value continues on when key and value do not fit the tree's
        width together: the value then goes under the key, wrapped, instead of being cut at the pane's edge."""
        label = self.label_for(entry)
        indent = 2 * entry.path.count(".")  # the guides before a leaf
        if not self.wrap_width or indent + label.cell_len <= self.wrap_width:
            return label, []
        room = max(self.wrap_width - indent - 2, 8)  # a value line sits one guide deeper than its entry
        text = Text(summarize(entry.value), style="dim" if entry.is_stale else "")
        lines = list(text.wrap(self.app.console, room, overflow="fold"))
        for line in lines:
            line.rstrip()  # in place: the space a line broke at
        if len(lines) > VALUE_LINES:
            lines = [*lines[:VALUE_LINES - 1], Text("… (select it for the whole value)", "italic")]
        return self._marked(entry, self._head(entry)), [self._marked(entry, line) for line in lines]

    def _show(self, node: TreeNode[str], entry: LedgerEntry) -> None:
        """Label a leaf and its value lines (child nodes with the entry's path, so selecting one shows it)."""
        label, more = self.lines_for(entry)
        node.set_label(label)
        children = list(node.children)
        for child, line in zip(children, more, strict=False):
            child.set_label(line)
        for child in children[len(more):]:
            child.remove()
        for line in more[len(children):]:
            node.add_leaf(line, data=entry.path)

    def on_resize(self) -> None:
        """Fit every label to the new width (once per width change, never per event): the entries on view
        first, the rest RELABEL_CHUNK at a time after each frame, so a 5,000-entry ledger does not freeze the
        resize (its big groups are folded, their labels are not on screen yet)."""
        width = self.scrollable_content_region.width
        if width > 0 and width != self.wrap_width:
            self.wrap_width = width
            self._to_relabel = sorted(self.shown_versions, key=lambda path: not self._on_view(path))
            self._relabel_some()

    def _on_view(self, path: str) -> bool:
        node = self.nodes_by_path.get(path)
        parent = node.parent if node is not None else None
        while parent is not None and parent is not self.root:
            if not parent.is_expanded:
                return False
            parent = parent.parent
        return node is not None

    def _relabel_some(self) -> None:
        chunk, self._to_relabel = self._to_relabel[:RELABEL_CHUNK], self._to_relabel[RELABEL_CHUNK:]
        self._relabel(chunk)
        if self._to_relabel:
            self.call_after_refresh(self._relabel_some)

    def reset(self) -> None:  # type: ignore[override]
        """Forget every node and mark (a new session, or a replay jumping back)."""
        self.clear()
        self.nodes_by_path.clear()
        self.shown_versions.clear()
        self._sorted_children.clear()
        self._auto_expanded.clear()
        self.flashing.clear()
        self.highlighted.clear()
        self._to_relabel = []
        self.reader = None

    def sync(self, reader: LedgerReader, flash: Iterable[str] = (), paths: Iterable[str] | None = None) -> None:
        """Bring the tree in line with `reader`: add, relabel and remove only what changed.

        With `paths` (the paths an event names) only those are looked at; without, every entry is compared
        by version, which also removes what vanished (restore, replay). Labels are built only for new or
        changed entries, so a 5,000-entry ledger stays well under a frame.
        """
        self.reader = reader
        flash = set(flash) if FLASH_SECONDS > 0 else set()
        self.flashing |= flash
        if paths is None:
            present = reader.paths()
            present_set = set(present)
            # Remove vanished entries, then groups left empty (deepest first).
            for path in sorted(set(self.nodes_by_path) - present_set, key=lambda p: -p.count(".")):
                gone = self.nodes_by_path[path]
                if path in self.shown_versions or not gone.children:  # an entry (with its value lines), or
                    # a group left empty
                    gone.remove()
                    del self.nodes_by_path[path]
                    self.shown_versions.pop(path, None)
                    self._auto_expanded.discard(path)
                    self._forget(path)
        else:
            present = sorted(set(paths) | flash)
        for path in present:
            entry = reader.entry(path)
            if entry is None:
                continue
            node = self.nodes_by_path.get(path)
            if node is None:
                parent_prefix, _, name = path.rpartition(".")
                parent = self.root if not parent_prefix else self._group(parent_prefix)
                node = parent.add(Text(), data=path, expand=True, allow_expand=False,
                                  before=self._position(parent_prefix, name))
                self._show(node, entry)
                self.nodes_by_path[path] = node
                self._fold_if_big(parent_prefix, parent)
            elif path in flash or self.shown_versions.get(path) != entry.version:
                self._show(node, entry)
            self.shown_versions[path] = entry.version
        if flash:
            self.set_timer(FLASH_SECONDS, lambda: self._unflash(flash))

    def _fold_if_big(self, prefix: str, group: TreeNode[str]) -> None:
        """Fold a group we opened once it grows past BIG_GROUP (the operator can open it again)."""
        count = len(self._sorted_children.get(prefix, ()))
        if prefix in self._auto_expanded and count > BIG_GROUP:
            self._auto_expanded.discard(prefix)
            group.collapse()
        if prefix:
            group.set_label(Text(inert(f"{prefix.rpartition('.')[2]} ({count})")))  # Text: a str is markup

    def _unflash(self, paths: set[str]) -> None:
        self.flashing -= paths
        self._relabel(paths)

    def _relabel(self, paths: Iterable[str]) -> None:
        if self.reader is None:
            return
        for path in paths:
            entry = self.reader.entry(path)
            node = self.nodes_by_path.get(path)
            if entry is not None and node is not None:
                self._show(node, entry)

    def recolour(self) -> None:
        """The theme changed: every entry's label again (its markers are coloured by the theme)."""
        self._relabel(list(self.shown_versions))

    def highlight(self, paths: Iterable[str]) -> None:
        previous = self.highlighted
        self.highlighted = {p for p in paths if p in self.nodes_by_path}
        self._relabel(previous | self.highlighted)
        for path in sorted(self.highlighted):
            node = self.nodes_by_path[path]
            parent = node.parent
            while parent is not None:
                parent.expand()
                parent = parent.parent
        if self.highlighted:
            self.scroll_to_node(self.nodes_by_path[sorted(self.highlighted)[0]])


LEDGER_PLACEHOLDER = "Select an entry to see its record and where it came from."


class LedgerPane(Vertical):
    BORDER_TITLE = "Ledger"

    def compose(self) -> ComposeResult:
        yield LedgerTree()
        with VerticalScroll(id="ledger-detail-scroll"):
            yield Static(LEDGER_PLACEHOLDER, id="ledger-detail")

    @property
    def ledger_tree(self) -> LedgerTree:
        return self.query_one(LedgerTree)

    def sync(self, reader: LedgerReader, flash: Iterable[str] = (), paths: Iterable[str] | None = None) -> None:
        self.ledger_tree.sync(reader, flash, paths)
        self.border_subtitle = f"{len(reader)} entries"

    def highlight(self, paths: Iterable[str]) -> None:
        self.ledger_tree.highlight(paths)

    def recolour(self) -> None:
        """The theme changed: the tree's labels and the entry shown, in the new theme's colours."""
        tree = self.ledger_tree
        tree.recolour()
        node = tree.cursor_node
        if node is not None and node.data and node.data in tree.shown_versions:
            self.show_entry(node.data)

    def clear(self) -> None:
        """Empty the tree, the detail and the counter (a new session starts with nothing)."""
        self.ledger_tree.reset()
        self.query_one("#ledger-detail", Static).update(LEDGER_PLACEHOLDER)
        self.border_subtitle = ""

    def show_no_ledger(self) -> None:
        """A baseline (function-calling) agent keeps no ledger: say so instead of showing an empty tree."""
        self.ledger_tree.reset()
        self.query_one("#ledger-detail", Static).update(Text("no ledger (baseline agent)", "bold"))
        self.border_subtitle = "no ledger (baseline agent)"

    def show_entry(self, path: str) -> None:
        reader = self.ledger_tree.reader
        entry = reader.entry(path) if reader is not None else None
        detail = self.query_one("#ledger-detail", Static)
        if entry is None:
            detail.update(Text(inert(path), style="bold"))
            return
        text = Text(inert(entry.path), style="bold")
        text.append(inert(f"\nfrom {entry.provenance.describe()} (call {entry.provenance.call_id})", lines=True),
                    style="dim")
        if entry.stale is not None:
            text.append(f"\nSTALE since {entry.stale.describe()}: read it again before relying on "
                        f"{'those fields' if entry.stale.fields else 'it'}", style=palette_of(self).text("warning"))
        text.append("\n" + inert_json(json.dumps(entry.value, indent=2, ensure_ascii=False, sort_keys=True)))
        detail.update(text)

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        if event.node.data:
            self.show_entry(event.node.data)
