#!/usr/bin/env python3
"""The PyTorch half of the export round trip (the TabRL half: tools/parity/export-roundtrip.ts).

Reads DIR/plan.json, written by `export-roundtrip export DIR` (layout:
export-roundtrip-plan.ts). Per case, in float64 (CUDA when there is one, else the CPU):

  1. adapter_config.json of the run's latest checkpoint, as the page's zip holds it: every key
     a field of peft's LoraConfig, base_model_name_or_path the portable Hub id the plan names.
  2. peft.PeftModel.from_pretrained(base, adapter) with the base loaded from its folder: the
     loaded config (r, lora_alpha, targets), the state dict equal to the file's tensors, and
     the logprobs with the adapter and with it disabled within the tolerance of TabRL's
     (DIR/<case>/tabrl-logprobs.json); the adapter moves some logprob by >= 100x tolerance.
     Then merge_and_unload(): its weights against `cli export --merge`'s, within
     mergeRtol relative (+ mergeAtol).
  3. peft.AutoPeftModelForCausalLM.from_pretrained(adapter), twice:
       - as exported: peft reads base_model_name_or_path ("tabrl-parity/<case>-base", a Hub
         id, never a path) and transformers loads it; run from DIR/<case>, where a folder of
         that name holds the base, so the id resolves to it as a local path (transformers
         looks for a local folder first), with the adapter files untouched;
       - given the base's folder: a COPY of the adapter folder whose adapter_config.json names
         the base folder's absolute path (AutoPeftModel takes no base argument), run from DIR
         where the Hub id resolves to nothing.
     Each must score TabRL's logprobs within tolerance.
  4. transformers.AutoModelForCausalLM.from_pretrained(merged folder): the logprobs within
     tolerance of TabRL's with the adapter and of TabRL's scoring the merged folder, and
     moved from the base's by >= 100x tolerance.

Tolerance (plan.json): 1e-4 max abs per logprob, the PEFT round trip's (TabRL computes in f32
on the GPU, here f64; seen there: ~5e-6).

Writes DIR/export-report.json and prints it; exit status 0 only when every check passes.
Runs offline.

    python3 tools/parity/export_roundtrip.py DIR [--device auto|cpu|cuda]
"""

import json
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from parity_common import (  # noqa: E402 - sets the offline variables before transformers loads
    F64,
    compare,
    error_entry,
    make_log,
    peft_against_tabrl,
    score,
    setup_torch,
    unknown_lora_keys,
    versions,
    within,
)
import torch  # noqa: E402
import transformers  # noqa: E402
from peft import AutoPeftModelForCausalLM  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

log = make_log("export_roundtrip")


def load_causal_lm(path, device):
    model = transformers.AutoModelForCausalLM.from_pretrained(path)
    return model.to(device=device, dtype=F64).eval()


def pick_device(arg, plan, root):
    """CUDA when asked or available and it runs a float64 forward of the first base; else CPU."""
    if arg == "cpu" or not torch.cuda.is_available():
        if arg == "cuda":
            raise SystemExit("--device cuda: torch sees no CUDA device")
        return torch.device("cpu")
    device = torch.device("cuda")
    try:
        c = plan["cases"][0]
        m = load_causal_lm(os.path.join(root, c["paths"]["base"]), device)
        score(m, [c["sequences"][0][:4]], device)
        del m
        return device
    except Exception as e:  # noqa: BLE001 - fall back to the CPU, said in the report
        if arg == "cuda":
            raise
        log(f"float64 on CUDA failed ({type(e).__name__}: {e}); using the CPU")
        return torch.device("cpu")


def base_name_of(model):
    """The path or id transformers loaded the base from."""
    cfg = model.get_base_model().config if hasattr(model, "get_base_model") else model.config
    return getattr(cfg, "_name_or_path", None) or getattr(cfg, "name_or_path", None)


def peft_from_pretrained(root, plan, case, device, ours):
    base_dir = os.path.join(root, case["paths"]["base"])
    adapter = os.path.join(root, case["paths"]["adapter"])
    merged_dir = os.path.join(root, case["paths"]["merged"])
    base = load_causal_lm(base_dir, device)
    got = peft_against_tabrl(base, adapter, case, ours, plan, device)
    pm, fields = got["pm"], got["fields"]
    fields["loaded"]["base_model_name_or_path"] = pm.peft_config["default"].base_model_name_or_path

    # peft's own merge against cli export's
    rtol, atol = plan["mergeRtol"], plan["mergeAtol"]
    theirs = {k: v.detach().cpu() for k, v in pm.merge_and_unload().state_dict().items()}
    file = load_file(os.path.join(merged_dir, "model.safetensors"))
    worst, not_in_peft = 0.0, []
    for k, v in file.items():
        if k not in theirs:
            not_in_peft.append(k)
            continue
        t = theirs[k].double()
        ratio = ((v.double() - t).abs() / (atol + rtol * t.abs())).max().item()
        worst = max(worst, ratio if math.isfinite(ratio) else float("inf"))
    merge = {"worst_ratio": worst, "tensors": len(file), "not_in_peft": not_in_peft[:4]}
    return {
        **fields,
        "adapter_effect_max_abs": got["effect"],
        "merge_and_unload_vs_cli_export": merge,
        "pass": bool(got["ok"] and worst <= 1 and not not_in_peft),
    }


