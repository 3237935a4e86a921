#!/usr/bin/env bash
# An environment of its own for SGLang (engine.backend = "sglang"): SGLang pins other releases of packages
# dualjudge pins (outlines 0.1.11 against 1.3.3, its own torch), so the two cannot share one environment.
#
#   scripts/sglang-env.sh [VENV]      (default .venv-sglang; `make sglang-env`)
#
# Then point dualjudge at it: export DUALJUDGE_SGLANG_PYTHON=VENV/bin/python. dualjudge itself stays in
# its own environment and starts `VENV/bin/python -m sglang.launch_server` for each model.
set -euo pipefail
VENV=${1:-.venv-sglang}
PYTHON=${PYTHON:-python3}
PIN=$("${PY:-.venv/bin/python}" -c "from dualjudge.inference.sglang_server import SGLANG_PIN; print(SGLANG_PIN)" 2>/dev/null || echo 0.5.23)
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "sglang==$PIN"
"$VENV/bin/python" -c "import sglang, importlib.metadata as m; print('sglang', m.version('sglang'), 'in', '$VENV')"
echo "export DUALJUDGE_SGLANG_PYTHON=$(cd "$VENV" && pwd)/bin/python"
