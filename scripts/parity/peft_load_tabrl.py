"""peft loads TabRL's adapters: the second half of scripts/parity/peft-export.ts.

For each case of OUT/manifest.json (written by model_parity.py) whose
OUT/<case>/tabrl-checkpoint/ TabRL exported (adapter_config.json + adapter_model.safetensors,
plus TabRL's optimizer and trainer state, which peft ignores): load the case's model in
float64, wrap it with peft.PeftModel.from_pretrained on that folder, score the case's batch,
and compare with TabRL's own logprobs (OUT/<case>/tabrl-logprobs.json) over the real targets.
Tolerance: 1e-3 max abs (TabRL computes in f32 on the GPU; model_parity.py's bound).
Prints one JSON object; exit status 0 when every case passes.

    python3 scripts/parity/peft_load_tabrl.py /tmp/parity
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import peft  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

import model_parity as mp  # noqa: E402  (its helpers: load, next_token_logprobs)

TOLERANCE = 1e-3


def compare(case, root):
    case_dir = os.path.join(root, case["name"])
    ckpt = os.path.join(case_dir, "tabrl-checkpoint")
    ours = json.load(open(os.path.join(case_dir, "tabrl-logprobs.json")))
    expected = load_file(os.path.join(root, case["expected"]))
    ids = expected["ids"].to(torch.long)
    lengths = expected["lengths"].to(torch.long)
    B, T = ids.shape
    mask = (torch.arange(T)[None, :] < lengths[:, None]).to(torch.long)
    valid = (torch.arange(T - 1)[None, :] + 1) < lengths[:, None]

    model_cls = transformers.AutoModelForCausalLM
    model_dir = os.path.join(root, case["model"])
    try:
        base = mp.load(model_cls, model_dir, "sdpa").to(torch.float64)
    except Exception:  # noqa: BLE001 - as model_parity.py: eager when sdpa cannot
        base = mp.load(model_cls, model_dir, "eager").to(torch.float64)
    pm = peft.PeftModel.from_pretrained(base, ckpt).to(torch.float64).eval()
    with torch.no_grad():
        lp = mp.next_token_logprobs(pm, ids, mask)
    theirs = torch.tensor(
        [float("nan") if v is None else v for v in ours["logprobs"]], dtype=torch.float64
    ).reshape(B, T - 1)
    diff = (lp - theirs)[valid].abs()
    with torch.no_grad(), pm.disable_adapter():
        lp_base = mp.next_token_logprobs(pm, ids, mask)
    adapter_effect = (lp - lp_base)[valid].abs().max().item()
    cfg = json.load(open(os.path.join(ckpt, "adapter_config.json")))
    return {
        "name": case["name"],
        "r": cfg["r"],
        "targets": cfg["target_modules"],
        "max_abs": diff.max().item(),
        "count": int(valid.sum().item()),
        "nan_mismatch": int(torch.isnan(theirs[valid]).sum().item()),
        "adapter_effect_max_abs": adapter_effect,
        "pass": bool(diff.max().item() <= TOLERANCE and adapter_effect > 10 * TOLERANCE),
    }


def main():
    root = sys.argv[1]
    transformers.logging.set_verbosity_error()
    manifest = json.load(open(os.path.join(root, "manifest.json")))
    cases = []
    for case in manifest["cases"]:
        try:
            cases.append(compare(case, root))
        except Exception as e:  # noqa: BLE001 - report and go on
            cases.append({"name": case["name"], "error": f"{type(e).__name__}: {e}", "pass": False})
    report = {
        "tool": "peft loads TabRL checkpoints (scripts/parity/peft_load_tabrl.py)",
        "peft": peft.__version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "tolerance_max_abs": TOLERANCE,
        "pass": all(c["pass"] for c in cases),
        "cases": cases,
    }
    print(json.dumps(report, indent=1))
    sys.exit(0 if report["pass"] else 1)


if __name__ == "__main__":
    main()
