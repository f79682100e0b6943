"""Run inside an environment with LLaMA-Factory: load an export and parse a training YAML.

Loads the ShareGPT dataset and the OpenAI-messages JSONL through LLaMA-Factory's own data
pipeline (its dataset_info parser, ``datasets`` loading and its ``sharegpt`` / ``openai``
converters) and counts the rows it would skip. Renders every tool call of the export with the
recipe's chat template, as training sees it, and parses the text back with the same template's
tool extractor, as LLaMA-Factory's own OpenAI-compatible server (``llamafactory-cli api``) does
when it serves the trained model. With a file of evaluation requests (the learner's chat
requests, as sent over HTTP), renders each through LLaMA-Factory's API server's conversion and
compares it, byte for byte, with the training sample's prompt before the same reply.

Usage: python llamafactory_probe.py DATASET_DIR DATASET_NAME TRAIN_YAML [REQUESTS_JSON];
prints one JSON line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import yaml
from llamafactory.api.chat import _process_request
from llamafactory.api.protocol import ChatCompletionRequest
from llamafactory.data.data_utils import Role
from llamafactory.data.loader import _load_single_dataset
from llamafactory.data.parser import get_dataset_list
from llamafactory.data.template import TEMPLATES, Template
from llamafactory.hparams.parser import _parse_train_args

# LLaMA-Factory's description of the OpenAI-messages JSONL (its ``openai`` formatting).
OPENAI_ENTRY = {
    "formatting": "openai",
    "columns": {"messages": "messages", "tools": "tools"},
    "tags": {
        "role_tag": "role",
        "content_tag": "content",
        "user_tag": "user",
        "assistant_tag": "assistant",
        "observation_tag": "tool",
        "function_tag": "function_call",
        "system_tag": "system",
    },
}


class Utf8:
    """A tokenizer whose ids are UTF-8 bytes, so the template's encoding is the text itself."""

    bos_token_id = eos_token_id = None

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return list(text.encode())


def render(
    template: Template, messages: list[dict[str, str]], system: str, tools: str
) -> list[str]:
    """The text of each message as the template lays it out (the first with system and tools)."""
    ids = Template._encode(template, Utf8(), messages, system, tools)  # type: ignore[arg-type]
    return [bytes(turn).decode() for turn in ids]


def load(dataset_dir: str, entry: str, args: Any) -> Any:
    (attr,) = get_dataset_list([entry], dataset_dir)
    assert attr.load_from == "file", attr.load_from
    return _load_single_dataset(attr, *args)


def parsed_arguments(message: dict[str, str], sent: dict[str, Any] | None = None) -> dict[str, str]:
    """A function turn with its calls' arguments as JSON (and, from ``sent``, its text).

    LLaMA-Factory's API server and its openai reader keep OpenAI's string arguments as strings,
    which its formatter then writes as a JSON string, and the server drops the text beside a
    call; vLLM's Qwen template writes both the text and the arguments' JSON, as training does.
    """
    if message["role"] != Role.FUNCTION.value:
        return message
    calls = [{**c, "arguments": json.loads(c["arguments"])} for c in json.loads(message["content"])]
    content = json.dumps(calls, ensure_ascii=False)
    text = (sent or {}).get("content") or ""
    if text:
        content = f"{text}\n<tool_call>{content}</tool_call>"
    return {**message, "content": content}


def _requests(path: str | None) -> list[dict[str, Any]]:
    if not path:
        return []
    with open(path) as f:
        return list(json.load(f))


