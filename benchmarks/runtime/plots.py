"""PNG plots of the runtime benchmarks (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_needle(summary: dict, variants: list[str], lengths: list[int], path: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(variants)
    for i, v in enumerate(variants):
        xs = [j + i * width for j in range(len(lengths))]
        axes[0].bar(xs, [summary[str(n)][v]["accuracy"] for n in lengths], width, label=v)
        axes[1].bar(xs, [summary[str(n)][v]["decode_ms_per_token"] for n in lengths], width, label=v)
    for ax, title in zip(axes, ("passkey accuracy", "decode ms / token"), strict=True):
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(lengths))], [str(n) for n in lengths])
        ax.set_xlabel("prompt tokens")
        ax.set_title(title)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_scale(rows: list[dict], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [r["length"] for r in rows]
    ax.plot(xs, [r["full_kv_bytes"] / 2**20 for r in rows], "o-", label="full KV (MiB)")
    ax.plot(xs, [r["h3_5%"]["hot_peak_bytes"] / 2**20 for r in rows], "s-", label="H3 hot peak (MiB)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("prompt tokens")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
