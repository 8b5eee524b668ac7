"""PyTorch's side of `npm run bench` (tools/bench/bench.ts): the same matmul shapes in fp32
with TF32 off (true fp32 GEMMs, as the WGSL f32 path computes), plus fp16 operands
(tensor cores, fp32 accumulation inside cuBLAS) for the f16 paths. Timing: CUDA events
around back-to-back calls after a warmup, best of 3 trials of ~120 ms. Prints ONE JSON
object on stdout.
"""

import json
import sys

import torch

TARGET_MS = 120.0
TRIALS = 3

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
torch.set_float32_matmul_precision("highest")

SMOL = [(576, 576), (576, 192), (576, 1536), (1536, 576), (576, 49152)]


def linear(tokens, in_f, out_f):
    name = f"linear {in_f}x{out_f} @{tokens}"
    return [
        dict(name=name, op="NT", m=tokens, n=out_f, k=in_f),
        dict(name=name, op="NN", m=tokens, n=in_f, k=out_f),
        dict(name=name, op="TN", m=out_f, n=in_f, k=tokens),
    ]


def square(s):
    return [dict(name=f"{s}^3", op=op, m=s, n=s, k=s) for op in ("NN", "NT", "TN")]


SHAPES = square(1024) + square(4096) + [x for i, o in SMOL for x in linear(4096, i, o)]


def time_shape(s, dtype):
    m, n, k, op = s["m"], s["n"], s["k"], s["op"]
    dev = "cuda"
    # Same memory layouts as the WGSL side: a [M,K] (or [K,M] for TN), b [K,N] (or [N,K] for NT).
    a = torch.randn((k, m) if op == "TN" else (m, k), device=dev, dtype=dtype)
    b = torch.randn((n, k) if op == "NT" else (k, n), device=dev, dtype=dtype)
    c = torch.empty((m, n), device=dev, dtype=torch.float32 if dtype == torch.float32 else dtype)
    A = a.t() if op == "TN" else a
    B = b.t() if op == "NT" else b

    def f(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            torch.mm(A, B, out=c)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    f(3)
    est = f(3) / 3
    reps = max(3, min(2000, int(TARGET_MS / max(est, 1e-3)) + 1))
    best = min(f(reps) / reps for _ in range(TRIALS))
    return dict(ms=best, tflops=2 * m * n * k / (best * 1e-3) / 1e12, reps=reps)


def main():
    out = dict(
        torch=torch.__version__,
        cuda=torch.version.cuda,
        device=torch.cuda.get_device_name(0),
        tf32=torch.backends.cuda.matmul.allow_tf32,
        timing=f"CUDA events, best of {TRIALS} runs of ~{TARGET_MS} ms",
        shapes=[],
    )
    for s in SHAPES:
        row = dict(s)
        for label, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
            try:
                row[label] = time_shape(s, dtype)
            except Exception as e:  # noqa: BLE001 - report, keep going
                row[label] = dict(error=str(e)[:300])
            torch.cuda.empty_cache()
        print(s["name"], s["op"], row["fp32"].get("tflops"), file=sys.stderr)
        out["shapes"].append(row)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
