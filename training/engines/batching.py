"""Sequences -> the [B, T] batch convention of `training/api.py`.

    >>> b = pack_sequences([[5, 6], [7]], [[8, 9], [10, 11, 12]], pad_id=0,
    ...                    token_values={"behav_logprobs": [[-1.0, -2.0], [-3.0, -4.0, -5.0]]})
    >>> b["input_ids"].tolist()
    [[5, 6, 8, 9], [7, 10, 11, 12]]
    >>> b["loss_mask"].tolist()
    [[0, 0, 1, 1], [0, 1, 1, 1]]
    >>> b["behav_logprobs"].tolist()
    [[0.0, 0.0, -1.0, -2.0], [0.0, -3.0, -4.0, -5.0]]
"""

from __future__ import annotations

from typing import Sequence


def pack_sequences(prompts: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]], *,
                   pad_id: int, token_values: dict[str, Sequence[Sequence[float]]] | None = None,
                   seq_values: dict[str, Sequence[float]] | None = None,
                   pad_to_multiple_of: int = 1,
                   output_masks: Sequence[Sequence[int] | None] | None = None) -> dict:
    """Right-padded `input_ids`, `attention_mask`, `loss_mask` (completion tokens) [B, T].

    `token_values[k][b]` holds one float per output token (behaviour logprobs, versions,
    advantages...) and lands on the completion positions of row b; `seq_values[k]` gives
    one float per sequence ([B] tensors). `output_masks[b]` (0/1 per output token, None =
    all 1) keeps tool output of a multi-turn episode out of `loss_mask`.
    """
    import torch

    if len(prompts) != len(outputs):
        raise ValueError(f"{len(prompts)} prompts but {len(outputs)} outputs")
    lengths = [len(p) + len(o) for p, o in zip(prompts, outputs)]
    width = -(-max(lengths) // pad_to_multiple_of) * pad_to_multiple_of
    n = len(prompts)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    attn = torch.zeros((n, width), dtype=torch.long)
    loss = torch.zeros((n, width), dtype=torch.long)
    values = {k: torch.zeros((n, width), dtype=torch.float32) for k in (token_values or {})}
    for b, (p, o) in enumerate(zip(prompts, outputs)):
        ids[b, : len(p) + len(o)] = torch.tensor(list(p) + list(o), dtype=torch.long)
        attn[b, : len(p) + len(o)] = 1
        mask = output_masks[b] if output_masks is not None else None
        if mask is not None and len(mask) != len(o):
            raise ValueError(f"output_masks[{b}] has {len(mask)} values for {len(o)} tokens")
        loss[b, len(p): len(p) + len(o)] = 1 if mask is None else torch.tensor(list(mask))
        for k, per_seq in (token_values or {}).items():
            if len(per_seq[b]) != len(o):
                raise ValueError(f"{k}[{b}] has {len(per_seq[b])} values for {len(o)} tokens")
            values[k][b, len(p): len(p) + len(o)] = torch.tensor(per_seq[b], dtype=torch.float32)
    batch = {"input_ids": ids, "attention_mask": attn, "loss_mask": loss, **values}
    for k, vals in (seq_values or {}).items():
        batch[k] = torch.tensor(list(vals), dtype=torch.float32)
    return batch


def slice_batch(batch: dict, index) -> dict:
    """Rows `index` (a slice or index tensor) of every [B, ...] tensor in the batch."""
    return {k: v[index] for k, v in batch.items()}
