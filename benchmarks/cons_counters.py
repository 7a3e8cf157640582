"""Work counters of the pool conservative kernel (``conservative_steps``) on KTH-SP2 x a load factor.

    python benchmarks/cons_counters.py [--load-factor 1.4] [--compression compress_first]
    python benchmarks/cons_counters.py --resampled 125000   # gen_resampled.py's LANL-CM5 mix instead

The counters say where a compression pass spends its work, which the kernel's timings alone do
not: planning passes and rounds, waiting jobs visited in the rounds, those passed over without
a search (the O(1) test), bounded earliest-fit searches (in the first round or a later one), moves, and inside the searches the profile's runs found anew,
run ends found anew and cached runs read (the run cache, ``_rc_fit``), the profile's size at the
searches (breakpoints, chunks), the queue at the passes, the chunks the run scans step over and
the positions the run-cache search recalls (``_rc_recall``; located anew when the layout moved them). They are compiled into a
copy of ``_kernels.py`` in a temporary folder (anchor lines patched with ``st`` counters; the
product's kernel has none), so the run is ~2x slower than the product's and the figures, not
its time, are what to read. A patch whose anchor is gone fails loudly: update the anchors with
the kernel.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
KERNELS = REPO / "drevt_sweep" / "sim" / "kernel" / "_kernels.py"
C = 64  # first counter slot of ``st`` in the copy

NAMES = ("planning passes with compression", "rounds", "visits (reserved jobs, limits enforced)",
         "passed over by the O(1) test", "searches",
         "searches in the first round", "searches in later rounds", "moves",
         "runs found anew", "run ends found anew", "cached runs read",
         "breakpoints at the searches (sum; / searches = mean P)", "chunks at the searches (sum)",
         "waiting jobs at the compression passes (sum)", "chunks passed by the start scans",
         "chunks passed by the end scans", "positions recalled (or located) in the run-cache search",
         "F found (a scan of the profile up to grown)",
         "passed over by the versions test (a later round)",
         "blocks of the queue passed over whole", "... places in them")

# (anchor, text inserted after it): each anchor must occur exactly once
PATCHES = (
    ("            if plan:\n                _rc_new_pass(rc_i, st)\n",
     "                if compress:\n                    st[C + 0] += 1\n                    st[C + 1] += 1\n"),
    ("                    rounds += 1\n", "                    st[C + 1] += 1\n"),
    ("                        if enforce and old == old:  # a reserved job: the hot path, inline\n",
     "                            st[C + 2] += 1\n"),
    ("                            if not exact and (old <= now or grown <= now):\n",
     "                                st[C + 3] += 1\n"),
    ("                                if nodes[ju] > F:\n", "                                    st[C + 3] += 1\n"),
    ("                            grown_seen = sf[SF_GROWN]\n", "                            st[C + 17] += 1\n"),
    ("                            if g0 >= old:\n", "                                st[C + 18] += 1\n"),
    ("                                bm = bmax[i >> BLOCK_BITS]\n",
     "                                st[C + 19] += 1\n                                st[C + 20] += min(nb, Q) - i\n"),
    ("                                if stale:  # found again only when it would pass the job over\n",
     "                                    st[C + 17] += 1\n"),
    ("                            start, at = _rc_fit(pt, pf, pb, ps, st, rc_i, rc_a, rc_b, rc_next, height_slot, "
     "active,\n                                                now, nodes[ju], limit[ju], old, before)\n",
     "                            st[C + 4] += 1\n                            st[C + (5 if rounds == 1 else 6)] += 1\n"
     "                            if start != np.inf:\n                                st[C + 7] += 1\n"),
    ("            a, m, k = _prof_at_least_from(pt, pf, pb, ps, m, k, need)\n", "            st[C + 8] += 1\n"),
    ("            b, complete, m, k = _prof_below_from(pt, pf, pb, ps, m, k, need, stop)\n",
     "            st[C + 9] += 1\n"),
    ("        a = rc_a[s, u]\n", "        st[C + 10] += 1\n"),  # (the runs whose end is known)
    ("        a = rc_a[s, i]\n", "        st[C + 10] += 1\n"),
    ("                            before = old if old < grown else grown\n",
     "                            st[C + 11] += ps[PS_P]\n                            st[C + 12] += ps[PS_M1] - ps[PS_M0]\n"),
    ("                if compress:\n                    st[C + 0] += 1\n", "                    st[C + 13] += Q\n"),
    ("                m, k = _rc_recall(pt, pb, ps, p, rc_next[s])\n",
     "                st[C + 16] += 1\n            mb = m\n"),
    ("            a, m, k = _prof_at_least_from(pt, pf, pb, ps, m, k, need)\n", "            st[C + 14] += m - mb\n"),
    ("                m, k = _rc_recall(pt, pb, ps, rc_b[s, np.uint64(RC_POS) + i], b)\n",
     "                st[C + 16] += 1\n"),
    ("            if m < ps[PS_M1] and pt[ps[PS_CO + m], k] == b:  # the end is after b\n"
     "                m, k = _prof_step(pb, ps, m, k)\n", "            mb = m\n"),
    ("            b, complete, m, k = _prof_below_from(pt, pf, pb, ps, m, k, need, stop)\n",
     "            st[C + 15] += m - mb\n"),
)


def _instrumented(folder: Path):
    """Import a copy of ``_kernels.py`` with the counters (``ST_SIZE`` grown to hold them)."""
    src = KERNELS.read_text()
    src = src[:src.index("# Before any kernel of this package runs")]  # (no cache guard in the copy)
    size = [line for line in src.splitlines() if line.startswith("ST_SIZE = ")]
    src = src.replace(size[0], f"ST_SIZE = {C + len(NAMES)}\nC = {C}")
    for anchor, extra in PATCHES:
        if src.count(anchor) != 1:
            raise SystemExit(f"anchor not found once in {KERNELS.name}: {anchor!r}")
        src = src.replace(anchor, anchor + extra)
    path = folder / "_kernels_counted.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("_kernels_counted", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--load-factor", type=float, default=1.4)
    ap.add_argument("--compression", default="compress_first")
    ap.add_argument("--resampled", type=int, default=0,
                    help="instead of KTH-SP2: gen_resampled.py's LANL-CM5 mix, this many jobs (1,024 nodes)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from bench_conservative import _kth

    import drevt_sweep.sim.kernel as kernel
    from drevt_sweep.sim.engine import simulate

    with tempfile.TemporaryDirectory() as tmp:
        counted = _instrumented(Path(tmp))
        kernel._kernels_for = lambda *a, **k: counted  # the drivers' set-up, with the counted copy
        states = []
        zeros = np.zeros

        def keep_st(shape, dtype=float, *a, **k):
            x = zeros(shape, dtype, *a, **k)
            if shape == counted.ST_SIZE and dtype == np.int64:
                states.append(x)
            return x

        kernel.np = type(sys)("np_counting")
        kernel.np.__dict__.update(np.__dict__)
        kernel.np.zeros = keep_st
        if args.resampled:
            from gen_resampled import NODES, generate

            jobs, nodes, label = generate(args.resampled), NODES, "LANL-resampled load 0.95"
        else:
            jobs, nodes, label = _kth(args.load_factor), 100, f"KTH-SP2 x{args.load_factor}"
        simulate(jobs, jobs.actual_run_time, nodes, backfill="conservative", kernel="fast",
                 compression=args.compression)
    st = states[-1]
    print(f"{label}, {len(jobs):,} jobs, {args.compression}")
    for k, name in enumerate(NAMES):
        print(f"  {name:45s} {int(st[C + k]):>13,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
