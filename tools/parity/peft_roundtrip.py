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

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from parity_common import (  # noqa: E402 - sets the offline variables before transformers loads
    error_entry,
    make_log,
    peft_against_tabrl,
    random_lora,
    score_with_and_without,
    setup_torch,
    unknown_lora_keys,
    versions,
)
import torch  # noqa: E402
import transformers  # noqa: E402

LORA_B_STD = 0.1

log = make_log("peft_roundtrip")


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


def tabrl_to_peft(root, plan, case):
    case_dir = os.path.join(root, case["name"])
    ours = json.load(open(os.path.join(case_dir, "tabrl-logprobs.json")))
    ckpt = os.path.join(root, ours["checkpoint"])
    config_json = json.load(open(os.path.join(ckpt, "adapter_config.json")))
    unknown_keys = unknown_lora_keys(config_json)

    base = load_base(os.path.join(case_dir, "model"), torch.float64)
    got = peft_against_tabrl(base, ckpt, case, ours, plan)
    fields = got["fields"]
    return {
        "name": case["name"],
        "checkpoint": ours["checkpoint"],
        "architecture": type(base).__name__,
        "unknown_config_keys": unknown_keys,
        **fields,
        "lora_max_abs": fields["lora"]["max_abs"],
        "base_max_abs": fields["base"]["max_abs"],
        "adapter_effect_max_abs": got["effect"],
        "pass": bool(not unknown_keys and got["ok"]),
    }


def make_peft_adapter(root, plan, case, spec, seed):
    """get_peft_model with `spec` on the f32 model, random lora_B, save_pretrained; f64 logprobs."""
    case_dir = os.path.join(root, case["name"])
    rel = os.path.join(case["name"], "peft", spec["name"])
    out_dir = os.path.join(root, rel)
    torch.manual_seed(seed)  # lora_A's kaiming init
    base = load_base(os.path.join(case_dir, "model"), torch.float32)
    pm = random_lora(
        base, spec["r"], spec["lora_alpha"], spec["lora_dropout"], spec["target_modules"],
        LORA_B_STD, seed + 1,
    )
    pm.save_pretrained(out_dir)
    saved = json.load(open(os.path.join(out_dir, "adapter_config.json")))
    pm = pm.to(torch.float64).eval()  # dropout off
    lp, lp_base = score_with_and_without(pm, case["sequences"])
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
    setup_torch()
    plan = json.load(open(os.path.join(root, "plan.json")))
    report = {
        "versions": {"script": "tools/parity/peft_roundtrip.py", **versions()},
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
            r = {**error_entry(e, name=case["name"]), "pass": False}
        report["tabrlToPeft"].append(r)
        for j, spec in enumerate(plan["peftAdapters"]):
            try:
                a = make_peft_adapter(root, plan, case, spec, 1000 * case["seed"] + 10 * j)
                report["peftAdapters"].append(a)
                log(f"  peft adapter {spec['name']}: r={a['r']} alpha={a['lora_alpha']} {a['target_modules']}")
            except Exception as e:  # noqa: BLE001 - the TS side counts the missing adapter
                report["peftErrors"].append(error_entry(e, case=case["name"], name=spec["name"]))
    report["pass"] = bool(report["tabrlToPeft"]) and all(r["pass"] for r in report["tabrlToPeft"])
    with open(os.path.join(root, "python-report.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "peftAdapters"}, indent=1))
    sys.exit(0 if report["pass"] else 1)


if __name__ == "__main__":
    main()
