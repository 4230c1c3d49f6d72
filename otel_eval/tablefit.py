"""Tables that fit the terminal (or the 80 columns of a CI log or a pipe) without cutting a word.

rich, given a table wider than the console, shrinks every column alike: a verdict becomes ``FA…``,
a score disappears and a list of criteria is folded mid-word. :func:`fit_table` decides instead,
per width, which columns to show and how wide each is: columns are kept in order of importance
while their narrowest useful width fits, the room left goes to the most important ones first,
and each cell is shortened by its column's own rule (a session id keeps both ends, a list keeps
whole items and says how many more). A column whose ``min_width`` is ``None`` is never narrowed
below its content: the verdicts PASS / FAIL / NOT EVALUATED are always whole. A ``wrap`` column
(a tool call with its arguments, a field's value) keeps all its text on as many lines as it needs,
broken between words; only a word wider than the column is shortened, with an ellipsis.

Every command that prints a table builds it here (:func:`fit_table`, or :func:`fit_grid` for the
borderless label/value grids of ``inspect``), so that ``tests/test_tables_fit.py`` can hold them
all to one promise: every line fits, no word is split across lines.

Pure: text in, a rich ``Table`` out; nothing here reads the database.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len

ELLIPSIS = "…"
#: Columns of a table with borders: one separator per column plus one, and one space each side.
BORDER_PER_COLUMN = 3
BORDER_FIXED = 1
#: Spaces between the columns of a :func:`fit_grid`.
GRID_GAP = 2


def end_ellipsis(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, at a word boundary when one is near, ending in ``…``."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = _take(text, width - 1)
    cut = head.rfind(" ")
    if cut >= (width - 1) * 2 // 3:  # a word boundary not too far back: cut there, not mid-word
        head = head[:cut]
    return head.rstrip() + ELLIPSIS


def middle_ellipsis(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells by dropping its middle: ids that share a prefix (``session-
    2026-01-…``) stay tellable apart by their ends."""
    if cell_len(text) <= width:
        return text
    if width <= 2:
        return _take(text, width)
    tail_cells = (width - 1) // 2
    head = _take(text, width - 1 - tail_cells)
    tail = _take_end(text, tail_cells)
    return head + ELLIPSIS + tail


def list_text(items: Sequence[str], width: int | None = None, separator: str = ", ") -> str:
    """Items joined; cut to ``width`` by keeping whole items and saying how many were left out
    (``trajectory_match, +2``). An item is cut itself only when not even one fits."""
    joined = separator.join(items)
    if width is None or cell_len(joined) <= width:
        return joined
    for keep in range(len(items) - 1, 0, -1):
        text = separator.join(items[:keep]) + f"{separator}+{len(items) - keep}"
        if cell_len(text) <= width:
            return text
    more = f"{separator}+{len(items) - 1}" if len(items) > 1 else ""
    return end_ellipsis(items[0], max(1, width - cell_len(more))) + more


NO_BREAK_SPACE = "\u00a0"
_WORD_BREAK = re.compile(r"[ \t]+")


