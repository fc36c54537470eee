"""The build switch: the toolchain check refuses device images the runtime would reject, the
seq program links no OpenMP runtime, `make info` reports every variant, and the source layers
(common <- algorithms <- cli) include nothing from above."""
import json
import os
import re
import shutil
import subprocess

import pytest

from helpers import REPO_ROOT, bin_dir

CHECK = REPO_ROOT / "variants" / "check-toolchain.sh"
LLVM_LIB = "/usr/lib/llvm-19/lib"


def fake_cuda(tmp_path, release):
    (tmp_path / "bin").mkdir(parents=True)
    ptxas = tmp_path / "bin" / "ptxas"
    ptxas.write_text(f"#!/bin/sh\necho 'ptxas: NVIDIA (R) Ptx optimizing assembler'\necho 'Cuda compilation tools, release {release}, V{release}.0'\n")
    ptxas.chmod(0o755)
    return tmp_path


@pytest.mark.skipif(not shutil.which("clang-19"), reason="clang-19 not installed (make toolchain)")
@pytest.mark.parametrize("release,ok", [("13.0", False), ("12.8", False), ("12.4", True), ("11.8", True)])
def test_toolchain_check_refuses_new_ptxas_with_llvm19(tmp_path, release, ok):
    cuda = fake_cuda(tmp_path, release)
    proc = subprocess.run(["bash", str(CHECK), "clang-19", str(cuda), LLVM_LIB, "sm_90"], capture_output=True, text=True)
    if ok:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 1
        assert "rejects" in proc.stderr and "make toolchain" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_toolchain_check_names_a_missing_ptxas(tmp_path):
    proc = subprocess.run(["bash", str(CHECK), "clang-19", str(tmp_path), LLVM_LIB, "sm_90"], capture_output=True, text=True)
    assert proc.returncode == 1 and "ptxas" in proc.stderr


WRAPPER = REPO_ROOT / "variants" / "ptxas-sm90a.sh"


def sm90a_tree(tmp_path, wrapper=True):
    """A CUDA tree as `make toolchain GPU_ARCH=sm_90a` lays it out (the wrapper as bin/ptxas, or a plain
    ptxas), whose ptxas-12.4 reports release 12.4 and writes its arguments and its input's .target line."""
    cuda = fake_cuda(tmp_path, "12.4")
    real = cuda / "bin" / "ptxas-12.4"
    real.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n"
                    "echo \"$@\" > \"$(dirname \"$0\")/args\"\n"
                    "for a; do case $a in *.s) grep '^.target' \"$a\" > \"$(dirname \"$0\")/target\";; esac; done\n"
                    "exit 7\n")
    real.chmod(0o755)
    if wrapper:
        shutil.copy(WRAPPER, cuda / "bin" / "ptxas")
    return cuda


@pytest.mark.skipif(not shutil.which("clang-19"), reason="clang-19 not installed (make toolchain)")
@pytest.mark.parametrize("wrapper", [True, False], ids=["wrapper", "plain-ptxas"])
def test_toolchain_check_wants_the_sm90a_wrapper(tmp_path, wrapper):
    """GPU_ARCH=sm_90a builds with a tree whose ptxas is variants/ptxas-sm90a.sh; any other is refused
    with the make command that installs it."""
    cuda = sm90a_tree(tmp_path, wrapper)
    proc = subprocess.run(["bash", str(CHECK), "clang-19", str(cuda), LLVM_LIB, "sm_90a"], capture_output=True,
                          text=True)
    if wrapper:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 1 and "make toolchain GPU_ARCH=sm_90a" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_sm90a_wrapper_assembles_sm90_ptx_for_sm90a(tmp_path):
    """The wrapper hands ptxas 12.4 clang's sm_90 PTX as sm_90a (the .target line and --gpu-name), the
    other arguments as they were, the input file untouched, and returns ptxas' exit status."""
    cuda = sm90a_tree(tmp_path)
    ptx = tmp_path / "image.s"
    ptx.write_text("//\n.version 8.4\n.target sm_90\n.address_size 64\n")
    proc = subprocess.run([str(cuda / "bin" / "ptxas"), "-m64", "-O3", "--gpu-name", "sm_90", "--output-file",
                           str(tmp_path / "image.cubin"), str(ptx), "-c"], capture_output=True, text=True)
    assert proc.returncode == 7
    args = (cuda / "bin" / "args").read_text().split()
    assert args[:4] == ["-m64", "-O3", "--gpu-name", "sm_90a"] and args[-1] == "-c"
    assert args[5] == str(tmp_path / "image.cubin") and args[6].endswith("/image.s") and args[6] != str(ptx)
    assert (cuda / "bin" / "target").read_text().strip() == ".target sm_90a"
    assert ".target sm_90\n" in ptx.read_text()


