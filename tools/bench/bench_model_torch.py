#!/usr/bin/env python3
"""Model benchmark, PyTorch's side of tools/bench/bench-model.ts: one LoRA forward+backward
over a batch of 8 x 512 tokens for SmolLM2-135M's shape and Qwen2.5-0.5B's shape, with
transformers + peft in fp32, eager attention, TF32 off (true fp32 GEMMs, as TabRL's f32
path computes), random weights (no download), r = 8, alpha = 16 on q/k/v/o/gate/up/down,
dropout 0, lora_B random.

The work timed is the same as TabRL's forwardBackward: logits of every position, their
log_softmax, the logprobs of the next tokens, loss = sum(w * logprobs) with fixed random
w, backward into the LoRA parameters. Variants: "eager" (PyTorch keeps every activation)
and "eager+checkpointing" (gradient checkpointing per decoder layer, as TabRL recomputes
each layer in its backward; memory comparable, more work).

Timing: CUDA-synchronised wall time per call after WARMUP calls, median of REPS. Memory:
torch.cuda.max_memory_allocated over the timed calls (weights included).
Prints ONE JSON object on stdout, progress on stderr. No network.

  python3 tools/bench/bench_model_torch.py [--shape smollm2-135m|qwen2.5-0.5b] [--reps N]
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

for _k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402
import transformers  # noqa: E402
import peft  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
TF5 = int(transformers.__version__.split(".")[0]) >= 5

# The published config.json values of each model.
SHAPES = {
    "smollm2-135m": dict(
        cls="llama", vocab_size=49152, hidden_size=576, intermediate_size=1536,
        num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
        rms_norm_eps=1e-5, theta=100000.0, tie_word_embeddings=True,
        max_position_embeddings=8192,
    ),
    "qwen2.5-0.5b": dict(
        cls="qwen2", vocab_size=151936, hidden_size=896, intermediate_size=4864,
        num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
        rms_norm_eps=1e-6, theta=1000000.0, tie_word_embeddings=True,
        max_position_embeddings=32768,
    ),
}


def log(*a):
    print("[bench_model_torch]", *a, file=sys.stderr, flush=True)


def build(shape):
    kw = dict(shape)
    cls = kw.pop("cls")
    theta = kw.pop("theta")
    if TF5:
        kw["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
    else:
        kw["rope_theta"] = theta
    if cls == "llama":
        config = transformers.LlamaConfig(**kw)
        model_cls = transformers.LlamaForCausalLM
    else:
        config = transformers.Qwen2Config(**kw)
        model_cls = transformers.Qwen2ForCausalLM
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = model_cls._from_config(config, attn_implementation="eager")
    return model.to(torch.float32)


def time_calls(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1000)
    return {
        "medianMs": round(statistics.median(times), 2),
        "minMs": round(min(times), 2),
        "timesMs": [round(t, 2) for t in times],
        "peakAllocatedBytes": torch.cuda.max_memory_allocated(),
    }


def bench(name, shape, B, T, reps, warmup):
    log(f"{name}: building")
    model = build(shape)
    lcfg = peft.LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=TARGETS,
                           bias="none", task_type="CAUSAL_LM")
    pm = peft.get_peft_model(model, lcfg)
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
    for variant in ("eager", "eager+checkpointing"):
        try:
            if variant == "eager+checkpointing":
                pm.base_model.model.gradient_checkpointing_enable(
                    gradient_checkpointing_kwargs={"use_reentrant": False})
                pm.base_model.model.config.use_cache = False
            r = time_calls(step, reps, warmup)
            r["tokensPerSecond"] = round(B * T / (r["medianMs"] / 1000))
            out[variant] = r
            log(f"  {variant}: median {r['medianMs']} ms, peak {r['peakAllocatedBytes'] / 2**30:.2f} GiB")
        except Exception as e:  # noqa: BLE001 - report and go on
            out[variant] = {"error": f"{type(e).__name__}: {e}"}
            log(f"  {variant} failed: {e}")
            torch.cuda.empty_cache()
    try:
        pm.base_model.model.gradient_checkpointing_disable()
        out["forward"] = time_calls(forward, reps, warmup)
    except Exception as e:  # noqa: BLE001
        out["forward"] = {"error": f"{type(e).__name__}: {e}"}
    del pm, model, params
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=list(SHAPES))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch", default="8x512", help="BxT")
    args = ap.parse_args()
    B, T = (int(x) for x in args.batch.split("x"))
    transformers.logging.set_verbosity_error()
    results = []
    for name, shape in SHAPES.items():
        if args.shape and args.shape != name:
            continue
        try:
            results.append(bench(name, shape, B, T, args.reps, args.warmup))
        except Exception as e:  # noqa: BLE001
            results.append({"name": name, "error": f"{type(e).__name__}: {e}"})
            torch.cuda.empty_cache()
    out = {
        "bench": "model LoRA forward+backward (transformers + peft, fp32 eager, TF32 off)",
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "python": platform.python_version(),
        "timing": f"CUDA-synchronised wall time per call, median of {args.reps} after {args.warmup} warmup",
        "results": results,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
