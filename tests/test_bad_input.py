"""Bad input: every case must end with exit status 2 and exactly one line on stderr that
starts with "pragmaclust: error:", print nothing on stdout, show no sanitizer report or
crash, and leave no file behind where --labels, --centroids and --report point (temporary
*.tmp.* files included). Each case runs on the seq program and on the ASan+UBSan build.
"""
import os
import re
import struct

import numpy as np
import pytest

from helpers import SANITIZER_MARKERS, listing

# ---- input files -------------------------------------------------------------------------


def npy_bytes(descr, shape, payload, fortran=False):
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if fortran else "False", shape)
    pad = (64 - (10 + len(d) + 1) % 64) % 64
    h = d + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + payload


def make_inputs(d):
    """Writes every input file the cases use into folder d."""
    good = np.arange(30, dtype=np.float32).reshape(10, 3) * 1.5
    files = {
        "good.txt": "".join(" ".join("%g" % v for v in row) + "\n" for row in good),
        "ragged.txt": "1 2 3\n4 5 6\n7 8\n",
        "word.txt": "1 2 3\n4 five 6\n",
        "nan.txt": "1 2 3\n4 nan 6\n",
        "NaN.txt": "1 2 3\n4 NaN 6\n",
        "inf.txt": "1 2 3\n4 inf 6\n",
        "minus_inf.txt": "1 2 3\n-Infinity 5 6\n",
        "nan_first.txt": "nan 2 3\n4 5 6\n",
        "inf_first.txt": "1,inf,3\n4,5,6\n",
        "too_big.txt": "1 2 3\n4 1e39 6\n",
        "empty.txt": "",
        "blank.txt": "\n  \n\n",
        "header_only.txt": "a,b,c\n",
        "comments_only.txt": "# a\n# b\n",
        "init_width.txt": "0 0\n1 1\n",       # 2 values per row, the data has 3
        "init_rows.txt": "0 0 0\n1 1 1\n2 2 2\n",  # 3 rows, -k 2
        "init_nan.txt": "0 0 0\nnan 1 1\n",
        "same_point.txt": "1 2 3\n" * 10,     # one distinct point: no second centre can carry weight
        "two_points.txt": "1 2 3\n4 5 6\n" * 5,  # two distinct points, kept again by every chunk
    }
    for name, text in files.items():
        (d / name).write_text(text)
    (d / "binary.txt").write_bytes(b"1 2 3\n4 \x00 6\n")
    (d / "raw.f32").write_bytes(good.tobytes())  # 10 x 3 float32 = 120 bytes
    (d / "i4.npy").write_bytes(npy_bytes("<i4", "(10, 3)", np.arange(30, dtype="<i4").tobytes()))
    (d / "trunc.npy").write_bytes(npy_bytes("<f4", "(10, 3)", good.tobytes()[:-4]))
    (d / "fortran.npy").write_bytes(npy_bytes("<f4", "(10, 3)", good.tobytes(), fortran=True))
    (d / "be.npy").write_bytes(npy_bytes(">f4", "(10, 3)", good.byteswap().tobytes()))
    (d / "3d.npy").write_bytes(npy_bytes("<f4", "(2, 5, 3)", good.tobytes()))
    (d / "nan.npy").write_bytes(npy_bytes("<f4", "(2,)", np.array([1, np.nan], dtype="<f4").tobytes()))
    (d / "notnpy.npy").write_text("1 2 3\n")
    (d / "adir").mkdir()
    (d / "adir.npy").mkdir()


# ---- cases: name -> argv after the program; OUT marks where the output options go ----------

OUT = "<outputs>"
DPC_OUT = "<dpc outputs>"  # dpc writes labels, the decision graph (CSV and SVG) and the report
I = "{in}/"  # input folder, filled in per test

