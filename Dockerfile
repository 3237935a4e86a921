# GPU image: the official vLLM OpenAI server image, pinned to the vLLM version of the `gpu` extra
# in pyproject.toml, plus dualjudge. Build: docker build -t dualjudge .
# Run:   docker run --gpus all -v $HOME/.cache/huggingface:/root/.cache/huggingface \
#          -v $PWD/runs:/opt/dualjudge/runs dualjudge run benchmarks/cross-family.toml --out runs/x
FROM vllm/vllm-openai:v0.33.0

WORKDIR /opt/dualjudge
COPY pyproject.toml README.md ./
COPY dualjudge ./dualjudge
COPY data ./data
COPY prompts ./prompts
COPY models ./models
COPY benchmarks ./benchmarks
# vLLM (and its torch) come from the base image; install dualjudge and its own dependencies around them.
RUN python3 -m pip install --no-cache-dir -e . && python3 -c "import vllm, dualjudge; print(vllm.__version__)"
ENV DUALJUDGE_HOME=/opt/dualjudge \
    HF_HUB_OFFLINE=1
ENTRYPOINT ["dualjudge"]
CMD ["--help"]
