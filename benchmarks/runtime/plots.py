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


def plot_context_scale(rows: list[dict], path: Path) -> Path:
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


def plot_corpus_scale(rows: list[dict], path: Path) -> Path:
    """`h3 bench --scenario scale`: each measure against the number of chunks, per ANN kind."""
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
    variants = list(dict.fromkeys(v for r in rows for v in r if isinstance(r[v], dict)
                                  and "agreement_at_10" in r[v]))
    panels = (
        ("ANN build (s)", lambda v: v["ann_build_s"]),
        ("disk bytes / chunk (data + indexes)",
         lambda v: v["disk_bytes_per_chunk"]["data"] + v["disk_bytes_per_chunk"]["indexes_beyond_data"]),
        ("index bytes / chunk beyond data", lambda v: v["disk_bytes_per_chunk"]["indexes_beyond_data"]),
        ("text recall ms (p50 solid, p95 dashed)", lambda v: v["text_ms"]["all"]["p50"]),
        ("auto recall ms (p50 solid, p95 dashed)", lambda v: v["auto_ms"]["all"]["p50"]),
        ("agreement with exact search @10", lambda v: v["agreement_at_10"]["all"]),
    )
    for ax, (title, value) in zip(axes.ravel(), panels, strict=True):
        key = "text_ms" if title.startswith("text") else "auto_ms"
        for variant in variants:
            measured = [r for r in rows if variant in r and ("p50" not in title or key in r[variant])]
            pts = [(r["chunks"], value(r[variant])) for r in measured if value(r[variant]) is not None]
            if pts:
                ax.plot(*zip(*pts, strict=True), "o-", label=variant)
            p95 = [(r["chunks"], r[variant][key]["all"]["p95"]) for r in measured] if "p50" in title else []
            if p95:
                ax.plot(*zip(*p95, strict=True), "x--", alpha=0.6)
        ax.set_xscale("log")
        ax.set_xlabel("chunks")
        ax.set_title(title, fontsize=9)
    axes[1][2].axhline(0.95, color="grey", lw=0.8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
