#!/usr/bin/env python3
"""Expected values for TabRL's model parity check, computed by transformers + peft.

For each case in CASES (Llama tied/untied with llama3 and linear RoPE scaling, GQA 4/2,
6/2, 8/1 and Hq = Hkv, attention biases; Qwen2 with q/k/v biases; Qwen3 with head_dim !=
hidden / heads; RoPE theta 1e4..1e6; F32, F16 and BF16 files; sharded checkpoints) this:

  1. builds a random model with transformers (weights drawn here, not transformers' tiny
     init, so logprobs are far from uniform), casts it to the file dtype and saves it with
     save_pretrained (sharded where the case says so) into OUT/<case>/model;
  2. reloads it from those files (so both sides read the same config.json and the same
     rounded weights) and computes, in float64 on the CPU with SDPA attention, the per-token
     logprobs log p(ids[b, t+1] | ids[b, <=t]) of a fixed right-padded batch of random ids;
  3. wraps it with peft (LoraConfig r=8, alpha=16, dropout 0, q/k/v/o/gate/up/down), sets
     every lora_B to random values (B = 0 would make dA zero), saves the adapter with
     save_pretrained (F32) into OUT/<case>/adapter, and computes in float64 the logprobs
     with the adapter and the gradient of loss = sum over valid targets of w[b, t] *
     logprob[b, t] (w fixed random) with respect to every lora_A and lora_B;
  4. writes OUT/<case>/expected.safetensors: ids [B, T] (I64), lengths [B] (I64),
     w [B, T-1], logprobs_base and logprobs_lora [B, T-1] (F64, NaN where there is no
     target), and "grad/<PEFT tensor name>" (F64) per adapter tensor, the names as in
     adapter_model.safetensors (base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight);
  5. writes OUT/manifest.json listing the cases and the library versions.

tools/parity/model-parity.ts (bundled into .gpu/model-parity.mjs) then scores the same
batches with TabRL on the GPU and reports the errors.

Note: "float64" is as transformers allows it: its RMSNorm computes in float32 and casts
back, and RoPE's cos/sin are formed in float32, whatever the model dtype; the expected
values therefore carry float32 rounding of ~1e-7 relative in those places, far below the
1e-3 target (the script also reports PyTorch's own float32 error for scale).

Runs offline (no hub access), deterministic (fixed seeds), progress on stderr.

Usage (GPU machine, repo root):
  python3 tools/parity/model_parity.py /tmp/parity [--only NAME ...]
"""

import argparse
import json
import math
import os
import platform
import shutil
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from parity_common import error_entry, make_log, random_lora, setup_torch  # noqa: E402 - offline first
import torch  # noqa: E402
import transformers  # noqa: E402
import peft  # noqa: E402
import safetensors  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LORA_R = 8
LORA_ALPHA = 16
LORA_B_STD = 0.1

LLAMA3_ROPE = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    # Small, so that with the positions used here every band is exercised: wavelengths
    # 2 pi theta^(2i/D) below 64/4 = 16 are kept, above 64 divided by factor, between blended.
    "original_max_position_embeddings": 64,
}