def wrap_words(text: str, width: int, shorten: Callable[[str, int], str] = end_ellipsis) -> list[str]:
    """``text`` broken into lines of at most ``width`` cells, between words only; a word wider
    than ``width`` alone is shortened (by ``shorten``) rather than split over two lines. A
    no-break space (:data:`NO_BREAK_SPACE`) joins what it stands between into one word."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in _WORD_BREAK.split(paragraph.strip(" \t")):
            if cell_len(word) > width:
                word = shorten(word, width)
            if line and cell_len(line) + 1 + cell_len(word) <= width:
                line += " " + word
                continue
            if line:
                lines.append(line)
            line = word
        lines.append(line)
    return lines


def _take(text: str, cells: int) -> str:
    out, used = [], 0
    for ch in text:
        w = cell_len(ch)
        if used + w > cells:
            break
        out.append(ch)
        used += w
    return "".join(out)


def _take_end(text: str, cells: int) -> str:
    return _take(text[::-1], cells)[::-1]


Cell = str | tuple[str, str] | Sequence[str]
"""A cell: text; ``(text, style)``; or, in a column with a list shortener, a list of items."""


@dataclass(frozen=True)
class Column:
    """How one column of a fitted table is shown: its header, the widths it may take and how its
    cells are shortened (see the module docstring)."""

    header: str
    min_width: int | None = None
    """Narrowest useful width; None: the column is never narrower than its content."""
    shorten: Callable[[str, int], str] = end_ellipsis
    justify: str = "left"
    is_list: bool = False
    """Cells are lists of items, shortened by :func:`list_text`."""
    separator: str = ", "
    max_width: int | None = None
    """The width it claims while columns are chosen (a long session id must not push the score
    out); it grows past it only into room no chosen column needs."""
    wrap: bool = False
    """Cells keep all their text, broken between words onto more lines (see :func:`wrap_words`)."""
    style: str = ""
    """The rich style of the whole column (a cell's own style comes with the cell)."""


def _text(cell: Any) -> str:
    if isinstance(cell, tuple):
        return cell[0]
    return cell


def boxed_frame(count: int) -> int:
    """Cells a bordered table (rich's default box, one space of padding) takes besides its columns."""
    return BORDER_FIXED + BORDER_PER_COLUMN * count


def grid_frame(count: int, gap: int = GRID_GAP) -> int:
    """Cells a :func:`fit_grid` takes besides its columns: the gaps between them."""
    return gap * max(count - 1, 0)


def fit_widths(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Any]],
    width: int,
    priority: Sequence[int],
    frame: Callable[[int], int] = boxed_frame,
) -> dict[int, int]:
    """Which columns to show at ``width`` and how wide: ``{column index: width}``.

    ``priority`` lists column indexes, most important first. A column joins when the columns
    already in, at their full (content) width, leave room for its narrowest useful width: the
    more important columns stay whole and less important ones are dropped before anything is
    abbreviated. Room left over goes back, in the same order, to columns whose ``max_width``
    held them under their content, then evenly to the ``wrap`` columns, which claim only their
    ``max_width`` (else their narrowest) while columns are chosen: a long call wraps beside the
    other rather than pushing it out. The first column in ``priority`` always shows. ``frame``:
    the cells borders and gaps take for a number of columns."""
    content, want, narrowest = [], [], []
    for i, col in enumerate(columns):
        header = cell_len(col.header)
        content.append(max([header, *(_cell_width(col, r[i]) for r in rows)]))
        least = content[i] if col.min_width is None else min(content[i], max(col.min_width, header))
        if col.max_width is not None:
            want.append(min(content[i], max(col.max_width, header)))
        else:
            want.append(least if col.wrap else content[i])
        narrowest.append(min(least, want[i]))
    chosen: list[int] = []
    for i in priority:
        needed = sum(want[j] for j in chosen) + narrowest[i] + frame(len(chosen) + 1)
        if not chosen or needed <= width:
            chosen.append(i)
    widths = {i: want[i] for i in chosen}
    excess = sum(widths.values()) + frame(len(chosen)) - width
    for i in reversed(chosen):  # only the last to join can be short of room, and the first if alone
        if excess <= 0:
            break
        cut = min(excess, widths[i] - narrowest[i])
        widths[i] -= cut
        excess -= cut
    for i in chosen:  # room left over: columns that asked for less than their content get it back
        if excess >= 0:
            break
        if columns[i].wrap:
            continue
        grow = min(-excess, content[i] - widths[i])
        widths[i] += grow
        excess += grow
    growing = [i for i in chosen if columns[i].wrap and widths[i] < content[i]]
    while excess < 0 and growing:  # then shared among the wrap columns, none past its content
        share = max(1, -excess // len(growing))
        for i in list(growing):
            grow = min(share, -excess, content[i] - widths[i])
            widths[i] += grow
            excess += grow
            if widths[i] >= content[i]:
                growing.remove(i)
    return widths


def _cell_width(col: Column, cell: Any) -> int:
    if col.is_list and col.wrap:
        return cell_len(col.separator.join(cell))
    if col.is_list:
        return cell_len(list_text(list(cell), separator=col.separator))
    return max((cell_len(line) for line in _text(cell).split("\n")), default=0)


def fit_table(
    title: str | None,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Any]],
    width: int,
    priority: Sequence[int] | None = None,
    **table_options: Any,
) -> Any:
    """A rich ``Table`` no wider than ``width`` (see :func:`fit_widths`), every cell already cut to
    its column, so rich has nothing left to shrink or fold."""
    from rich.table import Table

    return _filled(Table(title=title, **table_options), columns, rows, width, priority, boxed_frame)


def fit_grid(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Any]],
    width: int,
    priority: Sequence[int] | None = None,
    gap: int = GRID_GAP,
) -> Any:
    """A borderless, headerless grid (label, value, ...) no wider than ``width``, filled as
    :func:`fit_table` fills a table; columns are ``gap`` spaces apart."""
    from rich.table import Table

    return _filled(Table.grid(padding=(0, gap)), columns, rows, width, priority, lambda count: grid_frame(count, gap))


def _filled(
    table: Any,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Any]],
    width: int,
    priority: Sequence[int] | None,
    frame: Callable[[int], int],
) -> Any:
    from rich.text import Text

    order = list(priority) if priority is not None else list(range(len(columns)))
    widths = fit_widths(columns, rows, width, order, frame)
    shown = [i for i in range(len(columns)) if i in widths]
    for i in shown:
        col = columns[i]
        table.add_column(
            col.header, width=widths[i], no_wrap=True, overflow="ellipsis", justify=col.justify, style=col.style or None
        )
    for row in rows:
        cells = []
        for i in shown:
            col, cell, w = columns[i], row[i], widths[i]
            if col.is_list and not col.wrap:
                cells.append(Text(list_text(list(cell), w, col.separator)))
                continue
            if col.is_list:
                cell = col.separator.join(cell)
            text, style = cell if isinstance(cell, tuple) else (cell, "")
            if col.wrap:  # the no-break spaces did their job: printed as plain ones, for grep and copy
                text = "\n".join(wrap_words(text, w, col.shorten)).replace(NO_BREAK_SPACE, " ")
            else:
                text = "\n".join(col.shorten(line, w) for line in text.split("\n"))
            cells.append(Text(text, style=style) if style else Text(text))
        table.add_row(*cells)
    return table