CASES = {
    # input files
    "missing_file": ["kmeans", I + "nope.txt", "-k", "2", OUT],
    "directory_as_input": ["kmeans", I + "adir", "-k", "2", OUT],
    "directory_as_npy_input": ["kmeans", I + "adir.npy", "-k", "2", OUT],
    "ragged_rows": ["kmeans", I + "ragged.txt", "-k", "2", OUT],
    "non_numeric_token": ["kmeans", I + "word.txt", "-k", "2", OUT],
    "binary_in_text": ["kmeans", I + "binary.txt", "-k", "2", OUT],
    "nan_value": ["kmeans", I + "nan.txt", "-k", "2", OUT],
    "NaN_value": ["kmeans", I + "NaN.txt", "-k", "2", OUT],
    "inf_value": ["kmeans", I + "inf.txt", "-k", "2", OUT],
    "minus_infinity_value": ["kmeans", I + "minus_inf.txt", "-k", "2", OUT],
    "nan_on_first_line": ["kmeans", I + "nan_first.txt", "-k", "2", OUT],
    "inf_on_first_line": ["kmeans", I + "inf_first.txt", "-k", "2", OUT],
    "value_beyond_float": ["kmeans", I + "too_big.txt", "-k", "2", OUT],
    "empty_file": ["kmeans", I + "empty.txt", "-k", "1", OUT],
    "blank_lines_only": ["kmeans", I + "blank.txt", "-k", "1", OUT],
    "header_only": ["kmeans", I + "header_only.txt", "-k", "1", OUT],
    "comments_only": ["kmeans", I + "comments_only.txt", "-k", "1", OUT],
    "npy_wrong_dtype": ["kmeans", I + "i4.npy", "-k", "2", OUT],
    "npy_truncated": ["kmeans", I + "trunc.npy", "-k", "2", OUT],
    "npy_fortran_order": ["kmeans", I + "fortran.npy", "-k", "2", OUT],
    "npy_big_endian": ["kmeans", I + "be.npy", "-k", "2", OUT],
    "npy_3d": ["kmeans", I + "3d.npy", "-k", "2", OUT],
    "npy_nan": ["kmeans", I + "nan.npy", "-k", "1", OUT],
    "npy_not_npy": ["kmeans", I + "notnpy.npy", "-k", "1", OUT],
    # k
    "k_zero": ["kmeans", I + "good.txt", "-k", "0", OUT],
    "k_larger_than_n": ["kmeans", I + "good.txt", "-k", "11", OUT],
    "k_negative": ["kmeans", I + "good.txt", "-k", "-3", OUT],
    "k_not_a_number": ["kmeans", I + "good.txt", "-k", "abc", OUT],
    "k_beyond_int": ["kmeans", I + "good.txt", "-k", "3000000000", OUT],
    "k_missing": ["kmeans", I + "good.txt", OUT],
    "k_larger_than_generated_n": ["kmeans", "gen:uniform:n=5,d=2", "-k", "6", OUT],
    # initial centroids
    "init_wrong_width": ["kmeans", I + "good.txt", "-k", "2", "--init", I + "init_width.txt", OUT],
    "init_wrong_row_count": ["kmeans", I + "good.txt", "-k", "2", "--init", I + "init_rows.txt", OUT],
    "init_missing_file": ["kmeans", I + "good.txt", "-k", "2", "--init", I + "nope.txt", OUT],
    "init_nan": ["kmeans", I + "good.txt", "-k", "2", "--init", I + "init_nan.txt", OUT],
    # raw input with --shape
    "shape_overflow": ["kmeans", I + "raw.f32", "--shape", "9223372036854775807,9223372036854775807", "-k", "2", OUT],
    "shape_overflow_times_4": ["kmeans", I + "raw.f32", "--shape", "4611686018427387904,2", "-k", "2", OUT],
    "shape_beyond_64_bits": ["kmeans", I + "raw.f32", "--shape", "18446744073709551616,3", "-k", "2", OUT],
    "shape_size_mismatch": ["kmeans", I + "raw.f32", "--shape", "10,4", "-k", "2", OUT],
    "shape_size_mismatch_smaller": ["kmeans", I + "raw.f32", "--shape", "5,3", "-k", "2", OUT],
    "shape_malformed": ["kmeans", I + "raw.f32", "--shape", "30", "-k", "2", OUT],
    "shape_zero": ["kmeans", I + "raw.f32", "--shape", "0,3", "-k", "2", OUT],
    "shape_negative": ["kmeans", I + "raw.f32", "--shape", "-10,3", "-k", "2", OUT],
    # generator
    "gen_overflow": ["kmeans", "gen:uniform:n=999999999999,d=999999999999", "-k", "2", OUT],
    "gen_cannot_allocate": ["kmeans", "gen:uniform:n=4000000000,d=100000", "-k", "2", OUT],
    "gen_unknown_kind": ["kmeans", "gen:gauss:n=10,d=2", "-k", "2", OUT],
    "gen_missing_d": ["kmeans", "gen:uniform:n=10", "-k", "2", OUT],
    "gen_n_zero": ["kmeans", "gen:uniform:n=0,d=2", "-k", "2", OUT],
    "gen_bad_key": ["kmeans", "gen:uniform:n=10,d=2,colour=3", "-k", "2", OUT],
    "gen_negative_std": ["kmeans", "gen:blobs:n=10,d=2,std=-1", "-k", "2", OUT],
    "gen_noise_one": ["kmeans", "gen:blobs:n=10,d=2,noise=1", "-k", "2", OUT],
    # options
    "unknown_option": ["kmeans", I + "good.txt", "-k", "2", "--frobnicate", OUT],
    "unknown_short_option": ["kmeans", I + "good.txt", "-k", "2", "-z", OUT],
    # KNOWN BUG (reported): for an unknown option inside a cluster of short options, getopt has
    # not advanced optind yet, so the message names argv[optind-1], the argument before it
    # (here the input file), instead of '-z'.
    "unknown_short_option_in_cluster": ["kmeans", I + "good.txt", "-k", "2", "-zq", OUT],
    "missing_option_value_k": ["kmeans", I + "good.txt", OUT, "-k"],
    "missing_option_value_init": ["kmeans", I + "good.txt", "-k", "2", OUT, "--init"],
    "max_iter_not_integer": ["kmeans", I + "good.txt", "-k", "2", "--max-iter", "1.5", OUT],
    "max_iter_zero": ["kmeans", I + "good.txt", "-k", "2", "--max-iter", "0", OUT],
    "iterations_zero": ["kmeans", I + "good.txt", "-k", "2", "--iterations", "0", OUT],
    "tol_negative": ["kmeans", I + "good.txt", "-k", "2", "--tol", "-1", OUT],
    "tol_nan": ["kmeans", I + "good.txt", "-k", "2", "--tol", "nan", OUT],
    "tol_word": ["kmeans", I + "good.txt", "-k", "2", "--tol", "small", OUT],
    "update_sideways": ["kmeans", I + "good.txt", "-k", "2", "--update", "sideways", OUT],
    "sums_some": ["kmeans", I + "good.txt", "-k", "2", "--sums", "some", OUT],
    "distance_manhattan": ["kmeans", I + "good.txt", "-k", "2", "--distance", "manhattan", OUT],
    # cuBLAS distances exist in the gpu variant only (seq and its ASan build refuse them)
    "distance_gemm_on_seq": ["kmeans", I + "good.txt", "-k", "2", "--distance", "gemm", OUT],
    "distance_gemm_tf32_on_seq": ["kmeans", I + "good.txt", "-k", "2", "--distance", "gemm-tf32", OUT],
    "distance_gemm_uppercase": ["kmeans", I + "good.txt", "-k", "2", "--distance", "GEMM", OUT],
    # --device-memory (the gpu variant's; every variant parses it): a positive size, K, M, G, T or auto
    "device_memory_zero": ["kmeans", I + "good.txt", "-k", "2", "--device-memory", "0", OUT],
    "device_memory_zero_with_unit": ["kmeans", I + "good.txt", "-k", "2", "--device-memory", "0M", OUT],
    "device_memory_negative": ["kmeans", I + "good.txt", "-k", "2", "--device-memory", "-64K", OUT],
    "device_memory_word": ["kmeans", I + "good.txt", "-k", "2", "--device-memory", "plenty", OUT],
    "device_memory_fraction": ["kmeans", I + "good.txt", "-k", "2", "--device-memory", "1.5G", OUT],
    "device_memory_unknown_unit": ["kmeans", I + "good.txt", "-k", "2", "--device-memory", "64KB", OUT],
    "device_memory_beyond_64_bits": ["kmeans", I + "good.txt", "-k", "2", "--device-memory", "99999999999T", OUT],
    "device_memory_missing_value": ["kmeans", I + "good.txt", "-k", "2", OUT, "--device-memory"],
    "repeat_zero": ["kmeans", I + "good.txt", "-k", "2", "--repeat", "0", OUT],
    "warmup_negative": ["kmeans", I + "good.txt", "-k", "2", "--warmup", "-1", OUT],
    "threads_zero": ["kmeans", I + "good.txt", "-k", "2", "--threads", "0", OUT],
    "seed_negative": ["kmeans", I + "good.txt", "-k", "2", "--seed", "-5", OUT],
    "seed_not_a_number": ["kmeans", I + "good.txt", "-k", "2", "--seed", "0x10", OUT],
    # arguments and subcommands
    "missing_input": ["kmeans", "-k", "2", OUT],
    "two_inputs": ["kmeans", I + "good.txt", I + "good.txt", "-k", "2", OUT],
    "unknown_subcommand": ["frobnicate", I + "good.txt", "-k", "2", OUT],
    "info_unknown_option": ["info", "--frobnicate"],
    # streamkm: its own sizes and options (input files are read by the same readers as above)
    "streamkm_k_zero": ["streamkm", I + "good.txt", "-k", "0", OUT],
    "streamkm_k_missing": ["streamkm", I + "good.txt", OUT],
    "streamkm_k_larger_than_n": ["streamkm", I + "good.txt", "-k", "11", OUT],
    "streamkm_k_larger_than_generated_n": ["streamkm", "gen:uniform:n=5,d=2", "-k", "6", OUT],
    "streamkm_k_larger_than_chunk": ["streamkm", I + "good.txt", "-k", "3", "--chunk-size", "2", OUT],
    "streamkm_chunk_size_zero": ["streamkm", I + "good.txt", "-k", "2", "--chunk-size", "0", OUT],
    "streamkm_chunk_size_word": ["streamkm", I + "good.txt", "-k", "2", "--chunk-size", "big", OUT],
    "streamkm_repetitions_zero": ["streamkm", I + "good.txt", "-k", "2", "--repetitions", "0", OUT],
    "streamkm_repetitions_fraction": ["streamkm", I + "good.txt", "-k", "2", "--repetitions", "2.5", OUT],
    "streamkm_search_arity_one": ["streamkm", I + "good.txt", "-k", "2", "--search-arity", "1", OUT],
    "streamkm_search_arity_too_wide": ["streamkm", I + "good.txt", "-k", "2", "--search-arity", "1025", OUT],
    "streamkm_too_few_distinct_points": ["streamkm", I + "same_point.txt", "-k", "2", OUT],
    "streamkm_duplicates_across_chunks": ["streamkm", I + "two_points.txt", "-k", "3", "--chunk-size", "3", OUT],
    "streamkm_missing_file": ["streamkm", I + "nope.txt", "-k", "2", OUT],
    "streamkm_nan_value": ["streamkm", I + "nan.txt", "-k", "2", OUT],
    "streamkm_gen_missing_d": ["streamkm", "gen:uniform:n=10", "-k", "2", OUT],
    "streamkm_unknown_option": ["streamkm", I + "good.txt", "-k", "2", "--eps", "1", OUT],
    "streamkm_kept_in_missing_folder": ["streamkm", I + "good.txt", "-k", "2", "--kept", "{out}/no/such/k.txt"],
    # stream (Cao et al.'s entire stream and sliding window): its own sizes and options
    "stream_k_zero": ["stream", I + "good.txt", "-k", "0", OUT],
    "stream_k_missing": ["stream", I + "good.txt", OUT],
    "stream_k_larger_than_n": ["stream", I + "good.txt", "-k", "11", OUT],
    "stream_k_larger_than_generated_n": ["stream", "gen:uniform:n=5,d=2", "-k", "6", OUT],
    "stream_block_smaller_than_2k": ["stream", I + "good.txt", "-k", "3", "--block-size", "5", OUT],
    "stream_block_size_zero": ["stream", I + "good.txt", "-k", "2", "--block-size", "0", OUT],
    "stream_block_size_word": ["stream", I + "good.txt", "-k", "2", "--block-size", "big", OUT],
    "stream_epsilon_one": ["stream", I + "good.txt", "-k", "2", "--epsilon", "1", OUT],
    "stream_epsilon_zero": ["stream", I + "good.txt", "-k", "2", "--epsilon", "0", OUT],
    "stream_epsilon_word": ["stream", I + "good.txt", "-k", "2", "--epsilon", "half", OUT],
    "stream_window_smaller_than_2k": ["stream", I + "good.txt", "-k", "3", "--window", "5", OUT],
    "stream_window_zero": ["stream", I + "good.txt", "-k", "2", "--window", "0", OUT],
    "stream_bucket_larger_than_window": ["stream", I + "good.txt", "-k", "2", "--window", "6", "--block-size", "8", OUT],
    "stream_query_every_without_window": ["stream", I + "good.txt", "-k", "2", "--query-every", "5", OUT],
    "stream_query_every_zero": ["stream", I + "good.txt", "-k", "2", "--window", "6", "--query-every", "0", OUT],
    "stream_max_iter_zero": ["stream", I + "good.txt", "-k", "2", "--max-iter", "0", OUT],
    "stream_update_sideways": ["stream", I + "good.txt", "-k", "2", "--update", "sideways", OUT],
    "stream_too_few_distinct_points": ["stream", I + "same_point.txt", "-k", "2", OUT],
    "stream_too_few_distinct_points_window": ["stream", I + "same_point.txt", "-k", "2", "--window", "4", OUT],
    "stream_duplicates_across_blocks": ["stream", I + "two_points.txt", "-k", "3", "--block-size", "6", OUT],
    "stream_missing_file": ["stream", I + "nope.txt", "-k", "2", OUT],
    "stream_nan_value": ["stream", I + "nan.txt", "-k", "2", OUT],
    "stream_gen_missing_d": ["stream", "gen:uniform:n=10", "-k", "2", OUT],
    "stream_unknown_option": ["stream", I + "good.txt", "-k", "2", "--eps", "1", OUT],
    "stream_centres_in_missing_folder": ["stream", I + "good.txt", "-k", "2", "--centres", "{out}/no/such/c.txt"],
    "stream_report_after_labels_unwritable": ["stream", I + "good.txt", "-k", "2", "--labels", "{out}/l.txt",
                                              "--report", "{out}/existing_dir"],
    # dpc: d_c, peak selection, incremental options (input files are read by the same readers)
    "dpc_dc_zero": ["dpc", I + "good.txt", "--dc", "0", "--peaks", "2", DPC_OUT],
    "dpc_dc_negative": ["dpc", I + "good.txt", "--dc", "-1", "--peaks", "2", DPC_OUT],
    "dpc_dc_word": ["dpc", I + "good.txt", "--dc", "wide", "--peaks", "2", DPC_OUT],
    "dpc_dc_percent_zero": ["dpc", I + "good.txt", "--dc-percent", "0", "--peaks", "2", DPC_OUT],
    "dpc_dc_percent_of_duplicates": ["dpc", I + "same_point.txt", "--dc-percent", "2", "--peaks", "2", DPC_OUT],
    "dpc_no_peak_option": ["dpc", I + "good.txt", "--dc", "1", DPC_OUT],
    "dpc_peaks_zero": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "0", DPC_OUT],
    "dpc_thresholds_select_no_peak": ["dpc", I + "good.txt", "--dc", "1", "--rho-min", "11", DPC_OUT],
    "dpc_delta_threshold_selects_no_peak": ["dpc", I + "good.txt", "--dc", "1", "--delta-min", "1e9", DPC_OUT],
    "dpc_index_unknown": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--index", "kdtree", DPC_OUT],
    "dpc_base_beyond_n": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--base", "11", DPC_OUT],
    "dpc_batch_zero": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--base", "5", "--batch", "0", DPC_OUT],
    "dpc_insert_wrong_width": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--insert", I + "init_width.txt", DPC_OUT],
    "dpc_insert_missing_file": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--insert", I + "nope.txt", DPC_OUT],
    "dpc_insert_nan": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--insert", I + "nan.txt", DPC_OUT],
    "dpc_delete_every_point": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--delete", "10", DPC_OUT],
    "dpc_delete_zero": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--delete", "0", DPC_OUT],
    "dpc_missing_file": ["dpc", I + "nope.txt", "--dc", "1", "--peaks", "2", DPC_OUT],
    "dpc_nan_value": ["dpc", I + "nan.txt", "--dc", "1", "--peaks", "2", DPC_OUT],
    "dpc_empty_file": ["dpc", I + "empty.txt", "--dc", "1", "--peaks", "2", DPC_OUT],
    "dpc_graph_in_missing_folder": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--decision-graph",
                                    "{out}/no/such/g.csv"],
    "dpc_report_unwritable_after_outputs": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--labels", "{out}/l.txt",
                                            "--decision-graph", "{out}/g.csv", "--plot", "{out}/p.svg",
                                            "--report", "{out}/existing_dir"],
    # outputs that cannot be written (a single output, so nothing else is written first)
    "labels_in_missing_folder": ["kmeans", I + "good.txt", "-k", "2", "--labels", "{out}/no/such/l.txt"],
    "report_is_a_folder": ["kmeans", I + "good.txt", "-k", "2", "--report", "{out}/existing_dir"],
    "centroids_is_a_folder": ["kmeans", I + "good.txt", "-k", "2", "--centroids", "{out}/existing_dir"],
    # a later output that cannot be written: the earlier ones must not be left behind either.
    # KNOWN BUG (reported): labels and centroids are written (and renamed into place) before
    # the report fails, so the run exits 2 but leaves out/l.txt and out/c.npy behind.
    "report_unwritable_after_labels": ["kmeans", I + "good.txt", "-k", "2", "--labels", "{out}/l.txt",
                                       "--centroids", "{out}/c.npy", "--report", "{out}/existing_dir"],
    # issue 17: limits and impossible requests
    "threads_beyond_the_machine": ["kmeans", I + "good.txt", "-k", "2", "--threads", "4096", OUT],
    "tol_below_smallest_double": ["kmeans", I + "good.txt", "-k", "2", "--tol", "1e-320", OUT],
    "tol_beyond_largest_double": ["kmeans", I + "good.txt", "-k", "2", "--tol", "1e400", OUT],
    "dbscan_eps_below_smallest_double": ["dbscan", I + "good.txt", "--eps", "1e-320", "--min-pts", "2", "--labels",
                                         "{out}/l.txt"],
    "dpc_peaks_beyond_n": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "11", DPC_OUT],
    "dpc_peaks_beyond_the_base": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "6", "--base", "5", DPC_OUT],
    "dpc_generator_beyond_float": ["dpc", "gen:blobs:n=100,d=2,std=1e38", "--dc", "1", "--peaks", "2", DPC_OUT],
    "stream_distances_overflow_float": ["stream", "gen:blobs:n=100,d=2,std=1e37", "-k", "2", OUT],
    "generate_into_missing_folder": ["generate", "gen:uniform:n=100,d=2", "--out", "{out}/no/such/g.txt"],
    # an error after allocations (here a write to a full device): status 2, no leak report in the ASan build
    "generate_to_a_full_device": ["generate", "gen:uniform:n=100000,d=2", "--out", "/dev/full"],
    "labels_to_a_full_device": ["kmeans", "gen:uniform:n=100000,d=2", "-k", "3", "--labels", "/dev/full"],
    # issue 17: two outputs that are one file, an output that is an input (refused before any work)
    "labels_and_centroids_one_file": ["kmeans", I + "good.txt", "-k", "2", "--labels", "{out}/o.txt", "--centroids",
                                      "{out}/o.txt"],
    "labels_and_report_one_file": ["kmeans", I + "good.txt", "-k", "2", "--labels", "{out}/o.txt", "--report",
                                   "{out}/./o.txt"],
    "labels_overwrite_input": ["kmeans", I + "good.txt", "-k", "2", "--labels", I + "good.txt"],
    "centroids_overwrite_init": ["kmeans", I + "good.txt", "-k", "2", "--init", I + "init_rows.txt", "--centroids",
                                 I + "init_rows.txt"],
    "dbscan_labels_overwrite_input": ["dbscan", I + "good.txt", "--eps", "1", "--min-pts", "2", "--labels", I + "good.txt"],
    "dpc_graph_and_plot_one_file": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--decision-graph", "{out}/g",
                                    "--plot", "{out}/g"],
    "dpc_report_overwrites_insert": ["dpc", I + "good.txt", "--dc", "1", "--peaks", "2", "--insert", I + "two_points.txt",
                                     "--report", I + "two_points.txt"],
    "streamkm_kept_and_centres_one_file": ["streamkm", I + "good.txt", "-k", "2", "--kept", "{out}/k.txt", "--centres",
                                           "{out}/k.txt"],
    "stream_labels_overwrite_input": ["stream", I + "good.txt", "-k", "2", "--labels", I + "good.txt"],
    "generate_out_and_truth_one_file": ["generate", "gen:blobs:n=10,d=2", "--out", "{out}/g.txt", "--truth",
                                        "{out}/g.txt"],
    # before any work: the clash is found before a generator's 8 TB would be allocated
    "clash_before_loading": ["kmeans", "gen:uniform:n=2000000000,d=1000", "-k", "2", "--labels", "{out}/o.txt",
                             "--centroids", "{out}/o.txt"],
}

