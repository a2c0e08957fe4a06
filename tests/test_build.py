"""The embedded model's llama.cpp build runs on any x86-64 machine it is installed on."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

import pytest

# AVX-512 code touches zmm registers; AMX code configures tiles. A portable build has neither: a machine whose
# CPUID advertises them may still not let a process use them (seen: SIGSEGV in ldtilecfg on a VM).
FORBIDDEN = ("zmm", "ldtilecfg", "tileloadd", "tdpb")


def _cpu_lib() -> Path:
    llama_cpp = pytest.importorskip("llama_cpp")
    libs = sorted((Path(llama_cpp.__file__).parent / "lib").glob("libggml-cpu*.so*"))
    if not libs:
        pytest.skip("llama.cpp CPU backend library not found")
    return libs[0]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 instruction check")
def test_the_llama_cpp_cpu_backend_uses_no_avx512_or_amx_instruction():
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) is not installed")
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(_cpu_lib())], capture_output=True,
                             text=True, check=True).stdout
    found = {word for word in FORBIDDEN if word in listing}
    assert not found, f"{_cpu_lib()} was built for a specific CPU ({', '.join(sorted(found))}): rebuild portable"
    assert "ymm" in listing  # AVX2 kept: the portable build is not a slow generic one


def test_the_installer_pins_llama_cpp_and_never_builds_native_by_default():
    root = Path(__file__).resolve().parents[1]
    script = (root / "installer" / "install.sh").read_text()
    constraints = (root / "installer" / "constraints.txt").read_text().splitlines()
    assert "LLAMA_CPP_PYTHON=0.3.36" in script and "llama-cpp-python==0.3.36" in constraints
    assert 'build="${SENTINEL_LLAMA_BUILD:-portable}"' in script and "-DGGML_NATIVE=OFF" in script
    pinned = [line for line in constraints if line and not line.startswith("#")]
    assert pinned and all("==" in line for line in pinned), "every constraint pins one exact version"
