# depl-controller's container image, and the PyTorch reference job's worker image. The
# controller: build on debian:bookworm with the packages `make deps` installs (the Makefile is the
# single list), then run on debian:bookworm-slim with only the shared libraries the binary links
# (the last stage). tests/controller/dockerfile_test.cpp runs ldd on the built binary and checks
# the runtime apt-get list below is exactly their Debian packages, and checks the worker stage.
#
#   docker build -t ghcr.io/depl-dev/depl-controller:0.1.0 .
#   docker build --target pytorch-worker -t depl.dev/pytorch-fashion-mnist:0.1 .
FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends make ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, so editing sources does not reinstall them.
COPY Makefile ./
RUN make deps && rm -rf /var/lib/apt/lists/*
COPY . .
RUN rm -rf build && make build BUILD=build

# The PyTorch reference job (examples/pytorch, docs/python-sdk.md): Debian's python3-torch, the
# depl SDK and the example, with Fashion-MNIST from Debian's package. Its entrypoint is the
# command the dev cluster runs for this image (`/usr/bin/python3 examples/pytorch/train.py`).
FROM debian:bookworm-slim AS pytorch-worker
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-torch python3-numpy dataset-fashion-mnist \
 && rm -rf /var/lib/apt/lists/*
COPY sdk/python/depl /usr/lib/python3/dist-packages/depl
COPY examples/pytorch /opt/depl/examples/pytorch
USER 65532:65532
ENTRYPOINT ["/usr/bin/python3", "/opt/depl/examples/pytorch/train.py"]

FROM debian:bookworm-slim
# Exactly the packages of `ldd build/bin/depl-controller` (kept so by dockerfile_test.cpp).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libc6 libfmt9 libgcc-s1 libspdlog1.10 libssl3 libstdc++6 libtcmalloc-minimal4 libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/bin/depl-controller /usr/local/bin/depl-controller
# The chart runs it as 65532 with a read-only root filesystem; nothing is written to disk.
USER 65532:65532
EXPOSE 8080 8081 8082
ENTRYPOINT ["/usr/local/bin/depl-controller"]
