"""Shared PyTorch side of the model benchmarks (bench_generate_torch.py, bench_model_torch.py,
bench_grpo_torch.py): the model shapes built with random weights on CUDA, the LoRA they
train, the sampling settings, CUDA-synchronised timing and the report's version fields.

Importing it sets the Hub's offline variables before transformers loads and turns TF32 off
(true fp32 GEMMs, as TabRL's f32 path computes). The scripts import it by name, their own
folder being first on sys.path when run as `python3 tools/bench/X.py`.
"""

import os
import platform
import sys
import time

for _k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402
import transformers  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")

TF5 = int(transformers.__version__.split(".")[0]) >= 5
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}

# The published config.json values of each model.
SHAPES = {
    "smollm2-135m": dict(
        cls="llama", vocab_size=49152, hidden_size=576, intermediate_size=1536,
        num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
        rms_norm_eps=1e-5, theta=100000.0, tie_word_embeddings=True,
        max_position_embeddings=8192,
    ),
    "qwen2.5-0.5b": dict(
        cls="qwen2", vocab_size=151936, hidden_size=896, intermediate_size=4864,
        num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
        rms_norm_eps=1e-6, theta=1000000.0, tie_word_embeddings=True,
        max_position_embeddings=32768,
    ),
}


def make_log(tag):
    """A print to stderr, each line prefixed with [tag]."""

    def log(*a):
        print(f"[{tag}]", *a, file=sys.stderr, flush=True)

    return log


def error_text(e):
    return f"{type(e).__name__}: {e}"


def build(shape, dtype=torch.float32, attn="eager"):
    """A model of `shape` (a SHAPES entry) on CUDA, torch.manual_seed(0)'s random weights,
    in `dtype`, eval mode."""
    kw = dict(shape)
    cls = kw.pop("cls")
    theta = kw.pop("theta")
    if TF5:
        kw["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
    else:
        kw["rope_theta"] = theta
    if cls == "llama":
        config = transformers.LlamaConfig(**kw)
        model_cls = transformers.LlamaForCausalLM
    else:
        config = transformers.Qwen2Config(**kw)
        model_cls = transformers.Qwen2ForCausalLM
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = model_cls._from_config(config, attn_implementation=attn)
    return model.to(dtype).eval()


def lora(model):
    """peft's LoRA r 8, alpha 16, dropout 0 on TARGETS around `model`."""
    import peft

    lcfg = peft.LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=TARGETS,
                           bias="none", task_type="CAUSAL_LM")
    return peft.get_peft_model(model, lcfg)


def sampling(new):
    """generate() keyword arguments of TabRL's sampling: `new` tokens exactly (eos never ends
    a sequence early), temperature 1, top-k and top-p off, KV cache on."""
    return dict(
        do_sample=True,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        max_new_tokens=new,
        min_new_tokens=new,
        pad_token_id=0,
        use_cache=True,
    )


def timed(fn, reps, warmup, reset_peak=False):
    """Wall ms of each of `reps` CUDA-synchronised calls of fn after `warmup` calls; with
    reset_peak, the peak memory statistics are reset between the two."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    if reset_peak:
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1000)
    return times


def environment(*libraries, python=False):
    """A report's environment fields: the device, torch's and transformers' versions, those
    of the other `libraries` (modules), and with `python` Python's."""
    out = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    for lib in libraries:
        out[lib.__name__] = lib.__version__
    if python:
        out["python"] = platform.python_version()
    return out
