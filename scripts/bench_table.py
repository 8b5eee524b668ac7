"""Markdown tables for BENCHMARKS.md from one device run of `npm run bench` (tabrl.json)
and scripts/bench_torch.py (torch.json), both from the same call:

    python3 scripts/bench_table.py tabrl.json torch.json
"""

import json
import sys


def num(x):
    if isinstance(x, dict):
        x = x.get("tflops")
    return x if isinstance(x, (int, float)) else None


def fmt(x):
    return f"{x:.1f}" if x is not None else "-"


def main(tabrl_path, torch_path):
    d = json.load(open(tabrl_path))
    t = json.load(open(torch_path))
    torch_rows = {(r["name"], r["op"]): r for r in t["shapes"]}
    unsafe = {(r["name"], r["op"]): r for r in d.get("unsafe", {}).get("shapes", [])}
    print("| shape (MxKxN) | GEMM | f32 TFLOP/s | torch fp32 | f32 / torch | f16 tiled | "
          "f16 subgroup-matrix | torch fp16 | sgmat / torch fp16 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in d["shapes"]:
        key = (r["name"], r["op"])
        tr = torch_rows.get(key, {})
        u = unsafe.get(key, {})
        f32 = num(r.get("f32"))
        t32 = num(tr.get("fp32"))
        t16 = num(tr.get("fp16"))
        f16 = num(u.get("f16Tiled"))
        sg = num(u.get("f16Default"))
        ratio = f"{f32 / t32:.0%}" if f32 and t32 else "-"
        ratio16 = f"{sg / t16:.0%}" if sg and t16 else "-"
        what = r.get("what", r["op"])
        print(f"| {r['name']} ({r['m']}x{r['k']}x{r['n']}) | {r['op']} {what if what != r['op'] else ''} | "
              f"{fmt(f32)} | {fmt(t32)} | {ratio} | {fmt(f16)} | {fmt(sg)} | {fmt(t16)} | {ratio16} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
