#!/usr/bin/env python3
"""The PyTorch half of the PEFT round trip (the TabRL half: tools/parity/peft-roundtrip.ts).

Reads DIR/plan.json, written by `peft-roundtrip export DIR` (layout: peft-roundtrip-lib.ts).
Per case:

  1. TabRL -> peft: loads the model folder TabRL made (DIR/<case>/model) with transformers in
     float64, wraps it with peft.PeftModel.from_pretrained on TabRL's checkpoint folder (the
     one a training run saved, optimizer and trainer state beside the adapter: peft ignores
     them), and checks that
       - every key of TabRL's adapter_config.json is a field of peft's LoraConfig, and the
         loaded config has the plan's r, lora_alpha and targets;
       - peft's state dict holds exactly the tensors of adapter_model.safetensors, unchanged;
       - peft's logprobs of the plan's sequences, with the adapter and with it disabled, match
         TabRL's (DIR/<case>/tabrl-logprobs.json) within the plan's tolerance (1e-4 max abs),
         and the adapter moves some logprob by more than 100x that.
  2. peft -> TabRL: for each adapter spec of the plan (a subset of targets with alpha / r =
     1.5; 'all-linear' with dropout), get_peft_model on a fresh float32 copy, lora_B set to
     N(0, 0.1^2) (peft starts it at 0), save_pretrained into DIR/<case>/peft/<name>/, and
     the float64 logprobs with and without it, for `peft-roundtrip import DIR` to compare.

Writes DIR/python-report.json and prints it; exit status 0 when step 1 passes for every case.
Runs offline, deterministic (fixed seeds).

    python3 tools/parity/peft_roundtrip.py /tmp/rt
"""

import dataclasses
import json
import math
import os
import platform
import sys
import warnings

for _k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402
import transformers  # noqa: E402
import peft  # noqa: E402
import safetensors  # noqa: E402
from peft import get_peft_model_state_dict  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

LORA_B_STD = 0.1


def log(*args):
    print("[peft_roundtrip]", *args, file=sys.stderr, flush=True)


def load_base(model_dir, dtype):
    """The model folder as transformers loads it, in `dtype`, eval mode. SDPA first (it
    computes in float64 on the CPU); eager when SDPA cannot."""
    last = None
    for attn in ("sdpa", "eager"):
        try:
            model = transformers.AutoModelForCausalLM.from_pretrained(
                model_dir, attn_implementation=attn
            )
            model = model.to(dtype).eval()
            with torch.no_grad():
                model(input_ids=torch.tensor([[0, 1]], dtype=torch.long))
            return model
        except Exception as e:  # noqa: BLE001 - try the next attention
            last = e
            log(f"  {attn} attention failed in {dtype} ({type(e).__name__}: {e})")
    raise last


def score(model, sequences):
    """Per sequence: log p(ids[t + 1] | ids[<= t]) for t = 0 .. n - 2, each sequence alone
    (no padding), in float64; None where not finite."""
    out = []
    with torch.no_grad():
        for seq in sequences:
            ids = torch.tensor([seq], dtype=torch.long)
            logits = model(input_ids=ids).logits[0, :-1].to(torch.float64)
            lp = torch.log_softmax(logits, dim=-1).gather(-1, ids[0, 1:, None]).squeeze(-1)
            out.append([v if math.isfinite(v) else None for v in lp.tolist()])
    return out


def compare(ours, theirs):
    """max |a - b| over positions finite on both sides; `missing`: positions that are not."""
    if len(ours) != len(theirs):
        raise ValueError(f"{len(ours)} sequences against {len(theirs)}")
    max_abs, count, missing = 0.0, 0, 0
    for b, (row, other) in enumerate(zip(ours, theirs)):
        if len(row) != len(other):
            raise ValueError(f"sequence {b}: {len(row)} logprobs against {len(other)}")
        for a, e in zip(row, other):
            if a is None or e is None:
                missing += 1
                continue
            max_abs = max(max_abs, abs(a - e))
            count += 1
    return {"max_abs": max_abs, "count": count, "missing": missing}


def within(c, tolerance):
    return c["max_abs"] <= tolerance and c["missing"] == 0 and c["count"] > 0


