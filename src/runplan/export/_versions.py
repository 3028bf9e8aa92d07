"""Which release of an engine an export is written for (``runplan export --engine-version``).

An export is only as right as the engine source its flags were checked against, so the option accepts the
releases that were checked and nothing else (docs/export.md, "Engine versions"). Checked 2026-12-03 by building
``add_megatron_arguments`` at each Megatron-LM tag and running ``parse_args`` and ``validate_args`` (the GPU
probes answering Hopper) on the exports of every example and stack variant the engines check names, with each
ramp replayed through that tag's own micro-batch calculator:

* **Megatron-LM** has two targets. ``0.17`` (the default, and what a plan exported without the option gets):
  the flag list in ``export/data/megatron_arguments.json``, read at commit 000c4ac2 (main branch, Megatron-Core
  0.16.0rc0); the exports parse and pass validate_args in core_v0.15.0, core_v0.16.0, core_v0.17.0 and 000c4ac2.
  core_v0.14.0 is not covered: it lacks ``--moe-router-load-balancing-type global_aux_loss`` and ``--window-size``.
  ``0.20``: commit d98e8a64 (2026-08-22, Megatron-Core 0.20.0), after #4411 (commit 532ad926, 2026-04-21, first
  released in core_v0.18.0), which made ``--rampup-batch-size`` a no-op and added ``--step-batch-size-schedule``;
  the exports parse and pass validate_args in core_v0.18.0, core_v0.19.0 and d98e8a64. A Megatron user names the
  Megatron-Core release they run (``megatron.core.__version__``, or the ``core_v0.18.0`` tag), so any 0.15-0.17
  release selects the first target and any 0.18-0.20 the second. A main-branch checkout reports 0.18.0rc0 from
  f09f5c98e6 (2026-03-31) and 0.18.0+<sha> from 2f5c62c312, before 532ad926: the help and docs/export.md say to
  check ``git merge-base --is-ancestor 532ad926 HEAD`` there (no guess here). One exception on both: YaRN outside
  MLA, whose flags only core_v0.19.0 on have (a warning, ``megatron._release_warnings``).
* **torchtitan**: one target, 0.2.x (the job-config keys of the 0.2.2 wheel; 0.3 dropped TOML job files).
* **DeepSpeed**: one target, 0.19.x (the config keys of 0.19.8).

A version no target covers is bad input (exit 2), naming the flag and the accepted values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runplan.errors import SpecError


@dataclass(frozen=True)
class EngineRelease:
    """One export target: ``name`` (what the export calls it), the release lines it covers (``minors``: the
    accepted (major, minor) pairs) and the source its flags or keys were checked against."""

    engine: str
    name: str
    minors: tuple[tuple[int, int], ...]
    covers: str
    checked: str


MEGATRON_0_17 = EngineRelease(
    "megatron",
    "0.17",
    tuple((0, m) for m in range(15, 18)),
    "Megatron-Core 0.15-0.17",
    "Megatron-LM commit 000c4ac2 (export/data/megatron_arguments.json)",
)
MEGATRON_0_20 = EngineRelease(
    "megatron",
    "0.20",
    tuple((0, m) for m in range(18, 21)),
    "Megatron-Core 0.18-0.20",
    "Megatron-LM commit d98e8a64 (Megatron-Core 0.20.0)",
)
RELEASES: dict[str, tuple[EngineRelease, ...]] = {
    "megatron": (MEGATRON_0_17, MEGATRON_0_20),
    "torchtitan": (EngineRelease("torchtitan", "0.2", ((0, 2),), "torchtitan 0.2.x", "torchtitan 0.2.2"),),
    "deepspeed": (EngineRelease("deepspeed", "0.19", ((0, 19),), "DeepSpeed 0.19.x", "DeepSpeed 0.19.8"),),
}

#: A release as people write it: 0.18, 0.18.0, 0.20.0rc1, v0.19, with a PEP 440 local version (PEP 440, "Local
#: version identifiers": ``+`` then alphanumeric parts joined by ``.``, ``-`` or ``_``): 0.18.0rc0+cu12, and
#: 0.18.0+<short sha>, which a Megatron-LM main checkout reports from 2f5c62c312 (#4212, 2026-04-09,
#: megatron/core/package_info.py). ASCII digits only ([0-9]: ``\d`` matches full-width digits, which int() reads).
_VERSION = (
    r"([0-9]{1,3})\.([0-9]{1,3})(?:\.[0-9]{1,4})?"  # major.minor[.patch]
    r"(?:(?:rc|a|b|\.dev|\.post)[0-9]{0,4})?"  # pre-, dev- or post-release
    r"(?:\+[a-z0-9]{1,40}(?:[._-][a-z0-9]{1,40}){0,8})?"  # +local
)
#: A 0.18.0 pre-release or local part (0.18.0rc0, 0.18.0+1a2b3c4) does not say which side of #4411 the checkout
#: is: main reported 0.18.0rc0 from f09f5c98e6 and 0.18.0+<sha> from 2f5c62c312, both before 532ad926, and the
#: core_v0.18.0 tag in a git checkout also appends +<sha> (package_info.py). Patch releases 0.18.1+ exist only
#: on core_r0.18.0, which forked from main after 532ad926, so 0.18.2+<sha> is the second target.
_MAIN_BRANCH_0_18 = re.compile(r"0\.18(?:\.0)?(?:(?:rc|a|b|\.dev)[0-9]*|\+)")

#: The tag prefix each engine's releases carry: Megatron-LM's tags are core_v0.18.0 / core_r0.18.0 (release
#: branches); torchtitan's and DeepSpeed's are v0.2.2 / v0.19.8.
_PREFIX = {"megatron": r"(?:core_[rv]|v)?", "torchtitan": r"v?", "deepspeed": r"v?"}


def accepted(target: str) -> str:
    """The accepted values for ``target``, for help and error text: '0.15-0.17 (default) or 0.18-0.20'."""

    def span(release: EngineRelease) -> str:
        (a, b), (c, d) = release.minors[0], release.minors[-1]
        return f"{a}.{b}" if (a, b) == (c, d) else f"{a}.{b}-{c}.{d}"

    spans = [span(release) for release in RELEASES[target]]
    spans[0] += " (default)"
    return " or ".join(spans)


def engine_release(target: str, version: str | None, where: str = "export.engine_version") -> EngineRelease:
    """The release ``version`` selects for ``target`` (None: the first, the default); SpecError otherwise."""
    releases = RELEASES[target]
    if version is None:
        return releases[0]
    text = version.strip().lower()
    # ASCII before lower(), which maps some non-ASCII letters to ASCII ones (KELVIN SIGN to k)
    match = re.fullmatch(_PREFIX[target] + _VERSION, text) if version.isascii() else None
    if match:
        key = (int(match.group(1)), int(match.group(2)))
        if target == "megatron" and key == (0, 18) and _MAIN_BRANCH_0_18.search(text):
            raise SpecError(
                f"Megatron-Core {version[:40]!r} may be a main-branch checkout from before #4411 (532ad926), which "
                "reported 0.18.0rc0 or 0.18.0+<sha> and has no --step-batch-size-schedule",
                where=where,
                hint="give 0.18 if `git merge-base --is-ancestor 532ad926 HEAD` succeeds in your Megatron-LM "
                "checkout, else 0.17",
            )
        for release in releases:
            if key in release.minors:
                return release
    raise SpecError(
        f"no checked {target} target for version {version[:40]!r}",
        where=where,
        hint=f"give a {target} release of a checked target: {accepted(target)}, e.g. 0.18, 0.18.0 or core_v0.18.0"
        if target == "megatron"
        else f"give a {target} release of its checked target: {accepted(target)}",
    )


__all__ = ["MEGATRON_0_17", "MEGATRON_0_20", "RELEASES", "EngineRelease", "accepted", "engine_release"]
