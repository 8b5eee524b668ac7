"""Shared PyTorch helpers of the parity scripts (export_roundtrip.py, peft_roundtrip.py,
model_parity.py): offline Hub settings, logprob scoring and comparing, loading an adapter
with peft and checking it against its files, random LoRA adapters, library versions.

Importing this module sets the Hub's offline variables before transformers loads, so
import it before anything that imports transformers. The scripts import it by name, their
own folder being first on sys.path when run as `python3 tools/parity/X.py`.
"""

import dataclasses
import math
import os
import platform
import sys
import traceback
import warnings

for _k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402
import transformers  # noqa: E402
import peft  # noqa: E402
import safetensors  # noqa: E402
from peft import PeftModel, get_peft_model_state_dict  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

F64 = torch.float64


def make_log(tag):
    """A print to stderr, each line prefixed with [tag]."""

    def log(*args):
        print(f"[{tag}]", *args, file=sys.stderr, flush=True)

    return log


def setup_torch():
    """Every CPU core for torch, transformers' logging to errors only."""
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    transformers.logging.set_verbosity_error()


def versions():
    """The library versions a report names."""
    return {
        "peft": peft.__version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "safetensors": safetensors.__version__,
        "python": platform.python_version(),
    }


def error_entry(e, **fields):
    """Prints the traceback of `e` to stderr; a report entry naming it, with `fields` first."""
    traceback.print_exc(file=sys.stderr)
    return {**fields, "error": f"{type(e).__name__}: {e}"}


def score(model, sequences, device=None):
    """Per sequence: log p(ids[t + 1] | ids[<= t]) for t = 0 .. n - 2, each sequence alone
    (no padding), in float64; None where not finite."""
    out = []
    with torch.no_grad():
        for seq in sequences:
            ids = torch.tensor([seq], dtype=torch.long, device=device)
            logits = model(input_ids=ids).logits[0, :-1].to(F64)
            lp = torch.log_softmax(logits, dim=-1).gather(-1, ids[0, 1:, None]).squeeze(-1)
            out.append([v if math.isfinite(v) else None for v in lp.cpu().tolist()])
    return out


def score_with_and_without(pm, sequences, device=None):
    """A peft model's logprobs with its adapter, and with the adapter disabled."""
    lp = score(pm, sequences, device)
    with pm.disable_adapter():
        lp_base = score(pm, sequences, device)
    return lp, lp_base


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


def unknown_lora_keys(config_json):
    """The keys of an adapter_config.json that are no field of peft's LoraConfig, sorted."""
    lora_fields = {f.name for f in dataclasses.fields(peft.LoraConfig)}
    return sorted(set(config_json) - lora_fields)


def loaded_adapter_check(pm, want, adapter_dir):
    """A PeftModel loaded from `adapter_dir` against the plan's lora (rank, alpha, targets)
    and the folder's adapter_model.safetensors: the config, and every tensor of the file, and
    nothing else, in peft's model, unchanged (f32 -> f64 is exact)."""
    loaded = pm.peft_config["default"]
    config_matches = (
        loaded.r == want["rank"]
        and loaded.lora_alpha == want["alpha"]
        and sorted(loaded.target_modules) == sorted(want["targets"])
        and not loaded.use_rslora
        and not loaded.use_dora
    )
    in_file = load_file(os.path.join(adapter_dir, "adapter_model.safetensors"))
    in_model = get_peft_model_state_dict(pm)
    missing = sorted(set(in_file) - set(in_model))
    extra = sorted(set(in_model) - set(in_file))
    weights_max_abs = max(
        (
            (in_model[k].cpu().double() - in_file[k].double()).abs().max().item()
            for k in in_file
            if k in in_model
        ),
        default=float("nan"),
    )
    return {
        "loaded": loaded,
        "config_matches": config_matches,
        "tensors": len(in_file),
        "missing": missing,
        "extra": extra,
        "weights_max_abs": weights_max_abs,
        "ok": bool(config_matches and not missing and not extra and weights_max_abs == 0),
    }


def peft_against_tabrl(base, adapter_dir, case, ours, plan, device=None):
    """PeftModel.from_pretrained(base, adapter_dir) in float64, checked against the folder's
    files and the case's lora (loaded_adapter_check), and scored with and without the adapter
    against TabRL's logprobs `ours` ({"lora", "base"}). Returns the model ("pm"), the report
    fields ("fields": config_matches .. base), the adapter's effect ("effect", max abs) and
    whether all is within the plan's tolerance and minAdapterEffect ("ok")."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pm = PeftModel.from_pretrained(base, adapter_dir)
    pm = pm.to(device=device, dtype=F64).eval()
    check = loaded_adapter_check(pm, case["lora"], adapter_dir)
    loaded = check["loaded"]
    lp, lp_base = score_with_and_without(pm, case["sequences"], device)
    lora = compare(ours["lora"], lp)
    base_cmp = compare(ours["base"], lp_base)
    effect = compare(lp, lp_base)["max_abs"]
    tol = plan["tolerance"]
    fields = {
        "config_matches": check["config_matches"],
        "loaded": {"r": loaded.r, "lora_alpha": loaded.lora_alpha, "targets": sorted(loaded.target_modules)},
        "tensors": check["tensors"],
        "missing_in_peft": check["missing"][:4],
        "extra_in_peft": check["extra"][:4],
        "weights_max_abs": check["weights_max_abs"],
        "load_warnings": [str(w.message)[:300] for w in caught][:5],
        "lora": lora,
        "base": base_cmp,
    }
    ok = bool(
        check["ok"]
        and within(lora, tol)
        and within(base_cmp, tol)
        and effect >= plan["minAdapterEffect"]
    )
    return {"pm": pm, "fields": fields, "effect": effect, "ok": ok}


def random_lora(base, r, lora_alpha, lora_dropout, target_modules, b_std, seed):
    """get_peft_model on `base` with a LoraConfig of these fields, every lora_B drawn
    N(0, b_std^2) from a generator seeded `seed` (peft starts it at 0)."""
    lcfg = peft.LoraConfig(
        r=r,
        lora_alpha=lora_alpha,
        lora_dropout=lora_dropout,
        target_modules=target_modules,
        bias="none",
        task_type="CAUSAL_LM",
    )
    pm = peft.get_peft_model(base, lcfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.copy_(b_std * torch.randn(tuple(p.shape), generator=g, dtype=F64))
    return pm
