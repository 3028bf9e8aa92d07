"""The architecture fields every export writes, beside the shape ``_common.Facts`` carries.

An engine that gets the layer sizes right but falls back to its own defaults for the rest trains another
model: Megatron's ``--rotary-base`` defaults to 10000 where Llama 3.1 uses 500000, and without
``--use-rope-scaling`` it drops Llama 3.1's frequency scaling. So each export writes every field below,
as flags where the engine has them (Megatron), and in all cases as a listing a test compares with the catalog
(tests/export/test_export_architecture.py). Values come from the catalog entry's ``source`` (the model's
config.json or paper); ``None`` means the source publishes none and the engine's default applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from runplan.model import ModelShape, RopeScaling
    from runplan.plan import RunPlan

ArchValue = float | int | bool | str | None


@dataclass(frozen=True)
class Architecture:
    """What an engine needs besides the sizes to rebuild the planned model (see the module docstring)."""

    positions: str  # "learned" (learned_positions rows) or "rope" (the engine's RoPE; θ None: its default)
    rope_theta: float | None
    rope_scaling: RopeScaling | None
    norm: str
    norm_eps: float | None
    init_std: float | None
    tied_embeddings: bool
    linear_bias: bool
    qkv_bias: bool
    qk_norm: bool
    moe: bool
    router_score: str
    router_expert_bias: bool
    router_groups: int
    router_group_topk: int
    router_topk_scale: float
    router_topk_norm: bool
    router_aux_loss_coef: float | None
    router_aux_loss_scope: str
    source: str
    mlp: str = "swiglu"
    post_norms: bool = False
    sliding_window: int = 0
    global_every: int = 0
    rope_local_theta: float | None = None
    mtp_layers: int = 0  # multi-token-prediction modules (ModelShape.mtp_layers; DeepSeek-V3 §2.2)
    mtp_loss_weight: float | None = None  # their loss weight λ (None: the engine's default)

    def fields(self) -> dict[str, ArchValue]:
        """Every field by a flat name (``rope_scaling.factor``), MoE router fields only for MoE models."""
        out: dict[str, ArchValue] = {
            "positions": self.positions,
            "rope_theta": self.rope_theta,
        }
        scaling = self.rope_scaling
        out["rope_scaling.type"] = scaling.type if scaling else None
        if scaling is not None:
            for key, value in scaling.model_dump(exclude={"type"}).items():
                if value is not None:
                    out[f"rope_scaling.{key}"] = value
        out |= {
            "norm": self.norm,
            "norm_eps": self.norm_eps,
            "init_std": self.init_std,
            "tied_embeddings": self.tied_embeddings,
            "linear_bias": self.linear_bias,
            "qkv_bias": self.qkv_bias,
            "qk_norm": self.qk_norm,
        }
        # Gemma-style fields, listed only where set, so every other model's listing stays as it was
        if self.mlp == "geglu":
            out["mlp"] = "geglu (gate GeLU, tanh approximation)"
        if self.post_norms:
            out["post_norms"] = True
        if self.sliding_window:
            out["sliding_window"] = self.sliding_window
            out["global_every"] = self.global_every
        if self.rope_local_theta is not None:
            out["rope_local_theta"] = self.rope_local_theta
        if self.mtp_layers:  # listed only where set, as the Gemma fields
            out["mtp_layers"] = self.mtp_layers
            out["mtp_loss_weight"] = self.mtp_loss_weight
        if self.moe:
            out |= {
                "router_score": self.router_score,
                "router_expert_bias": self.router_expert_bias,
                "router_groups": self.router_groups,
                "router_group_topk": self.router_group_topk,
                "router_topk_scale": self.router_topk_scale,
                "router_topk_norm": self.router_topk_norm,
                "router_aux_loss_coef": self.router_aux_loss_coef,
                "router_aux_loss_scope": self.router_aux_loss_scope,
            }
        return out

    def lines(self) -> list[str]:
        """``name = value`` for each field, ``unpublished`` for a None, for file headers."""
        return [
            f"{key} = {'unpublished' if value is None else value}" for key, value in self.fields().items()
        ]


#: The tokens a model's balance loss counts (ModelShape.router_aux_loss_scope), in the exporters' words.
BALANCE_SCOPE_WORDS = {
    "micro_batch": "per micro-batch",
    "sequence": "per sequence",
    "global_batch": "over the global batch",
}


def positions_of(shape: ModelShape) -> str:
    """'learned' with a learned position table, else 'rope': the shape has no other kind (relative positions,
    as in Gopher, are exported as RoPE with the engine's default base and a warning)."""
    return "learned" if shape.learned_positions else "rope"


def architecture_of(shape: ModelShape) -> Architecture:
    """Collect the architecture fields of ``shape`` (pure)."""
    return Architecture(
        positions=positions_of(shape),
        rope_theta=shape.rope_theta,
        rope_scaling=shape.rope_scaling,
        norm=shape.norm,
        norm_eps=shape.norm_eps,
        init_std=shape.init_std,
        tied_embeddings=shape.tied_embeddings,
        linear_bias=shape.linear_bias,
        qkv_bias=shape.qkv_bias,
        qk_norm=shape.qk_norm,
        moe=shape.n_experts > 0,
        router_score=shape.router_score,
        router_expert_bias=shape.router_expert_bias,
        router_groups=shape.router_groups,
        router_group_topk=shape.router_group_topk,
        router_topk_scale=shape.router_topk_scale,
        router_topk_norm=shape.router_topk_norm,
        router_aux_loss_coef=shape.router_aux_loss_coef,
        router_aux_loss_scope=shape.router_aux_loss_scope,
        source=shape.source or "user-given shape",
        mlp=shape.mlp,
        post_norms=shape.post_norms,
        sliding_window=shape.sliding_window,
        global_every=shape.global_every,
        rope_local_theta=shape.rope_local_theta,
        mtp_layers=shape.mtp_layers,
        mtp_loss_weight=shape.mtp_loss_weight,
    )


def architecture(plan: RunPlan) -> Architecture:
    """The plan's model architecture (pure)."""
    return architecture_of(plan.model.shape)
