"""The vLLM server, started as vLLM's own `serve` command: `python -m dualjudge.inference.vllm_serve MODEL [FLAGS]`
takes exactly what `vllm serve MODEL [FLAGS]` takes (vllm_api.serve says why it is not the console script)."""

import sys

from dualjudge.inference.vllm_api import serve

if __name__ == "__main__":  # spawned engine processes import this module again: they must not serve
    serve(sys.argv[1:])