def tabrl_to_peft(root, plan, case):
    tol = plan["tolerance"]
    case_dir = os.path.join(root, case["name"])
    ours = json.load(open(os.path.join(case_dir, "tabrl-logprobs.json")))
    ckpt = os.path.join(root, ours["checkpoint"])
    config_json = json.load(open(os.path.join(ckpt, "adapter_config.json")))
    lora_fields = {f.name for f in dataclasses.fields(peft.LoraConfig)}
    unknown_keys = sorted(set(config_json) - lora_fields)

    base = load_base(os.path.join(case_dir, "model"), torch.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pm = peft.PeftModel.from_pretrained(base, ckpt)
    pm = pm.to(torch.float64).eval()
    loaded = pm.peft_config["default"]
    want = case["lora"]
    config_matches = (
        loaded.r == want["rank"]
        and loaded.lora_alpha == want["alpha"]
        and sorted(loaded.target_modules) == sorted(want["targets"])
        and not loaded.use_rslora
        and not loaded.use_dora
    )

    # Every tensor of the file, and nothing else, in peft's model, unchanged (f32 -> f64 is exact).
    in_file = load_file(os.path.join(ckpt, "adapter_model.safetensors"))
    in_model = get_peft_model_state_dict(pm)
    missing = sorted(set(in_file) - set(in_model))
    extra = sorted(set(in_model) - set(in_file))
    weight_max_abs = max(
        ((in_model[k].double() - in_file[k].double()).abs().max().item() for k in in_file if k in in_model),
        default=float("nan"),
    )

    lp_lora = score(pm, case["sequences"])
    with pm.disable_adapter():
        lp_base = score(pm, case["sequences"])
    lora = compare(ours["lora"], lp_lora)
    base_cmp = compare(ours["base"], lp_base)
    effect = compare(lp_lora, lp_base)["max_abs"]
    return {
        "name": case["name"],
        "checkpoint": ours["checkpoint"],
        "architecture": type(base).__name__,
        "unknown_config_keys": unknown_keys,
        "config_matches": config_matches,
        "loaded": {"r": loaded.r, "lora_alpha": loaded.lora_alpha, "targets": sorted(loaded.target_modules)},
        "tensors": len(in_file),
        "missing_in_peft": missing[:4],
        "extra_in_peft": extra[:4],
        "weights_max_abs": weight_max_abs,
        "load_warnings": [str(w.message)[:300] for w in caught][:5],
        "lora": lora,
        "base": base_cmp,
        "lora_max_abs": lora["max_abs"],
        "base_max_abs": base_cmp["max_abs"],
        "adapter_effect_max_abs": effect,
        "pass": bool(
            not unknown_keys
            and config_matches
            and not missing
            and not extra
            and weight_max_abs == 0
            and within(lora, tol)
            and within(base_cmp, tol)
            and effect >= plan["minAdapterEffect"]
        ),
    }


def make_peft_adapter(root, plan, case, spec, seed):
    """get_peft_model with `spec` on the f32 model, random lora_B, save_pretrained; f64 logprobs."""
    case_dir = os.path.join(root, case["name"])
    rel = os.path.join(case["name"], "peft", spec["name"])
    out_dir = os.path.join(root, rel)
    torch.manual_seed(seed)  # lora_A's kaiming init
    base = load_base(os.path.join(case_dir, "model"), torch.float32)
    lcfg = peft.LoraConfig(
        r=spec["r"],
        lora_alpha=spec["lora_alpha"],
        lora_dropout=spec["lora_dropout"],
        target_modules=spec["target_modules"],
        bias="none",
        task_type="CAUSAL_LM",
    )
    pm = peft.get_peft_model(base, lcfg)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.copy_(LORA_B_STD * torch.randn(tuple(p.shape), generator=g, dtype=torch.float64))
    pm.save_pretrained(out_dir)
    saved = json.load(open(os.path.join(out_dir, "adapter_config.json")))
    pm = pm.to(torch.float64).eval()  # dropout off
    lp = score(pm, case["sequences"])
    with pm.disable_adapter():
        lp_base = score(pm, case["sequences"])
    targets = saved["target_modules"]
    return {
        "case": case["name"],
        "name": spec["name"],
        "dir": rel,
        "r": saved["r"],
        "lora_alpha": saved["lora_alpha"],
        "target_modules": sorted(targets) if isinstance(targets, list) else targets,
        "files": sorted(os.listdir(out_dir)),
        "logprobs": lp,
        "base_logprobs": lp_base,
    }


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit("usage: peft_roundtrip.py DIR   (DIR from `peft-roundtrip export DIR`)")
    root = sys.argv[1]
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    transformers.logging.set_verbosity_error()
    plan = json.load(open(os.path.join(root, "plan.json")))
    report = {
        "versions": {
            "script": "tools/parity/peft_roundtrip.py",
            "peft": peft.__version__,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "safetensors": safetensors.__version__,
            "python": platform.python_version(),
        },
        "tabrlToPeft": [],
        "peftAdapters": [],
        "peftErrors": [],
    }
    for i, case in enumerate(plan["cases"]):
        log(f"[{i + 1}/{len(plan['cases'])}] {case['name']}")
        try:
            r = tabrl_to_peft(root, plan, case)
            log(f"  TabRL -> peft: {'pass' if r['pass'] else 'FAIL'} lora {r['lora_max_abs']:.2e} "
                f"base {r['base_max_abs']:.2e} effect {r['adapter_effect_max_abs']:.3f}")
        except Exception as e:  # noqa: BLE001 - report and go on
            import traceback

            traceback.print_exc(file=sys.stderr)
            r = {"name": case["name"], "error": f"{type(e).__name__}: {e}", "pass": False}
        report["tabrlToPeft"].append(r)
        for j, spec in enumerate(plan["peftAdapters"]):
            try:
                a = make_peft_adapter(root, plan, case, spec, 1000 * case["seed"] + 10 * j)
                report["peftAdapters"].append(a)
                log(f"  peft adapter {spec['name']}: r={a['r']} alpha={a['lora_alpha']} {a['target_modules']}")
            except Exception as e:  # noqa: BLE001 - the TS side counts the missing adapter
                import traceback

                traceback.print_exc(file=sys.stderr)
                report["peftErrors"].append(
                    {"case": case["name"], "name": spec["name"], "error": f"{type(e).__name__}: {e}"}
                )
    report["pass"] = bool(report["tabrlToPeft"]) and all(r["pass"] for r in report["tabrlToPeft"])
    with open(os.path.join(root, "python-report.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "peftAdapters"}, indent=1))
    sys.exit(0 if report["pass"] else 1)


if __name__ == "__main__":
    main()
