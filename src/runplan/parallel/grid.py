"""Struct-of-arrays views of the layout models, for the vectorized search.

:class:`Columns` holds one numpy array per field of a pydantic model, under the model's own field names, so
the search, the memory and time models and the single-layout path all speak the names of :class:`Layout`,
:class:`MemoryBytes` and :class:`TimeSeconds`: ``grid.tp``, ``memory.activations``, ``time.bubble``. A row
turns back into the model with :meth:`Columns.row`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from pydantic import BaseModel

from runplan.parallel.layout import Layout, MemoryBytes, StageTotalBytes, TimeSeconds, searched_domain

M = TypeVar("M", bound=BaseModel)


class Columns(Generic[M]):
    """One array per field of ``model`` (all the same length); ``extra`` names derived columns beside them."""

    def __init__(self, model: type[M], arrays: dict[str, Any], extra: tuple[str, ...] = ()) -> None:
        expected = set(model.model_fields) | set(extra)
        if set(arrays) != expected:
            raise ValueError(f"columns {sorted(arrays)} do not match {model.__name__}: {sorted(expected)}")
        self._model = model
        self._extra = extra
        self._arrays = {name: np.asarray(value) for name, value in arrays.items()}

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self.__dict__["_arrays"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __len__(self) -> int:
        return len(next(iter(self._arrays.values())))

    def replace(self, **arrays: Any) -> Columns[M]:
        """A copy with some columns replaced (or an ``extra`` column filled)."""
        return Columns(self._model, {**self._arrays, **arrays}, self._extra)

    def value(self, name: str, i: int) -> Any:
        """Row ``i`` of column ``name`` as a plain Python value of the model field's type."""
        return float(self._arrays[name][i])

    def row(self, i: int) -> M:
        """Row ``i`` as the model."""
        return self._model(**{name: self.value(name, i) for name in self._model.model_fields})


class LayoutGrid(Columns[Layout]):
    """Candidate layouts: one int64 column per :class:`Layout` axis (recompute as its search code, booleans as
    bool), plus ``microbatches`` once the search has chosen it (see ``search.choose_microbatches``)."""

    def __init__(self, arrays: dict[str, Any]) -> None:
        super().__init__(Layout, arrays)

    def replace(self, **arrays: Any) -> LayoutGrid:
        return LayoutGrid({**self._arrays, **arrays})

    def value(self, name: str, i: int) -> Any:
        raw = self._arrays[name][i]
        domain = searched_domain(name)
        if domain is not None and domain.codes is not None:
            return domain.values[domain.codes.index(int(raw))]
        return bool(raw) if self._arrays[name].dtype == bool else int(raw)

    @classmethod
    def of(cls, layouts: Sequence[Layout]) -> LayoutGrid:
        """The grid of given layouts (one row each), e.g. one row to evaluate a single layout."""
        arrays: dict[str, Any] = {}
        for name, info in Layout.model_fields.items():
            domain = searched_domain(name)
            values = [getattr(layout, name) for layout in layouts]
            if domain is not None and domain.codes is not None:
                values = [domain.codes[domain.values.index(v)] for v in values]
            arrays[name] = np.asarray(values, dtype=bool if info.annotation is bool else np.int64)
        return cls(arrays)


@dataclass(frozen=True)
class Evaluation:
    """Memory, time and throughput of every row of a :class:`LayoutGrid` (arrays of the grid's length)."""

    memory: Columns[MemoryBytes]
    memory_last_is_max: np.ndarray
    #: ``memory.total`` of the first and of the last stage (``memory`` holds the larger's terms)
    memory_stage_totals: Columns[StageTotalBytes]
    time: Columns[TimeSeconds]
    step_seconds: np.ndarray
    tokens_per_step: np.ndarray
    tokens_per_second: np.ndarray
    #: tokens/s of the time model even under an MFU override (breaks the override's ties)
    model_tokens_per_second: np.ndarray
    mfu: np.ndarray
    hfu: np.ndarray
    bubble_fraction: np.ndarray
