#!/usr/bin/env python3
"""One full GRPO step, PyTorch's side of tools/bench/bench-grpo.ts: SmolLM2-135M's shape with
random weights (bench_torch_common.build, TF32 off), peft LoRA r 8 /
alpha 16 / dropout 0 on q/k/v/o/gate/up/down, 8 groups x 8 rollouts of one 128-token random
prompt per group, 256 new tokens each (do_sample, temperature 1, top-k/top-p off,
min_new_tokens = max_new_tokens), rollout logprobs from generate's scores, seeded random
rewards, ART's group advantages, then ONE update: micro-batches of 16 sequences, each
forward + backward of the cispo loss (-clip(ratio, 0, 5).detach() * A * logprob over the
completion tokens, dapo: summed over the step and divided by its trained tokens),
clip_grad_norm_(0.1), torch.optim.AdamW(lr 5e-6, betas (0.9, 0.99), weight_decay 0.1).

Configurations (--configs, a model built for each, so each baseline is torch at its best):
"eager" (the continuity column), "sdpa" (transformers' default attention) and "sdpa-static"
(sdpa, generate with cache_implementation="static" and the model's forward compiled, mode
"reduce-overhead", for the rollout only: the update runs the plain forward). The ratios name
the fastest configuration that ran, per dtype, and are taken against it too.

Timing: CUDA-synchronised wall time, median of REPS steps after one warm-up step; peak
memory torch.cuda.max_memory_allocated over the timed steps (weights included). fp32 by
default (TF32 off, as TabRL's f32 kernels); `--dtypes fp32,bf16` adds a bf16 run (about
as long again). With `--tabrl FILE` (tools/bench/bench-grpo.ts's JSON from the same device
call) the output also holds TabRL's report and the ratios TabRL / PyTorch per dtype.
One JSON object on stdout, progress on stderr.

  python3 tools/bench/bench_grpo_torch.py [--dtypes fp32[,bf16]] [--reps 3] [--micro 16]
      [--configs eager,sdpa,sdpa-static] [--tabrl tabrl-grpo.json]
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_torch_common as bt  # noqa: E402  (offline, TF32 off; the same shapes and settings)
import torch  # noqa: E402
import transformers  # noqa: E402
import peft  # noqa: E402

log = bt.make_log("bench_grpo_torch")

CONFIGS = {
    "eager": dict(attn="eager"),
    "sdpa": dict(attn="sdpa"),
    "sdpa-static": dict(attn="sdpa", cache="static", compile=True),
}


def sync_ms(t0):
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1000


def grpo_step(pm, opt, prompts, args, seed, rollout_forward=None):
    """One step; `rollout_forward` (a compiled forward, with the static cache) replaces the
    model's forward for the rollout's generate only."""
    groups, k, new = args.groups, args.group_size, args.new
    ids = prompts.repeat_interleave(k, dim=0)  # [G*K, P]
    P = ids.shape[1]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    pm.eval()
    torch.manual_seed(seed)  # the sampling (TabRL seeds its own the same way: per step)
    base = pm.base_model.model
    if rollout_forward is not None:
        base.forward = rollout_forward
    with torch.no_grad():
        try:
            out = pm.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                **bt.sampling(new),
                **({"cache_implementation": "static"} if rollout_forward is not None else {}),
                output_scores=True,
                return_dict_in_generate=True,
            )
        finally:
            if rollout_forward is not None:
                del base.forward  # the class's own forward again, for the update
        seqs = out.sequences  # [B, P + new]
        assert seqs.shape == (groups * k, P + new), seqs.shape
        # The rollout logprobs, one step at a time (out.scores: new x [B, V], the processed
        # logits / T), so no [B, new, V] copy adds to the peak: old [B, new].
        old = torch.stack(
            [
                torch.log_softmax(s.float(), dim=-1).gather(-1, seqs[:, P + i, None]).squeeze(-1)
                for i, s in enumerate(out.scores)
            ],
            dim=1,
        )
        del out
    rollout_ms = sync_ms(t0)

    g = torch.Generator().manual_seed(seed)
    rewards = torch.rand(groups, k, generator=g, dtype=torch.float64)
    mean = rewards.mean(dim=1, keepdim=True)
    std = rewards.std(dim=1, unbiased=False, keepdim=True)
    adv = ((rewards - mean) / (std + 1e-6)).reshape(-1).to(torch.float32).cuda()  # [B]

    t1 = time.perf_counter()
    pm.train()
    opt.zero_grad(set_to_none=True)
    B = seqs.shape[0]
    n_tokens = B * new  # every completion token is trained (dapo's denominator)
    total = 0.0
    for s in range(0, B, args.micro):
        mb = seqs[s : s + args.micro]
        logits = pm(input_ids=mb, attention_mask=torch.ones_like(mb)).logits
        lp = torch.log_softmax(logits[:, P - 1 : -1].float(), dim=-1)
        lp = lp.gather(-1, mb[:, P:, None]).squeeze(-1)  # [mb, new]
        ratio = torch.exp(lp - old[s : s + args.micro])
        weight = ratio.clamp(0.0, 5.0).detach()
        loss = -(weight * adv[s : s + args.micro, None] * lp).sum() / n_tokens
        loss.backward()
        total += loss.item()
        del logits, lp
    grad_norm = torch.nn.utils.clip_grad_norm_(
        [p for p in pm.parameters() if p.requires_grad], 0.1
    ).item()
    opt.step()
    train_ms = sync_ms(t1)
    return {
        "rolloutMs": rollout_ms,
        "trainMs": train_ms,
        "totalMs": rollout_ms + train_ms,
        "loss": total,
        "gradNorm": grad_norm,
    }


RATIO_KEYS = {
    "rolloutMs": "rolloutMs",
    "trainMs": "trainMs",
    "totalMs": "totalMs",
    "rolloutTokensPerSecond": "rolloutTokensPerSecond",
    "trainTokensPerSecond": "trainTokensPerSecond",
    "peakBytes": ("peakLiveBytes", "peakAllocatedBytes"),
}


def ratios(tabrl, results, args):
    """TabRL / PyTorch for each timed dtype and configuration: above 1 is slower for the ms,
    faster for the tokens/s, more for the bytes; "fastest" names each dtype's quickest
    configuration. Refused (an "error" entry) when the two did not do the same work or
    either side failed."""
    if "error" in tabrl:
        return {"error": "the TabRL run failed: " + str(tabrl["error"])[:500]}
    w = tabrl.get("work", {})
    mine = (w.get("groups"), w.get("groupSize"), w.get("promptTokens"), w.get("newTokens"),
            w.get("microBatchSequences"))
    theirs = (args.groups, args.group_size, args.prompt, args.new, args.micro)
    if mine != theirs or tabrl.get("shape") != args.shape:
        return {"error": f"different work: TabRL {tabrl.get('shape')} {mine} (groups, group "
                         f"size, prompt, new, micro) vs PyTorch {args.shape} {theirs}"}
    out = {"meaning": "TabRL / PyTorch: ms above 1 = TabRL slower; tokens/s above 1 = "
                      "TabRL faster; peakBytes: TabRL's live buffers / torch's max allocated",
           "fastest": {}}
    for r in results:
        name = f"{r['dtype']} {r['config']}"
        if "error" in r:
            out[name] = {"error": r["error"]}
            continue
        entry = {}
        for key_name, key in RATIO_KEYS.items():
            t_key, p_key = key if isinstance(key, tuple) else (key, key)
            t, p = tabrl.get(t_key), r.get(p_key)
            entry[key_name] = round(t / p, 3) if t is not None and p else None
        out[name] = entry
        best = out["fastest"].get(r["dtype"])
        if best is None or r["totalMs"] < best[1]:
            out["fastest"][r["dtype"]] = (r["config"], r["totalMs"])
    out["fastest"] = {d: c for d, (c, _) in out["fastest"].items()}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="smollm2-135m", choices=list(bt.SHAPES))
    ap.add_argument("--dtypes", default="fp32", help="fp32 and/or bf16, comma-separated")
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--micro", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--configs", default="eager,sdpa,sdpa-static")
    ap.add_argument("--tabrl", help="tools/bench/bench-grpo.ts's JSON, for the ratios")
    args = ap.parse_args()
    tabrl = None
    if args.tabrl:
        with open(args.tabrl) as f:
            tabrl = json.load(f)
    transformers.logging.set_verbosity_error()
    results = []
    for dname, cname in [(d, c) for d in args.dtypes.split(",") for c in args.configs.split(",")]:
        log(f"{args.shape} {dname} {cname}")
        conf = CONFIGS[cname]
        entry = {"dtype": dname, "config": cname}
        try:
            model = bt.build(bt.SHAPES[args.shape], bt.DTYPES[dname], conf["attn"])
            pm = bt.lora(model)
            entry["attention"] = getattr(model.config, "_attn_implementation", "?")
            fwd = None
            if conf.get("compile"):
                fwd = torch.compile(pm.base_model.model.forward, mode="reduce-overhead", fullgraph=True)
            opt = torch.optim.AdamW(
                [p for p in pm.parameters() if p.requires_grad],
                lr=5e-6, betas=(0.9, 0.99), weight_decay=0.1, eps=1e-8,
            )
            V = bt.SHAPES[args.shape]["vocab_size"]
            g = torch.Generator(device="cuda").manual_seed(2024)
            prompts = torch.randint(0, V, (args.groups, args.prompt), generator=g, device="cuda")
            for w in range(2 if fwd is not None else 1):  # warm-up (compilation, CUDA graphs)
                grpo_step(pm, opt, prompts, args, 1 + w, fwd)
            torch.cuda.reset_peak_memory_stats()
            steps = [grpo_step(pm, opt, prompts, args, 100 + i, fwd) for i in range(args.reps)]
            med = {k: statistics.median(s[k] for s in steps) for k in ("rolloutMs", "trainMs", "totalMs")}
            entry["totalMsMin"] = min(s["totalMs"] for s in steps)
            entry["totalMsMax"] = max(s["totalMs"] for s in steps)
            B = args.groups * args.group_size
            entry.update(
                med,
                rolloutTokensPerSecond=round(B * args.new / (med["rolloutMs"] / 1000)),
                trainTokensPerSecond=round(B * (args.prompt + args.new) / (med["trainMs"] / 1000)),
                peakAllocatedBytes=torch.cuda.max_memory_allocated(),
                steps=steps,
            )
            log(f"  rollout {med['rolloutMs']:.0f} ms, train {med['trainMs']:.0f} ms")
            del pm, model, opt, fwd
        except Exception as e:  # noqa: BLE001 - report and go on
            entry["error"] = bt.error_text(e)
            log(f"  failed: {e}")
        torch.cuda.empty_cache()
        results.append(entry)
    report = {
        "bench": "one GRPO step: transformers generate + peft + cispo/dapo + AdamW",
        "tool": "tools/bench/bench_grpo_torch.py",
        **bt.environment(peft),
        "shape": args.shape,
        "work": vars(args),
        "results": results,
    }
    if tabrl is not None:
        report["tabrl"] = tabrl
        report["ratios"] = ratios(tabrl, results, args)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