def main(dataset_dir: str, name: str, train_yaml: str, requests: str | None = None) -> None:
    with open(train_yaml) as f:
        args = yaml.safe_load(f)
    model_args, data_args, training_args, finetuning_args, _ = _parse_train_args(args)
    template = TEMPLATES[args["template"]]
    # The JSONL is described here, not in the export's dataset_info.json: see the test.
    with open(f"{dataset_dir}/dataset_info.json") as f:
        info = json.load(f)
    info[f"{name}_openai"] = {"file_name": f"{name}.openai.jsonl", **OPENAI_ENTRY}
    with open(f"{dataset_dir}/dataset_info.json", "w") as f:
        json.dump(info, f)
    loaded = (model_args, data_args, training_args)
    sharegpt = load(dataset_dir, name, loaded)
    openai = load(dataset_dir, f"{name}_openai", loaded)
    with open(f"{dataset_dir}/{name}.json") as f:
        rows = json.load(f)
    calls, texts_beside_calls = 0, 0
    mismatched = []
    for row in rows:
        for turn in row["conversations"]:
            if turn["from"] != "function_call":
                continue
            calls += 1
            value = turn["value"]
            if "<tool_call>" in value:
                texts_beside_calls += 1
                value = value[value.index("<tool_call>") + 11 : value.rindex("</tool_call>")]
            sent = json.loads(value)
            sent = sent if isinstance(sent, list) else [sent]
            slots = template.format_function.apply(
                content=turn["value"],
                thought_words=template.thought_words,
                tool_call_words=template.tool_call_words,
            )
            text = "".join(s for s in slots if isinstance(s, str)).removesuffix("<|im_end|>\n")
            parsed = template.extract_tool(text)
            back = (
                [{"name": c.name, "arguments": json.loads(c.arguments)} for c in parsed]
                if isinstance(parsed, list)
                else parsed
            )
            if back != [{"name": c["name"], "arguments": c["arguments"]} for c in sent]:
                mismatched.append({"id": row["id"], "rendered": text, "parsed": str(back)})

    def broken(dataset: Any) -> list[int]:
        # LLaMA-Factory turns a malformed row into an empty prompt instead of raising.
        return [i for i, r in enumerate(dataset) if not (r["_prompt"] and r["_response"])]

    samples = {}
    for row, converted in zip(rows, sharegpt, strict=True):
        turns = converted["_prompt"] + converted["_response"]
        samples[row["id"]] = render(template, turns, converted["_system"], converted["_tools"])
    compared, differing = 0, []
    # The OpenAI file's conversation, turn for turn (system and tools aside: LLaMA-Factory's
    # openai reader appends a newline to a system prompt with tools, and ``datasets`` types the
    # tools column as one struct, so each schema comes back with the others' keys as nulls).
    openai_same, openai_differing = 0, []
    openai_system_newline = openai_tools_kept = 0
    for row, shared, converted in zip(rows, sharegpt, openai, strict=True):
        turns = [parsed_arguments(m) for m in converted["_prompt"] + converted["_response"]]
        text = render(template, turns, "", "")
        if text == render(template, shared["_prompt"] + shared["_response"], "", ""):
            openai_same += 1
        else:
            openai_differing.append({"id": row["id"], "openai": text[:3]})
        openai_system_newline += converted["_system"] == row["system"] + "\n"
        openai_tools_kept += json.loads(converted["_tools"]) == json.loads(row["tools"])
    for request in _requests(requests):
        body = ChatCompletionRequest.model_validate(request["body"])
        turns, system, tools, *_ = _process_request(body)
        sent = [m for m in request["body"]["messages"] if m["role"] != "system"]
        turns = [parsed_arguments(m, o) for m, o in zip(turns, sent, strict=True)]
        asked = "".join(
            render(
                template, [*turns, {"role": "assistant", "content": ""}], system or "", tools or ""
            )[:-1]
        )
        trained = "".join(samples[request["id"]][: len(turns)])
        compared += 1
        if asked != trained:
            pairs = zip(asked, trained, strict=False)
            at = next((i for i, (a, b) in enumerate(pairs) if a != b), len(trained))
            differing.append(
                {
                    "turn": request["turn"],
                    "asked": asked[at - 80 : at + 200],
                    "trained": trained[at - 80 : at + 200],
                }
            )
    print(
        json.dumps(
            {
                "rows": len(rows),
                "sharegpt_loaded": len(sharegpt),
                "broken": [rows[i]["id"] for i in broken(sharegpt)],
                "openai_loaded": len(openai),
                "openai_broken": [rows[i]["id"] for i in broken(openai)],
                "tools_kept": all(
                    c["_tools"] == r["tools"] for r, c in zip(rows, sharegpt, strict=True)
                ),
                "openai_renders_as_sharegpt": openai_same,
                "openai_system_newline": openai_system_newline,
                "openai_tools_kept": openai_tools_kept,
                "openai_differences": openai_differing[:3],
                "tool_calls": calls,
                "texts_beside_calls": texts_beside_calls,
                "tool_call_mismatches": mismatched[:3],
                "n_tool_call_mismatches": len(mismatched),
                "requests_compared": compared,
                "request_differences": differing[:3],
                "n_request_differences": len(differing),
                "model": model_args.model_name_or_path,
                "cutoff_len": data_args.cutoff_len,
                "finetuning_type": finetuning_args.finetuning_type,
                "learning_rate": training_args.learning_rate,
                "deepspeed": training_args.deepspeed,
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:5])
