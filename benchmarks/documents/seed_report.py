"""Summaries and plots of the seed scenarios (benchmarks/documents/seed.py)."""

from __future__ import annotations

import statistics
from pathlib import Path


def summarise(results: dict[str, dict[str, dict]]) -> dict:
    """Per variant means over the questions, and the headline ratios."""
    variants = list(next(iter(results.values())))
    means: dict[str, dict] = {}
    for v in variants:
        rows = [per_q[v] for per_q in results.values()]
        means[v] = {k: round(statistics.fmean(float(r[k]) for r in rows), 4)
                    for k in ("ttft_s", "total_s", "hot_peak_bytes", "agreement",
                              "prefill_tokens_computed", "kv_tokens_loaded_cold")}
        means[v]["exact_match_rate"] = round(statistics.fmean(float(r["exact_match"])
                                                              for r in rows), 4)
        if "task_score" in rows[0]:
            means[v]["task_score"] = round(statistics.fmean(r["task_score"] for r in rows), 4)
    out = {"variants": means}
    full, h3 = means.get("full_attention"), means.get("h3_cold_reuse")
    if full and h3:
        out["ttft_speedup_cold_reuse_vs_full_prefill"] = round(full["ttft_s"] / h3["ttft_s"], 2)
    if "h3_no_reuse" in means and h3:
        out["ttft_speedup_cold_reuse_vs_h3_recompute"] = round(
            means["h3_no_reuse"]["ttft_s"] / h3["ttft_s"], 2)
        out["cold_hit_never_slower"] = all(
            q["h3_cold_reuse"]["ttft_s"] <= q["h3_no_reuse"]["ttft_s"] for q in results.values())
    if full and "full_attention_cold_reuse" in means:
        out["ttft_speedup_exact_reuse_vs_full_prefill_per_question"] = [
            round(q["full_attention"]["ttft_s"] / q["full_attention_cold_reuse"]["ttft_s"], 2)
            for q in results.values()]
    if "full_attention_cold_reuse" in means:
        out["cold_reuse_answers_token_equal"] = all(
            q["full_attention_cold_reuse"]["exact_match"] for q in results.values())
    return out


def plot_scenario(name: str, report: dict, out_dir: Path) -> Path:
    """Bars per variant: time to first token (log), hot peak MB, agreement with full attention."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    means = report["variants"]
    names = list(means)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    panels = [("ttft_s", "time to first token (s, log)"), ("hot_peak_bytes", "hot peak (MB)"),
              ("agreement", "agreement with full attention")]
    for ax, (key, title) in zip(axes, panels, strict=True):
        values = [means[n][key] / (1e6 if key == "hot_peak_bytes" else 1) for n in names]
        ax.bar(range(len(names)), values, color=["#888", "#bbb", "#4a7", "#27c", "#c84", "#a5c"]
               [: len(names)])
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
        if key == "ttft_s":
            ax.set_yscale("log")
    fig.suptitle(f"h3 bench --scenario {name} ({report.get('doc_tokens', '?')} document tokens)")
    fig.tight_layout()
    path = Path(out_dir) / f"{name}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
