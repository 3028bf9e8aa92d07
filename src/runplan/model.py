"""Transformer shapes and their exact parameter and FLOP accounting.

Conventions (letters as in docs/parallel.md: L layers, h d_model, a heads, k KV heads, d_h head dim,
F FFN size, V vocabulary, s sequence, E routed experts):

* **Total parameters** count every weight: embeddings, every block (attention, MLP or experts, router,
  norms, biases), the final norm and an untied output head.
* **Embedding parameters** are the token embedding, learned position embeddings and an *untied* output
  head (V·h). Kaplan et al. 2020 (§2.1) exclude embeddings from N; Hoffmann et al. 2022 count them.
  Non-embedding = total − embedding.
* **Active parameters** (MoE) replace the E routed experts of each MoE layer by the top-k a token uses.
* **Model FLOPs per token** (PaLM, Chowdhery et al. 2022, App. B): 6 × (parameters a token multiplies:
  active non-embedding weights plus the V·h output projection, tied or not) + 6·L·s·a·(d_qk + d_v) for the
  attention score and value products (PaLM's 12·L·H·Q·T when d_qk = d_v). Like PaLM, the causal mask is not
  discounted by default; Megatron-LM's logged count halves the s² term (``causal=True``). With sliding-window
  attention (Mistral 7B, Jiang et al. 2023, arXiv 2310.06825 §2; Gemma 2, arXiv 2408.00118 §2; Gemma 3 tech
  report §2) a query at position i (1-based) of a window-w layer attends to min(i, w) keys, so the s of that
  layer becomes its effective context (:meth:`ModelShape.effective_context`): twice the mean causal key count,
  s where w ≥ s (byte-identical to PaLM's count) and 2w − w²/s where w < s.
* GeGLU (Shazeer 2020, arXiv 2002.05202 §2: GeLU(xW)·xV, Gemma's ``gelu_pytorch_tanh`` gate) has SwiGLU's three
  matrices; Gemma 2/3's extra RMSNorms after attention and after the MLP (``post_norms``, transformers
  modeling_gemma2.py/modeling_gemma3.py ``post_attention_layernorm``, ``post_feedforward_layernorm``) add 2·h per
  layer.
* Architecture fields that change no count (RoPE θ and scaling, norm ε, init std, the MoE router) are carried
  for the exports (runplan.export), so an engine rebuilds the model that was planned; ``None`` means "not
  published" (or no RoPE), and the catalog's ``source`` names the config.json or paper each value comes from.
* Multi-head latent attention (DeepSeek-V2/V3, arXiv 2405.04434 §2.1) is counted exactly from its low-rank
  projections: q (optionally through a ``q_lora_rank`` bottleneck with an RMSNorm), a joint KV down-projection
  of width ``kv_lora_rank + qk_rope_head_dim`` with an RMSNorm, per-head KV up-projections, and the output.
* Multi-token prediction (DeepSeek-V3, arXiv 2412.19437 §2.2; Megatron-LM multi_token_prediction.py
  MultiTokenPredictionLayer at d98e8a6): each of the ``mtp_layers`` modules holds the 2h→h projection M_k of
  [norm(h_i); norm(Emb(t_{i+k}))] (``eh_proj``, no bias), those two norms (``hnorm``, ``enorm``), one Transformer
  block of the model's last-layer kind (MoE with MLA in DeepSeek-V3: the checkpoint's layer 61 has experts) and
  the norm before the shared head (Megatron ``final_layernorm``, DeepSeek ``shared_head.norm``); embedding and
  output head are the main model's, not counted again. ``total_params`` stays the main model (DeepSeek-V3's
  671B, paper §1 and Table 1; the 685B Hugging Face checkpoint is it plus the module: :attr:`ModelShape.mtp_params`).
  Model FLOPs count what the run computes: the module's active weights, its own V·h logits and its attention
  enter :meth:`ModelShape.model_flops_per_token` (docs/parallel.md, MFU).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from runplan.units import AnyTokenLength, NonNegativeCount, PositiveCount, at_least


class RopeScaling(BaseModel):
    """RoPE frequency scaling as published in a model's config.json ``rope_scaling``.

    ``llama3``: Llama 3.1's band-wise scaling (Llama Team 2024, arXiv 2407.21783; HF ``rope_type: llama3``):
    wavelengths above original/low_freq_factor divided by ``factor``, below original/high_freq_factor kept,
    interpolated between. ``yarn``: YaRN (Peng et al. 2023, arXiv 2309.00071) with ``beta_fast``/``beta_slow``
    and the attention temperature ``mscale``/``mscale_all_dim`` (DeepSeek-V2/V3). ``linear``: position
    interpolation (Chen et al. 2023, arXiv 2306.15595), every position divided by ``factor`` (Gemma 3 4B-27B's
    global layers, config.json ``rope_scaling: {"rope_type": "linear", "factor": 8.0}``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="after")
    def _original_length(self) -> RopeScaling:
        if self.type != "linear" and self.original_max_position_embeddings is None:
            raise ValueError(f"rope_scaling type {self.type} needs original_max_position_embeddings")
        return self

    type: Literal["llama3", "yarn", "linear"] = Field(description="Scaling method (config.json rope_type).")
    factor: float = Field(gt=0, description="Context extension factor.")
    original_max_position_embeddings: PositiveCount | None = Field(
        None,
        description="Context length the RoPE frequencies were trained for before scaling (llama3, yarn).",
    )
    low_freq_factor: float | None = Field(None, gt=0, description="llama3: low-frequency band factor.")
    high_freq_factor: float | None = Field(None, gt=0, description="llama3: high-frequency band factor.")
    beta_fast: float | None = Field(None, gt=0, description="yarn: fast correction bound.")
    beta_slow: float | None = Field(None, gt=0, description="yarn: slow correction bound.")
    mscale: float | None = Field(None, ge=0, description="yarn: attention temperature scale.")
    mscale_all_dim: float | None = Field(None, ge=0, description="yarn: temperature scale on all dims.")


