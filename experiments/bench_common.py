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
            lines = proc.stderr.strip().splitlines()
            # the program's own "error:" line, not the trailer mpirun adds after a rank failed
            said = [line for line in lines if "error:" in line]
            return None, (said or lines or [f"exit {proc.returncode}"])[0 if said else -1]
        with open(report) as f:
            return json.load(f), None
