"""The package's build backend (PEP 517), in the tree so that `pip install ./python` needs no network
and no build tools beyond the checkout's: it builds the variant libraries with `make lib` when
none is built yet, and writes a wheel of the pragmaclust package with the libraries found in
../lib (seq, omp and gpu: whichever are built) in pragmaclust/lib/. The libraries keep their
run-time path to the LLVM OpenMP runtime (/usr/lib/llvm-19/lib, installed by the toolchain
script); PRAGMACLUST_LIB_DIR overrides the libraries at import."""
import base64
import hashlib
import subprocess
import sysconfig
import zipfile
from pathlib import Path

NAME, VERSION = "pragmaclust", "0.9.0"
HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
VARIANTS = ("seq", "omp", "gpu")


def _libraries():
    """The built variant libraries, after `make lib` when there is none."""
    found = [CHECKOUT / "lib" / f"libpragmaclust-{v}.so" for v in VARIANTS]
    if not any(p.is_file() for p in found):
        status = subprocess.run(["make", "-C", str(CHECKOUT), "lib"], check=False).returncode
        if status != 0:
            raise RuntimeError(f"pragmaclust: `make -C {CHECKOUT} lib` failed (status {status})")
    found = [p for p in found if p.is_file()]
    if not found:
        raise RuntimeError(f"pragmaclust: no libpragmaclust-*.so in {CHECKOUT / 'lib'} after `make lib`")
    return found


def _metadata():
    readme = (HERE / "README.md").read_text()
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
            "Summary: Exact k-means, DBSCAN and density peaks on one core, all cores or a GPU (OpenMP offload)\n"
            "Requires-Python: >=3.9\nRequires-Dist: numpy\nDescription-Content-Type: text/markdown\n\n" + readme)


def _tag():
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = Path(metadata_directory) / f"{NAME}-{VERSION}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata())
    return info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    tag = _tag()
    wheel = Path(wheel_directory) / f"{NAME}-{VERSION}-{tag}.whl"
    info = f"{NAME}-{VERSION}.dist-info"
    files = [(f"{NAME}/{p.name}", p.read_bytes()) for p in sorted((HERE / NAME).glob("*.py"))]
    files += [(f"{NAME}/lib/{p.name}", p.read_bytes()) for p in _libraries()]
    files += [(f"{info}/METADATA", _metadata().encode()),
              (f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: pragmaclust build_backend\nRoot-Is-Purelib: false\n"
                                f"Tag: {tag}\n".encode())]
    record = []
    partial = wheel.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            info_entry = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info_entry.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            info_entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info_entry, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    partial.replace(wheel)  # whole or not at all
    return wheel.name