def window_context(seq_len: int, window: int) -> float:
    """The s a layer with a causal sliding window of ``window`` keys enters the attention count with (module doc):
    twice the mean over positions i = 1..s of the min(i, w) keys a query sees, in the continuous limit (the
    convention that gives full causal attention s, PaLM App. B): s for w ≥ s or no window, 2w − w²/s for w < s."""
    if not window or window >= seq_len:
        return float(seq_len)
    return 2.0 * window - window * window / seq_len


#: Deepest model accepted: 10x DeepNet's 1,000-layer transformer (Wang et al. 2022, arXiv 2203.00555), the
#: deepest trained; Llama 3 405B has 126 layers.
MAX_LAYERS = 10_000
#: Most routed experts accepted: PEER's 1024^2 = 1,048,576 (He 2024, arXiv 2407.04153); DeepSeek-V3 has 256.
MAX_EXPERTS = 1 << 20


class ModelShape(BaseModel):
    """A decoder-only transformer, dense or mixture-of-experts, every shape field explicit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(None, description="Preset or user-given name, e.g. 'llama-3-70b'.")
    n_layers: PositiveCount = Field(description="Transformer blocks L.")
    d_model: PositiveCount = Field(description="Hidden size h.")
    n_heads: PositiveCount = Field(description="Query heads a.")
    n_kv_heads: PositiveCount = Field(description="Key/value heads (GQA groups); equals n_heads for MHA.")
    head_dim: PositiveCount = Field(
        description="Per-head query/key dim d_h (for MLA: the no-RoPE part, qk_nope_head_dim)."
    )
    ffn_hidden: PositiveCount = Field(
        description="Dense MLP inner size F (GeLU: usually 4h; SwiGLU: about 8h/3)."
    )
    mlp: Literal["gelu", "swiglu", "geglu"] = Field(
        description="MLP kind: 'gelu' (2 matrices), 'swiglu' (3 matrices, SiLU gate) or 'geglu' (3 matrices, "
        "GeLU gate: Gemma)."
    )
    vocab_size: PositiveCount = Field(description="Vocabulary size V (padded size as trained).")
    tied_embeddings: bool = Field(description="Output head shares the token-embedding matrix.")
    norm: Literal["layernorm", "rmsnorm"] = Field(
        description="Normalisation: LayerNorm (weight+bias) or RMSNorm."
    )
    linear_bias: bool = Field(False, description="Every linear layer has a bias (GPT-2/3 style).")
    qkv_bias: bool = Field(False, description="Only the q, k, v projections have biases (Qwen2 style).")
    qk_norm: bool = Field(False, description="RMSNorm on queries and keys per head (Qwen3, OLMo 2, Gemma 3).")
    post_norms: bool = Field(
        False,
        description="A norm after attention and after the MLP too, before each residual add (Gemma 2/3: four per "
        "layer).",
    )
    sliding_window: AnyTokenLength = Field(
        0,
        **at_least(0),
        description="Sliding-window attention: a query attends to the last w keys, itself included (config.json "
        "sliding_window; 0 = full causal attention everywhere); a length in tokens like seq_len: 4k = 4096.",
    )
    global_every: NonNegativeCount = Field(
        0,
        description="With sliding_window: every k-th layer (layers k, 2k, ... counted from 1) attends globally "
        "(Gemma 2: 2; Gemma 3: 6); 0 = every layer uses the window (Mistral 7B v0.1).",
    )
    learned_positions: NonNegativeCount = Field(
        0, description="Rows of a learned position embedding (0 for RoPE)."
    )
    attention: Literal["gqa", "mla"] = Field(
        "gqa", description="'gqa' (MHA/MQA/GQA) or 'mla' (DeepSeek latent)."
    )
    q_lora_rank: NonNegativeCount = Field(
        0, description="MLA: query bottleneck rank (0 = full-rank q projection)."
    )
    kv_lora_rank: NonNegativeCount = Field(0, description="MLA: compressed KV rank.")
    qk_rope_head_dim: NonNegativeCount = Field(0, description="MLA: decoupled RoPE key/query dim per head.")
    v_head_dim: NonNegativeCount = Field(0, description="Value dim per head (0 = head_dim).")
    n_experts: NonNegativeCount = Field(0, description="Routed experts per MoE layer E (0 = dense model).")
    top_k: NonNegativeCount = Field(0, description="Routed experts each token uses (MoE).")
    expert_ffn_hidden: NonNegativeCount = Field(
        0, description="Inner size of one routed (and shared) expert."
    )
    n_shared_experts: NonNegativeCount = Field(0, description="Always-active shared experts per MoE layer.")
    n_dense_layers: NonNegativeCount = Field(
        0, description="Leading layers with a dense MLP before the MoE layers."
    )
    rope_theta: float | None = Field(
        None, gt=0, description="RoPE base θ (config.json rope_theta); None: no RoPE, or not published."
    )
    rope_scaling: RopeScaling | None = Field(None, description="RoPE frequency scaling (None: none).")
    rope_local_theta: float | None = Field(
        None,
        gt=0,
        description="RoPE base θ of the sliding-window layers where it differs from rope_theta (Gemma 3 "
        "rope_local_base_freq); None: the same.",
    )
    norm_eps: float | None = Field(
        None,
        gt=0,
        description="Epsilon of every norm (rms_norm_eps / layer_norm_epsilon); None: unpublished.",
    )
    init_std: float | None = Field(
        None,
        gt=0,
        description="Std of the normal weight init (config.json initializer_range); None: unpublished.",
    )
    router_score: Literal["softmax", "sigmoid"] = Field(
        "softmax",
        description="MoE router: softmax over the top-k logits (Mixtral, Qwen3) or sigmoid scores (DeepSeek-V3).",
    )
    router_expert_bias: bool = Field(
        False, description="MoE: per-expert bias added for top-k selection only (DeepSeek-V3 aux-loss-free)."
    )
    router_groups: NonNegativeCount = Field(
        0, description="MoE: expert groups for group-limited routing (0 = none; DeepSeek-V3 n_group)."
    )
    router_group_topk: NonNegativeCount = Field(
        0, description="MoE: groups each token may route to (DeepSeek-V3 topk_group)."
    )
    router_topk_scale: float = Field(
        1.0,
        gt=0,
        description="MoE: factor on the routed experts' weights (DeepSeek-V3 routed_scaling_factor).",
    )
    router_topk_norm: bool = Field(
        True,
        description="MoE: the k > 1 chosen experts' weights are divided by their sum (config.json norm_topk_prob; "
        "Mixtral always; false: each keeps its score over all experts, DeepSeek-V2). A top-1 gate is its score.",
    )
    router_aux_loss_coef: float | None = Field(
        None,
        ge=0,
        description="MoE: load-balancing loss coefficient (config.json router_aux_loss_coef; DeepSeek "
        "aux_loss_alpha); None: not published.",
    )
    router_aux_loss_scope: Literal["micro_batch", "sequence", "global_batch"] = Field(
        "micro_batch",
        description="MoE: tokens the balance loss counts: each micro-batch (Switch/GShard, Mixtral), each "
        "sequence (DeepSeek-V2/V3) or the global batch (Qwen3).",
    )
    mtp_layers: NonNegativeCount = Field(
        0,
        description="Multi-token-prediction modules D trained beside the main model (DeepSeek-V3 config.json "
        "num_nextn_predict_layers: 1); each is a projection, norms and one block, embedding and head shared. "
        "Not in total_params (mtp_params).",
    )
    mtp_loss_weight: float | None = Field(
        None,
        gt=0,
        description="With mtp_layers: weight λ of the mean MTP loss (DeepSeek-V3 §4.2: 0.3 for the first 10T "
        "tokens, then 0.1); None: the engine's default.",
    )
    source: str | None = Field(
        None, description="Where the shape was published (config file or paper table)."
    )

    @field_validator("sliding_window", mode="before")
    @classmethod
    def _null_window_is_zero(cls, value: object) -> object:
        """``null``, as config.json writes "no window" (MistralConfig, Gemma2Config), is 0."""
        return 0 if value is None else value

    @field_validator("n_layers")
    @classmethod
    def _searchable_depth(cls, value: int) -> int:
        """At most MAX_LAYERS: beyond it the layout search is minutes of work on a typo (8.6M layers on 8.6M
        GPUs searched 16.4M layouts in 58 s and 11 GB; issue 17)."""
        if value > MAX_LAYERS:
            raise ValueError(
                f"{value:,} layers is more than {MAX_LAYERS:,} (10x the deepest trained transformer, DeepNet's "
                "1,000 layers, arXiv 2203.00555)"
            )
        return value

    @field_validator("n_experts")
    @classmethod
    def _searchable_experts(cls, value: int) -> int:
        if value > MAX_EXPERTS:
            raise ValueError(
                f"{value:,} experts is more than {MAX_EXPERTS:,} (the 1024^2 experts of PEER, arXiv 2407.04153, "
                "the most published)"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ModelShape:
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
        if self.n_experts:
            if not 1 <= self.top_k <= self.n_experts:
                raise ValueError(f"top_k ({self.top_k}) must be between 1 and n_experts ({self.n_experts})")
            if self.expert_ffn_hidden <= 0:
                raise ValueError("expert_ffn_hidden must be set for a MoE model")
            if self.n_dense_layers >= self.n_layers:
                raise ValueError("n_dense_layers must be below n_layers for a MoE model")
        elif self.top_k or self.n_shared_experts or self.router_aux_loss_coef is not None:
            raise ValueError("top_k, n_shared_experts and router_aux_loss_coef need n_experts > 0")
        if self.router_groups and (
            self.n_experts % self.router_groups or not 1 <= self.router_group_topk <= self.router_groups
        ):
            raise ValueError(
                f"router_groups ({self.router_groups}) must divide n_experts ({self.n_experts}) and "
                f"router_group_topk ({self.router_group_topk}) must be between 1 and router_groups"
            )
        if self.attention == "mla" and not (self.kv_lora_rank and self.qk_rope_head_dim):
            raise ValueError("MLA needs kv_lora_rank and qk_rope_head_dim")
        if self.global_every and not self.sliding_window:
            raise ValueError("global_every needs sliding_window > 0 (the window of the other layers)")
        if self.global_every == 1:
            raise ValueError("global_every 1 makes every layer global: set sliding_window 0 instead")
        if self.global_every > self.n_layers:  # layers k, 2k, ... from 1: none at all beyond the depth
            raise ValueError(
                f"global_every {self.global_every} is more than n_layers {self.n_layers}: no layer would attend "
                "globally; set global_every 0 for a window on every layer, or at most n_layers"
            )
        if self.rope_local_theta is not None and not self.sliding_window:
            raise ValueError(
                "rope_local_theta needs sliding_window > 0 (it is the RoPE base of the window layers; Gemma 3 "
                "rope_local_base_freq): set the window, or leave rope_local_theta out"
            )
        if self.mtp_layers > self.n_layers:  # each module is a whole block; DeepSeek-V3 trains D = 1 (§2.2)
            raise ValueError(
                f"mtp_layers {self.mtp_layers:,} is more than n_layers {self.n_layers:,}: each module is a whole "
                "block (DeepSeek-V3 trains 1); write the prediction depth D"
            )
        if self.mtp_loss_weight is not None and not self.mtp_layers:
            raise ValueError("mtp_loss_weight needs mtp_layers > 0 (the multi-token-prediction depth)")
        if self.mtp_layers and self.sliding_window:  # no published model has both, and the MTP block's window
            # is not defined (its FLOPs count full attention, the time model would apply the window share)
            raise ValueError("mtp_layers with sliding_window is not modelled: set one of them to 0")
        return self

    @model_validator(mode="after")
    def _mla_fields_need_mla(self) -> ModelShape:
        """The MLA ranks, and a value width other than head_dim, are counted only for ``attention: mla``
        (attention_params_per_layer): under 'gqa' they would change the FLOPs (value_dim) or nothing at all."""
        if self.attention == "gqa":
            set_fields = [f for f in ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim") if getattr(self, f)]
            if self.v_head_dim not in (0, self.head_dim):
                set_fields.append("v_head_dim")
            if set_fields:
                raise ValueError(
                    f"{', '.join(set_fields)} apply to attention 'mla' only; with 'gqa' set them to 0 "
                    "(values and keys are head_dim wide), or set attention: mla"
                )
        return self

    # ---- per-part sizes -------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts."""
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    @property
    def dense_layers(self) -> int:
        """Layers whose MLP is dense."""
        return self.n_layers - self.moe_layers

    @property
    def value_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def qk_dim(self) -> int:
        """Per-head query/key width that enters the score product (MLA adds the RoPE part)."""
        return self.head_dim + (self.qk_rope_head_dim if self.attention == "mla" else 0)

    def _norm_params(self, width: int) -> int:
        return 2 * width if self.norm == "layernorm" else width

    @property
    def attention_params_per_layer(self) -> int:
        """Weights (and biases) of one attention block, its pre-norm excluded."""
        h, a = self.d_model, self.n_heads
        if self.attention == "mla":
            if self.q_lora_rank:
                q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * a * self.qk_dim
            else:
                q = h * a * self.qk_dim
            kv = (
                h * (self.kv_lora_rank + self.qk_rope_head_dim)
                + self.kv_lora_rank
                + self.kv_lora_rank * a * (self.head_dim + self.value_dim)
            )
            out = a * self.value_dim * h
            return q + kv + out + (h if self.linear_bias else 0)
        q_width = a * self.head_dim
        kv_width = self.n_kv_heads * self.head_dim
        weights = h * (q_width + 2 * kv_width) + q_width * h
        biases = 0
        if self.linear_bias or self.qkv_bias:
            biases += q_width + 2 * kv_width
        if self.linear_bias:
            biases += h
        qk_norm = 2 * self.head_dim if self.qk_norm else 0
        return weights + biases + qk_norm

    @property
    def gated(self) -> bool:
        """A gated MLP (SwiGLU or GeGLU): gate and up projections, then down: three matrices."""
        return self.mlp in ("swiglu", "geglu")

    def mlp_params(self, inner: int) -> int:
        """One MLP (dense, or one expert) of inner size ``inner``."""
        h = self.d_model
        if self.gated:
            return 3 * h * inner + ((2 * inner + h) if self.linear_bias else 0)
        return 2 * h * inner + ((inner + h) if self.linear_bias else 0)

    @property
    def dense_mlp_params(self) -> int:
        return self.mlp_params(self.ffn_hidden)

    @property
    def expert_params(self) -> int:
        """One routed expert."""
        return self.mlp_params(self.expert_ffn_hidden) if self.is_moe else 0

    @property
    def router_params(self) -> int:
        """One MoE layer's router: the h×E gate, plus the E selection biases of an aux-loss-free router
        (DeepSeek-V3 ``e_score_correction_bias``, arXiv 2412.19437 §2.1.2: in the checkpoint, so in the
        671,026,419,200 main-model parameters its safetensors hold)."""
        return self.d_model * self.n_experts + (self.n_experts if self.router_expert_bias else 0)

    @property
    def shared_expert_params(self) -> int:
        return self.n_shared_experts * self.expert_params

    @property
    def norm_params_per_layer(self) -> int:
        """Pre-attention and pre-MLP norms; with ``post_norms`` also the two after them (Gemma 2/3)."""
        return (4 if self.post_norms else 2) * self._norm_params(self.d_model)

    # ---- sliding-window attention ---------------------------------------------------------------
    @property
    def global_layers(self) -> int:
        """Layers with full causal attention: all without a window, else every ``global_every``-th (layers k, 2k,
        ...; transformers Gemma 2/3 ``layer_types``, Megatron-core is_layer_window_attention), none if 0."""
        if not self.sliding_window:
            return self.n_layers
        return self.n_layers // self.global_every if self.global_every else 0

    def effective_context(self, seq_len: int) -> float:
        """The s of one window layer's attention count (:func:`window_context`)."""
        return window_context(seq_len, self.sliding_window)

    def attention_context_layers(self, seq_len: int) -> float:
        """Σ over layers of each layer's effective context: L·s without a window (module doc)."""
        windowed = self.n_layers - self.global_layers
        return self.global_layers * float(seq_len) + windowed * self.effective_context(seq_len)

    # ---- totals ---------------------------------------------------------------------------------
    @property
    def embedding_params(self) -> int:
        """Token embedding + learned positions + untied output head."""
        h = self.d_model
        head = 0 if self.tied_embeddings else self.vocab_size * h
        return self.vocab_size * h + self.learned_positions * h + head

    @property
    def routed_expert_params(self) -> int:
        """All routed experts of all MoE layers (what expert parallelism divides)."""
        return self.moe_layers * self.n_experts * self.expert_params

    def _blocks(self, routed_per_layer: int) -> int:
        per_layer_common = self.attention_params_per_layer + self.norm_params_per_layer
        moe_mlp = self.router_params + self.shared_expert_params + routed_per_layer * self.expert_params
        return (
            self.n_layers * per_layer_common
            + self.dense_layers * self.dense_mlp_params
            + self.moe_layers * moe_mlp
        )

    @property
    def non_embedding_params(self) -> int:
        return self._blocks(self.n_experts) + self._norm_params(self.d_model)

    @property
    def total_params(self) -> int:
        return self.non_embedding_params + self.embedding_params

    @property
    def active_non_embedding_params(self) -> int:
        return self._blocks(self.top_k) + self._norm_params(self.d_model)

    @property
    def active_params(self) -> int:
        return self.active_non_embedding_params + self.embedding_params

    # ---- multi-token prediction (module doc) ----------------------------------------------------
    def _mtp_module(self, routed_per_layer: int) -> int:
        """One MTP module: 2h·h projection (no bias), hnorm + enorm + the norm before the shared head, and one
        block of the last layer's kind (MoE where the model has MoE layers) with its two norms."""
        h = self.d_model
        block = self.attention_params_per_layer + self.norm_params_per_layer
        if self.is_moe:
            block += self.router_params + self.shared_expert_params + routed_per_layer * self.expert_params
        else:
            block += self.dense_mlp_params
        return 2 * h * h + 3 * self._norm_params(h) + block

    @property
    def mtp_params(self) -> int:
        """Every weight of the ``mtp_layers`` MTP modules, embedding and head shared (not counted again)."""
        return self.mtp_layers * self._mtp_module(self.n_experts)

    @property
    def mtp_active_params(self) -> int:
        """MTP weights one token multiplies: top-k of the routed experts."""
        return self.mtp_layers * self._mtp_module(self.top_k)

    @property
    def mtp_routed_expert_params(self) -> int:
        """Routed experts of the MTP modules (what expert parallelism divides)."""
        return self.mtp_layers * self.n_experts * self.expert_params if self.is_moe else 0

    # ---- FLOPs ----------------------------------------------------------------------------------
    def attention_flops_per_token(self, seq_len: int, *, causal: bool = False) -> float:
        """Score and value products, forward and backward: 6·L·s·a·(d_qk + d_v) (PaLM App. B); with a sliding
        window L·s is the sum of the layers' effective contexts (:meth:`attention_context_layers`)."""
        if self.sliding_window and self.sliding_window < seq_len:
            context = self.attention_context_layers(seq_len)
            flops = 6.0 * context * self.n_heads * (self.qk_dim + self.value_dim)
        else:
            flops = 6.0 * self.n_layers * seq_len * self.n_heads * (self.qk_dim + self.value_dim)
        if self.mtp_layers:  # each MTP block attends over the full causal context (DeepSeek-V3 has no window)
            flops += 6.0 * self.mtp_layers * seq_len * self.n_heads * (self.qk_dim + self.value_dim)
        return flops / 2 if causal else flops

    def matmul_params_per_token(self) -> int:
        """Weights one token multiplies: active non-embedding weights plus the V·h output projection; with MTP
        also each module's active weights and its own pass through the shared V·h head (module doc)."""
        head = self.vocab_size * self.d_model
        return self.active_non_embedding_params + head + self.mtp_active_params + self.mtp_layers * head

    def model_flops_per_token(self, seq_len: int, *, causal: bool = False) -> float:
        """Training FLOPs per token (forward + backward), no recomputation: PaLM's model FLOPs."""
        return 6.0 * self.matmul_params_per_token() + self.attention_flops_per_token(seq_len, causal=causal)