# Cases whose stderr names something specific.
MESSAGE_PARTS = {
    "missing_file": "nope.txt",
    "ragged_rows": "line 3",
    "non_numeric_token": "line 2",
    "nan_value": "line 2",
    "nan_on_first_line": "line 1",
    "k_missing": "-k",
    "k_larger_than_n": "-k 11",
    "init_wrong_width": "init",
    "init_wrong_row_count": "init",
    "shape_overflow": "overflow",
    "gen_overflow": "overflow",
    "unknown_option": "--frobnicate",
    "unknown_short_option": "-z",
    "unknown_short_option_in_cluster": "-z",  # not the argument before it
    "missing_option_value_k": "-k",
    "update_sideways": "sideways",
    "sums_some": "expected changed or all",
    "distance_manhattan": "manhattan",
    "distance_gemm_on_seq": "needs the gpu variant",
    "distance_gemm_tf32_on_seq": "--distance gemm-tf32",
    "distance_gemm_uppercase": "GEMM",
    "device_memory_zero": "option --device-memory: '0' is no bytes at all",
    "device_memory_zero_with_unit": "'0M' is no bytes at all",
    "device_memory_negative": "option --device-memory: '-64K' is not a size in bytes",
    "device_memory_word": "'plenty' is not a size in bytes (a whole number, optionally with K, M, G or T",
    "device_memory_fraction": "'1.5G' is not a size",
    "device_memory_unknown_unit": "'64KB' is not a size",
    "device_memory_beyond_64_bits": "more bytes than a size can count",
    "device_memory_missing_value": "'--device-memory' needs a value",
    "two_inputs": "good.txt",
    "unknown_subcommand": "frobnicate",
    "npy_wrong_dtype": "dtype",
    "streamkm_k_missing": "-k",
    "streamkm_k_larger_than_n": "larger than the number of points",
    "streamkm_k_larger_than_chunk": "larger than a chunk",
    "streamkm_chunk_size_word": "--chunk-size",
    "streamkm_repetitions_zero": "--repetitions",
    "streamkm_search_arity_one": "--search-arity",
    "streamkm_search_arity_too_wide": "--search-arity",
    "streamkm_too_few_distinct_points": "fewer than k = 2",
    "streamkm_missing_file": "nope.txt",
    "streamkm_nan_value": "line 2",
    "streamkm_duplicates_across_chunks": "weighted union",
    "stream_k_missing": "-k",
    "stream_k_larger_than_n": "larger than the number of points",
    "stream_k_larger_than_generated_n": "larger than the number of points",
    "stream_block_smaller_than_2k": "smaller than 2k = 6",
    "stream_block_size_word": "--block-size",
    "stream_epsilon_one": "--epsilon",
    "stream_epsilon_zero": "--epsilon",
    "stream_window_smaller_than_2k": "window of 5 points",
    "stream_bucket_larger_than_window": "larger than the window",
    "stream_query_every_without_window": "--query-every needs --window",
    "stream_max_iter_zero": "--max-iter",
    "stream_update_sideways": "sideways",
    "stream_too_few_distinct_points": "fewer than k = 2",
    "stream_too_few_distinct_points_window": "fewer than k = 2",
    "stream_duplicates_across_blocks": "too few distinct points",
    "stream_missing_file": "nope.txt",
    "stream_nan_value": "line 2",
    "stream_unknown_option": "--eps",
    "dpc_dc_zero": "--dc",
    "dpc_dc_percent_of_duplicates": "give --dc",
    "dpc_no_peak_option": "--peaks",
    "dpc_thresholds_select_no_peak": "select no peak",
    "dpc_delta_threshold_selects_no_peak": "select no peak",
    "dpc_base_beyond_n": "--base",
    "dpc_insert_wrong_width": "columns",
    "dpc_insert_missing_file": "nope.txt",
    "dpc_nan_value": "line 2",
    "threads_beyond_the_machine": "--threads",
    "tol_below_smallest_double": "below the smallest normal double",
    "tol_beyond_largest_double": "beyond the largest double",
    "dbscan_eps_below_smallest_double": "below the smallest normal double",
    "dpc_peaks_beyond_n": "--peaks 11",
    "dpc_peaks_beyond_the_base": "of the base (--base)",
    "dpc_generator_beyond_float": "float32",
    "stream_distances_overflow_float": "overflow float32",
    "generate_into_missing_folder": "No such file or directory",
    "generate_to_a_full_device": "No space left on device",
    "labels_to_a_full_device": "No space left on device",
    "labels_and_centroids_one_file": "--labels '",
    "labels_and_report_one_file": "same file",
    "labels_overwrite_input": "the file the run reads (INPUT",
    "centroids_overwrite_init": "(--init",
    "dbscan_labels_overwrite_input": "(INPUT",
    "dpc_graph_and_plot_one_file": "--decision-graph '",
    "dpc_report_overwrites_insert": "(--insert",
    "streamkm_kept_and_centres_one_file": "same file",
    "stream_labels_overwrite_input": "(INPUT",
    "generate_out_and_truth_one_file": "same file",
    "clash_before_loading": "same file",
}

