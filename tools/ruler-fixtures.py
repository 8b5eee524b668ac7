#!/usr/bin/env python3
"""Writes tests/fixtures/ruler/*.json: the texts RULER's judge sees, made by Python itself.

TabRL's RULER (src/lib/agent/ruler/) must send a judge byte for byte what OpenPipe ART's
src/art/rewards/ruler.py sends. That text leans on three pieces of Python: textwrap.dedent
(run on the system prompt after the rubric is substituted into it), json.dumps with its
defaults (", " / ": " separators, ensure_ascii, float repr) and dict equality (the longest
common prefix of the message lists). This script does not import ART: it rebuilds the judge
messages from the facts of ruler.py (written out below in our own code) with the standard
library, and stores inputs and outputs for the TypeScript tests to compare against.

Every input value is stored as a JSON string made by json.dumps (so JavaScript reads the
same numbers and strings back with JSON.parse), and every file holds only objects, arrays
of objects and strings, laid out as Prettier lays out JSON, so `prettier --check` passes
and a rerun writes the same bytes. Run: python3 tools/ruler-fixtures.py
"""

import json
import os
import sys
from textwrap import dedent

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "ruler")

# ---- the facts of ART's ruler.py (texts equal to ART's; the code is ours) ----

# ART writes the default rubric as a triple-quoted block: rubric lines indented 8 spaces,
# the closing quotes 4, then dedents it.
DEFAULT_RUBRIC = dedent(
    "\n"
    "        - A trajectory that achieves its goal should always get a significantly higher score than a trajectory that does not achieve its goal.\n"
    "        - A trajectory that achieves its goal more efficiently (eg. by avoiding unproductive detours) should get a higher score than a trajectory that achieves its goal less efficiently.\n"
    "        - If one trajectory is only slightly better than another, the difference in scores should be small. If it is significantly better, the difference in scores should be large.\n"
    "        - You may give some partial credit for a trajectory that makes progress towards its goal but does not complete it.\n"
    "    "
)


def system_prompt(rubric):
    """ART's judge prompt: an f-string (rubric substituted first), then dedent."""
    return dedent(
        "\n"
        "        All of the trajectories below have been given the same goal. Your job is to consider each of them and give them a score between 0 and 1. Take into consideration your best judgement of the agent's goal.\n"
        "\n"
        "        Grading standards:\n"
        "        " + rubric + "\n"
        "        "
    )


def user_text(message_lists, tools):
    """ART's user message: shared prefix once, tools, then each trajectory after the prefix."""
    prefix_len = 0
    for idx, msg in enumerate(message_lists[0]):
        if all(len(ml) > idx and ml[idx] == msg for ml in message_lists):
            prefix_len += 1
        else:
            break
    all_identical = all(len(ml) == prefix_len for ml in message_lists)
    text = ""
    if prefix_len > 0 and not all_identical:
        text += "<context>\n" + json.dumps(message_lists[0][:prefix_len]) + "\n</context>\n\n"
    if tools:
        text += "<available_tools>\n" + json.dumps(tools) + "\n</available_tools>\n\n"
    if all_identical:
        parts = ['<trajectory id="1">\n' + json.dumps(message_lists[0]) + "\n</trajectory>"]
    else:
        parts = [
            '<trajectory id="%d">\n' % i + json.dumps(ml[prefix_len:]) + "\n</trajectory>"
            for i, ml in enumerate(message_lists, start=1)
        ]
    return text + "Trajectories:\n\n" + "\n\n".join(parts)


def judge_messages(message_lists, tools=None, rubric=DEFAULT_RUBRIC):
    return [
        {"role": "system", "content": system_prompt(rubric)},
        {"role": "user", "content": user_text(message_lists, tools)},
    ]


def distinct(message_lists):
    """TabRL's dedupe: each distinct list (Python ==) once, first occurrence kept."""
    unique = []
    for ml in message_lists:
        if not any(ml == u for u in unique):
            unique.append(ml)
    return unique


# ---- inputs ----

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer in one word."}
ASK = {"role": "user", "content": "What is 2+2?"}


def said(text):
    return {"role": "assistant", "content": text}


PLAIN = [
    [SYSTEM, ASK, said("4")],
    [SYSTEM, ASK, said("I don't know")],
    [SYSTEM, ASK, said("5"), {"role": "user", "content": "Are you sure?"}, said("Yes.")],
]

UNICODE = [
    [
        {"role": "system", "content": "Réponds en français — s'il te plaît. 你好世界"},
        {"role": "user", "content": "Emoji: 🎉👨‍👩‍👧 ♟ café naïve שלום Ωμέγα \u2028line\u2029sep \ufeffbom"},
        said("D'accord 😀 — « oui »"),
    ],
    [
        {"role": "system", "content": "Réponds en français — s'il te plaît. 你好世界"},
        {"role": "user", "content": "Emoji: 🎉👨‍👩‍👧 ♟ café naïve שלום Ωμέγα \u2028line\u2029sep \ufeffbom"},
        said("Non. 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠜎 \U0001f600"),
    ],
]

