"""Run inside an environment with LLaMA-Factory: convert an export and parse a training YAML.

Also renders every tool call of the export with the recipe's chat template, as training sees it,
and parses the text back with the same template's tool extractor, as LLaMA-Factory's own
OpenAI-compatible server (``llamafactory-cli api``) does when it serves the trained model.

Usage: python llamafactory_probe.py DATASET_DIR DATASET_NAME TRAIN_YAML; prints one JSON line.
"""

from __future__ import annotations

import json
import sys

import yaml
from llamafactory.data.converter import get_dataset_converter
from llamafactory.data.parser import get_dataset_list
from llamafactory.data.template import TEMPLATES
from llamafactory.hparams.parser import _parse_train_args


def main(dataset_dir: str, name: str, train_yaml: str) -> None:
    with open(train_yaml) as f:
        args = yaml.safe_load(f)
    model_args, data_args, training_args, finetuning_args, _ = _parse_train_args(args)
    (attr,) = get_dataset_list([name], dataset_dir)
    converter = get_dataset_converter(attr.formatting, attr, data_args)
    assert attr.load_from == "file", attr.load_from
    with open(f"{dataset_dir}/{attr.dataset_name}") as f:
        rows = json.load(f)
    template = TEMPLATES[args["template"]]
    broken = []
    calls = 0
    mismatched = []
    for row in rows:
        for turn in row["conversations"]:
            if turn["from"] != "function_call":
                continue
            calls += 1
            sent = json.loads(turn["value"])
            sent = sent if isinstance(sent, list) else [sent]
            slots = template.format_function.apply(content=turn["value"])
            text = "".join(s for s in slots if isinstance(s, str)).removesuffix("<|im_end|>\n")
            parsed = template.extract_tool(text)
            back = (
                [{"name": c.name, "arguments": json.loads(c.arguments)} for c in parsed]
                if isinstance(parsed, list)
                else parsed
            )
            if back != [{"name": c["name"], "arguments": c["arguments"]} for c in sent]:
                mismatched.append({"id": row["id"], "rendered": text, "parsed": str(back)})
        converted = converter(row)
        # LLaMA-Factory turns a malformed row into an empty prompt instead of raising.
        empty = not (converted["_prompt"] and converted["_response"])
        if empty or converted["_tools"] != row["tools"]:
            broken.append(row["id"])
    print(
        json.dumps(
            {
                "rows": len(rows),
                "broken": broken,
                "tool_calls": calls,
                "tool_call_mismatches": mismatched[:3],
                "n_tool_call_mismatches": len(mismatched),
                "model": model_args.model_name_or_path,
                "cutoff_len": data_args.cutoff_len,
                "finetuning_type": finetuning_args.finetuning_type,
                "learning_rate": training_args.learning_rate,
                "deepspeed": training_args.deepspeed,
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:4])