# ASan prints this one warning (and nothing else) when malloc is asked for more than it ever
# gives and allocator_may_return_null=1 makes it return NULL, as glibc's malloc does; the
# program then reports the failure itself. Not a sanitizer finding.
ASAN_ALLOC_WARNING = re.compile(r"^==\d+==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]+ bytes$")


def expand(argv, in_dir, out_dir):
    outs = ["--labels", f"{out_dir}/labels.txt", "--centroids", f"{out_dir}/centroids.npy",
            "--report", f"{out_dir}/report.json"]
    dpc_outs = ["--labels", f"{out_dir}/labels.txt", "--decision-graph", f"{out_dir}/graph.csv",
                "--plot", f"{out_dir}/graph.svg", "--report", f"{out_dir}/report.json"]
    res = []
    for a in argv:
        if a == OUT:
            res += outs
        elif a == DPC_OUT:
            res += dpc_outs
        else:
            res.append(a.replace("{in}", str(in_dir)).replace("{out}", str(out_dir)))
    return res


@pytest.fixture
def dirs(tmp_path):
    in_dir, out_dir = tmp_path / "in", tmp_path / "out"
    in_dir.mkdir()
    out_dir.mkdir()
    (out_dir / "existing_dir").mkdir()
    make_inputs(in_dir)
    return tmp_path, in_dir, out_dir


