"""Measure peak memory and step time of small GPT-style configurations on ONE CUDA GPU vs the model.

Never part of CI; nothing depends on it. Needs PyTorch with CUDA (not a runplan dependency). Run:
``python benchmarks/measure_gpu.py --gpu h100-sxm`` and paste the printed Markdown table into
docs/validation.md naming the GPU. Each configuration is a Llama-style block stack (RMSNorm, GQA attention via
``scaled_dot_product_attention`` (FlashAttention), SwiGLU), bf16 weights with fp32 Adam states (16 bytes/param
+ bf16 grads), trained for a few steps at TP = PP = DP = 1; the prediction is runplan's single-GPU layout.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

CONFIGS = [  # (layers, d_model, heads, kv heads, ffn, seq, micro_batch, recompute)
    (8, 1024, 16, 4, 2816, 2048, 4, "none"),
    (8, 1024, 16, 4, 2816, 2048, 8, "none"),
    (8, 1024, 16, 4, 2816, 4096, 4, "none"),
    (8, 1024, 16, 4, 2816, 4096, 4, "full"),
    (12, 2048, 16, 8, 5632, 2048, 4, "none"),
    (12, 2048, 16, 8, 5632, 2048, 4, "full"),
]


def build(torch, layers, d, heads, kv, ffn, vocab, recompute):
    nn = torch.nn
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            hd = d // heads
            self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)
            self.qkv = nn.Linear(d, (heads + 2 * kv) * hd, bias=False)
            self.o = nn.Linear(heads * hd, d, bias=False)
            self.w13 = nn.Linear(d, 2 * ffn, bias=False)
            self.w2 = nn.Linear(ffn, d, bias=False)
            self.hd = hd

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.n1(x)).split([heads * self.hd, kv * self.hd, kv * self.hd], dim=-1)
            q = q.view(b, s, heads, self.hd).transpose(1, 2)
            k = k.view(b, s, kv, self.hd).transpose(1, 2).repeat_interleave(heads // kv, 1)
            v = v.view(b, s, kv, self.hd).transpose(1, 2).repeat_interleave(heads // kv, 1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, -1)
            x = x + self.o(a)
            g, u = self.w13(self.n2(x)).chunk(2, dim=-1)
            return x + self.w2(F.silu(g) * u)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.norm = nn.RMSNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.emb(idx)
            for blk in self.blocks:
                x = checkpoint(blk, x, use_reentrant=False) if recompute == "full" else blk(x)
            return self.head(self.norm(x)).float()

    return Model()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpu", default="h100-sxm", help="catalog name of the GPU used for the prediction")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    import torch

    from runplan.catalog import load_catalog
    from runplan.model import ModelShape
    from runplan.parallel.layout import ParallelRequest, Pins
    from runplan.parallel.search import search
    from runplan.parallel.stack import Stack

    gpu = load_catalog().gpu(args.gpu)
    vocab = 32000
    print("| layers x d | seq | mbs | recompute | measured GB | predicted GB | measured s | predicted s |")
    print("|---|---|---|---|---|---|---|---|")
    for layers, d, heads, kv, ffn, seq, mbs, rc in CONFIGS:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        model = build(torch, layers, d, heads, kv, ffn, vocab, rc).cuda().to(torch.bfloat16)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        idx = torch.randint(0, vocab, (mbs, seq), device="cuda")
        times = []
        for _ in range(args.steps):
            torch.cuda.synchronize()
            start = time.perf_counter()
            logits = model(idx)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, vocab), idx.view(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        measured_gb = torch.cuda.max_memory_allocated() / 1e9
        shape = ModelShape(
            n_layers=layers,
            d_model=d,
            n_heads=heads,
            n_kv_heads=kv,
            head_dim=d // heads,
            ffn_hidden=ffn,
            mlp="swiglu",
            vocab_size=vocab,
            tied_embeddings=False,
            norm="rmsnorm",
        )
        req = ParallelRequest(
            model=shape,
            gpu=gpu,
            n_gpus=1,
            seq_len=seq,
            stack=Stack(gradient_dtype="bf16"),
            constraints={"reserve_bytes": 0, "max_bubble_fraction": 0.5},
            pins=Pins(tp=1, pp=1, dp=1, cp=1, zero=0, micro_batch=mbs, microbatches=1, recompute=rc),
        )
        res = search(req)
        x = (res.layouts or res.nearest_misses)[0]
        # AdamW keeps bf16 master weights here (no fp32 copy): the model's 12 optimizer bytes
        # overstate by 4 bytes per parameter
        print(
            f"| {layers} x {d} | {seq} | {mbs} | {rc} | {measured_gb:.2f} | "
            f"{x.memory_bytes.total / 1e9:.2f} | "
            f"{sorted(times)[len(times) // 2]:.4f} | {x.step_seconds:.4f} |"
        )
        del model, opt
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
