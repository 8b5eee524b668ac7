#!/usr/bin/env python3
"""Generation benchmark, PyTorch's side of tools/bench/bench-generate.ts: transformers'
generate() with its KV cache at batch 1, 8 and 32 for SmolLM2-135M's shape and
Qwen2.5-0.5B's shape, random weights (no download), in fp32 (TF32 off:
true fp32 GEMMs, as TabRL's f32 path) and in bf16. The same work as TabRL's: B prompts of
128 random tokens (no padding), 256 new tokens each (min_new_tokens = max_new_tokens, so
eos never ends a sequence early), do_sample with temperature 1, top-k and top-p off.

Configurations (--configs, each on a model built for it, so each baseline is torch at its best):
  eager        attn_implementation="eager", dynamic cache (the continuity column);
  sdpa         attn_implementation="sdpa" (transformers' default), dynamic cache;
  sdpa-static  sdpa with cache_implementation="static" and the model's forward compiled
               (torch.compile, mode "reduce-overhead", fullgraph: transformers' recipe for
               fast decoding), two warm-up calls at least (compilation, CUDA graphs); a
               configuration that fails to run there is reported with its error, not dropped.
Report ratios against the fastest configuration that ran.

Timing: CUDA-synchronised wall time of one generate() call, median of REPS after WARMUP
calls. Beside it, the prefill alone (one forward over the prompts with use_cache) is timed
the same way, and decode = total - prefill gives decodeTokensPerSecond = B * (NEW - 1) /
decode, comparable with TabRL's (from its first token to its last).
Memory: torch.cuda.max_memory_allocated over the timed calls (weights included).
Prints ONE JSON object on stdout, progress on stderr. No network.

  python3 tools/bench/bench_generate_torch.py [--shape smollm2-135m|qwen2.5-0.5b]
      [--batches 1,8,32] [--prompt 128] [--new 256] [--reps N] [--warmup N]
      [--dtypes fp32,bf16] [--configs eager,sdpa,sdpa-static]
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# offline, TF32 off; SHAPES: the published config.json values of each model
from bench_torch_common import (  # noqa: E402
    DTYPES,
    SHAPES,
    build,
    environment,
    error_text,
    make_log,
    sampling,
    timed,
)
import torch  # noqa: E402
import transformers  # noqa: E402

log = make_log("bench_generate_torch")

CONFIGS = {
    "eager": dict(attn="eager", cache=None),
    "sdpa": dict(attn="sdpa", cache=None),
    "sdpa-static": dict(attn="sdpa", cache="static", compile=True),
}


def bench_batch(model, B, prompt, new, reps, warmup, cache=None):
    V = model.config.vocab_size
    g = torch.Generator(device="cuda").manual_seed(B)
    ids = torch.randint(0, V, (B, prompt), generator=g, device="cuda")
    mask = torch.ones_like(ids)
    kwargs = dict(attention_mask=mask, **sampling(new))
    if cache:
        kwargs["cache_implementation"] = cache

    def generate():
        with torch.no_grad():
            out = model.generate(ids, **kwargs)
        assert out.shape == (B, prompt + new), out.shape

    def prefill():
        with torch.no_grad():
            model(input_ids=ids, attention_mask=mask, use_cache=True)

    torch.cuda.reset_peak_memory_stats()
    total = timed(generate, reps, warmup)
    peak = torch.cuda.max_memory_allocated()
    total_ms = statistics.median(total)
    r = {
        "B": B,
        "promptTokens": prompt,
        "newTokens": new,
        "totalMs": round(total_ms, 2),
        "tokensPerSecond": round(B * new / (total_ms / 1000)),
        "totalMsAll": [round(t, 2) for t in total],
        "totalMsMin": round(min(total), 2),
        "totalMsMax": round(max(total), 2),
        "peakAllocatedBytes": peak,
    }
    try:
        prefill_ms = statistics.median(timed(prefill, reps, warmup))
    except Exception as e:  # noqa: BLE001 - a compiled forward may refuse the plain call
        r["prefillError"] = error_text(e)
        log(f"  B={B}: the prefill alone failed ({e}); total only")
        return r
    decode_ms = max(total_ms - prefill_ms, 1e-6)
    r.update({
        "prefillMs": round(prefill_ms, 2),
        "decodeMs": round(decode_ms, 2),
        "msPerDecodeStep": round(decode_ms / (new - 1), 3),
        "decodeTokensPerSecond": round(B * (new - 1) / (decode_ms / 1000)),
    })
    log(f"  B={B}: {r['decodeTokensPerSecond']} tok/s decode ({r['msPerDecodeStep']} ms/step), "
        f"{r['tokensPerSecond']} tok/s overall")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=list(SHAPES))
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--configs", default="eager,sdpa,sdpa-static")
    args = ap.parse_args()
    transformers.logging.set_verbosity_error()
    batches = [int(b) for b in args.batches.split(",")]
    results = []
    for name, shape in SHAPES.items():
        if args.shape and args.shape != name:
            continue
        for dname, cname in [(d, c) for d in args.dtypes.split(",") for c in args.configs.split(",")]:
            log(f"{name} {dname} {cname}")
            conf = CONFIGS[cname]
            entry = {"name": name, "dtype": dname, "config": cname, "cache": conf["cache"] or "dynamic",
                     "shape": shape, "batches": []}
            try:
                model = build(shape, DTYPES[dname], conf["attn"])
                if conf.get("compile"):
                    model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
                entry["attention"] = getattr(model.config, "_attn_implementation", "?")
                entry["weightsBytes"] = torch.cuda.memory_allocated()
                for B in batches:
                    try:
                        entry["batches"].append(
                            bench_batch(model, B, args.prompt, args.new, args.reps,
                                        max(args.warmup, 2) if conf.get("compile") else args.warmup,
                                        conf["cache"]))
                    except Exception as e:  # noqa: BLE001 - report and go on
                        entry["batches"].append({"B": B, "error": error_text(e)})
                        log(f"  B={B} failed: {e}")
                        torch.cuda.empty_cache()
                del model
            except Exception as e:  # noqa: BLE001
                entry["error"] = error_text(e)
                log(f"  failed: {e}")
            torch.cuda.empty_cache()
            results.append(entry)
    out = {
        "bench": "generation: transformers generate() with KV cache (eager, sdpa, sdpa + static cache)",
        **environment(python=True),
        "work": f"B prompts of {args.prompt} random tokens, {args.new} new tokens each "
                "(min_new_tokens = max_new_tokens), do_sample, temperature 1, top-k/top-p off",
        "timing": f"CUDA-synchronised wall time per generate() call, median of {args.reps} "
                  f"after {args.warmup} warmup; decode = total - prefill forward",
        "results": results,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
