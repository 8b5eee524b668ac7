"""Markdown tables for BENCHMARKS.md from one device run of `npm run bench` (tabrl.json)
and tools/bench/bench_torch.py (torch.json), both from the same call:

    python3 tools/bench/bench_table.py tabrl.json torch.json
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
    print("| shape: M x K x N | GEMM | f32 | torch fp32 | f32 / torch fp32 | f16 tiled | "
          "sgmat 64x64 | sgmat 128x128 | torch fp16 | best sgmat / torch fp16 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in d["shapes"]:
        key = (r["name"], r["op"])
        tr = torch_rows.get(key, {})
        u = unsafe.get(key, {})
        f32 = num(r.get("f32"))
        t32 = num(tr.get("fp32"))
        t16 = num(tr.get("fp16"))
        f16 = num(u.get("f16Tiled"))
        sgm = u.get("sgmat", {})
        sg64 = num(sgm.get("w2x2 s2x2 st32"))
        sg128 = num(sgm.get("w2x2 s4x4 st32"))
        best = max([x for x in (sg64, sg128) if x] or [0]) or None
        ratio = f"{f32 / t32:.0%}" if f32 and t32 else "-"
        ratio16 = f"{best / t16:.0%}" if best and t16 else "-"
        what = r.get("what", r["op"])
        label = f"{r['op']}: {what}" if what != r["op"] else r["op"]
        print(f"| {r['name']}: {r['m']} x {r['k']} x {r['n']} | {label} | "
              f"{fmt(f32)} | {fmt(t32)} | {ratio} | {fmt(f16)} | {fmt(sg64)} | {fmt(sg128)} | "
              f"{fmt(t16)} | {ratio16} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
