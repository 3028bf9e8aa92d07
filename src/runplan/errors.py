"""The two kinds of failure runplan reports, and the one way they are rendered.

DESIGN.md: bad input exits 2 with one line that names the field (or flag, row, column) and the fix;
an infeasible request exits 1 and says which constraint removed every candidate and what would change
that. Tracebacks are shown only when ``RUNPLAN_DEBUG=1``.
"""

from __future__ import annotations

EXIT_INFEASIBLE = 1
EXIT_BAD_INPUT = 2


class RunplanError(Exception):
    """Base of every error runplan reports to a user (never a bug)."""

    exit_code: int = EXIT_BAD_INPUT

    def one_line(self) -> str:
        return " ".join(str(self).split())


class SpecError(RunplanError):
    """Bad input: a flag, plan-file key, CSV row or catalog entry that cannot be used.

    ``where`` is the dotted path (``cluster.gpus``), flag (``--gpus``), or ``row 12``; ``source`` is
    ``file:line`` when known; ``hint`` says how to fix it (``did you mean 'gpus'?``).
    """

    exit_code = EXIT_BAD_INPUT

    def __init__(
        self, message: str, *, where: str | None = None, source: str | None = None, hint: str | None = None
    ) -> None:
        self.message = message
        self.where = where
        self.source = source
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.source:
            parts.append(f"{self.source}:")
        if self.where:
            parts.append(f"{self.where}:")
        parts.append(self.message)
        text = " ".join(parts)
        if self.hint:
            text += f" ({self.hint})"
        return text


class Infeasible(RunplanError):
    """A valid request that nothing satisfies: says which constraint and what would make it feasible."""

    exit_code = EXIT_INFEASIBLE
    #: True where the constraint is a plan file's key whatever the command (a budget's days): the CLI then shows
    #: its field paths as plan keys, not as the command's flags.
    about_plan_file = False

    def __init__(self, reason: str, *, suggestions: list[str] | None = None) -> None:
        self.reason = reason
        self.suggestions = list(suggestions or [])
        text = reason
        if self.suggestions:
            text += "; to make it feasible: " + "; ".join(self.suggestions)
        super().__init__(text)


class PinConflict(Infeasible):
    """A pinned parallel degree no layout can take, whatever the other axes (pp = 64 on 32 layers, tp not
    dividing the heads): a bad value for this model and cluster, so bad input (exit 2, one line at the pin's
    key or flag), though library callers that step over infeasible sizes catch it as :class:`Infeasible`."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, reason: str, *, where: str, hint: str) -> None:
        super().__init__(reason, suggestions=[hint])
        self.where = where
        self.hint = hint

    def as_spec_error(self) -> SpecError:
        return SpecError(self.reason, where=self.where, hint=self.hint)
