"""Whether a person sees a widget: drawn where its region says, not cut off by the dialog it is in."""

from __future__ import annotations

from typing import Any


def shown(widget: Any) -> bool:
    """Whether a person sees the widget: it lies inside the terminal above the footer row, and at its first and
    last row it is what is drawn (not cut off by the dialog it is in, nor under something else). A widget's region
    alone is not enough: a button below a dialog's fold keeps an on-screen region while the dialog clips it."""
    region = widget.region
    width, height = widget.app.size
    if not (region.width > 0 and region.height > 0 and region.right <= width and region.bottom <= height - 1):
        return False
    screen = widget.app.screen
    for y in {region.y, region.bottom - 1}:
        drawn, _ = screen.get_widget_at(region.x + region.width // 2, y)
        if drawn is not widget and widget not in drawn.ancestors:
            return False
    return True
