#!/usr/bin/python3
"""ann_hnswlib.py: the hnswlib side of bench/ann.c, on the files it wrote.

Builds an hnswlib index (l2 space, the same M and ef construction) over
DIR/base.f32 with one thread, timed; saves it to measure its bytes; then
for each ef = 10 + explore runs every query of DIR/query.f32 one at a time
(k = 10, one thread) and prints recall@10 against DIR/truth.u32 and queries
per second, in the lines bench/ann.c prints for Strata.
"""
import argparse
import os
import time

import hnswlib
import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--dim", type=int, required=True)
    ap.add_argument("--queries", type=int, required=True)
    ap.add_argument("--m", type=int, required=True)
    ap.add_argument("--efc", type=int, required=True)
    ap.add_argument("--explore", required=True)
    a = ap.parse_args()
    base = np.fromfile(os.path.join(a.dir, "base.f32"), dtype=np.float32).reshape(a.n, a.dim)
    q = np.fromfile(os.path.join(a.dir, "query.f32"), dtype=np.float32).reshape(a.queries, a.dim)
    gt = np.fromfile(os.path.join(a.dir, "truth.u32"), dtype=np.uint32).reshape(a.queries, 10)
    idx = hnswlib.Index(space="l2", dim=a.dim)
    t0, c0 = time.perf_counter(), time.process_time()
    idx.init_index(max_elements=a.n, M=a.m, ef_construction=a.efc, random_seed=100)
    idx.set_num_threads(1)
    idx.add_items(base, np.arange(a.n), num_threads=1)
    build, build_cpu = time.perf_counter() - t0, time.process_time() - c0
    path = os.path.join(a.dir, "hnswlib.bin")
    idx.save_index(path)
    size = os.path.getsize(path)
    t0 = time.perf_counter()
    again = hnswlib.Index(space="l2", dim=a.dim)
    again.load_index(path, max_elements=a.n)
    load = time.perf_counter() - t0
    print("hnswlib build %.2f s (cpu %.2f s)  load %.4f s  index %.1f MiB (with the vectors)"
          % (build, build_cpu, load, size / 2**20))
    for e in [int(x) for x in a.explore.split(",")]:
        idx.set_ef(10 + e)
        hits = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for j in range(a.queries):
            labels, _ = idx.knn_query(q[j:j + 1], k=10, num_threads=1)
            hits += len(np.intersect1d(labels[0], gt[j]))
        secs, csecs = time.perf_counter() - t0, time.process_time() - c0
        print("hnswlib explore %4d ef %4d  recall@10 %.4f  qps %8.0f (per cpu s %8.0f)"
              % (e, 10 + e, hits / (a.queries * 10.0), a.queries / secs, a.queries / csecs))


if __name__ == "__main__":
    main()