def check_bad(binary, argv, tmp_path, in_dir, out_dir, case):
    """Runs a bad case and checks the convention above; returns the error line."""
    before = listing(tmp_path)
    rc, out, err = binary.run(*argv, timeout=60)
    context = f"{binary.name} {case}: {' '.join(argv)}\nexit {rc}\nstdout: {out!r}\nstderr: {err!r}"
    lines = err.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if case == "gen_cannot_allocate" and binary.name == "asan":
        lines = [ln for ln in lines if not ASAN_ALLOC_WARNING.match(ln)]
    for marker in SANITIZER_MARKERS:
        assert not any(marker in ln for ln in lines), context
    assert rc == 2, context
    assert len(lines) == 1, context
    assert lines[0].startswith("pragmaclust: error:"), context
    assert out == "", context
    after = listing(tmp_path)
    assert after == before, f"{context}\nnew files: {sorted(set(after) - set(before))}"
    assert not [p for p in after if ".tmp." in p], context
    part = MESSAGE_PARTS.get(case)
    if part:
        assert part in lines[0], context
    return lines[0]


CASE_IDS = sorted(CASES)


@pytest.mark.parametrize("case", CASE_IDS)
def test_bad_input_seq(seq, dirs, case):
    tmp_path, in_dir, out_dir = dirs
    check_bad(seq, expand(CASES[case], in_dir, out_dir), tmp_path, in_dir, out_dir, case)