# name, arch, hidden, intermediate, layers, heads, kv heads, head_dim (None: hidden/heads),
# rope theta, rope scaling (None: default), tied, file dtype, sharded, extra config, vocab,
# sequence lengths (right-padded to the longest).
CASES = [
    dict(name="llama-tied-f32", arch="llama", hidden=64, inter=160, layers=2, heads=4, kv=2,
         theta=10000.0, tied=True, dtype="float32", lengths=[40, 33, 9, 1]),
    dict(name="llama3-rope-untied-bf16", arch="llama", hidden=128, inter=256, layers=3, heads=8,
         kv=2, theta=500000.0, rope=LLAMA3_ROPE, tied=False, dtype="bfloat16",
         lengths=[70, 64, 20]),
    dict(name="llama-gqa3-linear-bias-f16", arch="llama", hidden=96, inter=192, layers=2, heads=6,
         kv=2, theta=10000.0, rope={"rope_type": "linear", "factor": 2.0}, tied=False,
         dtype="float16", extra={"attention_bias": True}, vocab=509, lengths=[37, 12, 30]),
    dict(name="llama-gqa8-sharded-f32", arch="llama", hidden=128, inter=256, layers=4, heads=8,
         kv=1, theta=100000.0, tied=True, dtype="float32", shard=True, lengths=[48, 47, 2, 25]),
    dict(name="llama-mha-f32", arch="llama", hidden=128, inter=320, layers=2, heads=4, kv=4,
         theta=10000.0, tied=False, dtype="float32", lengths=[33, 16]),
    dict(name="qwen2-bias-gqa7-f32", arch="qwen2", hidden=224, inter=384, layers=2, heads=14,
         kv=2, theta=1000000.0, tied=True, dtype="float32", lengths=[40, 29, 7]),
    dict(name="qwen2-untied-bf16-sharded", arch="qwen2", hidden=64, inter=128, layers=3, heads=4,
         kv=1, theta=1000000.0, tied=False, dtype="bfloat16", shard=True, vocab=500,
         lengths=[31, 31, 18]),
    dict(name="qwen3-hd32-f32", arch="qwen3", hidden=64, inter=192, layers=2, heads=4, kv=2,
         head_dim=32, theta=1000000.0, tied=True, dtype="float32", lengths=[36, 21, 5]),
    dict(name="qwen3-hd64-untied-f16-sharded", arch="qwen3", hidden=256, inter=512, layers=4,
         heads=8, kv=2, head_dim=64, theta=1000000.0, tied=False, dtype="float16", shard=True,
         lengths=[80, 66, 40]),
    dict(name="qwen3-mha-bf16", arch="qwen3", hidden=96, inter=160, layers=2, heads=6, kv=6,
         head_dim=16, theta=10000.0, tied=True, dtype="bfloat16", lengths=[29, 29]),
]


log = make_log("model_parity")


def major_version(v):
    try:
        return int(v.split(".")[0])
    except ValueError:
        return 0


TF5 = major_version(transformers.__version__) >= 5


def classes(arch):
    if arch == "llama":
        return transformers.LlamaConfig, transformers.LlamaForCausalLM
    if arch == "qwen2":
        return transformers.Qwen2Config, transformers.Qwen2ForCausalLM
    if arch == "qwen3":
        return transformers.Qwen3Config, transformers.Qwen3ForCausalLM
    raise ValueError(arch)


def make_config(case):
    cfg_cls, _ = classes(case["arch"])
    kw = dict(
        vocab_size=case.get("vocab", 512),
        hidden_size=case["hidden"],
        intermediate_size=case["inter"],
        num_hidden_layers=case["layers"],
        num_attention_heads=case["heads"],
        num_key_value_heads=case["kv"],
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        tie_word_embeddings=case["tied"],
        hidden_act="silu",
        bos_token_id=1,
        eos_token_id=2,
    )
    if case.get("head_dim") is not None:
        kw["head_dim"] = case["head_dim"]
    kw.update(case.get("extra", {}))
    rope = case.get("rope")
    if TF5:
        # transformers 5.x: theta and scaling live together in rope_parameters.
        params = {"rope_type": "default", "rope_theta": case["theta"]}
        if rope:
            params.update(rope)
        kw["rope_parameters"] = params
    else:
        kw["rope_theta"] = case["theta"]
        if rope:
            kw["rope_scaling"] = dict(rope)
    return cfg_cls(**kw)