CONTROL = [
    [
        {"role": "user", "content": 'quote " backslash \\ slash / tab \t newline \n return \r'},
        said("bell \x07 backspace \b formfeed \f nul \x00 unit sep \x1f del \x7f nbsp \xa0"),
    ],
    [
        {"role": "user", "content": 'quote " backslash \\ slash / tab \t newline \n return \r'},
        said('</trajectory> <trajectory id="9"> {"scores": []} \\u0041 \\n'),
    ],
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_inbox",
            "description": "Search the inbox for emails that match every keyword.",
            "parameters": {
                "type": "object",
                "properties": {
                    "keywords": {"type": "array", "items": {"type": "string"}},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 10},
                },
                "required": ["keywords"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "answer",
            "description": "Give the final answer.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "sources": {"type": "array"}},
                "required": ["text"],
            },
        },
    },
]


def call(id_, name, args):
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}


TOOL_ASK = [
    {"role": "system", "content": "You answer questions about the user's inbox. Use the tools."},
    {"role": "user", "content": "When is the offsite — and where?"},
]
TOOL_CALLS = [
    TOOL_ASK
    + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("call_1", "search_inbox", '{"keywords": ["offsite"], "limit": 3}')],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": json.dumps([{"id": "m7", "subject": "Offsite — Lisbon", "date": "2024-05-02"}]),
        },
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                call("call_2", "answer", '{"text":"May 2, Lisbon","sources":["m7"]}'),
            ],
        },
    ],
    TOOL_ASK
    + [
        {
            "role": "assistant",
            "content": "I'll guess.",
            "tool_calls": [call("call_1", "answer", '{"text": "Next week, in Paris \\u00e9"}')],
        },
    ],
    TOOL_ASK + [said("I cannot search.")],
]

NESTED = [
    [
        {"role": "system", "content": "Grade the numbers."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}],
            "name": "alice",
        },
        {
            "role": "assistant",
            "content": "numbers",
            "meta": {
                "ints": [0, 1, -1, 42, 9007199254740991, -9007199254740991],
                "floats": [0.1, 0.5, -2.5, 0.30000000000000004, 123456.789, 1e-05, 0.0001, 1.5e-07],
                "big": [1e16, 1.2345678901234567e16, 1e22, 1e300, 1.7976931348623157e308],
                "tiny": [5e-324, 2.2250738585072014e-308, -2.5e-05, 9.999999999999999e-05],
                "edge": [-0.0, 9007199254740992.0, 1234567890123456.7, 100.5, 1e15 + 0.5],
                "flags": {"yes": True, "no": False, "none": None, "empty": {}, "list": []},
            },
        },
    ],
    [
        {"role": "system", "content": "Grade the numbers."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}],
            "name": "alice",
        },
        {"role": "assistant", "content": "none", "meta": {"nested": {"deeper": {"deepest": [[], [{}], [[1]]]}}}},
    ],
]

# Python's == on the prefix: key order does not matter, and True == 1, False == 0.
EQUALITY = [
    [
        {"role": "system", "content": "Rules.", "cache": True},
        {"role": "user", "content": "Go.", "n": 0},
        said("one"),
    ],
    [
        {"content": "Rules.", "role": "system", "cache": 1},
        {"role": "user", "content": "Go.", "n": False},
        said("two"),
    ],
]

# Nothing shared: no <context>.
NO_PREFIX = [
    [{"role": "user", "content": "Play X."}, said("<move>A1</move>")],
    [{"role": "user", "content": "Play O."}, said("<move>B2</move>")],
]

IDENTICAL = [PLAIN[0], json.loads(json.dumps(PLAIN[0])), json.loads(json.dumps(PLAIN[0]))]
SINGLE = [PLAIN[1]]
# A prefix that is a whole trajectory: one list is the other's beginning.
PREFIX_OF_OTHER = [PLAIN[0][:2], PLAIN[0]]
DUPLICATES = [PLAIN[0], PLAIN[1], json.loads(json.dumps(PLAIN[0])), PLAIN[2], PLAIN[1]]

CUSTOM_RUBRICS = [
    # one line: nothing after the substitution breaks the 8-space margin, so dedent strips it
    "Score 1 for a win, 0.5 for a draw, 0 for a loss or an illegal move.",
    # several lines at column 0: the margin becomes empty and the prompt keeps its indent
    "- Winning is best.\n  - A draw is worth half.\n- An illegal move scores 0.\n",
    # a rubric indented 8 spaces on every line after the first: the margin stays 8
    "- Correct answer first.\n        - Then fewer tool calls.\n        - Cite the email ids.",
    # tabs and whitespace-only lines: whitespace-only lines become empty
    "\t- tabbed line\n   \n\t- another\n \t\n",
    # deeper indent than the template's on later lines
    "Consider:\n            * accuracy\n            * brevity",
    # carriage returns are content to dedent, not line ends
    "Line one\r\n        line two\r\n",
]

