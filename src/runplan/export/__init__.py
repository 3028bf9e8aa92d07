"""Export a run plan to the training engines people launch: Megatron-LM, torchtitan and DeepSpeed.

Each exporter is a pure function ``RunPlan -> ExportResult``: the file's text, the name to save it under and
the warnings, one per thing in the plan the target cannot express (never dropped silently). Warnings are also
written into the file: a comment block in bash and TOML, the ``runplan.warnings`` list in DeepSpeed's JSON (a
top-level key DeepSpeed ignores). A plan an engine cannot start as planned is refused with SpecError (exit 2).
Every export also carries the model's whole architecture from the catalog (``_architecture``).

The flags and keys each exporter may emit are checked in as data, with the engine version and the source file
they were read from: ``export/data/megatron_arguments.json``, ``torchtitan_keys.json``,
``deepspeed_config_keys.json`` (docs/export.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

    from runplan.plan import RunPlan

Target = Literal["megatron", "torchtitan", "deepspeed"]
TARGETS: tuple[str, ...] = ("megatron", "torchtitan", "deepspeed")


class ExportResult(BaseModel):
    """One exported file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: Target = Field(description="Engine the file is for.")
    text: str = Field(description="The file's content.")
    filename: str = Field(
        description="Suggested file name (<plan name>.<target>.<ext>); `runplan export -o PATH --json` prints the path written."
    )
    warnings: list[str] = Field(
        description="What the plan has that the target cannot express, one line each."
    )


def export_plan(
    plan: RunPlan, target: str, engine_version: str | None = None, extra_warnings: Sequence[str] = ()
) -> ExportResult:
    """Dispatch to ``export_megatron``, ``export_torchtitan`` or ``export_deepspeed``.

    ``engine_version``: the engine release the file is for (``runplan export --engine-version``; None: the
    target's default). Megatron-LM has two checked targets (Megatron-Core 0.15-0.17 and 0.18-0.20), torchtitan
    and DeepSpeed one each (0.2.x, 0.19.x): a version no target covers is a SpecError (``export._versions``).
    ``extra_warnings`` go into the file beside the exporter's own (Megatron's memory as it runs the plan)."""
    from runplan.errors import SpecError
    from runplan.export._versions import engine_release

    if target not in TARGETS:
        raise SpecError(
            f"unknown export target '{target}'",
            where="export.target",
            hint=f"use one of {', '.join(TARGETS)}",
        )
    engine_release(target, engine_version)  # refuses a version no checked target covers
    if target == "megatron":
        from runplan.export.megatron import export_megatron

        return export_megatron(plan, engine_version, extra_warnings)
    if extra_warnings:
        raise ValueError("extra_warnings are written by the Megatron exporter only")
    if target == "torchtitan":
        from runplan.export.torchtitan import export_torchtitan

        return export_torchtitan(plan)
    from runplan.export.deepspeed import export_deepspeed

    return export_deepspeed(plan)


__all__ = ["TARGETS", "ExportResult", "Target", "export_plan"]
