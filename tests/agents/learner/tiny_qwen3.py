"""Build or load a tiny randomly initialised Qwen3 model, offline, in the training environment.

Run with LLaMA-Factory's interpreter (it has torch, transformers and tokenizers):

    python tiny_qwen3.py build OUT_DIR     # tokenizer (byte-level BPE trained here) + model
    python tiny_qwen3.py load CHECKPOINT   # load it back and run one forward pass

Prints one JSON line with what it did.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Every special token LLaMA-Factory's qwen3 template writes, so it never resizes the vocabulary.
SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]
CORPUS = [
    "You are a helpful airline customer service agent. Look up the reservation first.",
    '{"name": "get_reservation_details", "arguments": {"reservation_id": "ABC123"}}',
    "The user wants to cancel flight HAT001 on 2024-05-15 and get a refund.",
    "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ {}[]():,.\"'_-",
]


def build(out: Path) -> dict[str, object]:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(CORPUS * 20, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL[1:],
    )
    tokenizer.save_pretrained(out)
    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        # vLLM's attention kernels take head sizes from 32 up; its max-model-len is the
        # learner's cutoff + 4096.
        head_dim=64,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen3ForCausalLM(config)
    model.save_pretrained(out)
    return {"vocab": len(tokenizer), "params": sum(p.numel() for p in model.parameters())}


def load(checkpoint: Path) -> dict[str, object]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForCausalLM.from_pretrained(checkpoint)
    ids = tokenizer("<|im_start|>user\ncancel my flight<|im_end|>", return_tensors="pt")
    with torch.no_grad():
        logits = model(**ids).logits
    return {
        "model_type": model.config.model_type,
        "logits_shape": list(logits.shape),
        "finite": bool(torch.isfinite(logits).all()),
    }


if __name__ == "__main__":
    action, path = sys.argv[1], Path(sys.argv[2])
    print(json.dumps(build(path) if action == "build" else load(path)))