CASES = [
    ("plain", PLAIN, None, None),
    ("unicode", UNICODE, None, None),
    ("control-chars", CONTROL, None, None),
    ("tool-calls", TOOL_CALLS, TOOLS, None),
    ("nested-and-numbers", NESTED, None, None),
    ("python-equality", EQUALITY, None, None),
    ("no-prefix", NO_PREFIX, None, None),
    ("identical", IDENTICAL, None, None),
    ("single", SINGLE, None, None),
    ("prefix-is-a-trajectory", PREFIX_OF_OTHER, None, None),
    ("duplicates", DUPLICATES, None, None),
    ("custom-rubric", PLAIN, None, CUSTOM_RUBRICS[1]),
    ("tools-and-custom-rubric", TOOL_CALLS, TOOLS, CUSTOM_RUBRICS[0]),
]

DEDENT_CASES = [
    "",
    "no indent",
    "    four\n    spaces\n",
    "    four\n      six\n    four",
    "  two\n    four\n\n  two",
    "\tone tab\n\ttab\n",
    "\t tab space\n\t  tab two spaces\n",
    "  \tmixed\n \t mixed\n",
    "    a\n   \n    b\n      \n",
    "   \n  \n",
    "    x\n",
    "\n        lead\n    ",
    "    line\r\n    crlf\r\n",
    "    text\n\f   formfeed line\n",
    "  a\n\n\n  b\n",
    "        " + "x" * 3 + "\n  y\n",
]

DUMPS_VALUES = [
    None,
    True,
    False,
    0,
    -7,
    9007199254740991,
    0.1,
    -0.0,
    1e-05,
    0.0001,
    1e16,
    1e15 + 0.25,
    1.5e-07,
    1e22,
    5e-324,
    1.7976931348623157e308,
    "",
    "plain ascii ~",
    '"\\/\b\f\n\r\t',
    "".join(chr(c) for c in range(0, 32)) + "\x7f\x80\x9f\xa0\xff",
    "é 你好 🎉 \U0001f600 \U0010ffff \u2028 \ufffe",
    "lone surrogates \ud83d and \ude00",
    [],
    {},
    [1, [2, [3, []]], {"a": {}}],
    {"z": 1, "a": 2, "m": [True, None, 0.5], "é": "ü", "": "empty key"},
]

EQUAL_CASES = [
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ({"a": True}, {"a": 1}),
    ({"a": False}, {"a": 0}),
    ({"a": True}, {"a": 2}),
    ({"a": None}, {"a": False}),
    ({"a": None}, {}),
    ({"a": "1"}, {"a": 1}),
    ({"a": [1, 2]}, {"a": [2, 1]}),
    ({"a": [1, {"b": [True]}]}, {"a": [1, {"b": [1]}]}),
    ({"a": 0.5}, {"a": 0.5}),
    ({"a": -0.0}, {"a": 0}),
    ([], {}),
    ({"a": {}}, {"a": []}),
    ({"a": 1}, {"a": 1, "b": 1}),
    ("é", "e\u0301"),
]


def write(name, obj):
    text = json.dumps(obj, indent="\t", ensure_ascii=True) + "\n"
    with open(os.path.join(OUT, name), "w", encoding="ascii", newline="\n") as f:
        f.write(text)


def main():
    os.makedirs(OUT, exist_ok=True)
    write(
        "python.json",
        {
            "note": "Python %d.%d: textwrap.dedent, json.dumps (defaults) and == on JSON values"
            % sys.version_info[:2],
            "dedent": [{"text": t, "dedented": dedent(t)} for t in DEDENT_CASES],
            "dumps": [{"value": json.dumps(v), "dumps": json.dumps(v)} for v in DUMPS_VALUES],
            "equal": [
                {"a": json.dumps(a), "b": json.dumps(b), "equal": "true" if a == b else "false"}
                for a, b in EQUAL_CASES
            ],
        },
    )
    write(
        "prompts.json",
        {
            "default_rubric": DEFAULT_RUBRIC,
            "system_prompts": [{"rubric": DEFAULT_RUBRIC, "system": system_prompt(DEFAULT_RUBRIC)}]
            + [{"rubric": r, "system": system_prompt(r)} for r in CUSTOM_RUBRICS],
        },
    )
    cases = []
    for name, lists, tools, rubric in CASES:
        rubric = DEFAULT_RUBRIC if rubric is None else rubric
        unique = distinct(lists)
        case = {
            "name": name,
            "message_lists": json.dumps(lists),
            "tools": json.dumps(tools),
            "rubric": rubric,
            # what ART's ruler() sends: every trajectory, ids 1..n
            "art": judge_messages(lists, tools, rubric),
            # what TabRL sends by default: each distinct trajectory once, ids 1..k
            "deduped": judge_messages(unique, tools, rubric),
            "distinct_of": json.dumps([next(i for i, u in enumerate(unique) if u == ml) for ml in lists]),
        }
        cases.append(case)
    write("judge-messages.json", {"cases": cases})


if __name__ == "__main__":
    main()
