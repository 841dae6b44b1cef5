# adaptive-spec on the official SGLang image of the pinned version.
# Not built in CI (no image registry there); tests/integration/test_dockerfile.py checks it.
#   docker build -t adaptive-spec .
#   docker run --gpus all -p 30000:30000 adaptive-spec --model-path MODEL \
#     --speculative-algorithm EAGLE3 --speculative-draft-model-path DRAFT --adaptive-spec-threshold 96
ARG SGLANG_IMAGE=lmsysorg/sglang:v0.5.16
FROM ${SGLANG_IMAGE}

COPY pyproject.toml README.md /opt/adaptive-spec/
COPY adaptive_spec /opt/adaptive-spec/adaptive_spec
COPY kernels /opt/adaptive-spec/kernels
COPY patches /opt/adaptive-spec/patches
COPY benchmarks /opt/adaptive-spec/benchmarks
# SGLang is in the image already: install only our package (its entry point registers the
# plugin in every scheduler process).
RUN python3 -m pip install --no-cache-dir --no-deps /opt/adaptive-spec \
 && python3 -c "import adaptive_spec.sglang_plugin.plugin, importlib.metadata as m; assert any(e.name == 'adaptive_spec' for e in m.entry_points(group='sglang.srt.plugins'))"

EXPOSE 30000
HEALTHCHECK --interval=30s --timeout=5s --start-period=300s --retries=3 \
  CMD curl -fsS http://127.0.0.1:30000/health || exit 1
ENTRYPOINT ["adaptive-spec-server", "--host", "0.0.0.0", "--port", "30000"]