def auto_peft(adapter, cwd, case, device, ours, tol):
    """AutoPeftModelForCausalLM.from_pretrained(adapter) run from `cwd` (where a relative base
    name resolves), scored against TabRL's logprobs with the adapter."""
    here = os.getcwd()
    os.chdir(cwd)
    try:
        model = AutoPeftModelForCausalLM.from_pretrained(adapter)
    finally:
        os.chdir(here)
    model = model.to(device=device, dtype=F64).eval()
    lora = compare(ours["lora"], score(model, case["sequences"], device))
    return {
        "cwd": cwd,
        "base_loaded_from": base_name_of(model),
        "peft_class": type(model).__name__,
        "lora": lora,
        "pass": within(lora, tol),
    }


def merged_model(root, plan, case, device, ours):
    tol = plan["tolerance"]
    model = load_causal_lm(os.path.join(root, case["paths"]["merged"]), device)
    lp = score(model, case["sequences"], device)
    vs_lora = compare(ours["lora"], lp)
    vs_tabrl_merged = compare(ours["merged"], lp)
    moved = compare(ours["base"], lp)["max_abs"]
    return {
        "architecture": type(model).__name__,
        "vs_tabrl_lora": vs_lora,
        "vs_tabrl_merged": vs_tabrl_merged,
        "moved_from_base_max_abs": moved,
        "pass": within(vs_lora, tol) and within(vs_tabrl_merged, tol) and moved >= plan["minAdapterEffect"],
    }


def attempt(name, fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - report and go on
        r = {**error_entry(e), "pass": False}
    log(f"  {name}: {'pass' if r.get('pass') else 'FAIL'}"
        + (f" ({r['error']})" if "error" in r else ""))
    return r


def run_case(root, plan, case, device):
    tol = plan["tolerance"]
    case_dir = os.path.join(root, case["name"])
    adapter = os.path.join(root, case["paths"]["adapter"])
    ours = json.load(open(os.path.join(root, case["paths"]["logprobs"])))
    config_json = json.load(open(os.path.join(adapter, "adapter_config.json")))
    unknown = unknown_lora_keys(config_json)
    name = config_json.get("base_model_name_or_path")
    adapter_config = {
        "unknown_keys": unknown,
        "base_model_name_or_path": name,
        "pass": not unknown and name == case["baseRepoId"],
    }
    log(f"  adapter_config.json: {'pass' if adapter_config['pass'] else 'FAIL'} "
        f"base_model_name_or_path {name!r}, unknown keys {unknown}")

    def given_base():
        copy = os.path.join(case_dir, "adapter-given-base")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(adapter, copy)
        patched = dict(config_json, base_model_name_or_path=os.path.abspath(
            os.path.join(root, case["paths"]["base"])))
        with open(os.path.join(copy, "adapter_config.json"), "w") as f:
            json.dump(patched, f, indent=2)
        return auto_peft(os.path.abspath(copy), os.path.abspath(root), case, device, ours, tol)

    r = {
        "name": case["name"],
        "adapter": case["paths"]["adapter"],
        "adapter_config": adapter_config,
        "peft_from_pretrained": attempt(
            "PeftModel.from_pretrained", lambda: peft_from_pretrained(root, plan, case, device, ours)),
        "auto_peft_as_exported": attempt(
            "AutoPeftModelForCausalLM (as exported)",
            lambda: auto_peft(os.path.abspath(adapter), os.path.abspath(case_dir), case, device, ours, tol)),
        "auto_peft_given_base": attempt("AutoPeftModelForCausalLM (given the base folder)", given_base),
        "merged": attempt("AutoModelForCausalLM (merged)",
                          lambda: merged_model(root, plan, case, device, ours)),
    }
    r["pass"] = all(r[k]["pass"] for k in (
        "adapter_config", "peft_from_pretrained", "auto_peft_as_exported", "auto_peft_given_base", "merged"))
    return r


def main():
    args = sys.argv[1:]
    device_arg = "auto"
    if "--device" in args:
        i = args.index("--device")
        device_arg = args[i + 1] if i + 1 < len(args) else ""
        del args[i:i + 2]
    if len(args) != 1 or args[0].startswith("-") or device_arg not in ("auto", "cpu", "cuda"):
        sys.exit("usage: export_roundtrip.py DIR [--device auto|cpu|cuda]"
                 "   (DIR from `export-roundtrip export DIR`)")
    root = os.path.abspath(args[0])
    setup_torch()
    plan = json.load(open(os.path.join(root, "plan.json")))
    device = pick_device(device_arg, plan, root)
    log(f"device {device}, tolerance {plan['tolerance']}, min adapter effect {plan['minAdapterEffect']}")
    report = {
        "tool": "tabrl export round trip, PyTorch half (tools/parity/export_roundtrip.py)",
        "versions": versions(),
        "device": str(device) + (f" ({torch.cuda.get_device_name()})" if device.type == "cuda" else ""),
        "tolerance": {
            "logprob_max_abs": plan["tolerance"],
            "min_adapter_effect": plan["minAdapterEffect"],
            "merge_rtol": plan["mergeRtol"],
            "merge_atol": plan["mergeAtol"],
        },
        "cases": [],
    }
    for i, case in enumerate(plan["cases"]):
        log(f"[{i + 1}/{len(plan['cases'])}] {case['name']}")
        try:
            report["cases"].append(run_case(root, plan, case, device))
        except Exception as e:  # noqa: BLE001 - report and go on
            report["cases"].append({**error_entry(e, name=case["name"]), "pass": False})
    report["pass"] = bool(report["cases"]) and all(c["pass"] for c in report["cases"])
    with open(os.path.join(root, "export-report.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report, indent=1))
    log("PASS" if report["pass"] else "FAIL")
    sys.exit(0 if report["pass"] else 1)


if __name__ == "__main__":
    main()