def test_install_refreshes_a_changed_sm90a_wrapper_without_downloading(tmp_path):
    """A complete sm_90a tree whose bin/ptxas is an older wrapper gets the current one copied in; nothing is
    fetched (the trees' tools are fakes that a download would have replaced)."""
    for tree, real in (("cuda-11.8", "ptxas"), ("cuda-12.4-sm90a", "ptxas-12.4")):
        (tmp_path / tree / "bin").mkdir(parents=True)
        (tmp_path / tree / "nvvm" / "libdevice").mkdir(parents=True)
        (tmp_path / tree / "nvvm" / "libdevice" / "libdevice.10.bc").write_bytes(b"")
        for tool in {real, "ptxas"}:
            (tmp_path / tree / "bin" / tool).write_text("#!/bin/sh\n# fake\n")
            (tmp_path / tree / "bin" / tool).chmod(0o755)
    proc = subprocess.run(["bash", str(REPO_ROOT / "variants" / "install-toolchain.sh"), "--sm90a", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "fetching" not in proc.stdout + proc.stderr
    assert (tmp_path / "cuda-12.4-sm90a" / "bin" / "ptxas").read_bytes() == WRAPPER.read_bytes()
    assert (tmp_path / "cuda-12.4-sm90a" / "bin" / "ptxas-12.4").read_text() == "#!/bin/sh\n# fake\n"


def test_make_info_sm90a_compiles_for_sm90_with_wgmma():
    """GPU_ARCH=sm_90a: clang compiles for sm_90 with the 12.4 tree and turns on the wgmma kernels."""
    out = subprocess.run(["make", "-s", "info", "GPU_ARCH=sm_90a"], capture_output=True, text=True,
                         cwd=REPO_ROOT).stdout
    gpu = out[out.index("[gpu]"):]
    assert "--offload-arch=sm_90 " in gpu and "-DPC_SM90A" in gpu and "cuda-12.4-sm90a" in gpu


@pytest.mark.skipif(not shutil.which("clang-19"), reason="clang-19 not installed (make toolchain)")
def test_wgmma_kernels_compile(tmp_path):
    """The tuned GPU file with the sm_90a kernels (PC_SM90A) compiles without warnings (the device
    code is assembled at the program's link, which needs the sm_90a tree and is not done here)."""
    cuda = REPO_ROOT / ".toolchain" / "cuda-11.8"
    if not cuda.is_dir():
        pytest.skip("no .toolchain/cuda-11.8 (make toolchain)")
    proc = subprocess.run(["clang-19", "-std=gnu11", "-O3", "-Wall", "-Wextra", "-Wshadow", "-Wconversion",
                           "-Wno-sign-conversion", "-Werror", "-DPC_VARIANT_GPU", "-DPC_SM90A", "-fopenmp",
                           "-fopenmp-targets=nvptx64-nvidia-cuda", "--offload-arch=sm_90", "-foffload-lto",
                           f"--cuda-path={cuda}", "-Icommon", "-Ialgorithms", "-c", "algorithms/kmeans_assign_gpu.c",
                           "-o", str(tmp_path / "a.o")], capture_output=True, text=True, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr


def test_seq_program_links_no_openmp_runtime():
    out = subprocess.run(["ldd", str(bin_dir() / "pragmaclust-seq")], capture_output=True, text=True).stdout
    assert "libomp" not in out and "libgomp" not in out
    for variant in ("omp", "gpu"):
        path = bin_dir() / f"pragmaclust-{variant}"
        if path.exists():
            assert "libomp" in subprocess.run(["ldd", str(path)], capture_output=True, text=True).stdout


def test_make_info_lists_each_variant():
    out = subprocess.run(["make", "-s", "info"], capture_output=True, text=True, cwd=REPO_ROOT).stdout
    for variant, define in (("seq", "-DPC_VARIANT_SEQ"), ("omp", "-DPC_VARIANT_OMP"), ("gpu", "-DPC_VARIANT_GPU")):
        assert f"[{variant}]" in out and define in out
    assert "--offload-arch=sm_90" in out and "-fopenmp" in out


# Small inputs on which the gcc programs must give the clang programs' labels, byte for byte.
GCC_CASES = {
    "kmeans": ["kmeans", "gen:blobs:n=3000,d=3,centers=6,std=0.3", "-k", "6"],
    "kmeans-kmeanspp-dot": ["kmeans", "gen:uniform:n=2000,d=5,seed=3", "-k", "19", "--init", "kmeans++",
                            "--distance", "dot"],
    "dbscan": ["dbscan", "gen:blobs:n=3000,d=2,centers=5,std=0.05,noise=0.05", "--eps", "0.05", "--min-pts", "5"],
    "dpc-point": ["dpc", "gen:blobs:n=3000,d=2,centers=5,std=0.05", "--dc", "0.05", "--peaks", "5"],
    "dpc-leaf": ["dpc", "gen:blobs:n=3000,d=3,centers=4,std=0.1", "--dc", "0.1", "--peaks", "4", "--rho-search",
                 "leaf", "--delta-search", "leaf"],
}

def source_tree(tmp_path):
    """A copy of what the build needs, in tmp_path/tree, to build there without touching bin/."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for part in ("Makefile", "VERSION", "common", "algorithms", "api", "include", "cli", "variants"):
        src = REPO_ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tree / part)
    return tree



@pytest.mark.skipif(not shutil.which("gcc"), reason="gcc not installed")
def test_gcc_toolchain_builds_every_variant(tmp_path):
    """TOOLCHAIN=gcc builds seq, omp and gpu (GCC's nvptx offload, no tuned kernels) without
    warnings; they cluster like the clang build (the gpu program on the host, by --allow-host,
    as CI has no GPU); and its bundle runs the gpu program with the libgomp and nvptx plugin it
    carries."""
    tree = source_tree(tmp_path)
    proc = subprocess.run(["make", "-j2", "TOOLCHAIN=gcc", "VARIANT=all"], capture_output=True, text=True, cwd=tree)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "warning" not in proc.stderr, proc.stderr[-2000:]
    gcc_gpu = tree / "bin" / "pragmaclust-gpu"
    info = subprocess.run([str(gcc_gpu), "info"], capture_output=True, text=True).stdout
    assert "compiler:       gcc" in info and "tuned kernels:  none" in info, info
    programs = {f"gcc-{v}": tree / "bin" / f"pragmaclust-{v}" for v in ("seq", "omp", "gpu")}
    programs.update({f"clang-{v}": bin_dir() / f"pragmaclust-{v}" for v in ("seq", "omp", "gpu")
                     if (bin_dir() / f"pragmaclust-{v}").is_file()})
    for case, args in GCC_CASES.items():
        labels = {}
        for name, program in programs.items():
            out = tmp_path / f"{case}-{name}.txt"
            extra = ["--allow-host"] if name.endswith("-gpu") else []
            proc = subprocess.run([str(program), args[0], *extra, *args[1:], "--labels", str(out), "--quiet"],
                                  capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="2"))
            assert proc.returncode == 0, (case, name, proc.stderr)
            labels[name] = out.read_text()
        for name in programs:
            assert labels[name] == labels["clang-seq"], (case, name)

    proc = subprocess.run(["make", "TOOLCHAIN=gcc", "bundle"], capture_output=True, text=True, cwd=tree)
    assert proc.returncode == 0, proc.stderr[-2000:]
    archive = tree / "dist" / "pragmaclust-gcc-bundle.tar.xz"
    assert archive.stat().st_size < 60 << 20
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    subprocess.run(["tar", "-xJf", str(archive), "-C", str(unpacked)], check=True)
    for name in ("bin/pragmaclust-gpu", "lib/libgomp.so.1", "lib/libgomp-plugin-nvptx.so.1"):
        assert (unpacked / "gcc" / name).is_file(), name
    # The loader's log: libgomp, and the plugin libgomp opens by name, come from the bundle.
    proc = subprocess.run([str(unpacked / "gcc" / "bin" / "pragmaclust-gpu"), "info"], capture_output=True, text=True,
                          env=dict(os.environ, LD_DEBUG="libs"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    lib = str(unpacked / "gcc" / "bin" / ".." / "lib")
    for name in ("libgomp.so.1", "libgomp-plugin-nvptx.so.1"):
        assert f"calling init: {lib}/{name}" in proc.stderr, name


LAYERS = ["common", "algorithms", "cli"]


def test_no_layer_includes_a_file_from_a_layer_above():
    """common/ includes only common/ headers; algorithms/ only common/ and algorithms/ ones (the
    Makefile's per-layer include paths enforce it at build time too)."""
    where = {h.name: layer for layer in LAYERS for h in (REPO_ROOT / layer).glob("*.h")}
    problems = []
    for rank, layer in enumerate(LAYERS):
        for src in sorted((REPO_ROOT / layer).glob("*.[ch]")):
            for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', src.read_text(), flags=re.M):
                if name == "buildinfo.h":  # generated per variant under build/
                    continue
                owner = where.get(name)
                if owner is None or LAYERS.index(owner) > rank:
                    problems.append(f"{layer}/{src.name} includes {name} ({owner or 'not in a layer'})")
    assert problems == []


def test_reports_name_the_knobs_that_differ_from_their_defaults(tmp_path):
    """A tuning knob set at build time (make KNOBS='-DKM_ROWS=4') is named in every run report's
    "knobs" and marked in `info`; the normal build's reports name none."""
    run = ["kmeans", "gen:blobs:n=600,d=3,centers=4,std=0.3", "-k", "4", "--quiet", "--report", "-"]
    normal = subprocess.run([str(bin_dir() / "pragmaclust-seq"), *run], capture_output=True, text=True, check=True)
    assert json.loads(normal.stdout)["knobs"] == {}
    tree = source_tree(tmp_path)
    proc = subprocess.run(["make", "-j2", "VARIANT=seq", "KNOBS=-DKM_ROWS=4"], capture_output=True, text=True, cwd=tree)
    assert proc.returncode == 0, proc.stderr[-2000:]
    program = str(tree / "bin" / "pragmaclust-seq")
    changed = subprocess.run([program, *run], capture_output=True, text=True, check=True)
    report = json.loads(changed.stdout)
    assert report["knobs"] == {"KM_ROWS": "4"} and "-DKM_ROWS=4" in report["flags"]
    info = subprocess.run([program, "info"], capture_output=True, text=True, check=True).stdout
    assert re.search(r"^  KM_ROWS +4 \*  \(default 6\)$", info, re.M), info
    assert re.search(r"^  KM_HOST_ITEMS +8$", info, re.M), info
