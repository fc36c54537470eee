"""bench_common.py - what the benchmark scripts share: one program run and its JSON report."""
import json
import os
import subprocess
import tempfile

EXIT_NO_DEVICE = 3


def run_with_report(cmd, timeout_s=None, say_why=False):
    """Runs `cmd + ["--report", FILE]`; returns (report dict, None) or (None, why it gave none).
    Exit status 3 reads "n/a (no GPU)", or with say_why the program's message (e.g. no cuBLAS)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        try:
            proc = subprocess.run(cmd + ["--report", report], capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout_s} s"
        if proc.returncode == EXIT_NO_DEVICE and not (say_why and proc.stderr.strip()):
            return None, "n/a (no GPU)"
        if proc.returncode != 0:
            return None, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        with open(report) as f:
            return json.load(f), None