def fill_random_(model, seed, hidden):
    """Weights by role, as src/lib/testing/random-weights.ts draws them: norms 1 + 0.1 N,
    biases 0.1 N, embedding / lm_head N(0, (1.5 / sqrt(C))^2), projections U(+-1/sqrt(in))."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # a tied lm_head is the embedding: once
            shape = tuple(p.shape)
            if name.endswith("norm.weight"):
                v = 1 + 0.1 * torch.randn(shape, generator=g, dtype=torch.float64)
            elif name.endswith(".bias"):
                v = 0.1 * torch.randn(shape, generator=g, dtype=torch.float64)
            elif "embed_tokens" in name or name.endswith("lm_head.weight"):
                v = (1.5 / math.sqrt(hidden)) * torch.randn(shape, generator=g, dtype=torch.float64)
            else:
                bound = 1 / math.sqrt(shape[1])
                v = (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * bound
            p.copy_(v.to(p.dtype))


def saved_rope(config_json):
    keys = ("rope_parameters", "rope_scaling", "rope_theta")
    return {k: config_json[k] for k in keys if k in config_json}


def save_model(case, model, out_dir):
    dtype = getattr(torch, case["dtype"])
    model = model.to(dtype)
    kw = {}
    if case.get("shard"):
        total = sum(p.numel() * p.element_size() for p in model.state_dict().values())
        kw["max_shard_size"] = max(total // 3, 1)  # bytes: about three shards
    model.save_pretrained(out_dir, **kw)
    files = sorted(os.listdir(out_dir))
    shards = [f for f in files if f.endswith(".safetensors")]
    if not shards:
        raise RuntimeError(f"save_pretrained wrote no safetensors file in {out_dir}: {files}")
    if case.get("shard") and "model.safetensors.index.json" not in files:
        log(f"  warning: {case['name']} asked for shards, got {shards}")
    return shards


def batch_for(case, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    lengths = case["lengths"]
    B, T = len(lengths), max(lengths)
    ids = torch.randint(0, vocab, (B, T), generator=g, dtype=torch.int64)
    mask = torch.zeros(B, T, dtype=torch.int64)
    for b, n in enumerate(lengths):
        mask[b, :n] = 1
        ids[b, n:] = 0
    w = torch.randn(B, T - 1, generator=g, dtype=torch.float64)
    valid = mask[:, 1:].bool()  # target t + 1 lies inside the sequence
    w = torch.where(valid, w, torch.zeros_like(w))
    return ids, mask, w, valid


def next_token_logprobs(model, ids, mask):
    logits = model(input_ids=ids, attention_mask=mask).logits
    lp = torch.log_softmax(logits[:, :-1].to(torch.float64), dim=-1)
    return lp.gather(-1, ids[:, 1:, None]).squeeze(-1)  # [B, T-1]


def load(model_cls, model_dir, attn):
    return model_cls.from_pretrained(model_dir, attn_implementation=attn)


def run_case(case, out_root, seed):
    t0 = time.time()
    name = case["name"]
    case_dir = os.path.join(out_root, name)
    model_dir = os.path.join(case_dir, "model")
    adapter_dir = os.path.join(case_dir, "adapter")
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    _, model_cls = classes(case["arch"])

    torch.manual_seed(seed)
    config = make_config(case)
    model = model_cls(config)
    fill_random_(model, seed, case["hidden"])
    shards = save_model(case, model, model_dir)
    del model
    with open(os.path.join(model_dir, "config.json")) as f:
        config_json = json.load(f)
    vocab = config_json["vocab_size"]

    # The f64 reference from the saved files (SDPA computes in f64 on the CPU; eager
    # attention would take its softmax in f32).
    ids, mask, w, valid = batch_for(case, vocab, seed + 1)
    nan = torch.full_like(w, float("nan"))
    attn = "sdpa"
    try:
        ref = load(model_cls, model_dir, attn).to(torch.float64).eval()
        with torch.no_grad():
            lp_base = torch.where(valid, next_token_logprobs(ref, ids, mask), nan)
    except Exception as e:  # noqa: BLE001
        log(f"  sdpa failed in float64 ({type(e).__name__}: {e}); eager attention")
        attn = "eager"
        ref = load(model_cls, model_dir, attn).to(torch.float64).eval()
        with torch.no_grad():
            lp_base = torch.where(valid, next_token_logprobs(ref, ids, mask), nan)
    if torch.isnan(lp_base[valid]).any():
        raise RuntimeError("NaN in the float64 reference logprobs")
    with torch.no_grad():
        # For scale: PyTorch's own float32 forward against its float64 one.
        f32 = load(model_cls, model_dir, attn).to(torch.float32).eval()
        lp32 = next_token_logprobs(f32, ids, mask).to(torch.float64)
        torch_f32_err = (lp32 - lp_base)[valid].abs().max().item()
        del f32
    del ref

    # LoRA: built on the f32 model so the adapter is saved as F32, then all in f64.
    torch.manual_seed(seed + 2)  # lora_A's kaiming init
    base = load(model_cls, model_dir, attn).to(torch.float32)
    pm = random_lora(base, LORA_R, LORA_ALPHA, 0.0, list(TARGETS), LORA_B_STD, seed + 3)
    pm.save_pretrained(adapter_dir)
    saved = load_file(os.path.join(adapter_dir, "adapter_model.safetensors"))
    pm = pm.to(torch.float64)
    pm.eval()  # dropout 0 anyway

    with torch.no_grad(), pm.disable_adapter():
        lp_base_peft = torch.where(valid, next_token_logprobs(pm, ids, mask), nan)
    base_consistency = (lp_base_peft - lp_base)[valid].abs().max().item()

    pm.zero_grad(set_to_none=True)
    lp = next_token_logprobs(pm, ids, mask)
    loss = (w * torch.where(valid, lp, torch.zeros_like(lp))).sum()
    loss.backward()
    lp_lora = torch.where(valid, lp.detach(), nan)

    grads = {}
    for n, p in pm.named_parameters():
        if "lora_" not in n:
            continue
        key = n.replace(".default.", ".")
        if p.grad is None:
            raise RuntimeError(f"no gradient for {n}")
        grads[key] = p.grad.detach().to(torch.float64).contiguous()
    if set(grads) != set(saved):
        raise RuntimeError(
            "gradient names do not match adapter_model.safetensors: "
            f"only grads {sorted(set(grads) - set(saved))[:4]}, only saved {sorted(set(saved) - set(grads))[:4]}"
        )

    tensors = {
        "ids": ids.contiguous(),
        "lengths": torch.tensor(case["lengths"], dtype=torch.int64),
        "w": w.contiguous(),
        "logprobs_base": lp_base.contiguous(),
        "logprobs_lora": lp_lora.contiguous(),
    }
    for k, v in grads.items():
        tensors["grad/" + k] = v
    save_file(tensors, os.path.join(case_dir, "expected.safetensors"))

    seconds = round(time.time() - t0, 2)
    entry = {
        "name": name,
        "architecture": config_json.get("architectures", ["?"])[0],
        "model": f"{name}/model",
        "adapter": f"{name}/adapter",
        "expected": f"{name}/expected.safetensors",
        "file_dtype": case["dtype"],
        "files": shards,
        "tied": case["tied"],
        "hidden": case["hidden"],
        "layers": case["layers"],
        "heads": case["heads"],
        "kv_heads": case["kv"],
        "head_dim": config_json.get("head_dim", case["hidden"] // case["heads"]),
        "vocab": vocab,
        "rope": saved_rope(config_json),
        "lengths": case["lengths"],
        "lora": {"r": LORA_R, "alpha": LORA_ALPHA, "targets": TARGETS, "b_std": LORA_B_STD},
        "attention": attn,
        "loss": loss.item(),
        "torch_f32_logprob_max_abs_err": torch_f32_err,
        "peft_disabled_vs_base_max_abs": base_consistency,
        "seconds": seconds,
    }
    log(
        f"  {name}: {entry['architecture']} {case['dtype']} files={len(shards)} "
        f"loss={entry['loss']:.4f} torch f32 err={torch_f32_err:.2e} ({seconds}s)"
    )
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="output directory (created; case folders are replaced)")
    ap.add_argument("--only", nargs="*", help="case names to run (default: all)")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    setup_torch()
    os.makedirs(args.out, exist_ok=True)
    cases = [c for c in CASES if not args.only or c["name"] in args.only]
    if args.only and len(cases) != len(args.only):
        known = ", ".join(c["name"] for c in CASES)
        sys.exit(f"unknown case in --only {args.only}; known: {known}")
    log(
        f"transformers {transformers.__version__}, torch {torch.__version__}, "
        f"peft {peft.__version__}: {len(cases)} cases into {args.out}"
    )
    entries, failures = [], []
    for i, case in enumerate(cases):
        log(f"[{i + 1}/{len(cases)}] {case['name']}")
        try:
            entries.append(run_case(case, args.out, args.seed + 100 * i))
        except Exception as e:  # noqa: BLE001 - record and go on with the other cases
            failures.append(error_entry(e, name=case["name"]))
    manifest = {
        "generated_by": {
            "script": "tools/parity/model_parity.py",
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "peft": peft.__version__,
            "safetensors": safetensors.__version__,
            "python": platform.python_version(),
            "compute": "float64 on the CPU (transformers' RMSNorm and RoPE cos/sin in float32)",
            "seed": args.seed,
        },
        "loss": "sum over valid targets of w[b, t] * logprob[b, t]",
        "cases": entries,
        "failures": failures,
    }
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    log(f"wrote {len(entries)} cases, {len(failures)} failures: {os.path.join(args.out, 'manifest.json')}")
    # Non-zero only when nothing could be produced: the TS side reports per-case failures.
    sys.exit(0 if entries else 1)


if __name__ == "__main__":
    main()
