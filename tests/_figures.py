"""Checks on drawn figures shared by the plot and report tests (matplotlib window extents)."""

from __future__ import annotations

from typing import Any


def tick_label_overlaps(fig: Any) -> list[str]:
    """Tick labels meeting another panel's title or plot area, or an upright neighbour.

    The figure is drawn first (as it is saved: constrained layout applied), then every
    visible tick label's box is compared with the other visible panels' plot areas and
    titles, and with the other labels of its axis when they stand upright (slanted labels'
    upright boxes overlap though their text does not). Each overlap is named.
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = [a for a in fig.axes if a.get_visible()]
    found = []
    for a in axes:
        for axis in (a.xaxis, a.yaxis):
            ticks = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
            boxes = [t.get_window_extent(renderer) for t in ticks]
            if not any(t.get_rotation() % 180 for t in ticks):
                for i, b in enumerate(boxes):
                    found += [
                        f"{ticks[i].get_text()!r} on {ticks[j].get_text()!r}"
                        for j in range(i + 1, len(boxes))
                        if b.overlaps(boxes[j])
                    ]
            for b in (b for b in axes if b is not a):
                others = [b.get_window_extent(renderer)]
                if b.get_title():
                    others.append(b.title.get_window_extent(renderer))
                found += [
                    f"{t.get_text()!r} of {a.get_title()!r} on {b.get_title()!r}"
                    for t, box in zip(ticks, boxes)
                    if any(box.overlaps(o) for o in others)
                ]
    return found
