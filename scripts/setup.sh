#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and builds ptdp into ./build (preset "default"):
# the Debian packages ptdp builds against; on machines with CUDA, the cudnn-frontend headers for
# the flash-attention path and the CUDA-enabled UCX of the libucx-cu13 wheel (from pip); transformers
# and tokenizers (pip, into .deps/python) for the export test and scripts/encode_hf.py; then
# configure and build. With --deps-only it stops before the
# build.
set -euo pipefail
cd "$(dirname "$0")/.."

# clang: a test builds a plugin with it, to show that another compiler on the same libstdc++ loads.
# iproute2, nftables, openmpi-bin, slurm-wlm, munge: the cluster tests (docs/cluster-tests.md) make
# hosts of network namespaces and start jobs on them with mpirun and Slurm; python3-torch's
# torchrun starts one too. python3-sentencepiece, python3-protobuf: transformers' AutoTokenizer
# converts an exported SentencePiece model with them.
packages=(build-essential clang cmake pkg-config git
  libtomlplusplus-dev libspdlog-dev libfmt-dev libboost-dev libcli11-dev
  libgtest-dev nlohmann-json3-dev libssl-dev libsentencepiece-dev libucx-dev ucx-utils libopenblas-dev python3-torch
  python3-numpy python3-pip python3-yaml python3-requests python3-typing-extensions
  iproute2 nftables openmpi-bin slurm-wlm munge python3-sentencepiece python3-protobuf)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# transformers, for the test that loads an exported folder with GPT2LMHeadModel itself: versions
# that run on Debian's torch 1.13, into .deps/python so nothing of the system changes; the
# dependencies not listed come from Debian (numpy, yaml, requests, typing-extensions).
if [ ! -f .deps/python/transformers/__init__.py ]; then
  PIP_ROOT_USER_ACTION=ignore /usr/bin/python3 -m pip install --quiet --no-deps --target .deps/python \
    transformers==4.40.2 tokenizers==0.19.1 huggingface_hub==0.23.4 safetensors==0.4.3 regex==2024.5.15 \
    tqdm==4.66.4 filelock==3.15.4 packaging==24.1 fsspec==2024.6.1 ||
    echo "setup: transformers not installed; the test that loads an export with it will be skipped"
fi

# cudnn-frontend is header-only C++; PyPI ships its headers in the nvidia-cudnn-frontend wheel.
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  if [ ! -f .deps/cudnn_frontend/include/cudnn_frontend.h ]; then
    if python3 -m pip download --quiet --no-deps --only-binary=:all: nvidia-cudnn-frontend -d .deps/wheels >/dev/null 2>&1; then
      mkdir -p .deps/cudnn_frontend
      python3 - <<'PY'
import glob, zipfile, os
whl = sorted(glob.glob(".deps/wheels/nvidia_cudnn_frontend-*.whl"))[-1]
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        # Headers sit under include/ (at the top of the wheel or below a package folder).
        head, sep, rel = n.rpartition("include/")
        if sep and (head == "" or head.endswith("/")) and n.endswith((".h", ".hpp")):
            dst = os.path.join(".deps/cudnn_frontend/include", rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            open(dst, "wb").write(z.read(n))
PY
    else
      echo "setup: nvidia-cudnn-frontend not available from pip; the flash-attention path will be skipped"
    fi
  fi
  # Debian's UCX has no CUDA transports; PyPI's libucx-cu13 wheel is UCX built with cuda_copy and
  # cuda_ipc, so comm-ucx can move CUDA memory (and several ranks can share one GPU).
  if [ ! -f .deps/ucx/libucx/lib/cmake/ucx/ucx-config.cmake ]; then
    if python3 -m pip download --quiet --no-deps --only-binary=:all: "libucx-cu13==1.22.*" -d .deps/wheels >/dev/null 2>&1; then
      rm -rf .deps/ucx && mkdir -p .deps/ucx
      python3 -m zipfile -e "$(ls .deps/wheels/libucx_cu13-*.whl | tail -1)" .deps/ucx
    else
      echo "setup: libucx-cu13 not available from pip; comm-ucx will move host memory only"
    fi
  fi
fi

[ "${1:-}" = "--deps-only" ] && exit 0
cmake --preset default >/dev/null
cmake --build --preset default