@pytest.mark.parametrize("case", CASE_IDS)
def test_bad_input_asan(asan, dirs, case):
    tmp_path, in_dir, out_dir = dirs
    check_bad(asan, expand(CASES[case], in_dir, out_dir), tmp_path, in_dir, out_dir, case)


def test_unreadable_file(seq, asan, dirs):
    """A file without read permission (meaningless as root, who reads it anyway)."""
    if os.geteuid() == 0:
        pytest.skip("running as root: permissions do not stop reading")
    tmp_path, in_dir, out_dir = dirs
    (in_dir / "good.txt").chmod(0)
    for b in (seq, asan):
        check_bad(b, expand(["kmeans", I + "good.txt", "-k", "2", OUT], in_dir, out_dir), tmp_path, in_dir,
                  out_dir, "unreadable")


def test_no_arguments_is_not_success(seq):
    """No subcommand at all: the usage, and a failing status."""
    rc, out, err = seq.run()
    assert rc == 2
    assert "usage" in (out + err)


def test_asan_normal_run(asan, tmp_path):
    """A normal small run of the sanitizer build, through every output path: exit 0 and no
    sanitizer output."""
    rng = np.random.default_rng(1)
    x = np.vstack([rng.normal(c, 0.3, (60, 3)) for c in (0, 5, 10)]).astype(np.float32)
    np.savetxt(tmp_path / "x.csv", x, fmt="%.9g", delimiter=",", header="a,b,c", comments="")
    np.save(tmp_path / "x.npy", x)
    np.savetxt(tmp_path / "init.txt", x[[0, 70, 130, 150]], fmt="%.9g")
    for data, extra in ((tmp_path / "x.csv", []), (tmp_path / "x.npy", ["--update", "host"]),
                        ("gen:blobs:n=2000,d=5,centers=17", ["--init", "random", "--seed", "3"])):
        k = 17 if str(data).startswith("gen:") else 4
        init = [] if extra[:1] == ["--init"] else ["--init", tmp_path / "init.txt"]
        for fmt in ("txt", "npy"):
            rc, out, err = asan.run("kmeans", data, "-k", k, *init, *extra, "--labels", tmp_path / f"l.{fmt}",
                                    "--centroids", tmp_path / f"c.{fmt}", "--report", tmp_path / "r.json",
                                    "--repeat", 2, "--warmup", 1)
            assert rc == 0, err
            for marker in SANITIZER_MARKERS:
                assert marker not in err, err
            assert err.startswith("kmeans [seq") and err.count("\n") == 1, err
        rc, out, err = asan.run("kmeans", data, "-k", k, *init, *extra, "--iterations", 3, "--report", "-", "--quiet")
        assert rc == 0 and err == "", err
        assert '"iterations": 3' in out
    # centroids written as .npy, read back as --init
    rc, out, err = asan.run("kmeans", tmp_path / "x.npy", "-k", 4, "--centroids", tmp_path / "c4.npy", "--quiet")
    assert rc == 0 and err == "", err
    rc, out, err = asan.run("kmeans", tmp_path / "x.npy", "-k", 4, "--init", tmp_path / "c4.npy", "--quiet")
    assert rc == 0 and err == "", err
    rc, out, err = asan.run("info")
    assert rc == 0 and "variant:        seq" in out and err == ""
    rc, out, err = asan.run("kmeans", "--help")
    assert rc == 0 and out.startswith("usage:") and err == ""
