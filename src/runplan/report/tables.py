"""Tables that fit the terminal: names and numbers are never cut to `…` and never broken across lines.

Rich shrinks every column of a table that is wider than the console and ends each cut cell with `…`, so a
name to type (``llama-3.1-70b``, ``h100-sxm``) becomes ``ll…``. Here a column of names or numbers keeps its
full width and only prose columns (a reason, a note) wrap; when even that does not fit, each row is printed
as a block of ``header value`` pairs instead, packed into lines between pairs, never inside one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

#: The narrowest a prose column gets; a longer word in it (a formula) folds onto the next line. A number and its
#: unit count as one word (``1,282,323 s``, ``12.58 M tokens``: report.format.unit_spaces_masked); the widest
#: `plan --detail` prints on the examples, ``552.8 interruptions`` or ``(70.6 B parameters,``, is 19 cells
#: (tests/test_a_counted_noun_stays_on_its_number_s_line.py), so a prose column holds every pair.
PROSE_MIN_CHARS = 24

#: First columns that hold a row's name; any other first column is shown as ``header value`` when stacked.
NAME_COLUMNS = ("", "what", "name", "part", "stage", "phase", "run", "metric")

#: A cell longer than this with spaces in it makes its column prose: it may wrap at spaces.
PROSE_CELL_CHARS = 30


def is_prose(header: str, cells: Sequence[str]) -> bool:
    """True when a column reads as sentences (it may wrap at spaces) rather than names and numbers."""
    return header in ("why", "note", "what it means") or any(_is_sentence(cell) for cell in cells)


def _is_sentence(cell: str) -> bool:
    return len(cell) > PROSE_CELL_CHARS and " " in cell


def fitted_table(
    console: Console,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    left: Sequence[str] = (),
    box_style: str = "SIMPLE_HEAD",
    show_header: bool = True,
) -> RenderableType:
    """A rich table of ``rows`` that fits ``console.width``, or its rows stacked as blocks when it cannot.

    ``left`` names the left-justified columns (the rest are numbers, right-justified); ``box_style`` is a
    ``rich.box`` name.
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from runplan.report.format import cell_width, unit_spaces_masked

    table = Table(
        title=title,
        box=getattr(box, box_style) if box_style else None,
        header_style="bold",
        title_justify="left",
        show_header=show_header,
    )
    needed = 2 + (len(headers) - 1) if table.box else 0  # the outer edges and the separators between columns
    for index, header in enumerate(headers):
        cells = [row[index] for row in rows]
        justify: Literal["left", "right"] = "left" if header in left or index == 0 else "right"
        label_width = len(header) if show_header else 0
        if is_prose(header, cells):
            table.add_column(header, justify=justify, overflow="fold")
            # a number and its unit count as one word (16.78 M, 1,282,323 s): rich gives a folding column what the
            # others leave, and one narrower than the pair would fold inside it (report.format.unit_spaces_masked)
            longest_word = max(
                [0, *(cell_width(word) for cell in cells for word in unit_spaces_masked(cell).split())]
            )
            widest = max(label_width, min(longest_word, PROSE_MIN_CHARS))  # a longer word folds
        else:
            widest = max([label_width, *(len(cell) for cell in cells)])
            table.add_column(header, justify=justify, no_wrap=True, min_width=widest)
        needed += widest + 2  # padding of one character each side
    # Text: a `[` in a cell is not rich markup; a sentence reads flush left in any column (the calibration line
    # in a column of numbers was right-justified, ragged on the left), a number keeps its column's side
    for row in rows:
        table.add_row(*(Text(cell, justify="left" if _is_sentence(cell) else None) for cell in row))
    if needed <= console.width:
        return table
    return stacked_rows(headers, rows, console.width, title=title)


def stacked_rows(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, *, title: str | None = None
) -> RenderableType:
    """Each row as its first cell in bold, then ``header value`` pairs packed into lines of ``width``."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Text] = [Text(title, style="italic")] if title else []
    for row in rows:
        head = row[0] if headers[0] in NAME_COLUMNS else f"{headers[0]} {row[0]}"
        parts.append(Text(head, style="bold"))
        pairs = [f"{h} {c}" if h else c for h, c in zip(headers[1:], row[1:], strict=True) if c]
        for line in pack(pairs, width - 2, separator="   "):
            parts.append(Text("  " + line))
    return Group(*parts)


def pack(items: Sequence[str], width: int, *, separator: str) -> list[str]:
    """``items`` joined by ``separator`` into lines of at most ``width`` characters, never splitting one."""
    lines: list[str] = []
    current = ""
    for item in items:
        candidate = f"{current}{separator}{item}" if current else item
        if current and len(candidate) > width:
            lines.append(current)
            current = item
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines
