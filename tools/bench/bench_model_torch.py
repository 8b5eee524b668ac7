#!/usr/bin/env python3
"""Model benchmark, PyTorch's side of tools/bench/bench-model.ts: one LoRA forward+backward
over a batch of 8 x 512 tokens for SmolLM2-135M's shape and Qwen2.5-0.5B's shape, with
transformers + peft in fp32 with TF32 off (true fp32 GEMMs, as TabRL's f32 path computes),
random weights (no download), r = 8, alpha = 16 on q/k/v/o/gate/up/down,
dropout 0, lora_B random.

The work timed is the same as TabRL's forwardBackward: logits of every position, their
log_softmax, the logprobs of the next tokens, loss = sum(w * logprobs) with fixed random
w, backward into the LoRA parameters. For each attention (--attns, a model built for each:
"eager" and "sdpa", transformers' default) the variants are fp32 (PyTorch keeps every
activation) and bf16 autocast (torch.autocast over the same fp32 model); "eager+checkpointing"
(gradient checkpointing per decoder layer, as TabRL recomputes each layer in its backward;
memory comparable, more work) is the continuity column. "fastestFp32" names the quickest fp32
variant: ratios are taken against it.

Timing: CUDA-synchronised wall time per call after WARMUP calls, median of REPS. Memory:
torch.cuda.max_memory_allocated over the timed calls (weights included).
Prints ONE JSON object on stdout, progress on stderr. No network.

  python3 tools/bench/bench_model_torch.py [--shape smollm2-135m|qwen2.5-0.5b] [--reps N] [--attns eager,sdpa]
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# offline, TF32 off; SHAPES: the published config.json values of each model
from bench_torch_common import SHAPES, build, environment, error_text, lora, make_log, timed  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
import peft  # noqa: E402

log = make_log("bench_model_torch")


def time_calls(fn, reps, warmup):
    times = timed(fn, reps, warmup, reset_peak=True)
    return {
        "medianMs": round(statistics.median(times), 2),
        "minMs": round(min(times), 2),
        "timesMs": [round(t, 2) for t in times],
        "peakAllocatedBytes": torch.cuda.max_memory_allocated(),
    }


def bench(name, shape, B, T, reps, warmup, attn):
    log(f"{name} {attn}: building")
    model = build(shape, attn=attn)
    pm = lora(model)
    g = torch.Generator(device="cuda").manual_seed(1)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.copy_(0.01 * torch.randn(p.shape, generator=g, device="cuda"))
    pm.train()
    V = shape["vocab_size"]
    ids = torch.randint(0, V, (B, T), generator=g, device="cuda")
    mask = torch.ones(B, T, dtype=torch.long, device="cuda")
    w = torch.rand(B, T - 1, generator=g, device="cuda") - 0.5
    params = [p for p in pm.parameters() if p.requires_grad]

    def step():
        for p in params:
            p.grad = None
        logits = pm(input_ids=ids, attention_mask=mask).logits
        lp = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        (w * lp).sum().backward()

    def forward():
        with torch.no_grad():
            logits = pm(input_ids=ids, attention_mask=mask).logits
            torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None])

    weights_bytes = torch.cuda.memory_allocated()
    out = {"name": name, "shape": shape, "batch": {"B": B, "T": T, "tokens": B * T},
           "attention": getattr(model.config, "_attn_implementation", "?"),
           "dtype": str(next(model.parameters()).dtype),
           "weightsAndLoraBytes": weights_bytes}
    def autocast_step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            step()

    variants = [(attn, step), (f"{attn}+bf16-autocast", autocast_step)]
    if attn == "eager":
        variants.append(("eager+checkpointing", step))
    for variant, fn in variants:
        try:
            if variant == "eager+checkpointing":
                pm.base_model.model.gradient_checkpointing_enable(
                    gradient_checkpointing_kwargs={"use_reentrant": False})
                pm.base_model.model.config.use_cache = False
            r = time_calls(fn, reps, warmup)
            r["tokensPerSecond"] = round(B * T / (r["medianMs"] / 1000))
            out[variant] = r
            log(f"  {variant}: median {r['medianMs']} ms, peak {r['peakAllocatedBytes'] / 2**30:.2f} GiB")
        except Exception as e:  # noqa: BLE001 - report and go on
            out[variant] = {"error": error_text(e)}
            log(f"  {variant} failed: {e}")
            torch.cuda.empty_cache()
    try:
        pm.base_model.model.gradient_checkpointing_disable()
        out["forward"] = time_calls(forward, reps, warmup)
    except Exception as e:  # noqa: BLE001
        out["forward"] = {"error": error_text(e)}
    del pm, model, params
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=list(SHAPES))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch", default="8x512", help="BxT")
    ap.add_argument("--attns", default="eager,sdpa", help="attention implementations, a model each")
    args = ap.parse_args()
    B, T = (int(x) for x in args.batch.split("x"))
    transformers.logging.set_verbosity_error()
    results = []
    for name, shape in SHAPES.items():
        if args.shape and args.shape != name:
            continue
        by_attn = []
        for attn in args.attns.split(","):
            try:
                by_attn.append(bench(name, shape, B, T, args.reps, args.warmup, attn))
            except Exception as e:  # noqa: BLE001
                by_attn.append({"name": name, "attention": attn, "error": error_text(e)})
                torch.cuda.empty_cache()
        fp32 = [(r[a]["medianMs"], a) for r in by_attn for a in args.attns.split(",")
                if isinstance(r.get(a), dict) and "medianMs" in r[a]]
        results.append({"name": name, "byAttention": by_attn,
                        "fastestFp32": min(fp32)[1] if fp32 else None,
                        "fastestFp32Ms": min(fp32)[0] if fp32 else None})
    out = {
        "bench": "model LoRA forward+backward (transformers + peft; eager and sdpa; fp32, TF32 off, and bf16 autocast)",
        **environment(peft, python=True),
        "timing": f"CUDA-synchronised wall time per call, median of {args.reps} after {args.warmup} warmup",
        "results": results,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
