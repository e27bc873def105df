"""The markdown of a profile (``profile.json`` of ``profile_bench.py``): the section that
``bench.py`` puts last in the bench README, or ``PROFILE.md`` alone.  Rendering only: no torch,
no structperc, so ``bench.py`` and ``profile_bench.py`` both import it.
"""

from __future__ import annotations

MODES = ("plain", "timers", "cprofile", "torch")  # the instruments, in the order they run

TITLES = {
    "perceptron": "averaged perceptron, one epoch on the chain (`+experiment=conll03_local`)",
    "proposed": "proposed algorithm (Alg. 4.2, n = 20, non-local features), one epoch",
    "crf": "CRF, one L-BFGS iteration (sigma² = 100)",
    "crf_nodes": "CRF with `features.edges=false`, one L-BFGS iteration (sigma² = 100)",
}


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def _cell(text: str | None) -> str:
    return "–" if text is None else f"`{text.replace('|', '/')}`"


def render_workload(name: str, w: dict) -> list[str]:
    modes = w["modes"]
    plain, timers, cp, tp = (modes[m] for m in MODES)
    crf = name.startswith("crf")
    unit = "iteration" if crf else "epoch"
    if crf:
        scan = w["learner"].get("scan") or w["learner"]["semiring"]  # recorded as "semiring" before
        what = (
            f"L-BFGS iteration 2 from zero weights ({w['documents']:,} documents, "
            f"{w['tokens']:,} tokens, {w['dp_buckets']} DP buckets, {w['parameters']:,} "
            f"weights; `conf/learner/crf.yaml`: {scan} scan, "
            f"{w['learner']['dtype']}, history {w['learner']['history']}); "
            f"{plain['evaluations']} objective evaluation(s) in it. Setup (X^T, buckets) "
            f"{w['setup_s']:.1f} s and iteration 1 ({w['warmup']['evaluations']} evaluations, "
            f"{w['warmup']['wall_s']:.1f} s) not measured."
        )
    else:
        extra = plain.get("extra") or {}
        kinds = (
            f" ({extra.get('updates_a', 0):,} (A) / {extra.get('updates_b', 0):,} (B))"
            if name == "proposed"
            else ""
        )
        start = (
            "zero weights; warm-up epoch 1"
            if name == "perceptron"
            else "the shared model (local) and zero (non-local), no BPM; warm-up epoch 1"
        )
        what = (
            f"epoch 2 over {w['documents']:,} documents ({w['tokens']:,} tokens) from {start} "
            f"{w['warmup']['wall_s']:.2f} s, not measured; {plain['updates']:,} updates"
            f"{kinds} and training word error {plain['errors'] / max(plain['tokens'], 1):.4f} "
            "in the plain run."
        )
    lines = [
        f"### {TITLES[name]}",
        "",
        f"{what} Wall time of the {unit}: **{plain['wall_s']:.2f} s** plain; "
        f"{timers['wall_s']:.2f} s with the timers, {cp['wall_s']:.2f} s under cProfile, "
        f"{tp['wall_s']:.2f} s under torch.profiler (the same {unit} each time). Peak memory "
        f"of the worker {w['peak_rss_mb']:,.0f} MiB; load average {w['loadavg_start'][0]:.2f} "
        f"at its start, {w['loadavg_end'][0]:.2f} at its end.",
        "",
        f"Buckets (timers run; % of its {timers['wall_s']:.2f} s wall time):",
        "",
        "| bucket | seconds | % of wall | calls |",
        "|---|---:|---:|---:|",
    ]
    for b in timers["buckets"]:
        calls = "" if b["calls"] is None else f"{b['calls']:,}"
        lines.append(
            f"| {b['label']} | {b['seconds']:.3f} | {_pct(b['seconds'], timers['wall_s'])} | "
            f"{calls} |"
        )
    if crf:
        lines += [
            "",
            f"The Gaussian prior (g += w / σ², ‖w‖²) is in the objective glue: "
            f"{w['prior_s']:.3f} s per evaluation, timed apart on the same tables.",
        ]
    lines += [
        "",
        f"cProfile, top {len(cp['top'])} functions by own time (% of the "
        f"{cp['total_s']:.2f} s profiled; main caller = the caller that spent most of it, "
        "with its share):",
        "",
        "| function | calls | own s | % | cumulative s | main caller |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in cp["top"]:
        share = (
            f" ({100 * r['main_caller_share']:.0f}%)" if r["main_caller_share"] is not None else ""
        )
        lines.append(
            f"| {_cell(r['function'])} | {r['calls']:,} | {r['self_s']:.3f} | "
            f"{_pct(r['self_s'], cp['total_s'])} | {r['cum_s']:.3f} | "
            f"{_cell(r['main_caller'])}{share} |"
        )
    lines += [
        "",
        f"torch.profiler, top {len(tp['top'])} operators by self CPU time (% of the "
        f"{tp['wall_s']:.2f} s wall of that run); inside any operator: {tp['ops_self_s']:.2f} s "
        f"({_pct(tp['ops_self_s'], tp['wall_s'])}), the rest is Python and dispatch:",
        "",
        "| operator | calls | self CPU s | % of wall | CPU total s |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in tp["top"]:
        lines.append(
            f"| {_cell(r['op'])} | {r['calls']:,} | {r['self_cpu_s']:.3f} | "
            f"{_pct(r['self_cpu_s'], tp['wall_s'])} | {r['cpu_total_s']:.3f} |"
        )
    if tp.get("backward"):
        lines += [
            "",
            f"torch.profiler, the backward pass by autograd node (top {len(tp['backward'])} by "
            "CPU time, the operators inside included; % of the wall of that run):",
            "",
            "| autograd node | calls | CPU total s | % of wall |",
            "|---|---:|---:|---:|",
        ]
        for r in tp["backward"]:
            lines.append(
                f"| {_cell(r['node'])} | {r['calls']:,} | {r['cpu_total_s']:.3f} | "
                f"{_pct(r['cpu_total_s'], tp['wall_s'])} |"
            )
    if "run" in w:
        m = w["run"]["machine"]
        lines += [
            "",
            f"(Measured by an earlier run, `{w['run']['command']}`, on {m['date']}.)",
        ]
    lines.append("")
    return lines


def render(profile: dict, top_level: bool = False) -> list[str]:
    """The profile section (markdown lines): ``##`` in the bench README, ``#`` alone."""
    cfg, m = profile["config"], profile["machine"]
    h = "#" if top_level else "##"
    load = max(m["loadavg_start"][0], m.get("loadavg_end", m["loadavg_start"])[0])
    for w in profile["workloads"].values():
        load = max(load, w["loadavg_start"][0], w["loadavg_end"][0])
    threads = m.get("torch_threads", 1)
    data = profile["data"]["train"]
    git = m.get("git") or {}
    lines = [
        f"{h} Profile: where the time of an epoch and an iteration goes",
        "",
        "Generated by `experiments/bench/profile_bench.py` (`make profile`) from `profile.json`"
        "; `bench.py` keeps this section when it re-renders the README. Run from the "
        "repository root:",
        "",
        "```",
        f"STRUCTPERC_DATA={cfg['data_dir']} {profile['command']}",
        "```",
        "",
    ]
    if cfg.get("quick"):
        lines += [
            f"**Quick run on the first {cfg['max_docs']['train']} training documents: checks "
            "the plumbing, the numbers are not representative.**",
            "",
        ]
    if load > threads + 0.5:
        lines += [
            f"**The machine was loaded by other jobs during this run (load average up to "
            f"{load:.1f} on {m['cpu_count']} CPUs, the profile using {threads} torch "
            "thread(s)): absolute times are inflated and noisy; the percentages, taken within "
            "one run, are still informative.**",
            "",
        ]
    shared = profile["shared_model"]
    lines += [
        f"Training data: CoNLL-2003 train, {data['documents']:,} documents / "
        f"{data['tokens']:,} tokens. Each workload runs in a fresh process from the bench's "
        f"shared model ({shared['learner']}, k = {shared['epochs']} epochs, trained by this run) "
        "or its feature matrices; its unit (an epoch, an iteration) runs four times from the "
        "same state: plain (the reference wall time), with timers around the functions that "
        "make up the work (each call's wall time minus that of timed calls inside it, so the "
        "buckets add up to the wall time; the last row is what no bucket holds), under "
        "cProfile (top functions by own time; its per-call overhead inflates Python-heavy "
        "rows), and under torch.profiler (top aten operators by self CPU time). "
        "See the script's docstring.",
        "",
        f"Machine: {m['cpu_count']} CPUs ({m['cpu_model']}), torch {m['torch']}, {threads} "
        f"torch thread(s); {m['date']}; whole profile {profile['wall_seconds']:.0f} s; "
        f"structperc at commit {git.get('commit') or '?'} with "
        f"{git.get('structperc_files_changed', '?')} uncommitted changed file(s) under "
        "`structperc/`.",
        "",
        "Top 3 buckets of each workload (% of its wall time):",
        "",
    ]
    for name, w in profile["workloads"].items():
        t = w["modes"]["timers"]
        top3 = "; ".join(
            f"{b['label']} {_pct(b['seconds'], t['wall_s'])}" for b in t["buckets"][:3]
        )
        lines.append(f"- {TITLES[name]} ({w['modes']['plain']['wall_s']:.2f} s): {top3}")
    lines.append("")
    for name, w in profile["workloads"].items():
        lines += render_workload(name, w)
    lines += ["Raw numbers (every bucket, function and operator row) are in `profile.json`.", ""]
    return lines
